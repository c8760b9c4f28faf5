// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/image/writable_raw_file.hpp"

namespace guestfrag {

/// The backing file a qcow2 overlay records: the name as qemu resolves it (relative names
/// from the overlay's directory) and its format as qemu names it ("raw", "qcow2", "vmdk",
/// "vpc", "vhdx").
struct Qcow2Backing {
    std::string file;
    std::string format;
};

/// Writes a qcow2 version 3 image that holds only the clusters it is given, every other
/// cluster reading from its backing file (or as zeros without one), for `apply
/// --output-format qcow2`. 64 KiB clusters, 16-bit refcounts, no snapshots, no compression.
/// Data clusters take the file's clusters from the second on, in the order they are
/// allocated (any guest order, as qemu places them); finish() then appends the L2 tables,
/// the L1 table, the refcount blocks and the refcount table (every cluster of the file
/// referenced once, so L1 and L2 entries carry the COPIED flag; a released one not at all) and
/// writes the header last:
/// until then the file is not an image. Borrows `fd`, an empty file open O_RDWR that must
/// outlive the writer. Memory: about 40 bytes per cluster stored, one cluster while finishing.
class Qcow2OverlayWriter {
public:
    static constexpr std::uint32_t kClusterBits = 16;
    static constexpr std::uint64_t kClusterSize = std::uint64_t{1} << kClusterBits;

    /// Throws Error(Unsupported) for a backing name longer than qemu's 1023 bytes or a
    /// virtual size beyond what the qcow2 reader accepts (check_possible).
    Qcow2OverlayWriter(int fd, std::string path, std::uint64_t virtual_size, std::optional<Qcow2Backing> backing);

    /// Throws what the constructor throws for these arguments, so that a caller can refuse
    /// before it does any other work.
    static void check_possible(std::uint64_t virtual_size, const std::optional<Qcow2Backing>& backing);

    /// The file offset of the data cluster that stores guest cluster `index` (the disk bytes
    /// at index · kClusterSize), or nullopt while it is not stored.
    [[nodiscard]] std::optional<std::uint64_t> stored_at(std::uint64_t index) const;

    /// Gives guest cluster `index` the next data cluster of the file and returns its offset;
    /// the caller then writes all of it through file(). Error(Internal) for a cluster stored
    /// already or outside the disk, or after finish().
    std::uint64_t allocate(std::uint64_t index);

    /// Stores `data` (kClusterSize bytes) as guest cluster `index`: allocate() and write.
    /// Throws what allocate() throws, and Error(Io).
    void write_cluster(std::uint64_t index, std::span<const std::byte> data);

    /// The overlay file, to read and write the data clusters allocate() gave out.
    [[nodiscard]] WritableRawFile& file() noexcept { return file_; }

    /// Forgets guest cluster `index`, which must be stored: it reads from the backing file
    /// again. Its data cluster stays in the file, unreferenced with refcount 0 (a free
    /// cluster to qemu), and its bytes are punched out. Error(Internal) when it is not stored
    /// or after finish().
    void release(std::uint64_t index);

    /// The guest clusters stored, in the order their data clusters lie in the file.
    [[nodiscard]] std::vector<std::uint64_t> stored_clusters() const;

    /// Writes the tables and the header. Returns the file's size. Throws Error(Io).
    std::uint64_t finish();

    [[nodiscard]] std::uint64_t clusters_stored() const noexcept { return host_of_.size(); }

private:
    WritableRawFile file_;
    std::uint64_t virtual_size_;
    std::optional<Qcow2Backing> backing_;
    static constexpr std::uint64_t kReleased = ~std::uint64_t{0};
    std::vector<std::uint64_t> guest_clusters_;  ///< guest cluster of host cluster 1 + i, or kReleased
    std::unordered_map<std::uint64_t, std::uint64_t> host_of_;  ///< guest cluster → host cluster
    bool finished_ = false;
};

}  // namespace guestfrag
