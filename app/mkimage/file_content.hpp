// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace guestfrag::mkimage {

/// Non-zero pseudo-random file contents without per-byte work per file: one buffer filled
/// once per seed; file i reads it from its own starting offset (so equal chunks across
/// files are rare) and its first 16 bytes carry the file's number.
class FileContent {
public:
    /// Largest span bytes() returns.
    static constexpr std::size_t kMaxSpan = 1 << 20;

    explicit FileContent(std::uint32_t seed);

    /// Contents of file `file` at [pos, pos + n), n clipped to kMaxSpan. The span stays valid
    /// until the next call.
    std::span<const unsigned char> bytes(std::uint64_t file, std::uint64_t pos, std::size_t n);

    /// Compressible contents of file `file` at [pos, pos + n), n clipped to kMaxSpan: the
    /// lines of a setup log, 64 bytes each, numbered from the start of the file (LZNT1
    /// stores a 16-cluster unit of them in a few clusters). Valid until the next call.
    std::span<const unsigned char> log_text(std::uint64_t file, std::uint64_t pos, std::size_t n);

private:
    std::vector<unsigned char> pool_;
    std::vector<unsigned char> head_;  // scratch for spans that include the 16-byte header
};

}  // namespace guestfrag::mkimage
