// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the qcow2 reader: the input is a qcow2 file. It is opened, mapped
// end to end and read in a few places; guestfrag::Error is the only acceptable failure.
// Not part of the CMake build. Build and run (from the project root):
//   clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -I. tests/fuzz/qcow2_fuzz.cpp \
//     core/image/qcow2.cpp core/image/qcow2_header.cpp core/image/qcow2_l2.cpp \
//     core/image/qcow2_inflate.cpp core/image/host_file.cpp -lz -o /tmp/qcow2_fuzz
//   /tmp/qcow2_fuzz -max_total_time=60 -rss_limit_mb=2048 CORPUS_DIR
// Seed corpus: small images from `qemu-img convert -O qcow2 [-c] [-o ...]`.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/qcow2.hpp"

namespace {

/// Owns a memfd holding one input.
class MemFile {
public:
    MemFile(const std::uint8_t* data, std::size_t size) : fd_(::memfd_create("qcow2_fuzz", MFD_CLOEXEC)) {
        std::size_t done = 0;
        while (fd_ >= 0 && done < size) {
            const ssize_t n = ::write(fd_, data + done, size - done);
            if (n <= 0) break;
            done += static_cast<std::size_t>(n);
        }
    }
    ~MemFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    MemFile(const MemFile&) = delete;
    MemFile& operator=(const MemFile&) = delete;

    [[nodiscard]] bool ok() const { return fd_ >= 0; }
    [[nodiscard]] std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
    int fd_;
};

void exercise(const guestfrag::LayerFile& layer) {
    (void)layer.parent();
    const std::uint64_t size = layer.virtual_size();
    std::vector<std::uint64_t> data_runs;
    std::uint64_t offset = 0;
    // Bounded so a hostile but valid table cannot keep one input running for long.
    for (int calls = 0; offset < size && calls < (1 << 20); ++calls) {
        const guestfrag::Mapping m = layer.map(offset);
        if (m.length == 0 || m.length > size - offset) __builtin_trap();  // broken contract
        if (m.state == guestfrag::Allocation::Data && data_runs.size() < 16) data_runs.push_back(offset);
        offset += m.length;
    }
    std::vector<std::byte> buf(64 * 1024);
    const auto read_at = [&](std::uint64_t at) {
        if (at >= size) return;
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), size - at));
        layer.read(at, std::span(buf).first(n));
    };
    read_at(0);
    if (size > buf.size()) read_at(size - buf.size());
    for (const std::uint64_t at : data_runs) read_at(at);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const MemFile file(data, size);
    if (!file.ok()) return 0;
    try {
        const auto layer = guestfrag::open_qcow2(file.path());
        exercise(*layer);
    } catch (const guestfrag::Error&) {
        // Expected for malformed input.
    }
    return 0;
}
