// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the qcow2 reader: the input is a qcow2 file, read straight from
// memory through a MemorySource. It is opened, mapped end to end and read in a few places;
// guestfrag::Error is the only acceptable failure.
// Built by CMake with -DGUESTFRAG_BUILD_FUZZERS=ON (clang); `packaging/setup.sh fuzz`
// builds it with clang-14 and runs it on a seed from `qemu-img create -f qcow2`.
// More seeds: small images from `qemu-img convert -O qcow2 [-c] [-o ...]`.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "core/image/byte_source.hpp"
#include "core/image/qcow2.hpp"

namespace {

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
    // The source views the input: libFuzzer keeps it alive for this call.
    auto input = std::make_shared<guestfrag::MemorySource>(
        "qcow2-fuzz-input", std::span(reinterpret_cast<const std::byte*>(data), size));
    try {
        const auto layer = guestfrag::open_qcow2(guestfrag::HostFile(std::move(input)));
        exercise(*layer);
    } catch (const guestfrag::Error&) {
        // Expected for malformed input.
    }
    return 0;
}
