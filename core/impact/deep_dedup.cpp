// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/impact/deep_dedup.hpp"

#include <algorithm>

#include "core/io/xxh3.hpp"
#include "core/io/zero_bytes.hpp"

namespace guestfrag {

namespace {

/// A chunk's content key: its XXH3-128, or all-zero for a chunk of zeros (counted without
/// hashing: zero chunks dominate thin disks).
struct Key {
    std::uint64_t low = 0;
    std::uint64_t high = 0;
    friend auto operator<=>(const Key&, const Key&) = default;
};
constexpr Key kZero{};

Key key_of(std::span<const std::byte> bytes) {
    if (all_zero(bytes)) return kZero;
    const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
    const Key key{h.low64, h.high64};
    return key == kZero ? Key{1, 0} : key;  // keep the zero key for zeros
}

/// One chunk size's census: every non-zero key before, and each rewritten chunk's
/// (before, after) keys.
struct Census {
    std::uint64_t chunk = 0;
    std::uint64_t chunks = 0;
    std::uint64_t zeros_before = 0;
    std::vector<Key> before;
    std::vector<std::pair<Key, Key>> rewrites;

    void add_before(Key key) {
        ++chunks;
        if (key == kZero)
            ++zeros_before;
        else
            before.push_back(key);
    }

    [[nodiscard]] DedupFigures::Deep finish() {
        DedupFigures::Deep out;
        out.chunks = chunks;
        out.rewritten_chunks = rewrites.size();
        std::sort(before.begin(), before.end());
        // Distinct keys and how many chunks carry each; the zero key is kept apart.
        std::vector<Key> keys;
        std::vector<std::uint64_t> counts;
        for (const Key& k : before) {
            if (keys.empty() || keys.back() != k) {
                keys.push_back(k);
                counts.push_back(0);
            }
            ++counts.back();
        }
        std::vector<Key>().swap(before);
        out.unique_before = keys.size() + (zeros_before > 0 ? 1 : 0);

        std::uint64_t zeros_after = zeros_before;
        std::vector<Key> fresh;  // keys only the after-disk has
        const auto find = [&](const Key& k) {
            const auto it = std::lower_bound(keys.begin(), keys.end(), k);
            return it != keys.end() && *it == k ? it - keys.begin() : std::ptrdiff_t{-1};
        };
        for (const auto& [old_key, new_key] : rewrites) {
            if (old_key == kZero)
                --zeros_after;
            else
                --counts[static_cast<std::size_t>(find(old_key))];
        }
        for (const auto& [old_key, new_key] : rewrites) {
            if (new_key == kZero) {
                ++zeros_after;
            } else if (const std::ptrdiff_t i = find(new_key); i >= 0) {
                ++counts[static_cast<std::size_t>(i)];
            } else {
                fresh.push_back(new_key);
            }
        }
        std::sort(fresh.begin(), fresh.end());
        const auto distinct_fresh = static_cast<std::uint64_t>(std::unique(fresh.begin(), fresh.end()) - fresh.begin());
        out.unique_after = static_cast<std::uint64_t>(std::count_if(counts.begin(), counts.end(),
                                                                    [](std::uint64_t c) { return c > 0; })) +
                           distinct_fresh + (zeros_after > 0 ? 1 : 0);
        return out;
    }
};

/// Fills `bytes` with the disk at `offset`, reading only what some layer stores (ranges
/// closer than 256 KiB are read as one, to keep the reads large) and zeroing the rest.
/// Returns false when nothing was stored there (all zeros).
bool read_stored(const DiskImage& image, const ByteSet& stored, std::uint64_t offset, std::span<std::byte> bytes,
                 RateLimiter& limiter, const std::stop_token& stop) {
    static constexpr std::uint64_t kJoin = 256 * 1024;
    ByteSet wanted;
    boost::icl::add_intersection(wanted, stored, ByteSet::interval_type::right_open(offset, offset + bytes.size()));
    if (wanted.empty()) return false;
    std::fill(bytes.begin(), bytes.end(), std::byte{0});
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    const auto flush = [&] {
        if (hi <= lo) return;
        limiter.acquire(hi - lo, stop);
        image.read(lo, bytes.subspan(lo - offset, hi - lo));
    };
    for (const auto& i : wanted) {
        if (hi > lo && i.lower() - hi < kJoin) {
            hi = i.upper();
            continue;
        }
        flush();
        lo = i.lower();
        hi = i.upper();
    }
    flush();
    return true;
}

/// Keys of `unit`-byte chunks of `bytes` (the last may be short).
void unit_keys(std::span<const std::byte> bytes, std::uint64_t unit, std::vector<Key>& keys) {
    keys.clear();
    for (std::uint64_t at = 0; at < bytes.size(); at += unit)
        keys.push_back(key_of(bytes.subspan(at, std::min(unit, bytes.size() - at))));
}

/// Keys of chunks of `factor` units each, from the units' keys: all-zero units make a zero
/// chunk, otherwise the chunk's key is the hash of its units' keys. Equal contents give
/// equal keys, so distinct keys count distinct contents as hashing the bytes would (up to
/// XXH3-128 collisions) — and larger chunk sizes cost almost nothing extra.
void chunk_keys(const std::vector<Key>& units, std::uint64_t factor, std::vector<Key>& keys) {
    keys.clear();
    for (std::size_t at = 0; at < units.size(); at += factor) {
        const std::size_t n = std::min<std::size_t>(factor, units.size() - at);
        const std::span<const Key> group(units.data() + at, n);
        if (factor == 1 || std::all_of(group.begin(), group.end(), [](const Key& k) { return k == kZero; })) {
            keys.push_back(factor == 1 ? group.front() : kZero);
            continue;
        }
        const XXH128_hash_t h = XXH3_128bits(group.data(), group.size_bytes());
        keys.push_back(Key{h.low64, h.high64} == kZero ? Key{1, 0} : Key{h.low64, h.high64});
    }
}

}  // namespace

std::vector<DedupFigures::Deep> deep_dedup(const DiskImage& image, const ContentMap& after,
                                           std::span<const std::uint64_t> chunks, RateLimiter& limiter,
                                           const Progress& progress) {
    std::vector<Census> census;
    for (const std::uint64_t c : chunks) census.emplace_back().chunk = c;
    if (census.empty()) return {};
    const std::uint64_t unit = census.front().chunk;  // chunk sizes are powers of two: it divides them all
    const std::uint64_t size = image.size();
    // A block holds whole chunks of every size, so chunk boundaries never cross blocks.
    const std::uint64_t block = std::max<std::uint64_t>(std::uint64_t{4} << 20, census.back().chunk);
    const ByteSet stored = image.stored();
    std::vector<std::byte> before(block);
    std::vector<std::byte> composed(block);
    std::vector<Key> units_before, units_after, keys_before, keys_after;

    for (std::uint64_t offset = 0; offset < size; offset += block) {
        progress.update(offset, size);
        const std::uint64_t length = std::min(block, size - offset);
        const std::span<std::byte> bytes(before.data(), length);
        if (read_stored(image, stored, offset, bytes, limiter, progress.stop)) {
            unit_keys(bytes, unit, units_before);
        } else {
            std::fill(bytes.begin(), bytes.end(), std::byte{0});  // the after-content starts from it
            units_before.assign((length + unit - 1) / unit, kZero);
        }

        const std::vector<ContentMap::Piece> pieces = after.overrides(offset, length);
        if (!pieces.empty()) {
            std::copy(bytes.begin(), bytes.end(), composed.begin());
            for (const ContentMap::Piece& p : pieces) {
                limiter.acquire(p.length, progress.stop);
                image.read(p.source, std::span(composed.data() + (p.disk - offset), p.length));
            }
            // Only units a piece touches can differ.
            units_after = units_before;
            for (const ContentMap::Piece& p : pieces)
                for (std::uint64_t u = (p.disk - offset) / unit; u * unit < p.disk - offset + p.length; ++u)
                    units_after[u] = key_of(std::span<const std::byte>(composed.data() + u * unit,
                                                                       std::min(unit, length - u * unit)));
        }
        for (Census& c : census) {
            chunk_keys(units_before, c.chunk / unit, keys_before);
            for (const Key& k : keys_before) c.add_before(k);
            if (pieces.empty()) continue;
            chunk_keys(units_after, c.chunk / unit, keys_after);
            for (std::size_t i = 0; i < keys_before.size(); ++i)
                if (keys_before[i] != keys_after[i]) c.rewrites.emplace_back(keys_before[i], keys_after[i]);
        }
    }
    progress.update(size, size);
    std::vector<DedupFigures::Deep> out;
    for (Census& c : census) out.push_back(c.finish());
    return out;
}

}  // namespace guestfrag
