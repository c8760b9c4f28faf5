// SPDX-License-Identifier: GPL-2.0-or-later
// Two ways to read a raw image's data out of the page cache: pread() into a buffer, which
// copies every byte once more, and mmap() of a window at a time, which does not. Each reads
// the file's data ranges (SEEK_DATA/SEEK_HOLE) front to back and either hashes them (XXH3,
// as the proofs do) or writes them at the same offsets of a new sparse file (as the copy
// does). The question it answers: would mapping the input and the output make compact's
// and apply's reads cheaper? (docs/benchmarks.md, "The goals in a slow hour, and mapping
// instead of `pread`")
// Usage: guestfrag_bench_read_paths IMAGE pread|map hash|copy [BLOCK_KIB] [OUT]
//   BLOCK_KIB  bytes per pread, or per mapped window (default 1024)
//   OUT        the new file a copy writes (default IMAGE.copy), removed afterwards
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/image/unique_fd.hpp"
#include "core/io/xxh3.hpp"

namespace {

using guestfrag::UniqueFd;

/// A read-only shared mapping of [offset, offset + length) of a file, unmapped at its end.
class Mapping {
public:
    Mapping(int fd, std::uint64_t offset, std::size_t length) : length_(length) {
        void* at = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(offset));
        if (at == MAP_FAILED) {
            std::perror("mmap");
            std::exit(2);
        }
        bytes_ = static_cast<const std::byte*>(at);
    }
    ~Mapping() { ::munmap(const_cast<std::byte*>(bytes_), length_); }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    [[nodiscard]] std::span<const std::byte> bytes() const { return {bytes_, length_}; }

private:
    const std::byte* bytes_ = nullptr;
    std::size_t length_;
};

/// The file's data ranges, [first, second).
std::vector<std::pair<std::uint64_t, std::uint64_t>> data_ranges(int fd) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    const off_t size = ::lseek(fd, 0, SEEK_END);
    for (off_t at = 0; at < size;) {
        const off_t data = ::lseek(fd, at, SEEK_DATA);
        if (data < 0) break;  // no data after `at`
        const off_t hole = ::lseek(fd, data, SEEK_HOLE);
        out.emplace_back(data, hole);
        at = hole;
    }
    return out;
}

void write_all(int fd, std::span<const std::byte> bytes, std::uint64_t at) {
    while (!bytes.empty()) {
        const ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(at));
        if (n <= 0) {
            std::perror("pwrite");
            std::exit(2);
        }
        bytes = bytes.subspan(static_cast<std::size_t>(n));
        at += static_cast<std::uint64_t>(n);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s IMAGE pread|map hash|copy [BLOCK_KIB] [OUT]\n", argv[0]);
        return 2;
    }
    const std::string image = argv[1];
    const bool map = std::string(argv[2]) == "map";
    const bool copy = std::string(argv[3]) == "copy";
    const std::size_t block = (argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 1024) << 10;
    const std::string out_path = argc > 5 ? argv[5] : image + ".copy";
    const UniqueFd in(::open(image.c_str(), O_RDONLY));
    if (!in || block == 0 || block % 4096 != 0) {
        std::fprintf(stderr, "cannot open %s, or BLOCK_KIB is not a multiple of 4\n", image.c_str());
        return 2;
    }
    UniqueFd out;
    if (copy) {
        out = UniqueFd(::open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644));
        if (!out || ::ftruncate(out.get(), ::lseek(in.get(), 0, SEEK_END)) != 0) {
            std::perror(out_path.c_str());
            return 2;
        }
    }
    const auto ranges = data_ranges(in.get());
    std::vector<std::byte> buffer(map ? 0 : block);
    std::uint64_t digest = 0;
    std::uint64_t bytes = 0;
    const auto started = std::chrono::steady_clock::now();
    const auto use = [&](std::span<const std::byte> piece, std::uint64_t at) {
        if (copy)
            write_all(out.get(), piece, at);
        else
            digest ^= XXH3_64bits(piece.data(), piece.size());
        bytes += piece.size();
    };
    for (const auto& [lo, hi] : ranges)
        for (std::uint64_t at = lo; at < hi; at += block) {
            const std::size_t n = std::min<std::uint64_t>(block, hi - at);
            if (map) {
                const Mapping window(in.get(), at, n);  // SEEK_DATA's offsets are block-aligned
                // Used 128 KiB at a time, what cp writes a call: the hashing too, so that
                // it compares with `pread` of 128 KiB piece for piece.
                for (std::size_t k = 0; k < n; k += std::size_t{128} << 10)
                    use(window.bytes().subspan(k, std::min(n - k, std::size_t{128} << 10)), at + k);
            } else {
                if (::pread(in.get(), buffer.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
                    std::perror("pread");
                    return 2;
                }
                use(std::span(buffer.data(), n), at);
            }
        }
    if (copy) {
        if (::fsync(out.get()) != 0) std::perror("fsync");
        ::unlink(out_path.c_str());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("%s %s %zu KiB: %.3f s, %llu bytes (%016llx)\n", argv[2], argv[3], block >> 10, seconds,
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(copy ? 0 : digest));
    return 0;
}
