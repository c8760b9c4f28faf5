// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/mkimage/file_content.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace guestfrag::mkimage {

namespace {

constexpr std::size_t kPeriod = 3 << 20;  // offsets wrap here; pool = period + max span
constexpr std::size_t kHeader = 16;

/// splitmix64: a fast, well-mixed stream for the pool and the per-file offsets.
std::uint64_t mix(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

FileContent::FileContent(std::uint32_t seed) : pool_(kPeriod + kMaxSpan), head_(kMaxSpan) {
    std::uint64_t state = seed ^ 0x6775657374667261ull;
    for (std::size_t i = 0; i < pool_.size(); i += 8) {
        std::uint64_t word = mix(state);
        for (std::size_t b = 0; b < 8 && i + b < pool_.size(); ++b, word >>= 8)
            pool_[i + b] = static_cast<unsigned char>(word | 1);  // never zero: real data, no holes
    }
}

std::span<const unsigned char> FileContent::bytes(std::uint64_t file, std::uint64_t pos, std::size_t n) {
    n = std::min(n, kMaxSpan);
    std::uint64_t state = file;
    const std::uint64_t start = (mix(state) % kPeriod + pos) % kPeriod;
    const unsigned char* source = pool_.data() + start;
    if (pos >= kHeader) return {source, n};
    std::memcpy(head_.data(), source, n);
    unsigned char header[kHeader] = {'G', 'F', 'R', 'G'};
    for (int b = 0; b < 8; ++b) header[4 + b] = static_cast<unsigned char>(file >> (8 * b));
    for (std::size_t i = static_cast<std::size_t>(pos); i < kHeader && i - pos < n; ++i)
        head_[i - pos] = header[i];
    return {head_.data(), n};
}

std::span<const unsigned char> FileContent::log_text(std::uint64_t file, std::uint64_t pos, std::size_t n) {
    constexpr std::size_t kLine = 64;
    n = std::min(n, kMaxSpan);
    char line[96];  // a line is 64 bytes while entry numbers have up to 9 digits
    for (std::size_t done = 0; done < n;) {
        const std::uint64_t number = (pos + done) / kLine;
        const std::size_t at = static_cast<std::size_t>((pos + done) % kLine);
        std::snprintf(line, sizeof line,
                      "2026-11-26 08:%02u:%02u, Info  CBS  log %04x entry %09llu: ok  \r\n",
                      static_cast<unsigned>(number / 60 % 60), static_cast<unsigned>(number % 60),
                      static_cast<unsigned>(file & 0xffff), static_cast<unsigned long long>(number));
        const std::size_t take = std::min(kLine - at, n - done);
        std::memcpy(head_.data() + done, line + at, take);
        done += take;
    }
    return {head_.data(), n};
}

}  // namespace guestfrag::mkimage
