// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the VMDK reader. The input is one VMDK file (hosted sparse,
// stream-optimized, COWD, seSparse or a text descriptor); it is opened with open_vmdk,
// mapped from start to end and read around a few data runs. guestfrag::Error is the only
// acceptable failure; a map() answer that breaks the LayerFile contract traps.
// Not part of the CMake build. Build and run from the project root:
//   clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -I. tests/fuzz/vmdk_fuzz.cpp \
//     core/image/vmdk*.cpp core/image/host_file.cpp core/image/raw_image.cpp -lz -o /tmp/vmdk_fuzz
//   /tmp/vmdk_fuzz -max_total_time=60 -rss_limit_mb=2048 CORPUS_DIR
// Seed corpus: small files from `qemu-img convert -O vmdk -o subformat=...` (the sparse
// ones and descriptors), plus COWD/seSparse extents from tests/support/vmdk_writer.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/image/vmdk.hpp"

namespace {

/// One input in an anonymous memory file, named through /proc/self/fd.
class MemoryFile {
public:
    MemoryFile(const std::uint8_t* data, std::size_t size) : fd_(::memfd_create("vmdk_fuzz", MFD_CLOEXEC)) {
        for (std::size_t done = 0; fd_ >= 0 && done < size;) {
            const ssize_t n = ::write(fd_, data + done, size - done);
            if (n <= 0) break;
            done += static_cast<std::size_t>(n);
        }
    }
    ~MemoryFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;

    [[nodiscard]] bool ok() const { return fd_ >= 0; }
    [[nodiscard]] std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
    int fd_;
};

void exercise(const guestfrag::LayerFile& layer) {
    (void)layer.parent();
    (void)layer.identity();
    const std::uint64_t size = layer.virtual_size();
    const std::uint64_t granule = layer.granule_size();
    if (granule == 0) __builtin_trap();
    std::vector<std::uint64_t> data_runs;
    std::uint64_t offset = 0;
    for (int calls = 0; offset < size && calls < (1 << 20); ++calls) {
        const guestfrag::Mapping m = layer.map(offset);
        if (m.length == 0 || m.length > size - offset) __builtin_trap();
        const std::uint64_t end = offset + m.length;
        if (end != size && end % granule != 0) __builtin_trap();  // runs end on granules
        if (m.state == guestfrag::Allocation::Data && data_runs.size() < 16) data_runs.push_back(offset);
        offset = end;
    }
    std::vector<std::byte> buffer(96 * 1024);
    for (const std::uint64_t at : data_runs) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size - at));
        layer.read(at, std::span(buffer).first(n));
    }
    if (size > 0) {
        const std::uint64_t at = size / 2;
        layer.read(at, std::span(buffer).first(static_cast<std::size_t>(std::min<std::uint64_t>(4096, size - at))));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // A descriptor names other files by path; keep the fuzzer away from host devices.
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (text.find("/dev") != std::string_view::npos || text.find("/sys") != std::string_view::npos) return 0;
    const MemoryFile file(data, size);
    if (!file.ok()) return 0;
    try {
        const auto layer = guestfrag::open_vmdk(file.path());
        exercise(*layer);
    } catch (const guestfrag::Error&) {
        // Expected for malformed input.
    }
    return 0;
}
