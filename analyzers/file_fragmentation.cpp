// SPDX-License-Identifier: GPL-2.0-or-later
#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>

#include "analyzers/fragmentation.hpp"

namespace guestfrag {

namespace {

constexpr std::uint64_t kMftRecord = 0;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b) { return b > kMax - a ? kMax : a + b; }

std::uint64_t mul_saturating(std::uint64_t a, std::uint64_t b) {
    return a != 0 && b > kMax / a ? kMax : a * b;
}

bool is_unnamed_data(const Stream& s) {
    return s.type == static_cast<std::uint32_t>(AttrType::Data) && s.name.empty();
}

/// ASCII case-insensitive equality; enough for the ASCII names we look for.
bool iequals_ascii(std::string_view a, std::string_view b) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}

/// The record whose path is "\pagefile.sys" (case-insensitive), the lowest if several.
/// A file directly below the root has path "\" + name, so no path needs building.
std::optional<std::uint64_t> pagefile_record(const VolumeMap& volume) {
    std::optional<std::uint64_t> found;
    for (const FileEntry& f : volume.files) {
        if (f.mft_record != kRootRecord && f.parent == kRootRecord && !f.directory &&
            iequals_ascii(f.name, "pagefile.sys") && (!found || f.mft_record < *found)) {
            found = f.mft_record;
        }
    }
    return found;
}

/// Appends `record` unless it repeats the last one: exact de-duplication for input sorted by
/// record (the VolumeMap invariant), finished by distinct_count() otherwise.
void note_record(std::vector<std::uint64_t>& records, std::uint64_t record) {
    if (records.empty() || records.back() != record) records.push_back(record);
}

std::uint64_t distinct_count(std::vector<std::uint64_t>& records) {
    if (!std::is_sorted(records.begin(), records.end())) {
        std::sort(records.begin(), records.end());
        records.erase(std::unique(records.begin(), records.end()), records.end());
    }
    return records.size();
}

/// A stream with its fragment count, computed once for ranking.
struct Ranked {
    std::uint64_t fragments = 0;
    const Stream* stream = nullptr;
};

/// Whether `a` ranks before `b` in most_fragmented_streams().
bool ranks_before(const Ranked& a, const Ranked& b) {
    if (a.fragments != b.fragments) return a.fragments > b.fragments;
    if (a.stream->size != b.stream->size) return a.stream->size > b.stream->size;
    if (a.stream->mft_record != b.stream->mft_record) return a.stream->mft_record < b.stream->mft_record;
    return a.stream->label() < b.stream->label();  // only reached on full ties: rare
}

}  // namespace

FileFragmentation analyze_file_fragmentation(const VolumeMap& volume) {
    FileFragmentation out;
    out.files = volume.files.size();

    const std::optional<std::uint64_t> pagefile = pagefile_record(volume);
    bool mft_seen = false;
    bool pagefile_seen = false;

    std::uint64_t total = 0;                       // UltraDefrag: Σ (fragmented ? fragments : 1)
    std::uint64_t bad = 0;                         // UltraDefrag: Σ fragments of fragmented streams
    std::vector<std::uint64_t> owners;             // records with a stream of ≥ 1 fragment
    std::vector<std::uint64_t> fragmented_owners;  // records with a fragmented stream

    for (const Stream& s : volume.streams) {
        const std::uint64_t fragments = s.fragments();

        if (is_unnamed_data(s)) {
            if (s.mft_record == kMftRecord && !mft_seen) {
                out.mft_fragments = fragments;
                mft_seen = true;
            }
            if (pagefile && s.mft_record == *pagefile && !pagefile_seen) {
                out.pagefile_fragments = fragments;
                pagefile_seen = true;
            }
        }

        if (fragments == 0) continue;  // all holes: occupies nothing, counted nowhere
        ++out.streams;
        out.fragments = add_saturating(out.fragments, fragments);
        out.excess_fragments = add_saturating(out.excess_fragments, fragments - 1);
        note_record(owners, s.mft_record);

        if (fragments > 1) {
            ++out.fragmented_streams;
            bad = add_saturating(bad, fragments);
            total = add_saturating(total, fragments);
            const auto clusters = static_cast<std::uint64_t>(s.allocated_clusters());
            out.fragmented_bytes =
                add_saturating(out.fragmented_bytes, mul_saturating(clusters, volume.cluster_size));
            note_record(fragmented_owners, s.mft_record);
        } else {
            total = add_saturating(total, 1);
        }
    }

    out.files_with_streams = distinct_count(owners);
    out.fragmented_files = distinct_count(fragmented_owners);
    if (total != 0) {
        out.fragmentation_percent =
            static_cast<double>(100.0L * static_cast<long double>(bad) / static_cast<long double>(total));
    }
    if (out.files_with_streams != 0) {
        out.average_fragments_per_file = static_cast<double>(
            static_cast<long double>(out.fragments) / static_cast<long double>(out.files_with_streams));
    }
    return out;
}

std::vector<const Stream*> most_fragmented_streams(const VolumeMap& volume, std::size_t n) {
    // A bounded heap whose top is the weakest of the best n seen so far.
    std::vector<Ranked> heap;
    if (n == 0) return {};
    heap.reserve(std::min(n, volume.streams.size()));
    for (const Stream& s : volume.streams) {
        const Ranked candidate{s.fragments(), &s};
        if (candidate.fragments <= 1) continue;
        if (heap.size() < n) {
            heap.push_back(candidate);
            std::push_heap(heap.begin(), heap.end(), ranks_before);
        } else if (ranks_before(candidate, heap.front())) {
            std::pop_heap(heap.begin(), heap.end(), ranks_before);
            heap.back() = candidate;
            std::push_heap(heap.begin(), heap.end(), ranks_before);
        }
    }
    std::sort_heap(heap.begin(), heap.end(), ranks_before);

    std::vector<const Stream*> out;
    out.reserve(heap.size());
    for (const Ranked& r : heap) out.push_back(r.stream);
    return out;
}

}  // namespace guestfrag
