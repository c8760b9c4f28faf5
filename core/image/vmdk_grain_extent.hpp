// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/image/host_file.hpp"
#include "core/image/vmdk_extent.hpp"

namespace guestfrag {

/// What one grain table entry says about its grain, decoded from the format's own entry.
struct VmdkGrain {
    enum class Kind : std::uint8_t {
        Unallocated,  ///< not in this extent: the parent's bytes (zeros without one)
        Zero,         ///< declared zero (hosted zeroed-grain GTE, seSparse zero/unmapped)
        Data,         ///< stored plainly at `offset`
        Compressed,   ///< stored deflated; `offset` is where its marker (or stream) begins
    };
    Kind kind = Kind::Unallocated;
    std::uint64_t offset = 0;  ///< byte offset in the extent file
};

/// The decoded entries of one grain table, for the grains of that table inside the extent.
using VmdkGrainTable = std::vector<VmdkGrain>;

/// The part shared by the sparse extents (hosted sparse, COWD, seSparse): a grain
/// directory of grain tables of grain entries. Subclasses decode one table at a time;
/// this class caches decoded tables (bounded, mutex-guarded), coalesces runs for map()
/// and gathers contiguous grains into one read for read(). Compressed grains are inflated
/// by the subclass: whole ones straight into the caller's buffer, on several threads when
/// one read() spans several; partial ones through a small cache so that small sequential
/// reads inflate each grain once.
class VmdkGrainExtent : public VmdkExtent {
public:
    [[nodiscard]] std::uint64_t size() const override { return size_; }
    [[nodiscard]] std::uint64_t granule() const override { return grain_bytes_; }
    [[nodiscard]] std::uint64_t held_bytes() const override { return file_.source().held_bytes(); }
    /// One call examines at most kMapBudget entries (a missing table counts as one), so a
    /// huge empty extent maps in a few calls each of bounded cost.
    [[nodiscard]] Mapping map(std::uint64_t offset) const override;
    void read(std::uint64_t offset, std::span<std::byte> out) const override;

    /// The extent file.
    [[nodiscard]] const HostFile& file() const noexcept { return file_; }
    /// Grain size in bytes.
    [[nodiscard]] std::uint64_t grain_bytes() const noexcept { return grain_bytes_; }
    /// The decoded entry of grain `grain` (< grain_count()).
    [[nodiscard]] VmdkGrain grain(std::uint64_t grain) const;
    /// Grains covering the extent (the last one may be partial).
    [[nodiscard]] std::uint64_t grain_count() const noexcept { return grain_count_; }

    static constexpr std::uint64_t kMapBudget = 65536;

protected:
    /// `size` bytes of virtual disk in grains of `grain_bytes` (a power of two), grouped
    /// in tables of `grains_per_table` entries. The caller has validated all three.
    VmdkGrainExtent(HostFile file, std::uint64_t size, std::uint64_t grain_bytes, std::uint64_t grains_per_table);

    /// Number of grain tables (grain directory entries) the extent needs.
    [[nodiscard]] std::uint64_t table_count() const noexcept { return table_count_; }
    /// Entries of table `table` that describe grains inside the extent.
    [[nodiscard]] std::uint64_t grains_in_table(std::uint64_t table) const noexcept;
    /// Bytes of grain `grain` that lie inside the extent (grain_bytes but for the last).
    [[nodiscard]] std::uint64_t grain_length(std::uint64_t grain) const noexcept;

    /// Decodes table `table` (< table_count()): grains_in_table(table) entries, or null when
    /// the directory allocates no table there (all grains unallocated). Throws
    /// Error(Corrupt) naming the directory or table entry for references outside the file.
    [[nodiscard]] virtual std::shared_ptr<const VmdkGrainTable> load_table(std::uint64_t table) const = 0;

    /// Inflates compressed grain `grain` whose entry points at `offset` into `out`
    /// (grain_bytes() long; bytes past the extent's end are zero). Only hosted sparse
    /// extents have compressed grains; the default throws Error(Internal).
    virtual void inflate_grain(std::uint64_t grain, std::uint64_t offset, std::span<std::byte> out) const;

    /// Throws Error(Corrupt) unless grain `grain`, stored at `offset` (entry `entry` of
    /// table `table`), lies inside the file and after `metadata_end` (the header).
    void check_stored_grain(std::uint64_t table, std::uint64_t entry, std::uint64_t grain, std::uint64_t offset,
                            std::uint64_t metadata_end) const;

    /// Throws Error(Corrupt) when two grain directory entries refer to the same grain
    /// table. `tables[i]` is entry i's reference as the format writes it, 0 for an entry
    /// without a table of its own. A table belongs to one entry; a directory whose
    /// entries share one describes far more grains than the file holds, and each copy
    /// costs memory when the extent is mapped. O(entries), called once when opening.
    static void refuse_shared_tables(const std::vector<std::uint64_t>& tables);

private:
    using Inflated = std::vector<std::byte>;

    [[nodiscard]] std::shared_ptr<const VmdkGrainTable> table(std::uint64_t table) const;
    [[nodiscard]] std::shared_ptr<const Inflated> inflated(std::uint64_t grain, std::uint64_t offset) const;

    HostFile file_;
    std::uint64_t size_;
    std::uint64_t grain_bytes_;
    std::uint64_t grains_per_table_;
    std::uint64_t grain_count_;
    std::uint64_t table_count_;

    /// Decoded tables, cleared wholesale when they exceed kMaxCachedEntries (sequential
    /// access, the common case, then reloads each table once).
    static constexpr std::size_t kMaxCachedEntries = std::size_t{1} << 20;
    mutable std::mutex tables_mutex_;
    mutable std::unordered_map<std::uint64_t, std::shared_ptr<const VmdkGrainTable>> tables_;
    mutable std::size_t cached_entries_ = 0;

    /// Recently computed runs: reads come in small pieces and each asks map() first, so
    /// repeating the scan for every piece of one long run would cost O(run) per read.
    struct Run {
        std::uint64_t begin = 0, end = 0;
        Mapping mapping;  ///< as computed at `begin`
    };
    static constexpr std::size_t kRunSlots = 8;
    [[nodiscard]] Mapping scan(std::uint64_t offset) const;
    mutable std::mutex runs_mutex_;
    mutable std::array<Run, kRunSlots> runs_{};
    mutable std::size_t next_run_ = 0;

    static constexpr std::size_t kInflatedSlots = 8;
    mutable std::mutex inflated_mutex_;
    mutable std::array<std::pair<std::uint64_t, std::shared_ptr<const Inflated>>, kInflatedSlots> inflated_{};
    mutable std::size_t next_slot_ = 0;
};

}  // namespace guestfrag
