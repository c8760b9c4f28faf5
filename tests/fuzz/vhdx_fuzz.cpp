// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the VHDX reader (not built by CMake). Build and run:
//
//   clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. tests/fuzz/vhdx_fuzz.cpp \
//     core/image/vhdx.cpp core/image/vhdx_format.cpp core/image/vhdx_log.cpp core/image/vhdx_bat.cpp \
//     core/image/host_file.cpp -o /tmp/vhdx_fuzz
//   /tmp/vhdx_fuzz -max_total_time=60 -rss_limit_mb=2048 /tmp/vhdx_corpus
//
// An input starting with "vhdxfile" is the file itself (CI seeds with `qemu-img create -f
// vhdx`). A VHDX file is mostly zeros with its structures megabytes apart, though, so any
// other input is a sparse description of the file, which mutates far better: a
// little-endian u32 file size (taken modulo 64 MiB), then records of u32 offset, u16 length
// and that many bytes, written into a zero-filled memfd of that size (bytes past the end
// are dropped). Sparse seeds: small valid images (qemu-img, tests/support/vhdx_writer)
// turned into records of their non-zero 512-byte runs, e.g. with a few lines of Python.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/vhdx.hpp"

namespace {

std::uint64_t load(const std::uint8_t* p, unsigned n) {
    std::uint64_t v = 0;
    for (unsigned i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
}

/// Writes the file (or the described file) into a memfd; returns its descriptor (or -1).
int build_file(const std::uint8_t* data, std::size_t size) {
    if (size >= 8 && std::memcmp(data, "vhdxfile", 8) == 0) {
        const int fd = ::memfd_create("vhdx-fuzz", MFD_CLOEXEC);
        if (fd >= 0 && ::write(fd, data, size) != static_cast<ssize_t>(size)) {
            ::close(fd);
            return -1;
        }
        return fd;
    }
    if (size < 4) return -1;
    const std::uint64_t file_size = load(data, 4) % (64u << 20);
    const int fd = ::memfd_create("vhdx-fuzz", MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (::ftruncate(fd, static_cast<off_t>(file_size)) != 0) {
        ::close(fd);
        return -1;
    }
    for (std::size_t at = 4; at + 6 <= size;) {
        const std::uint64_t offset = load(data + at, 4);
        const std::size_t length = std::min<std::size_t>(load(data + at + 4, 2), size - at - 6);
        at += 6;
        if (offset < file_size) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(length, file_size - offset));
            if (::pwrite(fd, data + at, n, static_cast<off_t>(offset)) < 0) break;
        }
        at += length;
    }
    return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const int fd = build_file(data, size);
    if (fd < 0) return 0;
    try {
        const auto layer = guestfrag::open_vhdx("/proc/self/fd/" + std::to_string(fd));
        (void)layer->parent();
        (void)layer->identity();
        const std::uint64_t disk = layer->virtual_size();
        std::vector<std::byte> buf(64 * 1024);
        std::size_t calls = 0;
        for (std::uint64_t at = 0; at < disk && calls < 20000; ++calls) {
            const guestfrag::Mapping m = layer->map(at);
            if (m.length == 0 || m.length > disk - at) __builtin_trap();  // the contract
            // Read the start of a few runs (within the run, as callers do).
            if (calls < 16 && m.state == guestfrag::Allocation::Data)
                layer->read(at, std::span(buf).first(static_cast<std::size_t>(std::min<std::uint64_t>(m.length, buf.size()))));
            at += m.length;
        }
    } catch (const guestfrag::Error&) {
    }
    ::close(fd);
    return 0;
}
