// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/plan/apply.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "core/error.hpp"
#include "core/io/heap.hpp"
#include "core/model/free_space.hpp"
#include "core/plan/intervals.hpp"

namespace guestfrag {

namespace {

/// A stream's runs while moves edit it. A stream of few runs is edited in its own vector,
/// where a move shifts at most kFlatRuns runs; one of more runs is held in an ordered map by
/// VCN, so that a stream moved in many pieces costs O(log runs) a move, never quadratic.
/// Nearly every stream has a few runs, and a map node costs 80 bytes a run where the vector
/// costs 24: optimize's plan of a million streams edits them all.
using RunList = std::vector<Extent>;
using RunTree = std::map<std::int64_t, Extent>;
constexpr std::size_t kFlatRuns = 64;

template <class Runs>
constexpr bool kIsTree = std::is_same_v<std::remove_const_t<Runs>, RunTree>;

/// The run an iterator of either kind names.
template <class It>
decltype(auto) run_at(It it) {
    if constexpr (requires { it->second; })
        return (it->second);
    else
        return (*it);
}

/// The first run starting after `vcn` (upper) or at or after it (lower).
template <class Runs>
auto upper(Runs& runs, std::int64_t vcn) {
    if constexpr (kIsTree<Runs>)
        return runs.upper_bound(vcn);
    else
        return std::ranges::upper_bound(runs, vcn, {}, &Extent::vcn);
}
template <class Runs>
auto lower(Runs& runs, std::int64_t vcn) {
    if constexpr (kIsTree<Runs>)
        return runs.lower_bound(vcn);
    else
        return std::ranges::lower_bound(runs, vcn, {}, &Extent::vcn);
}

/// Inserts `e` before `hint`, where it belongs; the iterator to it.
template <class Runs, class It>
auto put(Runs& runs, It hint, const Extent& e) {
    if constexpr (kIsTree<Runs>)
        return runs.emplace_hint(hint, e.vcn, e);
    else
        return runs.insert(hint, e);
}

[[noreturn]] void reject(std::size_t index, const std::string& what) {
    throw Error(ErrorKind::Corrupt, "move " + std::to_string(index) + ": " + what);
}

std::string range_text(std::int64_t lo, std::int64_t clusters) {
    return "[" + std::to_string(lo) + ", " + std::to_string(lo + clusters) + ")";
}

/// (mft_record, label) → stream index, built once. Records hold few streams, so a lookup is
/// a search among the streams of the record's bucket plus a label comparison per stream of
/// that record. Independent of the order of `streams`; about 2 bytes a stream on a map in
/// its own order (by record), 6 on another, since a ten-million-stream volume's replay runs
/// beside the planner's own copies of the map.
class StreamLookup {
public:
    explicit StreamLookup(const std::vector<Stream>& streams) : streams_(streams) {
        require_32bit(streams.size(), "streams");
        if (!std::ranges::is_sorted(streams, {}, &Stream::mft_record)) {
            by_record_.resize(streams.size());
            std::iota(by_record_.begin(), by_record_.end(), std::uint32_t{0});
            std::ranges::stable_sort(by_record_, {}, [&](std::uint32_t i) { return streams[i].mft_record; });
        }
        // Buckets of 2^shift record numbers, about one for every two streams: a binary search
        // over every stream, each probe a cache miss into the streams once they outgrow the
        // caches, was nearly half of a ten-million-move replay. Record numbers are dense in a real
        // MFT; sparse ones only make buckets fuller, never a lookup wrong.
        const std::uint64_t last = streams.empty() ? 0 : record(streams.size() - 1);
        while (shift_ < 63 && (last >> shift_) > streams.size() / 2) ++shift_;
        bucket_start_.assign((last >> shift_) + 2, 0);
        std::size_t at = 0;
        for (std::uint64_t b = 0; b < bucket_start_.size(); ++b) {
            while (at < streams.size() && (record(at) >> shift_) < b) ++at;
            bucket_start_[b] = static_cast<std::uint32_t>(at);
        }
    }

    [[nodiscard]] std::optional<std::size_t> find(std::uint64_t record, std::string_view label) const {
        const std::uint64_t b = record >> shift_;
        if (b + 1 >= bucket_start_.size()) return std::nullopt;
        std::size_t at = bucket_start_[b];
        const std::size_t end = bucket_start_[b + 1];
        for (std::size_t count = end - at; count > 0;) {  // at: the bucket's first position of `record`
            const std::size_t half = count / 2;
            if (this->record(at + half) < record) {
                at += half + 1;
                count -= half + 1;
            } else {
                count = half;
            }
        }
        for (; at < end && this->record(at) == record; ++at)
            if (streams_[index(at)].has_label(label)) return index(at);
        return std::nullopt;
    }

private:
    /// The stream at `position` in record order, and its record.
    [[nodiscard]] std::size_t index(std::size_t position) const {
        return by_record_.empty() ? position : by_record_[position];
    }
    [[nodiscard]] std::uint64_t record(std::size_t position) const { return streams_[index(position)].mft_record; }

    const std::vector<Stream>& streams_;
    std::vector<std::uint32_t> by_record_;     ///< indices into streams_ by record; empty when they are so already
    unsigned shift_ = 0;                       ///< a bucket holds records [b << shift_, (b + 1) << shift_)
    std::vector<std::uint32_t> bucket_start_;  ///< bucket b's streams: positions [start[b], start[b + 1]) in record order
};

/// Makes a run start at `vcn` by splitting the run that contains it (holes split too).
template <class Runs>
void split_at(Runs& runs, std::int64_t vcn) {
    auto it = upper(runs, vcn);
    if (it == runs.begin()) return;
    --it;
    Extent& e = run_at(it);
    if (e.vcn == vcn || e.vcn + e.clusters <= vcn) return;
    const std::int64_t head = vcn - e.vcn;
    const Extent tail{vcn, e.lcn < 0 ? e.lcn : e.lcn + head, e.clusters - head};
    e.clusters = head;
    put(runs, std::next(it), tail);
}

/// Checks that VCNs [m.vcn, m.vcn + m.clusters) of `runs` are allocated at LCNs
/// [m.from_lcn, ...) one after the other.
/// "record 64 $DATA", built only for messages.
std::string who(const Move& m) { return "record " + std::to_string(m.mft_record) + " " + m.stream.str(); }

template <class Runs>
void check_source(const Runs& runs, const Move& m, std::size_t index) {
    const std::int64_t end = m.vcn + m.clusters;
    auto it = upper(runs, m.vcn);
    if (it != runs.begin()) --it;
    for (std::int64_t pos = m.vcn; pos < end;) {
        if (it == runs.end() || run_at(it).vcn > pos || run_at(it).vcn + run_at(it).clusters <= pos)
            reject(index, who(m) + " maps nothing at VCN " + std::to_string(pos));
        const Extent& e = run_at(it);
        if (e.lcn < 0) reject(index, who(m) + " has a hole at VCN " + std::to_string(pos));
        const std::int64_t actual = e.lcn + (pos - e.vcn);
        const std::int64_t expected = m.from_lcn + (pos - m.vcn);
        if (actual != expected)
            reject(index, who(m) + " has VCN " + std::to_string(pos) + " at LCN " + std::to_string(actual) +
                              ", not at LCN " + std::to_string(expected));
        pos = std::min(end, e.vcn + e.clusters);
        ++it;
    }
}

/// Replaces VCNs [m.vcn, m.vcn + m.clusters) by one run at m.to_lcn, merged with neighbours
/// that continue it on disk.
template <class Runs>
void rewrite(Runs& runs, const Move& m) {
    const std::int64_t end = m.vcn + m.clusters;
    split_at(runs, m.vcn);
    split_at(runs, end);
    auto it = put(runs, runs.erase(lower(runs, m.vcn), lower(runs, end)), Extent{m.vcn, m.to_lcn, m.clusters});
    if (it != runs.begin()) {
        auto left = std::prev(it);
        Extent& l = run_at(left);
        if (l.lcn >= 0 && l.vcn + l.clusters == m.vcn && l.lcn + l.clusters == m.to_lcn) {
            l.clusters += m.clusters;
            runs.erase(it);
            it = left;
        }
    }
    if (auto right = std::next(it); right != runs.end()) {
        const Extent& r = run_at(right);
        Extent& here = run_at(it);
        if (r.lcn >= 0 && here.vcn + here.clusters == r.vcn && here.lcn + here.clusters == r.lcn) {
            here.clusters += r.clusters;
            runs.erase(right);
        }
    }
}

bool in_range(std::int64_t value) { return value >= 0 && value <= kMaxPlanNumber; }

/// The consecutive moves of one stream seen so far: what unit_left_in_part is asked of.
struct MoveRun {
    std::size_t first = 0;  ///< index of its first move
    std::size_t stream = 0;
};

/// Checks the run of moves [run->first, end) of `plan`.
void check_units(const std::vector<Stream>& streams, const Plan& plan, const std::optional<MoveRun>& run,
                 std::size_t end) {
    if (!run) return;
    const Stream& s = streams[run->stream];
    if (const auto vcn = unit_left_in_part(s, std::span(plan.moves).subspan(run->first, end - run->first)))
        reject(run->first,
               "record " + std::to_string(s.mft_record) + " " + s.label() +
                   " is compressed or sparse and these moves leave part of its compression unit of " +
                   std::to_string(s.unit_clusters()) + " clusters at VCN " + std::to_string(*vcn) +
                   " behind (consecutive moves of such a stream must move whole units)");
}

/// A plan's moves carried out one at a time on a volume's streams and free space, validated
/// as apply_plan says. Given `after`, a copy of the volume's streams, it edits their runs in
/// place (apply_plan); without, it copies a stream's runs when a move first touches it
/// (replay_prefixes, which holds no copy of the volume).
class Replay {
    /// What takes freed_'s batches: free_. Defined before its uses, which deduce its type.
    [[nodiscard]] auto to_free() {
        return [this](std::int64_t lo, std::int64_t hi) { free_.add(lo, hi); };
    }

public:
    /// For a plan of `moves` moves: no more streams than that get moved.
    Replay(const VolumeMap& before, std::vector<Stream>* after, std::size_t moves)
        : before_(before),
          lookup_(before.streams),
          free_(before.free),
          after_(after),
          slot_(after ? 0 : before.streams.size()),
          state_(before.streams.size()) {
        require_movable(before);  // a saved plan is no safer than a new one on such a volume
        const std::size_t streams = std::min(moves, before.streams.size());
        reserve_huge(edited_, streams);
        if (!after_) reserve_huge(own_, streams);
    }

    /// Carries out move `index` of `plan`, after the ones before it.
    void step(const Plan& plan, std::size_t index) {
        const Move& m = plan.moves[index];
        if (!in_range(m.vcn) || !in_range(m.from_lcn) || !in_range(m.to_lcn) || !in_range(m.clusters))
            reject(index, "vcn, from_lcn, to_lcn and clusters must lie in [0, 2^62]");
        if (m.clusters == 0) reject(index, "moves no clusters");

        const std::optional<std::size_t> found = lookup_.find(m.mft_record, m.stream);
        if (!found) reject(index, who(m) + " does not exist on this volume");
        const Stream& stream = before_.streams[*found];
        if (!run_ || run_->stream != *found) {
            check_units(before_.streams, plan, run_, index);
            run_ = MoveRun{index, *found};
        }
        if (stream.placement != Placement::Movable)
            reject(index, who(m) + " is " + (stream.placement == Placement::Unmovable ? "unmovable" : "excluded") +
                              (stream.reason.empty() ? "" : " (" + std::string(stream.reason) + ")"));

        const auto edit = [&](auto& runs) {
            check_source(runs, m, index);
            check_destination(m, index);
            rewrite(runs, m);
        };
        if (RunTree* tree = tree_of(*found))
            edit(*tree);
        else
            edit(list(*found));
        // Checked last: finding the destination free and taking it is one descent of the tree.
        auto busy = free_.take(m.to_lcn, m.to_lcn + m.clusters);
        if (busy && !freed_.empty()) {  // it may be what an earlier move left
            give_freed();
            busy = free_.take(m.to_lcn, m.to_lcn + m.clusters);
        }
        if (busy)
            reject(index, "destination " + range_text(m.to_lcn, m.clusters) + " is not free at cluster " +
                              std::to_string(*busy));
        freed_.add(m.from_lcn, m.from_lcn + m.clusters, to_free());
    }

    /// Checks the last run of moves, the first `end` of `plan` having been carried out.
    void finish(const Plan& plan, std::size_t end) const { check_units(before_.streams, plan, run_, end); }

    /// The free clusters as the moves so far leave them.
    [[nodiscard]] const RangeUnion<std::int64_t>& free() {
        give_freed();
        return free_;
    }

    /// Calls visit(index in VolumeMap::streams, runs now) for each stream moved so far.
    template <class Visit>
    void for_each_edited(Visit&& visit) const {
        RunList flat;
        for (const std::uint32_t i : edited_) {
            if (state_[i] == kInList) {
                visit(i, std::span<const Extent>(list(i)));
                continue;
            }
            flat.clear();
            for (const auto& [vcn, e] : trees_.at(i)) flat.push_back(e);
            visit(i, std::span<const Extent>(flat));
        }
    }

    /// Gives the runs held in maps back to `after`'s streams (the others were edited there).
    void write_back() {
        for (auto& [i, tree] : trees_) {
            RunList& extents = (*after_)[i].extents;
            extents.clear();
            extents.reserve(tree.size());
            for (const auto& [vcn, e] : tree) extents.push_back(e);
        }
    }

private:
    enum State : std::uint8_t { kUntouched, kInList, kInTree };

    void check_destination(const Move& m, std::size_t index) const {
        const auto destination = cluster_range(m.to_lcn, m.to_lcn + m.clusters);
        if (m.to_lcn + m.clusters > before_.total_clusters)
            reject(index, "destination " + range_text(m.to_lcn, m.clusters) + " lies outside the volume's " +
                              std::to_string(before_.total_clusters) + " clusters");
        if (boost::icl::intersects(before_.unmovable, destination))
            reject(index, "destination " + range_text(m.to_lcn, m.clusters) + " holds unmovable clusters");
    }

    RunList& list(std::size_t i) { return after_ ? (*after_)[i].extents : own_[slot_[i]]; }
    [[nodiscard]] const RunList& list(std::size_t i) const {
        return after_ ? (*after_)[i].extents : own_[slot_[i]];
    }

    /// Stream i's runs as a map when it has (or has come to have) too many for its vector;
    /// nullptr while the vector serves. Marks it edited.
    RunTree* tree_of(std::size_t i) {
        if (state_[i] == kUntouched) {
            edited_.push_back(static_cast<std::uint32_t>(i));
            if (!after_) {
                slot_[i] = static_cast<std::uint32_t>(own_.size());
                own_.push_back(before_.streams[i].extents);
            }
            state_[i] = kInList;
        }
        if (state_[i] == kInList) {
            RunList& flat = list(i);
            if (flat.size() <= kFlatRuns) return nullptr;
            RunTree& tree = trees_[static_cast<std::uint32_t>(i)];
            for (const Extent& e : flat) tree.emplace_hint(tree.end(), e.vcn, e);
            flat = {};
            state_[i] = kInTree;
        }
        return &trees_.at(static_cast<std::uint32_t>(i));
    }

    void give_freed() { freed_.give_to(to_free()); }

    const VolumeMap& before_;
    StreamLookup lookup_;            // holds streams to 2^32, so 32-bit stream numbers below are safe
    RangeUnion<std::int64_t> free_;  ///< the volume's free clusters, but for freed_
    /// The sources the moves left, given to free_ in sorted batches. A destination is nearly
    /// always free without them (not so for 9 of the 874,368 moves of optimize's plan of a
    /// million files), and is looked for again once the batch is in.
    PendingRanges<std::int64_t> freed_;
    std::vector<Stream>* after_;     ///< the streams edited in place, or null
    /// Without after_: the runs of the streams moved so far, and of no other (a plan that
    /// moves a few streams of a million costs what they do), each at its stream's slot_. A
    /// hash map of them, a node and a rehash away, was a third of the replay that makes the
    /// proofs' prediction of the 1M-file volume's optimize plan, which runs beside the copy.
    std::vector<RunList> own_;
    std::vector<std::uint32_t> slot_;     ///< per stream, without after_
    std::vector<State> state_;            ///< per stream
    std::vector<std::uint32_t> edited_;   ///< streams moved so far, in the order first moved
    std::unordered_map<std::uint32_t, RunTree> trees_;
    std::optional<MoveRun> run_;  ///< the current run of moves of one stream
};

}  // namespace

std::vector<std::uint64_t> files_moved(std::span<const Move> moves) {
    std::vector<std::uint64_t> files;
    files.reserve(moves.size());
    for (const Move& m : moves) files.push_back(m.mft_record);
    std::ranges::sort(files);
    files.erase(std::unique(files.begin(), files.end()), files.end());
    return files;
}

std::optional<std::int64_t> unit_left_in_part(const Stream& stream, const VcnSet& moved) {
    const std::int64_t unit = stream.unit_clusters();
    if (unit <= 1 || moved.empty()) return std::nullopt;
    VcnSet units;  // the whole units the moves touch
    for (const auto& i : moved) {
        const std::int64_t lo = first_cluster(i) / unit * unit;
        const std::int64_t hi = end_cluster(i) - 1 - (end_cluster(i) - 1) % unit;
        units.add(cluster_range(lo, hi + unit));  // VCNs are at most 2^62: no overflow
    }
    // Their allocated clusters that stay behind. Only the runs inside the touched units are
    // looked at: a plan that moves a stream in many runs of moves costs no more per run.
    VcnSet left;
    const auto& runs = stream.extents;
    for (const auto& u : units) {
        auto e = std::partition_point(runs.begin(), runs.end(), [&u](const Extent& r) {
            return r.vcn + r.clusters <= first_cluster(u);
        });
        for (; e != runs.end() && e->vcn < end_cluster(u); ++e)
            if (e->lcn >= 0 && e->clusters > 0)
                left.add(cluster_range(std::max(e->vcn, first_cluster(u)),
                                       std::min(e->vcn + e->clusters, end_cluster(u))));
    }
    left -= moved;
    if (left.empty()) return std::nullopt;
    return first_cluster(*left.begin()) / unit * unit;
}

std::optional<std::int64_t> unit_left_in_part(const Stream& stream, std::span<const Move> run) {
    if (stream.unit_clusters() <= 1) return std::nullopt;
    VcnSet moved;
    for (const Move& m : run) moved.add(cluster_range(m.vcn, m.vcn + m.clusters));
    return unit_left_in_part(stream, moved);
}

void require_32bit(std::size_t count, std::string_view what) {
    if (count > std::numeric_limits<std::uint32_t>::max())
        throw Error(ErrorKind::Unsupported, "a volume of over 4,294,967,295 " + std::string(what));
}

void require_movable(const VolumeMap& map) {
    for (const VolumeFinding& f : map.findings)
        if (f.blocks_moves)
            throw Error(ErrorKind::Corrupt, "volume " + std::to_string(map.partition) + ": " + f.message +
                                                "; run chkdsk before planning");
}

VolumeMap apply_plan(const VolumeMap& before, const Plan& plan) {
    // With room for the attribute lists libntfs-3g adds when a moved file's runlist no
    // longer fits its record (adopt_rehearsal inserts them): a vector copied to its size
    // would move whole for the first one, holding a million streams twice at compaction's
    // peak. A thousandth spare is 63 KB at a million streams, where the 1M-file volume's
    // packing adds one list; a plan that adds more grows the vector as before. (A vector's
    // copy assignment keeps a capacity that fits.)
    VolumeMap after;
    reserve_huge(after.streams, before.streams.size() + before.streams.size() / 1024 + 16);
    after = before;
    Replay replay(before, &after.streams, plan.moves.size());
    for (std::size_t index = 0; index < plan.moves.size(); ++index) replay.step(plan, index);
    replay.finish(plan, plan.moves.size());
    replay.write_back();
    after.free = replay.free().to_set<ClusterSet>();
    return after;
}

ClusterSet replay_plan(const VolumeMap& before, const Plan& plan,
                       const std::function<void(std::size_t, std::span<const Extent>)>& visit) {
    Replay replay(before, nullptr, plan.moves.size());
    for (std::size_t index = 0; index < plan.moves.size(); ++index) replay.step(plan, index);
    replay.finish(plan, plan.moves.size());
    replay.for_each_edited(visit);
    return replay.free().to_set<ClusterSet>();
}

std::vector<PrefixFigures> replay_prefixes(const VolumeMap& before, const Plan& plan, std::span<const std::size_t> ends) {
    if (!std::is_sorted(ends.begin(), ends.end()) || (!ends.empty() && ends.back() > plan.moves.size()))
        throw Error(ErrorKind::Internal, "replay_prefixes: prefixes must grow and lie within the plan");
    std::uint64_t fragmented_before = 0;
    for (const Stream& s : before.streams) fragmented_before += s.fragments() > 1 ? 1 : 0;
    Replay replay(before, nullptr, plan.moves.size());
    std::vector<PrefixFigures> out;
    std::uint64_t moved_clusters = 0;
    auto next = ends.begin();
    for (std::size_t done = 0;; ++done) {
        for (; next != ends.end() && *next == done; ++next) {
            PrefixFigures f;
            f.moves = done;
            f.moved_bytes = moved_clusters * before.cluster_size;
            FreeSpacePenalty penalty(before.cluster_size);
            for (const auto& [lo, hi] : replay.free().ranges()) {
                const auto clusters = static_cast<std::uint64_t>(hi - lo);
                ++f.free_extents;
                f.largest_free_extent_clusters = std::max(f.largest_free_extent_clusters, clusters);
                penalty.add(clusters);
            }
            f.free_space_fragmentation_percent = penalty.percent();
            f.fragmented_streams = fragmented_before;
            replay.for_each_edited([&](std::size_t i, std::span<const Extent> runs) {
                f.fragmented_streams -= before.streams[i].fragments() > 1 ? 1 : 0;
                f.fragmented_streams += fragments_of(runs) > 1 ? 1 : 0;
            });
            out.push_back(f);
        }
        if (done == plan.moves.size()) break;
        replay.step(plan, done);
        moved_clusters += static_cast<std::uint64_t>(plan.moves[done].clusters);
    }
    replay.finish(plan, plan.moves.size());
    return out;
}

}  // namespace guestfrag
