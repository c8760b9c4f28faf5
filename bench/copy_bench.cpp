// SPDX-License-Identifier: GPL-2.0-or-later
// Times the copy figures (docs/copy.md) of a synthetic 1 TiB sparse layer whose 1,000,000
// host runs lie shuffled in its file, and reports the peak memory they take; then the
// three states (§7) with an after-plan layer that stores a new 512 KiB piece in every
// tenth slot's free half, appended to the file last slot first.
// Usage: guestfrag_bench_copy [RUNS] [REPEAT]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <numeric>
#include <random>
#include <string>

#include "peak_rss.hpp"
#include "analyzers/copy_cost.hpp"

using guestfrag::bench::peak_rss_kib;

int main(int argc, char** argv) {
    using namespace guestfrag;
    const std::uint64_t runs = argc > 1 ? std::stoull(argv[1]) : 1000000;
    const int repeat = argc > 2 ? std::stoi(argv[2]) : 3;
    constexpr std::uint64_t kSlot = std::uint64_t{1} << 20, kRun = kSlot / 2;
    // One 512 KiB run in each 1 MiB of the disk (1 TiB for a million), placed in the file
    // in a shuffled order: no run continues another in the file.
    std::vector<std::uint64_t> place(runs);
    std::iota(place.begin(), place.end(), 0);
    std::shuffle(place.begin(), place.end(), std::mt19937_64(1));
    Layer layer;
    layer.granule_size = 64 << 10;
    for (std::uint64_t i = 0; i < runs; ++i) {
        layer.host_extents.push_back({i * kSlot, place[i] * kRun, kRun, 0});
        layer.allocated.add(layer.allocated.end(),
                            ByteSet::interval_type::right_open(i * kSlot, i * kSlot + kRun));
    }
    const long baseline_kib = peak_rss_kib();
    double best = 1e300;
    CopyFigures figures;
    for (int i = 0; i < repeat; ++i) {
        const auto start = std::chrono::steady_clock::now();
        figures = copy_figures(layer_copy_source(layer), {});
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        best = std::min(best, elapsed.count());
    }
    // The after-plan layer: the same runs, and 10 % more appended in reverse disk order.
    Layer after = layer;
    std::uint64_t file_end = runs * kRun;
    std::vector<HostExtent> added;
    for (std::uint64_t i = runs; i-- > 0;)
        if (i % 10 == 0) {
            added.push_back({i * kSlot + kRun, file_end, kRun, 0});
            file_end += kRun;
            after.allocated.add(ByteSet::interval_type::right_open(i * kSlot + kRun, (i + 1) * kSlot));
        }
    std::reverse(added.begin(), added.end());
    after.host_extents.clear();
    std::merge(layer.host_extents.begin(), layer.host_extents.end(), added.begin(), added.end(),
               std::back_inserter(after.host_extents),
               [](const HostExtent& a, const HostExtent& b) { return a.virtual_offset < b.virtual_offset; });
    const std::vector<Layer> image{layer};
    double best_states = 1e300;
    CopyStates states;
    for (int i = 0; i < repeat; ++i) {
        const auto start = std::chrono::steady_clock::now();
        states = copy_states(image, after, {});
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        best_states = std::min(best_states, elapsed.count());
    }
    std::printf(
        "{\"runs\": %llu, \"virtual_bytes\": %llu, \"commands_4MiB\": %llu, \"host_reads\": %llu, "
        "\"best_seconds\": %.3f, \"states_after_plan_commands_4MiB\": %llu, \"states_best_seconds\": %.3f, "
        "\"peak_rss_bytes\": %ld, \"rss_over_layer_bytes\": %ld}\n",
        static_cast<unsigned long long>(figures.runs), static_cast<unsigned long long>(runs * kSlot),
        static_cast<unsigned long long>(figures.offload.at(1).commands),
        static_cast<unsigned long long>(figures.host_copy.ios), best,
        static_cast<unsigned long long>(states.after_plan.offload.at(1).commands), best_states, peak_rss_kib() * 1024,
        (peak_rss_kib() - baseline_kib) * 1024);
    return 0;
}
