// SPDX-License-Identifier: GPL-2.0-or-later
// Times the full analysis of an image (partition table, MFT walk, $Bitmap, metrics) and
// reports throughput and memory per extent. Usage: guestfrag_bench_scan IMAGE [REPEAT]
#include <chrono>
#include <cstdio>
#include <string>

#include "peak_rss.hpp"
#include "analyzers/analysis.hpp"
#include "core/error.hpp"
#include "core/image/open_image.hpp"

using guestfrag::bench::peak_rss_kib;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s IMAGE [REPEAT]\n", argv[0]);
        return 1;
    }
    const int repeat = argc > 2 ? std::stoi(argv[2]) : 3;
    try {
        const long baseline_kib = peak_rss_kib();
        const auto image = guestfrag::open_image(argv[1]);
        double best = 1e300;
        std::uint64_t records = 0, extents = 0, streams = 0;
        for (int i = 0; i < repeat; ++i) {
            const auto start = std::chrono::steady_clock::now();
            const auto analysis = guestfrag::analyze_image(*image);
            const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
            best = std::min(best, elapsed.count());
            records = extents = streams = 0;
            for (const auto& v : analysis.volumes) {
                records += v.map.mft_records_in_use;
                streams += v.map.streams.size();
                for (const auto& s : v.map.streams) extents += s.extents.size();
            }
        }
        const long peak_kib = peak_rss_kib();
        std::printf(
            "{\"image\": \"%s\", \"records_in_use\": %llu, \"streams\": %llu, \"extents\": %llu, "
            "\"best_seconds\": %.3f, \"records_per_second\": %.0f, \"peak_rss_bytes\": %ld, "
            "\"bytes_per_extent\": %.1f}\n",
            argv[1], static_cast<unsigned long long>(records), static_cast<unsigned long long>(streams),
            static_cast<unsigned long long>(extents), best, static_cast<double>(records) / best, peak_kib * 1024,
            extents == 0 ? 0.0 : static_cast<double>(peak_kib - baseline_kib) * 1024.0 / static_cast<double>(extents));
    } catch (const guestfrag::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
    return 0;
}
