// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
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
/// Data clusters are written as they come, from the second cluster of the file on; finish()
/// then appends the L2 tables, the L1 table, the refcount blocks and the refcount table
/// (every cluster of the file referenced once, so L1 and L2 entries carry the COPIED flag)
/// and writes the header last: until then the file is not an image. Borrows `fd`, an empty
/// file open for writing that must outlive the writer. Data clusters are written 1 MiB at a
/// time (a write per cluster costs the file system several times more). Memory: 8 bytes per
/// cluster stored, 1 MiB of buffer, one cluster while finishing.
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

    /// Stores `data` (kClusterSize bytes) as the guest cluster `index` (the disk bytes at
    /// index · kClusterSize). Indices must rise from call to call and lie inside the disk
    /// (Error(Internal) otherwise). Throws Error(Io).
    void write_cluster(std::uint64_t index, std::span<const std::byte> data);

    /// Writes the tables and the header. Returns the file's size. Throws Error(Io).
    std::uint64_t finish();

    [[nodiscard]] std::uint64_t clusters_stored() const noexcept { return guest_clusters_.size(); }

private:
    void flush();

    WritableRawFile file_;
    std::uint64_t virtual_size_;
    std::optional<Qcow2Backing> backing_;
    std::vector<std::uint64_t> guest_clusters_;  ///< guest cluster of host cluster 1 + i
    std::vector<std::byte> pending_;             ///< the data clusters not written yet, the last ones
    bool finished_ = false;
};

}  // namespace guestfrag
