// SPDX-License-Identifier: GPL-2.0-or-later
// The bytes of a JSON file the user names (a plan, a device model), for a JSON parser to
// pull, whatever the file turns out to be.
#pragma once

#include <chrono>
#include <cstdint>
#include <streambuf>
#include <string>

#include <nlohmann/json.hpp>

namespace guestfrag {

/// A file read for a JSON parser. Opened without blocking, so that a FIFO nobody writes to
/// does not hang the open; decided by what the file is: a directory is refused, a regular
/// file read as it is, anything else (a pipe from `<(…)`, /dev/stdin, a FIFO, a character
/// device) read while it delivers, a wait for data given up after `timeout`. White space
/// between tokens is squeezed to one byte as it is read (JSON means the same). Errors name
/// the file by `what` ("plan"): Error(NotFound) "cannot open plan: …", Error(Unsupported)
/// "the plan is a directory, not a plan file", Error(Io) for a failed read and "no plan data
/// arrived for 30 s from the pipe or FIFO it is read from".
class JsonInput : public std::streambuf {
public:
    JsonInput(const std::string& path, std::string what, std::chrono::milliseconds timeout);
    ~JsonInput() override;
    JsonInput(const JsonInput&) = delete;
    JsonInput& operator=(const JsonInput&) = delete;

    /// Whether the file is a pipe, FIFO or device that gave no byte at all.
    [[nodiscard]] bool empty_pipe() const { return stream_ && total_ == 0; }

protected:
    int_type underflow() override;

private:
    std::size_t squeeze(std::size_t n);
    [[noreturn]] void fail(const std::string& action) const;

    std::string what_;
    int fd_ = -1;
    bool stream_ = false;
    std::uint64_t total_ = 0;
    bool in_string_ = false;  ///< inside a JSON string
    bool escaped_ = false;    ///< after a backslash inside one
    bool space_ = false;      ///< after white space between tokens
    std::chrono::milliseconds timeout_;
    char buffer_[64 * 1024];
};

/// The JSON document in the file at `path`, read through JsonInput. Throws as JsonInput
/// does, and Error(Unsupported) "the WHAT is not valid JSON: …" or "the WHAT is a pipe or
/// FIFO that nothing wrote to".
[[nodiscard]] nlohmann::json read_json_file(const std::string& path, const std::string& what,
                                            std::chrono::milliseconds timeout);

}  // namespace guestfrag
