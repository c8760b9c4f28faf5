// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

namespace guestfrag {

/// What kind of expected failure crossed the core boundary. The CLI maps Internal to exit
/// status 3, Unfinished to 4 and every other kind to 2 ("bad or unsupported input").
enum class ErrorKind {
    Io,           ///< the OS refused or failed a read (errno text in the message)
    NotFound,     ///< a named file (image, parent, plan) does not exist
    Corrupt,      ///< structures are inconsistent or point outside the image
    Unsupported,  ///< valid input using a feature guestfrag does not handle
    Unsafe,       ///< dirty or hibernated volume: its on-disk state is not trustworthy
    Cancelled,    ///< the caller's stop token fired
    /// guestfrag could not finish its own work on good input: a disk it wrote did not prove
    /// what its plan predicted. Nothing was written; the fault is the tool's, not the
    /// input's (exit 4).
    Unfinished,
    Internal,     ///< a broken invariant of ours (exit 3)
};

/// The one exception type of the core. Messages are a single line, lower-case,
/// without the image path (the caller knows which image it opened).
class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }

private:
    ErrorKind kind_;
};

/// NotFound for a layer's parent that is nowhere the hypervisor would look: also says
/// which depth needs it, so a front end can ask for the file and open the image again
/// with it as parents[depth - 1].
class MissingParentError : public Error {
public:
    MissingParentError(std::size_t depth, std::string recorded, const std::string& message)
        : Error(ErrorKind::NotFound, message), depth_(depth), recorded_(std::move(recorded)) {}
    /// Depth of the missing layer: 1 for the image's own parent, 2 for its grandparent...
    [[nodiscard]] std::size_t depth() const noexcept { return depth_; }
    /// The parent's name as its child records it.
    [[nodiscard]] const std::string& recorded() const noexcept { return recorded_; }

private:
    std::size_t depth_;
    std::string recorded_;
};

}  // namespace guestfrag
