// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the VHD reader: the input is a whole VHD file, read straight from
// memory through a MemorySource. It is mapped from start to end and read in a few places;
// guestfrag::Error is the expected way to refuse bad input, anything else (crash,
// sanitizer report, runaway allocation or loop) is a bug.
//
// Built by CMake with -DGUESTFRAG_BUILD_FUZZERS=ON (clang); `packaging/setup.sh fuzz`
// builds it with clang-14 and runs it on a seed from `qemu-img create -f vpc`.
// More seeds: small qemu-img made VHDs (qemu-img convert -O vpc -o subformat=fixed|dynamic)
// and differencing ones from tests/support/vhd_writer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "core/image/byte_source.hpp"
#include "core/image/vhd.hpp"

namespace {

void exercise(const guestfrag::LayerFile& layer) {
    (void)layer.parent();
    (void)layer.identity();
    (void)layer.granule_size();
    const std::uint64_t size = layer.virtual_size();
    std::vector<std::byte> buf(4096);
    std::uint64_t offset = 0;
    // Every run must make progress; a bounded number of calls keeps a pathological
    // (but valid) map from timing out without hiding a real no-progress bug.
    for (int calls = 0; offset < size && calls < 1'000'000; ++calls) {
        const guestfrag::Mapping m = layer.map(offset);
        if (m.length == 0 || m.length > size - offset) __builtin_trap();
        if (m.state == guestfrag::Allocation::Data && calls % 64 == 0) {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(m.length, buf.size()));
            layer.read(offset, std::span(buf).first(n));
        }
        offset += m.length;
    }
    for (const std::uint64_t at : {std::uint64_t{0}, size / 2, size > 4096 ? size - 4096 : 0}) {
        const auto n =
            static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), size - std::min(at, size)));
        layer.read(at, std::span(buf).first(n));
    }
}

void open_and_exercise(const std::uint8_t* data, std::size_t size) {
    // The source views the bytes, which outlive this call.
    auto input = std::make_shared<guestfrag::MemorySource>(
        "vhd-fuzz-input", std::span(reinterpret_cast<const std::byte*>(data), size));
    try {
        const auto layer = guestfrag::open_vhd(guestfrag::HostFile(std::move(input)));
        exercise(*layer);
    } catch (const guestfrag::Error& e) {
        if (e.kind() == guestfrag::ErrorKind::Internal) __builtin_trap();
    }
}

std::uint64_t be(const std::vector<std::uint8_t>& bytes, std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | bytes[at + static_cast<std::size_t>(i)];
    return v;
}

void put_checksum(std::vector<std::uint8_t>& bytes, std::size_t begin, std::size_t length,
                  std::size_t field) {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < length; ++i)
        if (i < field || i >= field + 4) sum += bytes[begin + i];
    sum = ~sum;
    for (int i = 0; i < 4; ++i)
        bytes[begin + field + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(sum >> (24 - 8 * i));
}

/// The input with valid footer and dynamic header checksums, so mutations get past the
/// checksum test into the tables behind it.
std::vector<std::uint8_t> with_checksums(const std::uint8_t* data, std::size_t size) {
    std::vector<std::uint8_t> bytes(data, data + size);
    if (size < 512) return bytes;
    const std::size_t footer = size - 512;
    put_checksum(bytes, footer, 512, 64);
    const std::uint64_t header = be(bytes, footer + 16, 8);
    if (header <= footer && footer - header >= 1024)
        put_checksum(bytes, static_cast<std::size_t>(header), 1024, 36);
    return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    open_and_exercise(data, size);
    const std::vector<std::uint8_t> fixed = with_checksums(data, size);
    open_and_exercise(fixed.data(), fixed.size());
    return 0;
}
