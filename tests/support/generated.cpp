// SPDX-License-Identifier: GPL-2.0-or-later
// Kept apart from fixtures.cpp so tests that generate nothing need not link the generator.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

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

}  // namespace guestfrag::test
