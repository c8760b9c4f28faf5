// SPDX-License-Identifier: GPL-2.0-or-later
// Sequential read throughput of a disk image reader: opens IMAGE with open_image() (the
// format is chosen from its content, as `guestfrag analyze` does) and reads the whole
// virtual disk front to back through DiskImage::read in BLOCK-sized pieces, as
// `qemu-img convert -O raw` does. Reports the best of REPEAT runs (each one open + read) with
// its CPU time, all threads included.
// Usage: guestfrag_bench_read IMAGE [BLOCK] [REPEAT]   (BLOCK in bytes, default 2 MiB, the
// request size of qemu-img convert)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/image/open_image.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// User + system CPU seconds of the process so far, all threads included.
double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Run {
    double open_seconds = 0;
    double read_seconds = 0;
    double cpu_seconds = 0;
    std::uint64_t checksum = 0;
};

// One pass: open, then read every byte. The checksum (a sum of one 64-bit word per 4 KiB)
// keeps the reads observable without costing a pass over the data.
Run read_once(const std::string& path, std::size_t block, std::vector<std::byte>& buffer) {
    Run run;
    const double cpu_start = cpu_seconds();
    const auto start = Clock::now();
    const auto image = guestfrag::open_image(path);
    run.open_seconds = seconds_since(start);
    const std::uint64_t size = image->size();
    const auto read_start = Clock::now();
    for (std::uint64_t offset = 0; offset < size; offset += block) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(block, size - offset));
        image->read(offset, std::span(buffer.data(), n));
        for (std::size_t i = 0; i + sizeof(std::uint64_t) <= n; i += 4096) {
            std::uint64_t word;
            std::memcpy(&word, buffer.data() + i, sizeof word);
            run.checksum += word;
        }
    }
    run.read_seconds = seconds_since(read_start);
    run.cpu_seconds = cpu_seconds() - cpu_start;
    return run;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s IMAGE [BLOCK] [REPEAT]\n", argv[0]);
        return 1;
    }
    const std::string path = argv[1];
    const std::size_t block = argc > 2 ? std::stoull(argv[2]) : std::size_t{2} << 20;
    const int repeat = argc > 3 ? std::stoi(argv[3]) : 3;
    if (block == 0 || repeat < 1) {
        std::fprintf(stderr, "%s: BLOCK and REPEAT must be positive\n", argv[0]);
        return 1;
    }
    try {
        std::vector<std::byte> buffer(block);
        std::string format;
        std::uint64_t size = 0;
        {
            const auto image = guestfrag::open_image(path);
            format = guestfrag::format_name(image->format());
            size = image->size();
        }
        Run best;
        double best_total = 1e300;
        for (int i = 0; i < repeat; ++i) {
            const Run run = read_once(path, block, buffer);
            if (run.open_seconds + run.read_seconds < best_total) {
                best_total = run.open_seconds + run.read_seconds;
                best = run;
            }
        }
        std::printf(
            "{\"image\": \"%s\", \"format\": \"%s\", \"virtual_size\": %llu, \"block\": %zu, "
            "\"open_seconds\": %.3f, \"read_seconds\": %.3f, \"seconds\": %.3f, \"mib_per_second\": %.1f, "
            "\"cpu_seconds\": %.3f, \"checksum\": \"%016llx\"}\n",
            path.c_str(), format.c_str(), static_cast<unsigned long long>(size), block, best.open_seconds,
            best.read_seconds, best_total, static_cast<double>(size) / (1 << 20) / best_total,
            best.cpu_seconds, static_cast<unsigned long long>(best.checksum));
    } catch (const guestfrag::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
    return 0;
}
