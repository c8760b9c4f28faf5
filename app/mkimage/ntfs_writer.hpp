// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "app/mkimage/ntfs3g_rw.hpp"
#include "core/ntfs/ntfs_volume.hpp"

namespace guestfrag {

class WritableRawFile;

namespace mkimage {

/// A run of clusters [lcn, lcn + length).
struct ClusterRun {
    std::int64_t lcn = 0;
    std::int64_t length = 0;
};

using guestfrag::ntfs::AttrPtr;
using guestfrag::ntfs::InodePtr;

/// An open regular file being written: its inode and unnamed $DATA attribute.
/// Move-only; an unclosed file is closed (unchecked) on destruction.
class NtfsFile {
public:
    NtfsFile(InodePtr inode, AttrPtr data) : inode_(std::move(inode)), data_(std::move(data)) {}

    [[nodiscard]] std::uint64_t record() const noexcept { return inode_->mft_no; }
    /// Bytes in the unnamed stream so far.
    [[nodiscard]] std::uint64_t size() const noexcept { return static_cast<std::uint64_t>(data_->data_size); }
    /// Writes `n` bytes at `pos` of the unnamed stream, extending it. Throws
    /// ntfs::VolumeFull/Error.
    void write(std::uint64_t pos, const void* bytes, std::size_t n);
    /// Adds a named $DATA stream holding `n` bytes (resident when small). Ends writes to
    /// the unnamed stream.
    void add_stream(std::string_view name, const void* bytes, std::size_t n);
    /// Most fragments (LCN-contiguous runs merged, holes skipped) of any stream written.
    [[nodiscard]] std::uint64_t fragments();
    /// Whether the file's record needed an $ATTRIBUTE_LIST.
    [[nodiscard]] bool has_attribute_list() const noexcept { return NInoAttrList(inode_.get()) != 0; }
    /// Flushes and closes; throws Error when libntfs-3g cannot write the record back.
    void close();

private:
    void close_data();

    InodePtr inode_;
    AttrPtr data_;
    std::uint64_t stream_fragments_ = 0;
};

/// Cluster runs allocated as placeholders so new files must go elsewhere. Freed on
/// destruction (or release()).
class ClusterFence {
public:
    ClusterFence(ntfs_volume* volume, std::vector<runlist_element*> runs)
        : volume_(volume), runs_(std::move(runs)) {}
    ClusterFence(ClusterFence&& other) noexcept : volume_(other.volume_), runs_(std::move(other.runs_)) {
        other.runs_.clear();
    }
    ClusterFence(const ClusterFence&) = delete;
    ClusterFence& operator=(const ClusterFence&) = delete;
    ClusterFence& operator=(ClusterFence&&) = delete;
    ~ClusterFence() { release(); }
    /// Takes ownership of a runlist from ntfs_cluster_alloc.
    void add(runlist_element* run) { runs_.push_back(run); }
    /// Gives the clusters back to the free pool.
    void release() noexcept;
    [[nodiscard]] std::uint64_t clusters() const noexcept;

private:
    ntfs_volume* volume_;
    std::vector<runlist_element*> runs_;
};

/// A read-write libntfs-3g mount of the NTFS volume inside a host file. Not thread-safe.
/// Records are addressed by MFT record number; names are UTF-8. Failures of libntfs-3g
/// calls throw ntfs::VolumeFull for ENOSPC, Error(Io) otherwise.
class NtfsWriter {
public:
    /// Mounts the volume stored at `file` bytes [offset, offset + length) read-write;
    /// `file` must outlive the writer. Throws Error(Corrupt) when it does not mount.
    NtfsWriter(WritableRawFile& file, std::uint64_t offset, std::uint64_t length);

    [[nodiscard]] static std::uint64_t root() noexcept { return FILE_root; }
    /// Creates directory `name` in `parent`; returns its record number.
    /// A `compressed` directory has FILE_ATTR_COMPRESSED, so that libntfs-3g (told it may
    /// compress, as ntfs-3g's `compression` mount option does) writes the files created in
    /// it compressed.
    std::uint64_t make_directory(std::uint64_t parent, std::string_view name, bool compressed = false);
    /// The record of directory `name` in `parent`, none when `parent` has no entry of that
    /// name. Throws Error(Io) when the entry is not a directory.
    std::optional<std::uint64_t> find_directory(std::uint64_t parent, std::string_view name);
    /// Creates an empty regular file `name` in `parent`, open for writing.
    NtfsFile create_file(std::uint64_t parent, std::string_view name);
    /// Clusters of every non-resident attribute of `record` (holes skipped).
    std::vector<ClusterRun> clusters_of(std::uint64_t record);
    /// Unlinks and frees file `record` named `name` in `parent`.
    void remove(std::uint64_t parent, std::uint64_t record, std::string_view name);
    /// Allocates every free cluster outside the MFT zone and outside `keep_free` (sorted,
    /// non-overlapping), so that until the fence is released new data can only land in
    /// `keep_free`, like new files on an aged volume. Allocation restarts at the volume start.
    ClusterFence fence_free_space(const std::vector<ClusterRun>& keep_free);
    /// Writes everything back and unmounts; throws Error(Io) on failure.
    void unmount();

private:
    InodePtr open_inode(std::uint64_t record);

    ntfs::Volume volume_;
};

}  // namespace mkimage
}  // namespace guestfrag
