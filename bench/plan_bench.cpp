// SPDX-License-Identifier: GPL-2.0-or-later
// Times make_plan on a synthetic volume of STREAMS streams × 5 runs, written 16 at a time
// (each stream's runs interleaved with its neighbours'), with a free hole of 1–40 clusters
// after one run in ten and a free tail of 30 %. Prints CPU seconds, moves and the peak
// memory per extent for each strategy. Usage: guestfrag_bench_plan [STREAMS] [STRATEGY...]
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "peak_rss.hpp"
#include "core/error.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/planner.hpp"

namespace {

using guestfrag::bench::peak_rss_kib;

using guestfrag::ClusterSet;

double cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

guestfrag::VolumeMap synthetic_volume(std::size_t streams) {
    guestfrag::VolumeMap v;
    v.partition = 1;
    v.cluster_size = 4096;
    std::uint32_t seed = 1;
    const auto next = [&seed] { return (seed = seed * 1664525u + 1013904223u) >> 16; };  // high bits: the low ones cycle
    std::int64_t cursor = 1024;  // the first clusters hold the file system's own files
    v.streams.resize(streams);
    constexpr std::size_t kTogether = 16;
    constexpr int kRuns = 5;
    for (std::size_t group = 0; group < streams; group += kTogether) {
        for (int run = 0; run < kRuns; ++run) {
            for (std::size_t i = group; i < std::min(streams, group + kTogether); ++i) {
                guestfrag::Stream& s = v.streams[i];
                s.mft_record = 64 + i;
                s.type = static_cast<std::uint32_t>(guestfrag::AttrType::Data);
                const std::int64_t clusters = 1 + next() % 8;
                const std::int64_t vcn = s.extents.empty() ? 0 : s.extents.back().vcn + s.extents.back().clusters;
                s.extents.push_back({vcn, cursor, clusters});
                s.size += static_cast<std::uint64_t>(clusters) * v.cluster_size;
                s.allocated_size = s.size;
                cursor += clusters;
                if (next() % 10 == 0) {
                    const std::int64_t hole = 1 + next() % 40;
                    v.free.add(ClusterSet::interval_type::right_open(cursor, cursor + hole));
                    cursor += hole;
                }
            }
        }
    }
    v.total_clusters = cursor + cursor * 3 / 7;  // a 30 % free tail
    v.free.add(ClusterSet::interval_type::right_open(cursor, v.total_clusters));
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t streams = argc > 1 ? std::stoul(argv[1]) : 200000;
    std::vector<std::string> names;
    for (int i = 2; i < argc; ++i) names.emplace_back(argv[i]);
    if (names.empty())
        for (const auto s : guestfrag::kStrategies) names.emplace_back(guestfrag::strategy_name(s));
    try {
        const long baseline_kib = peak_rss_kib();
        const guestfrag::VolumeMap volume = synthetic_volume(streams);
        std::size_t extents = 0;
        for (const auto& s : volume.streams) extents += s.extents.size();
        const long volume_kib = peak_rss_kib() - baseline_kib;
        std::printf("%zu streams, %zu extents, %zu free extents, volume map %ld KiB\n", streams, extents,
                    volume.free.iterative_size(), volume_kib);
        std::printf("| strategy | moves | CPU s | peak RSS above the map, bytes per extent |\n|---|---|---|---|\n");
        for (const std::string& name : names) {
            const auto strategy = guestfrag::parse_strategy(name);
            if (!strategy) {
                std::fprintf(stderr, "unknown strategy %s\n", name.c_str());
                return 1;
            }
            guestfrag::PlanOptions options;
            options.strategy = *strategy;
            if (*strategy == guestfrag::Strategy::Shrink) options.granule = 1 << 20;
            const double start = cpu_seconds();
            const guestfrag::Plan plan = guestfrag::make_plan(
                volume, {}, guestfrag::identify(volume, "synthetic", 0), options);
            const double cpu = cpu_seconds() - start;
            const long above = peak_rss_kib() - baseline_kib - volume_kib;
            std::printf("| %s | %zu | %.2f | %.0f |\n", name.c_str(), plan.moves.size(), cpu,
                        static_cast<double>(above) * 1024.0 / static_cast<double>(extents));
        }
    } catch (const guestfrag::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
