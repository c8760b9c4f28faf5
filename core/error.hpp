// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <stdexcept>
#include <string>

namespace guestfrag {

/// What kind of expected failure crossed the core boundary. The CLI maps every
/// kind except Internal to exit status 2 ("bad or unsupported input").
enum class ErrorKind {
    Io,           ///< the OS refused or failed a read (errno text in the message)
    NotFound,     ///< a named file (image, parent, plan) does not exist
    Corrupt,      ///< structures are inconsistent or point outside the image
    Unsupported,  ///< valid input using a feature guestfrag does not handle
    Unsafe,       ///< dirty or hibernated volume: its on-disk state is not trustworthy
    Cancelled,    ///< the caller's stop token fired
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

}  // namespace guestfrag
