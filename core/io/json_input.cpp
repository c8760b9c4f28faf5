// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/io/json_input.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <istream>

#include "core/error.hpp"

namespace guestfrag {

JsonInput::JsonInput(const std::string& path, std::string what, std::chrono::milliseconds timeout)
    : what_(std::move(what)), timeout_(timeout) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
        const int error = errno;
        throw Error(error == ENOENT ? ErrorKind::NotFound : ErrorKind::Io,
                    "cannot open " + what_ + ": " + std::string(std::strerror(error)));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || S_ISDIR(st.st_mode)) {
        const int error = errno;
        const bool directory = S_ISDIR(st.st_mode);
        ::close(fd_);
        if (directory)
            throw Error(ErrorKind::Unsupported, "the " + what_ + " is a directory, not a " + what_ + " file");
        throw Error(ErrorKind::Io, "cannot read " + what_ + ": " + std::string(std::strerror(error)));
    }
    stream_ = !S_ISREG(st.st_mode);
}

JsonInput::~JsonInput() { ::close(fd_); }

JsonInput::int_type JsonInput::underflow() {
    for (;;) {
        const ssize_t n = ::read(fd_, buffer_, sizeof buffer_);
        if (n > 0) {
            total_ += static_cast<std::uint64_t>(n);
            const std::size_t kept = squeeze(static_cast<std::size_t>(n));
            if (kept == 0) continue;
            setg(buffer_, buffer_, buffer_ + kept);
            return traits_type::to_int_type(buffer_[0]);
        }
        if (n == 0) return traits_type::eof();
        if (errno == EINTR) continue;
        if (errno != EAGAIN) fail("cannot read " + what_);
        // A writer that is there but silent: wait, up to the time box.
        pollfd p{fd_, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(timeout_.count()));
        if (ready == 0) {
            const auto ms = timeout_.count();
            const std::string wait = ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
            throw Error(ErrorKind::Io,
                        "no " + what_ + " data arrived for " + wait + " from the pipe or FIFO it is read from");
        }
        if (ready < 0 && errno != EINTR) fail("cannot read " + what_);
    }
}

/// Drops the first `n` bytes' white space between tokens after the first of a run, in place;
/// returns what is left. The JSON parser keeps every byte since its last token (nlohmann's
/// lexer: token_string), so megabytes of padding would cost as much memory. Strings are left
/// as they are: their quotes and escapes are followed across reads.
std::size_t JsonInput::squeeze(std::size_t n) {
    std::size_t out = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const char c = buffer_[i];
        if (in_string_) {
            in_string_ = escaped_ || c != '"';
            escaped_ = !escaped_ && c == '\\';
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (space_) continue;
            space_ = true;
        } else {
            space_ = false;
            in_string_ = c == '"';
        }
        buffer_[out++] = c;
    }
    return out;
}

void JsonInput::fail(const std::string& action) const {
    throw Error(ErrorKind::Io, action + ": " + std::strerror(errno));
}

nlohmann::json read_json_file(const std::string& path, const std::string& what, std::chrono::milliseconds timeout) {
    JsonInput source(path, what, timeout);
    std::istream in(&source);
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        if (source.empty_pipe()) throw Error(ErrorKind::Unsupported, "the " + what + " is a pipe or FIFO that nothing wrote to");
        throw Error(ErrorKind::Unsupported, "the " + what + " is not valid JSON: " + e.what());
    }
}

}  // namespace guestfrag
