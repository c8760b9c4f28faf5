// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/written_map.hpp"

#include <algorithm>
#include <bit>

namespace guestfrag {

namespace {

using Blocks = boost::icl::interval_set<std::uint64_t>;

}  // namespace

WrittenMap::WrittenMap(std::uint64_t block_bytes) : block_(block_bytes == 0 ? kSectorBytes : block_bytes) {}

WrittenMap WrittenMap::from_layer(const Layer& layer, std::uint64_t block_bytes) {
    WrittenMap map(block_bytes);
    for (const auto& range : layer.allocated) {
        // Runs arrive in address order: appending at the end keeps this linear.
        const std::uint64_t first = range.lower() / map.block_;
        const std::uint64_t end = range.upper() / map.block_ + (range.upper() % map.block_ != 0 ? 1 : 0);
        map.blocks_.add(map.blocks_.end(), Blocks::interval_type::right_open(first, end));
    }
    return map;
}

template <typename F>
void WrittenMap::each_gap(std::uint64_t first, std::uint64_t last, F&& f) const {
    std::uint64_t next = first;  // the first block not yet visited
    const auto [from, to] = blocks_.equal_range(Blocks::interval_type::closed(first, last));
    for (auto run = from; run != to; ++run) {
        if (boost::icl::first(*run) > next) f(next, boost::icl::first(*run) - 1);
        next = std::max(next, boost::icl::last(*run) + 1);
    }
    if (next <= last) f(next, last);
}

template <typename F>
void WrittenMap::each_word(std::uint64_t lo, std::uint64_t hi, F&& f) {
    for (std::uint64_t w = lo / 64; w <= hi / 64; ++w) {
        const unsigned from = w == lo / 64 ? lo % 64 : 0;
        const unsigned to = w == hi / 64 ? hi % 64 : 63;
        f(w, (~std::uint64_t{0} >> (63 - to)) & (~std::uint64_t{0} << from));
    }
}

bool WrittenMap::added(std::uint64_t block) const { return count_added(block, block) != 0; }

std::uint64_t WrittenMap::count_added(std::uint64_t lo, std::uint64_t hi) const {
    if (added_.empty()) return 0;
    std::uint64_t n = 0;
    each_word(lo, hi, [&](std::uint64_t w, std::uint64_t mask) {
        if (const auto word = added_.find(w); word != added_.end()) n += std::popcount(word->second & mask);
    });
    return n;
}

std::uint64_t WrittenMap::replay(const Io& io) {
    if (!io.write || io.length == 0 || io.lbn < 0) return 0;
    const std::uint64_t start = static_cast<std::uint64_t>(io.lbn) * kSectorBytes;
    const std::uint64_t first = start / block_;
    const std::uint64_t last = (start + io.length - 1) / block_;
    std::uint64_t fresh = 0;
    if (last - first + 1 >= 64) {
        // A long write becomes (part of) a run; its blocks leave the words.
        each_gap(first, last, [&](std::uint64_t lo, std::uint64_t hi) {
            fresh += hi - lo + 1;
            if (added_.empty()) return;
            each_word(lo, hi, [&](std::uint64_t w, std::uint64_t mask) {
                const auto word = added_.find(w);
                if (word == added_.end()) return;
                const auto had = static_cast<std::uint64_t>(std::popcount(word->second & mask));
                fresh -= had;
                added_blocks_ -= had;
                if ((word->second &= ~mask) == 0) added_.erase(word);
            });
        });
        blocks_ += Blocks::interval_type::closed(first, last);
        return fresh;
    }
    each_gap(first, last, [&](std::uint64_t lo, std::uint64_t hi) {
        each_word(lo, hi, [&](std::uint64_t w, std::uint64_t mask) {
            std::uint64_t& word = added_[w];
            fresh += static_cast<std::uint64_t>(std::popcount(mask & ~word));
            word |= mask;
        });
    });
    added_blocks_ += fresh;
    return fresh;
}

std::uint64_t WrittenMap::bytes_in_written(const Io& io) const {
    if (io.length == 0 || io.lbn < 0) return 0;
    const std::uint64_t start = static_cast<std::uint64_t>(io.lbn) * kSectorBytes;
    const std::uint64_t end = start + io.length;
    const std::uint64_t first = start / block_;
    const std::uint64_t last = (end - 1) / block_;
    // Whole unwritten blocks, less the parts of the first and last that lie outside the IO.
    std::uint64_t unwritten = 0;
    each_gap(first, last, [&](std::uint64_t lo, std::uint64_t hi) { unwritten += hi - lo + 1 - count_added(lo, hi); });
    unwritten *= block_;
    if (!written(first)) unwritten -= start - first * block_;
    if (!written(last)) unwritten -= (last + 1) * block_ - end;
    return io.length - unwritten;
}

}  // namespace guestfrag
