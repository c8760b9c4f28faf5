// SPDX-License-Identifier: GPL-2.0-or-later
// Times the install: workload (docs/estimate.md §2) on a 100 GiB volume whose free space is
// scattered in 384 KiB extents, and on the same volume with its free space in one run (what
// a consolidation plan leaves): IOs generated through per-write allocation, replayed on a
// fresh thin written map and summarised on every device model.
// Usage: guestfrag_bench_install [FILES] [REPEAT] [OPTIONS]   (OPTIONS as after install:N,)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "peak_rss.hpp"
#include "core/estimate/estimate.hpp"

using guestfrag::bench::peak_rss_kib;

int main(int argc, char** argv) {
    using namespace guestfrag;
    const std::uint64_t files = argc > 1 ? std::stoull(argv[1]) : 100000;
    const int repeat = argc > 2 ? std::stoi(argv[2]) : 3;
    const std::string options = argc > 3 ? argv[3] : "";
    constexpr std::int64_t kClusters = (100ll << 30) / 4096;  // 100 GiB of 4 KiB clusters

    // Scattered: every 128 clusters, 96 free and 32 used (204,800 free extents, 75 GiB).
    VolumeMap scattered;
    scattered.partition = 1;
    scattered.partition_offset = 1 << 20;
    scattered.cluster_size = 4096;
    scattered.total_clusters = kClusters;
    for (std::int64_t c = 0; c < kClusters; c += 128)
        scattered.free.add(scattered.free.end(), ClusterSet::interval_type::right_open(c, c + 96));
    // The sizes' population: 1,000 files from 4 KiB to 4 MiB, log-uniform (mean about 600 KiB).
    for (std::uint64_t i = 0; i < 1000; ++i) {
        Stream s;
        s.mft_record = 24 + i;
        s.type = static_cast<std::uint32_t>(AttrType::Data);
        s.size = static_cast<std::uint64_t>(4096.0 * std::pow(1024.0, static_cast<double>((i * 337) % 1000) / 999.0));
        s.allocated_size = s.size;
        s.placement = Placement::Movable;
        scattered.streams.push_back(s);
    }
    VolumeMap merged = scattered;  // the same free clusters, moved into one run at the front
    merged.free.clear();
    merged.free.add(ClusterSet::interval_type::right_open(0, boost::icl::length(scattered.free)));

    PreparedWorkload w;
    w.workload = parse_workload("install:" + std::to_string(files) + (options.empty() ? "" : "," + options));
    w.write_sizes = write_file_sizes(scattered, files);
    const WrittenMap fresh(1 << 20);

    const long baseline_kib = peak_rss_kib();
    for (const auto& [name, volume] : {std::pair{"scattered", &scattered}, {"merged", &merged}}) {
        double best = 1e300;
        WorkloadEstimate e;
        for (int i = 0; i < repeat; ++i) {
            const auto start = std::chrono::steady_clock::now();
            e = estimate_workload(*volume, w, {}, &fresh);
            const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
            best = std::min(best, elapsed.count());
        }
        std::printf(
            "{\"free_space\": \"%s\", \"workload\": \"%s\", \"files_written\": %llu, \"fragments\": %llu, "
            "\"fragmented_files\": %llu, \"ios\": %llu, \"bytes\": %llu, \"sequential_percent\": %.1f, "
            "\"thin_hdd_seconds\": %.1f, \"best_seconds\": %.3f, \"peak_rss_bytes\": %ld, "
            "\"rss_over_baseline_bytes\": %ld}\n",
            name, w.workload.text().c_str(), static_cast<unsigned long long>(e.write->files_written),
            static_cast<unsigned long long>(e.write->fragments),
            static_cast<unsigned long long>(e.write->fragmented_files),
            static_cast<unsigned long long>(e.stats.ios), static_cast<unsigned long long>(e.stats.bytes),
            e.stats.sequential_percent, e.stats.provisioned[2].device_seconds.hdd, best, peak_rss_kib() * 1024,
            (peak_rss_kib() - baseline_kib) * 1024);
    }
    return 0;
}
