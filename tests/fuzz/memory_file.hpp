// SPDX-License-Identifier: GPL-2.0-or-later
// A fuzz input as a file, for the readers that take a path and decide by what the file is.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace guestfrag::fuzz {

/// A memory file (memfd) holding the input, closed on destruction. path() names it
/// ("/proc/self/fd/N") as a regular file; empty when it could not be made.
class MemoryFile {
public:
    MemoryFile(const std::uint8_t* data, std::size_t size) : fd_(::memfd_create("input", MFD_CLOEXEC)) {
        for (std::size_t done = 0; fd_ >= 0 && done < size;) {
            const ssize_t n = ::write(fd_, data + done, size - done);
            if (n <= 0) {
                ::close(fd_);
                fd_ = -1;
            }
            done += n > 0 ? static_cast<std::size_t>(n) : 0;
        }
    }
    ~MemoryFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;

    [[nodiscard]] std::string path() const { return fd_ < 0 ? std::string() : "/proc/self/fd/" + std::to_string(fd_); }

private:
    int fd_;
};

}  // namespace guestfrag::fuzz
