// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/plan/planner.hpp"

#include <array>
#include <map>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "core/io/heap.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/strategy.hpp"

namespace guestfrag {

namespace {

constexpr std::array<std::pair<Strategy, std::string_view>, 5> kNames{{
    {Strategy::Defrag, "defrag"},
    {Strategy::Consolidate, "consolidate"},
    {Strategy::ThinSafe, "thin-safe"},
    {Strategy::Optimize, "optimize"},
    {Strategy::Shrink, "shrink"},
}};

char fold(char c) {
    if (c == '/') return '\\';
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// Matches one bracket expression at glob[g] ('[' ...']') against c; sets `end` past it.
/// Returns nullopt when the bracket is not closed (then '[' is an ordinary character).
std::optional<bool> match_bracket(std::string_view glob, std::size_t g, char c, std::size_t& end) {
    std::size_t i = g + 1;
    const bool negate = i < glob.size() && (glob[i] == '!' || glob[i] == '^');
    if (negate) ++i;
    bool matched = false;
    bool first = true;
    for (; i < glob.size() && (glob[i] != ']' || first); first = false) {
        char lo = fold(glob[i]);
        char hi = lo;
        if (i + 2 < glob.size() && glob[i + 1] == '-' && glob[i + 2] != ']') {
            hi = fold(glob[i + 2]);
            i += 3;
        } else {
            ++i;
        }
        if (lo <= c && c <= hi) matched = true;
    }
    if (i >= glob.size()) return std::nullopt;
    end = i + 1;
    return matched != negate;
}

}  // namespace

std::string_view strategy_name(Strategy strategy) noexcept {
    for (const auto& [s, name] : kNames)
        if (s == strategy) return name;
    return "defrag";
}

std::optional<Strategy> parse_strategy(std::string_view name) noexcept {
    for (const auto& [s, n] : kNames)
        if (n == name) return s;
    return std::nullopt;
}

std::string strategy_choices() {
    std::string text;
    for (std::size_t i = 0; i < kStrategies.size(); ++i) {
        if (i != 0) text += i + 1 == kStrategies.size() ? " or " : ", ";
        text += strategy_name(kStrategies[i]);
    }
    return text;
}

std::string PlacementOrder::text() const {
    switch (kind) {
        case Kind::Size:
            return "size";
        case Kind::Mft:
            return "mft";
        case Kind::Path:
            return "path";
        case Kind::Trace:
            return "trace:" + trace_source;
    }
    return {};
}

PlacementOrder parse_order(std::string_view text) {
    PlacementOrder order;
    if (text == "size") return order;
    if (text == "mft" || text == "path") {
        order.kind = text == "mft" ? PlacementOrder::Kind::Mft : PlacementOrder::Kind::Path;
        return order;
    }
    if (text.starts_with("trace:") && text.size() > 6) {
        order.kind = PlacementOrder::Kind::Trace;
        order.trace_source = std::string(text.substr(6));
        return order;
    }
    throw Error(ErrorKind::Unsupported,
                "unknown order '" + std::string(text) + "' (expected size, mft, path or trace:SOURCE)");
}

bool takes_order(Strategy strategy) noexcept {
    return strategy == Strategy::Defrag || strategy == Strategy::Consolidate ||
           strategy == Strategy::Optimize;
}

std::optional<PlacementOrder> default_order(Strategy strategy) {
    if (!takes_order(strategy)) return std::nullopt;
    // optimize is for free space, and best fit by size packs it best: it beats the peer's full
    // optimization on every figure, where MFT order on small volumes keeps no layout within
    // optimize's promise. MFT order serves `scan` best for the others (docs/planner.md §14).
    return PlacementOrder{
        strategy == Strategy::Optimize ? PlacementOrder::Kind::Size : PlacementOrder::Kind::Mft, {}};
}

std::optional<PlacementOrder> effective_order(const PlanOptions& options) {
    if (!options.order) return default_order(options.strategy);
    if (!takes_order(options.strategy))
        throw Error(ErrorKind::Unsupported, std::string(strategy_name(options.strategy)) +
                                                " cannot take --order " + options.order->text() +
                                                ": it places streams by what is allocated, in no order "
                                                "(orders: defrag, consolidate and optimize)");
    return options.order;
}

Strategy recommended_strategy(const std::vector<Layer>& layers, std::uint64_t virtual_size) {
    if (layers.size() > 1) return Strategy::ThinSafe;
    if (!layers.empty() && layers.front().allocated_bytes() < virtual_size) return Strategy::ThinSafe;
    return Strategy::Defrag;
}

bool path_matches(std::string_view glob, std::string_view path) {
    // Iterative wildcard matching: on a mismatch, let the last '*' swallow one more character.
    std::size_t g = 0;
    std::size_t p = 0;
    std::optional<std::pair<std::size_t, std::size_t>> star;  // (glob after '*', path position)
    while (p < path.size()) {
        const char c = fold(path[p]);
        if (g < glob.size()) {
            if (glob[g] == '*') {
                star = {++g, p};
                continue;
            }
            if (glob[g] == '?') {
                ++g;
                ++p;
                continue;
            }
            if (glob[g] == '[') {
                std::size_t end = 0;
                if (const auto hit = match_bracket(glob, g, c, end)) {
                    if (*hit) {
                        g = end;
                        ++p;
                        continue;
                    }
                } else if (c == '[') {
                    ++g;
                    ++p;
                    continue;
                }
            } else if (fold(glob[g]) == c) {
                ++g;
                ++p;
                continue;
            }
        }
        if (!star) return false;
        g = star->first;
        p = ++star->second;
    }
    while (g < glob.size() && glob[g] == '*') ++g;
    return g == glob.size();
}

namespace {

/// optimize's promise (docs/planner.md §12) for the plan as made, not only for its layout:
/// streams that could not reach their places (a cycle with no free room to break it, a
/// --max-growth skip) or a --max-moved stop leave free space other than the layout said.
/// When the whole plan breaks the promise (a free-space figure worse than before) or gains
/// nothing (no fragmented stream joined, no free-space figure better), the plan is cut to
/// its longest prefix, ending between two streams' moves, that keeps the promise and gains
/// something, or to nothing. Cost: none when the plan keeps it; else a replay of the plan
/// with up to 64 prefixes and one apply_plan.
/// A note on the streams `plan` moves more than once (optimize's detours, docs/planner.md §12),
/// counted from the moves themselves: how many, and the bytes of their clusters moved again.
/// Nothing when none is. O(moves · log).
void note_moved_twice(Plan& plan, std::uint32_t cluster_size) {
    std::map<std::pair<std::uint64_t, StreamLabel>, ClusterSet> moved;  // each stream's VCNs moved so far
    std::set<std::pair<std::uint64_t, StreamLabel>> twice;
    std::int64_t again = 0;
    for (const Move& m : plan.moves) {
        const auto key = std::pair{m.mft_record, m.stream};
        ClusterSet& vcns = moved[key];
        const auto range = ClusterSet::interval_type::right_open(m.vcn, m.vcn + m.clusters);
        if (const std::int64_t n = boost::icl::length(vcns & range); n > 0) {
            again += n;
            twice.insert(key);
        }
        vcns += range;
    }
    if (twice.empty()) return;
    plan.notes.push_back(
        std::to_string(twice.size()) + " streams (" +
        planner::bytes_text(static_cast<std::uint64_t>(again) * cluster_size) +
        ") moved twice: each went to free room first, to break a cycle of streams waiting for "
        "each other's place or to make way for itself; the data moved counts both moves");
}

void keep_optimize_promise(const VolumeMap& volume, const std::vector<Layer>& layers, std::uint64_t granule,
                           PlanOutcome& out) {
    Plan& plan = out.plan;
    const PlanSummary b = plan.summary;  // its before-figures are the volume's
    const double frag_before = b.free_space_fragmentation_percent_before.value_or(0);
    const auto keeps = [&](std::uint64_t extents, std::uint64_t largest, double fragmentation) {
        return extents <= b.free_extents_before && largest >= b.largest_free_extent_clusters_before &&
               fragmentation <= frag_before;
    };
    const auto gains = [&](std::uint64_t fragmented, std::uint64_t extents, std::uint64_t largest,
                           double fragmentation) {
        return fragmented < b.fragmented_streams_before || extents < b.free_extents_before ||
               largest > b.largest_free_extent_clusters_before || fragmentation < frag_before;
    };
    const double frag_after = b.free_space_fragmentation_percent_after.value_or(0);
    if (plan.moves.empty() ||
        (keeps(b.free_extents_after, b.largest_free_extent_clusters_after, frag_after) &&
         gains(b.fragmented_streams_after, b.free_extents_after, b.largest_free_extent_clusters_after,
               frag_after)))
        return;

    std::vector<std::size_t> ends;  // where one stream's moves end and another's begin
    for (std::size_t i = 1; i < plan.moves.size(); ++i)
        if (plan.moves[i].mft_record != plan.moves[i - 1].mft_record ||
            plan.moves[i].stream != plan.moves[i - 1].stream)
            ends.push_back(i);
    constexpr std::size_t kMostPrefixes = 64;
    if (ends.size() > kMostPrefixes) {
        std::vector<std::size_t> some;
        for (std::size_t k = 1; k <= kMostPrefixes; ++k)
            some.push_back(ends[ends.size() * k / kMostPrefixes - 1]);
        ends = std::move(some);
    }
    std::size_t keep = 0;
    for (const PrefixFigures& f : replay_prefixes(volume, plan, ends))
        if (keeps(f.free_extents, f.largest_free_extent_clusters, f.free_space_fragmentation_percent) &&
            gains(f.fragmented_streams, f.free_extents, f.largest_free_extent_clusters,
                  f.free_space_fragmentation_percent))
            keep = f.moves;
    const std::size_t left_out = plan.moves.size() - keep;
    plan.moves.resize(keep);
    if (keep == 0) plan.skipped = {};
    plan.notes.push_back(
        keep == 0 ? "nothing moved: every prefix of the plan would leave free space worse than it is, or "
                    "gain nothing"
                  : "the last " + std::to_string(left_out) +
                        " moves were left out: without the streams that could not reach their places, "
                        "they would leave free space worse than it is");
    out.after = apply_plan(volume, plan);
    plan.summary = summarize_plan(volume, out.after, layers, granule, plan);
}

}  // namespace

Plan make_plan(const VolumeMap& volume, const std::vector<Layer>& layers, const PlanIdentity& identity,
               const PlanOptions& options, const Progress& progress) {
    return plan_and_apply(volume, layers, identity, options, progress).plan;
}

PlanOutcome plan_and_apply(const VolumeMap& volume, const std::vector<Layer>& layers, const PlanIdentity& identity,
                           const PlanOptions& options, const Progress& progress) {
    // Before any free-space bookkeeping: its invariants (one owner per cluster, $Bitmap in
    // step with the files) are the volume's to keep, and a volume that breaks them is input
    // to refuse, not a planner bug.
    const std::optional<PlacementOrder> order = effective_order(options);
    require_movable(volume);
    PlanOutcome out;
    Plan& plan = out.plan;
    plan.identity = identity;
    plan.strategy = std::string(strategy_name(options.strategy));
    if (order) plan.order = order->text();
    planner::Builder builder(volume, layers, options, plan);
    switch (options.strategy) {
        case Strategy::Defrag:
            planner::plan_defrag(builder, false, progress);
            break;
        case Strategy::ThinSafe:
            planner::plan_defrag(builder, true, progress);
            break;
        case Strategy::Consolidate:
            planner::plan_consolidate(builder, progress);
            break;
        case Strategy::Optimize:
            planner::plan_optimize(builder, progress);
            break;
        case Strategy::Shrink:
            planner::plan_shrink(builder, progress);
            break;
    }
    release_freed_memory();  // the strategy's tables, before the after-map is built

    try {
        out.after = apply_plan(volume, plan);
    } catch (const Error& e) {
        // The planner's own output failing the validator is our bug, not bad input.
        throw Error(ErrorKind::Internal, std::string("planner produced an invalid plan: ") + e.what());
    }
    if (!options.carried_out_at_once || options.strategy == Strategy::Optimize)
        plan.summary = summarize_plan(volume, out.after, layers, builder.growth().granule(), plan);
    if (options.strategy == Strategy::Optimize) {
        keep_optimize_promise(volume, layers, builder.growth().granule(), out);
        note_moved_twice(plan, volume.cluster_size);
    }
    release_freed_memory();  // the replay's tables, before the caller's next phase
    return out;
}

}  // namespace guestfrag
