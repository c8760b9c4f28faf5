// SPDX-License-Identifier: GPL-2.0-or-later
// Kept apart from fixtures.cpp so tests that generate nothing need not link the generator.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>
#include <stdexcept>

#include "support/fixtures.hpp"

namespace guestfrag::test {

namespace fs = std::filesystem;

fs::path generated_image(const std::string& key, MkImageOptions options) {
    options.output = scratch_dir() / (key + ".img");
    // Parallel test processes share the cache: the first one generates, the others wait.
    const fs::path lock_path = scratch_dir() / (key + ".lock");
    const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + lock_path.string());
    struct Unlock {
        int fd;
        ~Unlock() { ::close(fd); }
    } unlock{lock_fd};
    if (!fs::exists(options.output)) {
        const fs::path final_path = options.output;
        options.output += ".part";
        make_image(options);
        fs::rename(options.output, final_path);
        return final_path;
    }
    return options.output;
}

fs::path small_cli_image() {
    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.files = 300;
    o.interleave = 8;
    o.seed = 23;
    return generated_image("estimate-small", o);
}

fs::path fragmented_256_image() {
    MkImageOptions o;
    o.disk_size = 256ull << 20;
    o.files = 3000;
    o.interleave = 8;
    o.delete_fraction = 0.3;
    o.seed = 7;
    return generated_image("optimize-256-7", o);
}

MkImageOptions drawn_volume(std::uint32_t seed, std::uint64_t max_runs) {
    std::mt19937_64 rng(seed);
    const auto uniform = [&rng](std::uint64_t lo, std::uint64_t hi) {
        return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
    };
    MkImageOptions o;
    o.seed = seed;
    o.cluster_size = 512u << uniform(0, 7);
    o.fill = static_cast<double>(std::array{5, 30, 60, 95}[uniform(0, 3)]) / 100;
    // Below 4 KiB clusters each run of the pair takes 4 KiB (mkimage's population); the pair
    // gets at most an eighth of the file budget each, and the disk stays under 512 MiB.
    const std::uint64_t run_bytes = std::max<std::uint64_t>(o.cluster_size, 4096);
    const std::uint64_t room = std::max<std::uint64_t>(100, (448ull << 20) / (16 * run_bytes));
    const double top = static_cast<double>(std::min(max_runs, room));
    o.list_runs = static_cast<std::uint64_t>(
        std::exp(std::uniform_real_distribution<double>(std::log(100.0), std::log(top))(rng)));
    o.disk_size = std::max<std::uint64_t>({64ull << 20, std::uint64_t{o.cluster_size} * 4096,
                                           (16 * o.list_runs * run_bytes + (48ull << 20)) >> 20 << 20});
    o.table = uniform(0, 1) == 0 ? "none" : "msdos";
    o.files = uniform(150, 500);
    o.interleave = static_cast<std::uint32_t>(uniform(1, 24));
    o.delete_fraction = static_cast<double>(uniform(10, 50)) / 100;
    o.named_stream_every = static_cast<std::uint32_t>(std::array{0, 10, 50}[uniform(0, 2)]);
    o.compressed = o.cluster_size <= 4096 && uniform(0, 1) == 1;
    return o;
}

std::string mkimage_line(const MkImageOptions& o) {
    std::ostringstream text;
    text << "mkimage --size " << (o.disk_size >> 20) << "MiB --table " << o.table << " --cluster-size "
         << o.cluster_size << " --files " << o.files << " --interleave " << o.interleave
         << " --delete-fraction " << o.delete_fraction << " --fill " << o.fill << " --named-stream-every "
         << o.named_stream_every << " --list-runs " << o.list_runs << (o.compressed ? " --compressed" : "")
         << " --seed " << o.seed;
    return text.str();
}

namespace {

std::uint64_t property_setting(const char* name, std::uint64_t fallback) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? std::stoull(value) : fallback;
}

}  // namespace

void for_each_drawn_volume(
    const std::string& name, std::uint64_t cases,
    const std::function<void(const MkImageOptions& volume, const WorkDir& dir)>& check) {
    cases = property_setting("GUESTFRAG_PROPERTY_CASES", cases);
    const std::uint64_t first = property_setting("GUESTFRAG_PROPERTY_SEED", 1);
    const std::uint64_t max_runs = property_setting("GUESTFRAG_PROPERTY_RUNS", 6000);
    for (std::uint64_t k = 0; k < cases; ++k) {
        const WorkDir dir(name);
        MkImageOptions options = drawn_volume(static_cast<std::uint32_t>(first + k), max_runs);
        options.output = dir / "in.img";
        make_image(options);
        check(options, dir);
    }
}

}  // namespace guestfrag::test
