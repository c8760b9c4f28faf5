// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the plan reader: the input is a whole guestfrag.plan.v1 document,
// read by read_plan from a memory file (memfd) as from any regular file, and a plan it
// accepts is replayed by the validator on a small hand-made volume. guestfrag::Error is the
// expected way to refuse bad input, anything else (crash, sanitizer report, runaway
// allocation or loop) is a bug.
//
// Built by CMake with -DGUESTFRAG_BUILD_FUZZERS=ON (clang); `packaging/setup.sh fuzz`
// builds it with clang-14 and runs it on a seed made by `guestfrag plan -o`.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/plan_io.hpp"
#include "memory_file.hpp"

namespace {

/// 64 clusters: a file at 8-15 with a compressed unit of 16 clusters from VCN 0, the rest free.
guestfrag::VolumeMap volume() {
    guestfrag::VolumeMap v;
    v.cluster_size = 4096;
    v.total_clusters = 64;
    v.free.add(guestfrag::ClusterSet::interval_type::right_open(0, 8));
    v.free.add(guestfrag::ClusterSet::interval_type::right_open(16, 64));
    guestfrag::Stream s;
    s.mft_record = 64;
    s.type = 0x80;
    s.flags = guestfrag::Stream::kCompressed;
    s.compression_unit = 4;
    s.extents = {
        {0, 8, 5}, {5, guestfrag::Extent::kSparse, 11}, {16, 13, 3}, {19, guestfrag::Extent::kSparse, 13}};
    v.streams.push_back(s);
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const guestfrag::fuzz::MemoryFile file(data, size);
    if (file.path().empty()) return 0;
    try {
        const guestfrag::Plan plan = guestfrag::read_plan(file.path());
        static const guestfrag::VolumeMap map = volume();
        (void)guestfrag::apply_plan(map, plan);
    } catch (const guestfrag::Error&) {
        // the expected refusal of bad input
    }
    return 0;
}
