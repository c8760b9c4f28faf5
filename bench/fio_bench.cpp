// SPDX-License-Identifier: GPL-2.0-or-later
// Times the fio: workload (docs/estimate.md §2) on a thin disk: IOs generated, replayed on a
// written map and summarised on every device model, eager, lazy and thin side by side.
// Usage: guestfrag_bench_fio [IOS] [REPEAT]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "peak_rss.hpp"
#include "core/estimate/estimate.hpp"

using guestfrag::bench::peak_rss_kib;

int main(int argc, char** argv) {
    using namespace guestfrag;
    const std::uint64_t ios = argc > 1 ? std::stoull(argv[1]) : 1000000;
    const int repeat = argc > 2 ? std::stoi(argv[2]) : 3;
    // "4K random writes over 10 GiB of a thin disk", on a 100 GiB disk half written in
    // alternate 1 MiB blocks (a written map of 51,200 runs).
    constexpr std::uint64_t kDisk = 100ull << 30;
    PreparedWorkload w;
    w.workload = parse_workload("fio:rw=randwrite,bs=4k,size=10g,number_ios=" + std::to_string(ios));
    w.disk_size = kDisk;
    Layer layer;
    for (std::uint64_t block = 0; block < kDisk >> 20; block += 2)
        layer.allocated.add(layer.allocated.end(), ByteSet::interval_type::right_open(block << 20, (block + 1) << 20));
    const WrittenMap written = WrittenMap::from_layer(layer, 1 << 20);
    VolumeMap volume;
    volume.cluster_size = 4096;
    const long baseline_kib = peak_rss_kib();
    double best = 1e300;
    WorkloadEstimate e;
    for (int i = 0; i < repeat; ++i) {
        const auto start = std::chrono::steady_clock::now();
        e = estimate_workload(volume, w, {}, &written);
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        best = std::min(best, elapsed.count());
    }
    std::printf(
        "{\"ios\": %llu, \"first_writes\": %llu, \"thin_array_seconds\": %.3f, \"best_seconds\": %.3f, "
        "\"peak_rss_bytes\": %ld, \"rss_over_baseline_bytes\": %ld}\n",
        static_cast<unsigned long long>(e.stats.ios), static_cast<unsigned long long>(e.stats.first_writes),
        e.stats.provisioned[2].device_seconds.array, best, peak_rss_kib() * 1024,
        (peak_rss_kib() - baseline_kib) * 1024);
    return 0;
}
