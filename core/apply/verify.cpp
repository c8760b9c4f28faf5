// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/verify.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <compare>
#include <cstring>
#include <future>
#include <iterator>
#include <memory>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/image/read_window.hpp"
#include "core/io/heap.hpp"
#include "core/io/xxh3.hpp"
#include "core/plan/apply.hpp"

namespace guestfrag {
namespace {

constexpr std::uint64_t kBlock = 1 << 20;

struct FreeState {
    void operator()(XXH3_state_t* s) const noexcept { XXH3_freeState(s); }
};

/// Runs with neighbours contiguous in both VCN and LCN merged: two readers (or a prediction
/// and a reader) may split the same allocation differently.
std::vector<Extent> merged(std::span<const Extent> extents) {
    std::vector<Extent> out;
    for (const Extent& e : extents) {
        if (!out.empty()) {
            Extent& prev = out.back();
            const bool holes = prev.lcn == Extent::kSparse && e.lcn == Extent::kSparse;
            const bool contiguous =
                prev.lcn != Extent::kSparse && e.lcn != Extent::kSparse && prev.lcn + prev.clusters == e.lcn;
            if (prev.vcn + prev.clusters == e.vcn && (holes || contiguous)) {
                prev.clusters += e.clusters;
                continue;
            }
        }
        out.push_back(e);
    }
    return out;
}

std::string runs_text(const std::vector<Extent>& extents) {
    std::string out;
    for (const Extent& e : extents) {
        if (!out.empty()) out += ' ';
        out += std::to_string(e.vcn) + ":" + (e.lcn == Extent::kSparse ? "hole" : std::to_string(e.lcn)) +
               "+" + std::to_string(e.clusters);
        if (out.size() > 200) return out + " ...";
    }
    return out;
}

/// Reads bytes [offset, offset + out.size()) of `stream` of `volume` on `image` (holes and
/// what lies past the runs read as zeros).
void read_stream(const DiskImage& image, const VolumeMap& volume, const Stream& stream, std::uint64_t offset,
                 std::span<std::byte> out) {
    std::fill(out.begin(), out.end(), std::byte{0});
    const std::uint64_t cs = volume.cluster_size;
    for (const Extent& e : stream.extents) {
        const std::uint64_t lo = static_cast<std::uint64_t>(e.vcn) * cs;
        const std::uint64_t hi = lo + static_cast<std::uint64_t>(e.clusters) * cs;
        const std::uint64_t a = std::max(lo, offset);
        const std::uint64_t b = std::min(hi, offset + out.size());
        if (a >= b || e.lcn == Extent::kSparse) continue;
        image.read(volume.partition_offset + static_cast<std::uint64_t>(e.lcn) * cs + (a - lo),
                   out.subspan(a - offset, b - a));
    }
}

const Stream& mft_stream(const VolumeMap& volume, AttrType type) {
    for (const Stream& s : volume.streams)
        if (s.mft_record == 0 && s.type == static_cast<std::uint32_t>(type) && s.name.empty()) return s;
    throw Error(ErrorKind::Corrupt,
                "the volume has no $MFT stream of type " + std::to_string(static_cast<std::uint32_t>(type)));
}

/// The base record a raw MFT record belongs to: its base reference (offset 0x20, the low 48
/// bits), or its own number when that is 0.
std::uint64_t base_of(std::span<const std::byte> record, std::uint64_t number) {
    std::uint64_t reference = 0;
    for (int i = 5; i >= 0; --i)
        reference = reference << 8 | std::to_integer<std::uint64_t>(record[0x20 + i]);
    return reference == 0 ? number : reference;
}

/// Where `value` is in `sorted`, or its end.
std::span<const std::uint64_t>::iterator find_sorted(std::span<const std::uint64_t> sorted, std::uint64_t value) {
    const auto it = std::ranges::lower_bound(sorted, value);
    return it != sorted.end() && *it == value ? it : sorted.end();
}

std::string first_interval(const ClusterSet& set) {
    const auto& i = *set.begin();
    return "LCN " + std::to_string(i.lower()) + "-" + std::to_string(i.upper() - 1);
}

}  // namespace

std::vector<std::optional<std::uint64_t>> stream_digests(const DiskImage& image, const VolumeMap& volume,
                                                         const Progress& progress,
                                                         const std::function<bool(const Stream&)>& skip,
                                                         unsigned workers) {
    const std::uint64_t cs = volume.cluster_size;
    // Streams are hashed in the order of their first cluster, through a window of up to
    // 1 MiB read at once. On a volume of a million small files one read per extent made
    // the proof two million system calls, most of its time; in disk order one read serves
    // neighbouring files. A window spans the first runs of the streams that follow only
    // while each lies within kGap of the one before, so it reads at most 17 times the
    // bytes it serves (4 KiB runs with 64 KiB between them), and nearly nothing more on a
    // packed volume.
    constexpr std::uint64_t kGap = 64 << 10;
    constexpr std::uint64_t kStreamCost = 4 << 10;  // what a stream costs beyond its bytes, as bytes
    struct First {  // 16 bytes: a million streams are ordered at once
        std::uint64_t lo = 0;     // disk bytes of the stream's first run (its first MiB)
        std::uint32_t bytes = 0;  // ≤ kBlock
        std::uint32_t stream = 0;
        [[nodiscard]] std::uint64_t hi() const { return lo + bytes; }
        auto operator<=>(const First&) const = default;
    };
    require_32bit(volume.streams.size(), "streams");
    std::vector<First> order;
    reserve_huge(order, volume.streams.size());
    for (std::uint32_t i = 0; i < volume.streams.size(); ++i) {
        const Stream& s = volume.streams[i];
        if (skip && skip(s)) continue;
        const auto run = std::ranges::find_if(s.extents, [](const Extent& e) { return e.lcn != Extent::kSparse; });
        if (run == s.extents.end()) {
            order.push_back({0, 0, i});
            continue;
        }
        const std::uint64_t lo = volume.partition_offset + static_cast<std::uint64_t>(run->lcn) * cs;
        order.push_back(
            {lo, static_cast<std::uint32_t>(std::min(kBlock, static_cast<std::uint64_t>(run->clusters) * cs)), i});
    }
    std::ranges::sort(order);

    std::vector<std::optional<std::uint64_t>> out;
    reserve_huge(out, volume.streams.size());
    out.resize(volume.streams.size());
    const std::vector<std::byte> zeros(kBlock);
    std::atomic<std::uint64_t> done{0};
    // Pieces of about equal bytes (a stream's first run stands for it), in disk order, each
    // taken by the next worker free: a worker that shares its core with other work (the
    // proofs beside the output's hashing) takes fewer, and all end together. With shares
    // fixed in advance, one worker went on alone for the last third of a second of the
    // 1M-file volume's hashing.
    std::vector<std::size_t> bounds{0};
    if (workers > 1 && !order.empty()) {
        const std::uint64_t pieces = std::uint64_t{workers} * 16;
        std::uint64_t total = 0;
        for (const First& f : order) total += f.bytes + kStreamCost;
        std::uint64_t sum = 0;
        for (std::size_t k = 0; k < order.size(); ++k) {
            sum += order[k].bytes + kStreamCost;
            if (sum * pieces >= total * bounds.size()) bounds.push_back(k + 1);
        }
    }
    if (bounds.back() != order.size()) bounds.push_back(order.size());
    std::atomic<std::size_t> next_piece{0};
    constexpr std::size_t kAhead = 16;      // streams, for the prefetches
    constexpr std::uint64_t kBatch = 1024;  // streams, for the progress count
    // Hashes the pieces it takes, each through the worker's own window. Only the calling
    // thread reports progress (all workers' streams); the others stop at a request.
    const auto hash_pieces = [&](bool reports) {
        std::unique_ptr<XXH3_state_t, FreeState> state(XXH3_createState());
        if (!state) throw std::bad_alloc();
        ReadWindow window(image, kBlock, kGap);
        std::uint64_t uncounted = 0;
        for (std::size_t piece; (piece = next_piece.fetch_add(1)) + 1 < bounds.size();) {
            const std::size_t last = bounds[piece + 1];
            // Hashes disk bytes [at, at + n), n ≤ kBlock, for the k-th stream of `order`.
            const auto hash_disk = [&](std::uint64_t at, std::uint64_t n, std::size_t k) {
                const std::span<const std::byte> bytes = window.read(at, n, [&](std::size_t j) {
                    const std::size_t next = k + 1 + j;
                    return next < last ? std::optional<DiskRange>({order[next].lo, order[next].hi()})
                                       : std::nullopt;
                });
                XXH3_64bits_update(state.get(), bytes.data(), bytes.size());
            };
            for (std::size_t k = bounds[piece]; k < last; ++k) {
                if (reports)
                    progress.update(done.load(std::memory_order_relaxed), order.size());
                else if (progress.stop.stop_requested())
                    return;
                // Disk order is no order in volume.streams: on a million streams each one
                // missed the cache for its Stream, then for its runs and its digest's slot,
                // an eighth of compact's user time. Those of the streams a few ahead are
                // asked for now, the Stream first.
                if (k + 2 * kAhead < last)
                    __builtin_prefetch(&volume.streams[order[k + 2 * kAhead].stream].extents);
                if (k + kAhead < last) {
                    const std::size_t ahead = order[k + kAhead].stream;
                    __builtin_prefetch(volume.streams[ahead].extents.data());
                    __builtin_prefetch(&out[ahead], 1);
                }
                const std::size_t i = order[k].stream;
                XXH3_64bits_reset(state.get());
                for (const Extent& e : volume.streams[i].extents) {
                    const std::uint64_t bytes = static_cast<std::uint64_t>(e.clusters) * cs;
                    for (std::uint64_t at = 0; at < bytes;) {
                        const std::uint64_t n = std::min(kBlock, bytes - at);
                        if (e.lcn == Extent::kSparse)
                            XXH3_64bits_update(state.get(), zeros.data(), n);
                        else
                            hash_disk(volume.partition_offset + static_cast<std::uint64_t>(e.lcn) * cs + at,
                                      n, k);
                        at += n;
                    }
                }
                out[i] = XXH3_64bits_digest(state.get());
                // Counted in batches: the workers adding one a stream to the one counter
                // took its cache line from each other a million times.
                if (++uncounted == kBatch)
                    done.fetch_add(std::exchange(uncounted, 0), std::memory_order_relaxed);
            }
            done.fetch_add(std::exchange(uncounted, 0), std::memory_order_relaxed);
        }
    };
    std::vector<std::future<void>> others;
    for (unsigned w = 1; w < std::min<std::size_t>(workers, bounds.size() - 1); ++w)
        others.push_back(std::async(std::launch::async, hash_pieces, false));
    try {
        hash_pieces(true);
    } catch (...) {
        next_piece.store(bounds.size());  // the others take no more
        for (std::future<void>& other : others) other.wait();
        throw;
    }
    for (std::future<void>& other : others)
        while (other.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready)
            progress.update(done.load(std::memory_order_relaxed), order.size());
    for (std::future<void>& other : others) other.get();  // rethrows a worker's failure
    progress.update(order.size(), order.size());
    return out;
}

std::uint64_t runs_digest(std::span<const Extent> runs) {
    const std::vector<Extent> whole = merged(runs);
    std::vector<std::int64_t> fields;
    fields.reserve(whole.size() * 3);
    for (const Extent& e : whole) fields.insert(fields.end(), {e.vcn, e.lcn, e.clusters});
    return XXH3_64bits(fields.data(), fields.size() * sizeof(std::int64_t));
}

static_assert(sizeof(ExpectedVolume::Entry) == 40, "docs/apply.md: 40 bytes a stream");

ExpectedVolume expect_volume(const VolumeMap& before, const Plan& plan, std::vector<std::uint64_t> moved,
                             const std::vector<std::optional<std::uint64_t>>& contents) {
    if (!contents.empty() && contents.size() != before.streams.size())
        throw Error(ErrorKind::Internal, "expect_volume: a digest a stream");
    ExpectedVolume out;
    out.moved = std::move(moved);
    VolumeMap& mft = out.input_mft;
    mft.partition = before.partition;
    mft.partition_offset = before.partition_offset;
    mft.cluster_size = before.cluster_size;
    mft.mft_record_size = before.mft_record_size;
    mft.total_clusters = before.total_clusters;
    mft.mft_records_total = before.mft_records_total;
    mft.mft_records_in_use = before.mft_records_in_use;
    std::ranges::copy_if(before.streams, std::back_inserter(mft.streams),
                         [](const Stream& s) { return s.mft_record == 0; });  // $MFT

    reserve_huge(out.streams, before.streams.size());
    // Where each expected list sits in `lists`, by its index in before.streams.
    std::vector<std::pair<std::size_t, std::size_t>> list_at;
    for (std::size_t i = 0; i < before.streams.size(); ++i) {
        const Stream& s = before.streams[i];
        ExpectedVolume::Entry& e = out.streams.emplace_back();
        e.record = s.mft_record;
        e.type = s.type;
        e.name = StreamLabel(s.name);
        e.runs = runs_digest(s.extents);
        if (!contents.empty() && contents[i]) {
            e.hashed = true;
            e.contents = *contents[i];
        }
        const std::uint64_t fragments = s.fragments();
        out.fragments_before += fragments;
        out.fragments_expected += fragments;
        if (s.type == static_cast<std::uint32_t>(AttrType::AttributeList) &&
            std::ranges::binary_search(out.moved, s.mft_record)) {
            list_at.emplace_back(i, out.lists.size());
            out.lists.push_back(s);
        }
    }
    out.free = replay_plan(before, plan, [&](std::size_t i, std::span<const Extent> runs) {
        out.streams[i].runs = runs_digest(runs);
        out.fragments_expected -= before.streams[i].fragments();
        out.fragments_expected += fragments_of(runs);
        const auto at = std::ranges::lower_bound(list_at, std::pair{i, std::size_t{0}});
        if (at != list_at.end() && at->first == i) out.lists[at->second].extents.assign(runs.begin(), runs.end());
    });
    return out;
}

namespace {

/// map_order of an expected stream against a map's stream.
std::strong_ordering compare(const ExpectedVolume::Entry& e, const Stream& s) {
    using Key = std::tuple<std::uint64_t, std::uint32_t, std::string_view>;
    return Key(e.record, e.type, e.name) <=> Key(s.mft_record, s.type, s.name);
}

std::string name_of(const ExpectedVolume::Entry& e) {
    return "record " + std::to_string(e.record) + " " + stream_label(e.type, e.name);
}

std::string name_of(const Stream& s) { return "record " + std::to_string(s.mft_record) + " " + s.label(); }

}  // namespace

std::optional<std::string> digest_difference(const ExpectedVolume& expected, const VolumeMap& after,
                                             const std::vector<std::optional<std::uint64_t>>& got) {
    std::size_t j = 0;
    for (const ExpectedVolume::Entry& e : expected.streams) {
        // A moved file's list holds the records of its new runlist: libntfs-3g rewrites,
        // shortens or removes it (attribute_list_changes proves what is left).
        const bool moved_list = e.type == static_cast<std::uint32_t>(AttrType::AttributeList) &&
                                std::ranges::binary_search(expected.moved, e.record);
        if (!e.hashed || moved_list) continue;
        while (j < after.streams.size() && compare(e, after.streams[j]) > 0) ++j;
        if (j == after.streams.size() || compare(e, after.streams[j]) != 0) return name_of(e);
        if (got.at(j) && *got[j] != e.contents) return name_of(e);
    }
    return std::nullopt;
}

std::optional<std::string> allocation_difference(const ExpectedVolume& expected, const VolumeMap& actual,
                                                 const AttributeListChanges& adopted) {
    const ClusterSet free = (expected.free + adopted.gone) - adopted.added;
    if (free != actual.free) {
        const ClusterSet missing = free - actual.free;
        const ClusterSet extra = actual.free - free;
        return missing.empty()
                   ? "free space differs: " + first_interval(extra) + " is free but should be used"
                   : "free space differs: " + first_interval(missing) + " is used but should be free";
    }
    // An adopted list is as `actual` holds it, on both sides alike: left out of the walk.
    const auto adopted_list = [&adopted](std::uint64_t record, std::uint32_t type) {
        return type == static_cast<std::uint32_t>(AttrType::AttributeList) && adopted.records.count(record) != 0;
    };
    const auto adopted_stream = [&](const Stream& s) { return adopted_list(s.mft_record, s.type); };
    std::size_t j = 0;
    std::optional<std::size_t> first_extra;  // the first stream of `actual` that `expected` lacks
    for (const ExpectedVolume::Entry& e : expected.streams) {
        if (adopted_list(e.record, e.type)) continue;
        for (; j < actual.streams.size() && compare(e, actual.streams[j]) > 0; ++j)
            if (!first_extra && !adopted_stream(actual.streams[j])) first_extra = j;
        if (j == actual.streams.size() || compare(e, actual.streams[j]) != 0) return name_of(e) + " is missing";
        const Stream& got = actual.streams[j];
        if (runs_digest(got.extents) != e.runs)
            return name_of(got) + " has runs " + runs_text(merged(got.extents)) + ", not those the plan predicted";
        ++j;
    }
    for (; !first_extra && j < actual.streams.size(); ++j)
        if (!adopted_stream(actual.streams[j])) first_extra = j;
    if (first_extra) return name_of(actual.streams[*first_extra]) + " was not there before";
    return std::nullopt;
}

ChangedRecords changed_records(const DiskImage& input, const VolumeMap& before, const DiskImage& output,
                               const VolumeMap& after, std::span<const std::uint64_t> moved,
                               const std::stop_token& stop) {
    ChangedRecords out;
    std::optional<std::string>& difference = out.difference;
    const std::uint64_t size = before.mft_record_size;
    if (size < 64 || size != after.mft_record_size || size > kBlock) {
        difference = "the MFT record size differs or is not one NTFS uses";
        return out;
    }
    const std::uint64_t records = std::min(before.mft_records_total, after.mft_records_total);
    const Stream& mft_in = mft_stream(before, AttrType::Data);
    const Stream& mft_out = mft_stream(after, AttrType::Data);
    std::vector<std::byte> bits_in((records + 7) / 8);
    std::vector<std::byte> bits_out(bits_in.size());
    read_stream(input, before, mft_stream(before, AttrType::Bitmap), 0, bits_in);
    read_stream(output, after, mft_stream(after, AttrType::Bitmap), 0, bits_out);
    const auto in_use = [](const std::vector<std::byte>& bits, std::uint64_t r) {
        return (std::to_integer<unsigned>(bits[r / 8]) >> (r % 8) & 1u) != 0;
    };

    // One thread, beside the analysis of the output (verify_copy). `changed` marks, by index
    // in `moved`, the files a record of which changed.
    std::vector<bool> changed(moved.size());
    const std::uint64_t per_block = kBlock / size;
    std::vector<std::byte> a(per_block * size);
    std::vector<std::byte> b(a.size());
    for (std::uint64_t first = 0; first < records && !difference; first += per_block) {
        if (stop.stop_requested()) throw Error(ErrorKind::Cancelled, "the records' comparison was stopped");
        const std::uint64_t n = std::min(per_block, records - first);
        read_stream(input, before, mft_in, first * size, std::span(a.data(), n * size));
        read_stream(output, after, mft_out, first * size, std::span(b.data(), n * size));
        for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint64_t r = first + i;
            const auto ra = std::span<const std::byte>(a).subspan(i * size, size);
            const auto rb = std::span<const std::byte>(b).subspan(i * size, size);
            const bool was = in_use(bits_in, r);
            const bool is = in_use(bits_out, r);
            // memcmp, not std::equal: libstdc++ compares std::byte ranges a byte at a time.
            if (was == is && std::memcmp(ra.data(), rb.data(), size) == 0) continue;
            const std::uint64_t base_in = base_of(ra, r);
            const std::uint64_t base_out = base_of(rb, r);
            auto file = find_sorted(moved, base_in);
            if (file == moved.end()) file = find_sorted(moved, base_out);
            if (file == moved.end()) {
                const char* what = was == is ? " changed" : is ? " came into use" : " was freed";
                difference = "MFT record " + std::to_string(r) + what +
                             ", but it is no record of a file whose streams moved";
                break;
            }
            changed[static_cast<std::size_t>(file - moved.begin())] = true;
            ++out.records;
            if (was && !is) ++out.freed;
            if (!was && is) ++out.added;
        }
    }
    if (const auto first = std::ranges::find(changed, false); !difference && first != changed.end())
        difference = "no MFT record of file " + std::to_string(moved[static_cast<std::size_t>(first - changed.begin())]) +
                     " changed, but its streams moved";
    return out;
}

std::optional<std::string> mft_map_difference(const VolumeMap& mft, const VolumeMap& volume) {
    if (mft.mft_record_size != volume.mft_record_size || mft.mft_records_total != volume.mft_records_total)
        return "the records of $MFT differ as its mount and its records count them";
    for (const AttrType type : {AttrType::Data, AttrType::Bitmap})
        if (runs_digest(mft_stream(mft, type).extents) != runs_digest(mft_stream(volume, type).extents))
            return "the runs of $MFT's " + stream_label(static_cast<std::uint32_t>(type), "") +
                   " differ as its mount and its records map them";
    return std::nullopt;
}

AttributeListChanges attribute_list_changes(const ExpectedVolume& expected, const VolumeMap& actual) {
    const auto is_list = [](const Stream& s) {
        return s.type == static_cast<std::uint32_t>(AttrType::AttributeList);
    };
    // The list of `record` among `streams` (sorted by record), or null when it has none.
    const auto list_of = [&](const std::vector<Stream>& streams, std::uint64_t record) -> const Stream* {
        auto it = std::lower_bound(streams.begin(), streams.end(), record,
                                   [](const Stream& s, std::uint64_t r) { return s.mft_record < r; });
        for (; it != streams.end() && it->mft_record == record; ++it)
            if (is_list(*it)) return &*it;
        return nullptr;
    };
    const auto clusters = [](const std::vector<Extent>& runs) {
        ClusterSet set;
        for (const Extent& e : runs)
            if (e.lcn != Extent::kSparse)
                set.add(boost::icl::interval<std::int64_t>::right_open(e.lcn, e.lcn + e.clusters));
        return set;
    };
    // `runs` cut at VCN `end`.
    const auto prefix = [](const std::vector<Extent>& runs, std::int64_t end) {
        std::vector<Extent> cut;
        for (const Extent& e : runs) {
            if (e.vcn >= end) break;
            cut.push_back(e);
            cut.back().clusters = std::min(e.clusters, end - e.vcn);
        }
        return cut;
    };
    const auto end_of = [](const std::vector<Extent>& runs) {
        return runs.empty() ? std::int64_t{0} : runs.back().vcn + runs.back().clusters;
    };
    AttributeListChanges changes;
    for (const std::uint64_t record : expected.moved) {
        const Stream* was_stream = list_of(expected.lists, record);
        const Stream* now = list_of(actual.streams, record);
        const std::vector<Extent> was =
            was_stream == nullptr ? std::vector<Extent>{} : merged(was_stream->extents);
        const std::vector<Extent> kept = now == nullptr ? std::vector<Extent>{} : merged(now->extents);
        if (kept == was) continue;
        if (prefix(was, end_of(kept)) == kept) {
            // libntfs-3g truncated the list (ntfs_attr_record_rm): what remains is its first
            // clusters, in VCN order; the rest is free.
            const ClusterSet gone = clusters(was) - clusters(kept);
            changes.freed += static_cast<std::uint64_t>(boost::icl::length(gone));
            changes.gone += gone;
        } else if (prefix(kept, end_of(was)) == was && now != nullptr) {
            // libntfs-3g grew the list, or made a resident one non-resident, as a longer
            // runlist needed more entries: the clusters it took must have been free.
            // Free as amended so far: another list may have freed them, or taken them.
            const ClusterSet added = clusters(kept) - clusters(was);
            if (!boost::icl::contains(expected.free, added - changes.gone) ||
                boost::icl::intersects(changes.added, added))
                continue;
            changes.taken += static_cast<std::uint64_t>(boost::icl::length(added));
            changes.added += added;
        } else {
            continue;  // anything else is allocation_difference's to report
        }
        changes.records.insert(record);
    }
    return changes;
}

std::optional<std::string> bitmap_difference(const VolumeMap& volume) {
    // The runs sorted by LCN, then merged into the claimed set from its end: inserted in the
    // map's order, a million runs would be a million intervals before they merge.
    std::vector<std::pair<std::int64_t, std::int64_t>> runs;
    std::size_t count = 0;
    for (const Stream& s : volume.streams) count += s.extents.size();
    reserve_huge(runs, count);
    for (const Stream& s : volume.streams)
        for (const Extent& e : s.extents)
            if (e.lcn != Extent::kSparse) runs.emplace_back(e.lcn, e.lcn + e.clusters);
    std::ranges::sort(runs);
    ClusterSet claimed;
    for (const auto& [lo, hi] : runs) claimed.add(claimed.end(), boost::icl::interval<std::int64_t>::right_open(lo, hi));
    runs = {};
    ClusterSet used(boost::icl::interval<std::int64_t>::right_open(0, volume.total_clusters));
    used -= volume.free;
    if (claimed == used) return std::nullopt;
    const ClusterSet unclaimed = used - claimed;
    if (!unclaimed.empty())
        return "$Bitmap marks " + first_interval(unclaimed) + " used but no runlist holds it";
    return "$Bitmap marks " + first_interval(claimed - used) + " free but a runlist holds it";
}

}  // namespace guestfrag
