// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the VMDK reader. The input is one VMDK file (hosted sparse,
// stream-optimized, COWD, seSparse or a text descriptor), read straight from memory: it is
// the only file of a MemoryOpener, so extent files a descriptor names are "not found"
// instead of whatever the host has at that path. It is opened with open_vmdk, mapped
// from start to end and read around a few data runs. guestfrag::Error is the only
// acceptable failure; a map() answer that breaks the LayerFile contract traps.
// Built by CMake with -DGUESTFRAG_BUILD_FUZZERS=ON (clang); `packaging/setup.sh fuzz`
// builds it with clang-14 and runs it on a seed from `qemu-img create -f vmdk`.
// More seeds: small files from `qemu-img convert -O vmdk -o subformat=...` (the sparse
// ones and descriptors), plus COWD/seSparse extents from tests/support/vmdk_writer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "core/image/source_opener.hpp"
#include "core/image/vmdk.hpp"

namespace {

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
    // The source views the input: libFuzzer keeps it alive for this call.
    guestfrag::MemoryOpener files;
    files.add(std::make_shared<guestfrag::MemorySource>(
        "fuzz/input.vmdk", std::span(reinterpret_cast<const std::byte*>(data), size)));
    try {
        const auto layer = guestfrag::open_vmdk(guestfrag::HostFile(files.open("fuzz/input.vmdk")), files);
        exercise(*layer);
    } catch (const guestfrag::Error&) {
        // Expected for malformed input.
    }
    return 0;
}
