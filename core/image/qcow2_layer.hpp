// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/qcow2_header.hpp"
#include "core/image/qcow2_l2.hpp"

namespace guestfrag {

/// One qcow2 (version 2 or 3) file as a layer: the active L1/L2 tables of the image
/// (internal snapshots are not read), zlib-compressed clusters, zero clusters, extended L2
/// subclusters and the backing file name. The L1 table is read and checked at open in
/// slices, and only its non-zero entries are kept; L2 tables are read on demand into a bounded LRU cache
/// (32 MiB) and decompressed clusters into a small one. All caches are mutex-guarded, so
/// const methods are safe from several threads. A read() spanning several compressed
/// clusters inflates them on a few short-lived worker threads.
class Qcow2Layer final : public LayerFile {
public:
    /// Reads and validates `file`. Throws Error(Io) from the file, Error(Corrupt) for
    /// inconsistent headers or L1 entries pointing outside the file, Error(Unsupported)
    /// for features guestfrag does not read (see parse_qcow2_header).
    explicit Qcow2Layer(HostFile file);

    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Qcow2; }
    [[nodiscard]] const std::string& path() const override { return file_.path(); }
    [[nodiscard]] std::uint64_t virtual_size() const override { return header_.virtual_size; }
    /// The cluster, or the subcluster (cluster / 32) with extended L2 entries.
    [[nodiscard]] std::uint64_t granule_size() const override {
        return std::uint64_t{1} << header_.granule_bits();
    }
    /// A subcluster write still allocates its whole cluster in the file.
    [[nodiscard]] std::uint64_t growth_unit() const override { return header_.cluster_size(); }
    /// Runs coalesce granules of one state (and, for stored data, contiguous host offsets);
    /// one call scans at most a few thousand L2 entries but skips unallocated L2 tables whole.
    [[nodiscard]] Mapping map(std::uint64_t offset) const override;
    /// Empties the L2 and decompressed-cluster caches (up to 32 MiB).
    void release_caches() const override;
    void read(std::uint64_t offset, std::span<std::byte> out) const override;
    /// The backing file: an absolute name as recorded, a relative one resolved against the
    /// directory of this file's path as given (qemu's rule). qcow2 records no parent identity.
    [[nodiscard]] std::optional<ParentLink> parent() const override;
    [[nodiscard]] std::uint64_t held_bytes() const override { return file_.source().held_bytes(); }
    /// Thin in clusters unless every cluster is allocated (preallocation=metadata, falloc
    /// or full); then lazy when the host file holds fewer bytes than the virtual disk
    /// (metadata: the clusters are mapped, the host allocates them on first write), else
    /// eager, assumed.
    [[nodiscard]] LayerProvisioning provisioning(bool fully_allocated) const override;

    /// The validated header (dirty flag, backing format, cluster geometry).
    [[nodiscard]] const Qcow2Header& header() const { return header_; }

private:
    using L2Table = std::vector<std::uint64_t>;  ///< entries (and bitmaps) in host order
    using Cluster = std::vector<std::byte>;

    /// A run of granules of one kind: [start, end) of the virtual disk.
    struct Run {
        std::uint64_t start = 0;
        std::uint64_t end = 0;
        Allocation state = Allocation::Unallocated;
        bool compressed = false;
        std::uint64_t host = 0;  ///< file offset of `start` for uncompressed data
    };

    /// Throws Error(Corrupt) when two L1 entries point at the same L2 table.
    void refuse_shared_l2_tables() const;
    [[nodiscard]] std::shared_ptr<const L2Table> l2_table(std::uint64_t l1_index) const;
    [[nodiscard]] Qcow2Cluster cluster_at(const L2Table* table, std::uint64_t cluster_index) const;
    [[nodiscard]] Run compute_run(std::uint64_t granule) const;
    /// A compressed cluster to inflate into `out` (its bytes from `in_cluster` on).
    struct InflateJob {
        Qcow2Cluster cluster;
        std::uint64_t guest_offset = 0;  ///< start of the cluster in the virtual disk
        std::uint64_t in_cluster = 0;
        std::span<std::byte> out;
    };

    void inflate_into(const Qcow2Cluster& cluster, std::uint64_t guest_offset,
                      std::span<std::byte> out) const;
    [[nodiscard]] std::shared_ptr<const Cluster> inflated(const Qcow2Cluster& cluster,
                                                          std::uint64_t guest_offset) const;
    void run_inflate_jobs(std::span<const InflateJob> jobs) const;

    HostFile file_;
    Qcow2Header header_;
    /// The L1 entries that have an L2 table, in L1 order: (L1 index, validated table
    /// offset). Held sparsely because an L1 may be 32 MiB of zeros (a huge, mostly empty
    /// disk) and a chain holds one per layer.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> l2_tables_;
    /// The file offset of L1 entry `l1_index`'s L2 table; 0 when it has none.
    [[nodiscard]] std::uint64_t l2_offset(std::uint64_t l1_index) const;
    /// The first L1 index from `l1_index` on that has an L2 table; l1_entries when none has.
    [[nodiscard]] std::uint64_t next_l2_table(std::uint64_t l1_index) const;
    [[nodiscard]] std::vector<std::pair<std::uint64_t, std::uint64_t>>::const_iterator first_l2_table_from(
        std::uint64_t l1_index) const;

    mutable std::mutex mutex_;  ///< guards everything below
    mutable std::list<std::pair<std::uint64_t, std::shared_ptr<const L2Table>>>
        l2_lru_;  ///< most recent first
    mutable std::unordered_map<std::uint64_t, decltype(l2_lru_)::iterator> l2_index_;
    mutable std::optional<Run> last_run_;  ///< makes sequential map() calls O(1)
    mutable std::list<std::pair<std::uint64_t, std::shared_ptr<const Cluster>>>
        inflated_;  ///< by host offset
};

}  // namespace guestfrag
