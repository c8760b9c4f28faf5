// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the trace inputs a workload names (docs/estimate.md): the first byte
// chooses the reader, the rest is the file. Even: a path list (Prefetch\Layout.ini in
// UTF-16LE, or a UTF-8/UTF-16BE text list) through parse_path_list. Odd: a Windows Prefetch
// file through read_prefetch (libscca, any version, MAM-compressed included), then the
// volume paths it yields for a serial taken from the input. guestfrag::Error is the expected
// way to refuse bad input; anything else (crash, sanitizer report, runaway allocation or
// loop) is a bug, libscca's included, since a guest's .pf files are as hostile as its disk.
//
// Built by CMake with -DGUESTFRAG_BUILD_FUZZERS=ON (clang); `packaging/setup.sh fuzz` seeds
// it with the Prefetch samples of tests/data/prefetch and a generated Layout.ini.
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.hpp"
#include "core/estimate/layout_ini.hpp"
#include "core/estimate/prefetch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::span<const std::byte> content(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
    try {
        if (data[0] % 2 == 0) {
            (void)guestfrag::parse_path_list(content, "fuzz.ini");
        } else {
            const guestfrag::PrefetchFile pf = guestfrag::read_prefetch(content, "fuzz.pf");
            // A serial the file may name: the first volume's, or none of them.
            const std::uint64_t serial =
                pf.volumes.empty() || data[0] % 4 == 3 ? 0 : pf.volumes.front().serial;
            (void)guestfrag::prefetch_volume_paths(pf, serial);
        }
    } catch (const guestfrag::Error&) {
        // the expected refusal of bad input
    }
    return 0;
}
