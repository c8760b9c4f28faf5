// SPDX-License-Identifier: GPL-2.0-or-later
// The generator's one wrapper around libntfs-3g's write side. Every handle has an owner;
// ENOSPC becomes ntfs::VolumeFull so the population can stop gracefully.
#include "app/mkimage/ntfs_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/image/writable_raw_file.hpp"

namespace guestfrag::mkimage {

namespace {

[[noreturn]] void fail(const std::string& what, std::string_view name = {}) {
    std::string message = "libntfs-3g: " + what;
    if (!name.empty()) message += " '" + std::string(name) + "'";
    ntfs::throw_library_error(ErrorKind::Io, message);
}

/// A UTF-16LE name as libntfs-3g wants it.
class NtfsName {
public:
    explicit NtfsName(std::string_view name) {
        const std::string text(name);
        ntfschar* out = nullptr;
        length_ = ntfs_mbstoucs(text.c_str(), &out);
        chars_.reset(out);
        if (length_ <= 0 || length_ > 255) {
            if (length_ > 255) errno = ENAMETOOLONG;
            fail("bad name", name);
        }
    }
    [[nodiscard]] ntfschar* chars() const noexcept { return chars_.get(); }
    [[nodiscard]] u8 length() const noexcept { return static_cast<u8>(length_); }

private:
    std::unique_ptr<ntfschar, guestfrag::ntfs::MallocFreer> chars_;
    int length_ = 0;
};

/// Fragments of an open non-resident attribute: runs after merging LCN-contiguous ones,
/// holes not counted (docs/design.md §3).
std::uint64_t count_fragments(ntfs_attr* na) {
    if (!NAttrNonResident(na)) return 0;
    if (ntfs_attr_map_whole_runlist(na) != 0) fail("reading a runlist");
    std::uint64_t fragments = 0;
    LCN next = -1;
    for (const runlist_element* rl = na->rl; rl != nullptr && rl->length != 0; ++rl) {
        if (rl->lcn < 0) continue;
        if (rl->lcn != next) ++fragments;
        next = rl->lcn + rl->length;
    }
    return fragments;
}

/// libntfs-3g starts every allocation without a hint (a file's first clusters) 4096
/// clusters past the previous one, leaving 16 MiB gaps to grow into. Windows packs new
/// files after the last ones instead, and only packing makes appends of files grown side by
/// side collide and interleave. So after each write, point the allocator's zone position
/// at the end of the run just written.
void pack_after_last_run(ntfs_attr* na) {
    if (!NAttrNonResident(na) || na->rl == nullptr) return;
    LCN end = -1;
    for (const runlist_element* rl = na->rl; rl->length != 0; ++rl)
        if (rl->lcn >= 0) end = rl->lcn + rl->length;
    ntfs_volume* vol = na->ni->vol;
    if (end >= vol->mft_zone_end && end < vol->nr_clusters)
        vol->data1_zone_pos = end;
    else if (end >= 0 && end < vol->mft_zone_start)
        vol->data2_zone_pos = end;
}

}  // namespace

// ---- NtfsFile ----------------------------------------------------------------------------

void NtfsFile::write(std::uint64_t pos, const void* bytes, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(bytes);
    while (n > 0) {
        errno = 0;
        const s64 done = ntfs_attr_pwrite(data_.get(), static_cast<s64>(pos), static_cast<s64>(n), p);
        if (done <= 0) fail("writing");
        pos += static_cast<std::uint64_t>(done);
        p += done;
        n -= static_cast<std::size_t>(done);
    }
    pack_after_last_run(data_.get());
}

void NtfsFile::close_data() {
    if (!data_) return;
    stream_fragments_ = std::max(stream_fragments_, count_fragments(data_.get()));
    data_.reset();
}

void NtfsFile::add_stream(std::string_view name, const void* bytes, std::size_t n) {
    // Adding an attribute can move records around; the data attribute is not kept open
    // across that.
    close_data();
    const NtfsName uname(name);
    if (ntfs_attr_add(inode_.get(), AT_DATA, uname.chars(), uname.length(), nullptr, 0) != 0)
        fail("adding stream", name);
    AttrPtr stream(ntfs_attr_open(inode_.get(), AT_DATA, uname.chars(), uname.length()));
    if (!stream) fail("opening stream", name);
    const auto* p = static_cast<const unsigned char*>(bytes);
    for (std::size_t pos = 0; pos < n;) {
        errno = 0;
        const s64 done =
            ntfs_attr_pwrite(stream.get(), static_cast<s64>(pos), static_cast<s64>(n - pos), p + pos);
        if (done <= 0) fail("writing stream", name);
        pos += static_cast<std::size_t>(done);
    }
    pack_after_last_run(stream.get());
    stream_fragments_ = std::max(stream_fragments_, count_fragments(stream.get()));
}

std::uint64_t NtfsFile::fragments() {
    if (data_) stream_fragments_ = std::max(stream_fragments_, count_fragments(data_.get()));
    return stream_fragments_;
}

void NtfsFile::close() {
    close_data();
    if (inode_ && ntfs_inode_close(inode_.release()) != 0) fail("closing a file");
}

// ---- ClusterFence ------------------------------------------------------------------------

void ClusterFence::release() noexcept {
    for (runlist_element* rl : runs_) {
        ntfs_cluster_free_from_rl(volume_, rl);
        std::free(rl);
    }
    runs_.clear();
}

std::uint64_t ClusterFence::clusters() const noexcept {
    std::uint64_t total = 0;
    for (const runlist_element* rl : runs_)
        for (; rl->length != 0; ++rl)
            if (rl->lcn >= 0) total += static_cast<std::uint64_t>(rl->length);
    return total;
}

// ---- NtfsWriter --------------------------------------------------------------------------

NtfsWriter::NtfsWriter(WritableRawFile& file, std::uint64_t offset, std::uint64_t length)
    : volume_(ntfs::Device(file, offset, length)) {
    // ntfs_mount() does this for path mounts: inode and lookup caches, which keep directory
    // inodes in memory between the creates that reopen them.
    ntfs_create_lru_caches(volume_.get());
}

void NtfsWriter::unmount() { volume_.unmount(); }

InodePtr NtfsWriter::open_inode(std::uint64_t record) {
    InodePtr ni(ntfs_inode_open(volume_.get(), static_cast<MFT_REF>(record)));
    if (!ni) fail("opening record " + std::to_string(record));
    return ni;
}

std::uint64_t NtfsWriter::make_directory(std::uint64_t parent, std::string_view name, bool compressed) {
    InodePtr dir = open_inode(parent);
    const NtfsName uname(name);
    InodePtr ni(ntfs_create(dir.get(), 0, uname.chars(), uname.length(), S_IFDIR));
    if (!ni) fail("creating directory", name);
    if (compressed) {
        NVolSetCompression(volume_.get());
        ni->flags = static_cast<FILE_ATTR_FLAGS>(ni->flags | FILE_ATTR_COMPRESSED);
        NInoSetDirty(ni.get());
    }
    const std::uint64_t record = ni->mft_no;
    if (ntfs_inode_close(ni.release()) != 0) fail("closing directory", name);
    if (ntfs_inode_close(dir.release()) != 0) fail("closing a directory");
    return record;
}

std::optional<std::uint64_t> NtfsWriter::find_directory(std::uint64_t parent, std::string_view name) {
    InodePtr dir = open_inode(parent);
    const NtfsName uname(name);
    errno = 0;
    const u64 ref = ntfs_inode_lookup_by_name(dir.get(), uname.chars(), uname.length());
    if (ref == static_cast<u64>(-1)) {
        if (errno != ENOENT) fail("looking up", name);
        if (ntfs_inode_close(dir.release()) != 0) fail("closing a directory");
        return std::nullopt;
    }
    if (ntfs_inode_close(dir.release()) != 0) fail("closing a directory");
    InodePtr ni = open_inode(MREF(ref));
    const bool directory = (ni->mrec->flags & MFT_RECORD_IS_DIRECTORY) != 0;
    const std::uint64_t record = ni->mft_no;
    if (ntfs_inode_close(ni.release()) != 0) fail("closing", name);
    if (!directory) throw Error(ErrorKind::Io, "'" + std::string(name) + "' is not a directory");
    return record;
}

NtfsFile NtfsWriter::create_file(std::uint64_t parent, std::string_view name) {
    InodePtr dir = open_inode(parent);
    const NtfsName uname(name);
    InodePtr ni(ntfs_create(dir.get(), 0, uname.chars(), uname.length(), S_IFREG));
    if (!ni) fail("creating file", name);
    AttrPtr data(ntfs_attr_open(ni.get(), AT_DATA, AT_UNNAMED, 0));
    if (!data) fail("opening $DATA of", name);
    if (ntfs_inode_close(dir.release()) != 0) fail("closing a directory");
    return NtfsFile(std::move(ni), std::move(data));
}

std::vector<ClusterRun> NtfsWriter::clusters_of(std::uint64_t record) {
    InodePtr ni = open_inode(record);
    guestfrag::ntfs::SearchCtxPtr ctx(ntfs_attr_get_search_ctx(ni.get(), nullptr));
    if (!ctx) fail("searching attributes");
    std::vector<ClusterRun> runs;
    // Walks the attribute list too, so extents held in extension records are included.
    while (ntfs_attrs_walk(ctx.get()) == 0) {
        if (!ctx->attr->non_resident) continue;
        std::unique_ptr<runlist_element, guestfrag::ntfs::MallocFreer> rl(
            ntfs_mapping_pairs_decompress(volume_.get(), ctx->attr, nullptr));
        if (!rl) fail("decoding a runlist");
        for (const runlist_element* r = rl.get(); r->length != 0; ++r)
            if (r->lcn >= 0) runs.push_back({r->lcn, r->length});
    }
    if (errno != ENOENT) fail("walking attributes");
    ctx.reset();
    if (ntfs_inode_close(ni.release()) != 0) fail("closing a file");
    return runs;
}

void NtfsWriter::remove(std::uint64_t parent, std::uint64_t record, std::string_view name) {
    InodePtr ni = open_inode(record);
    InodePtr dir = open_inode(parent);
    const NtfsName uname(name);
    // ntfs_delete closes both inodes whatever happens.
    if (ntfs_delete(volume_.get(), nullptr, ni.release(), dir.release(), uname.chars(), uname.length()) != 0)
        fail("deleting", name);
}

ClusterFence NtfsWriter::fence_free_space(const std::vector<ClusterRun>& keep_free) {
    ClusterFence fence(volume_.get(), {});
    auto hold = [&](LCN start, s64 length) {
        if (length <= 0) return;
        // Starting on a free cluster, the allocator takes exactly the requested run.
        runlist_element* rl = ntfs_cluster_alloc(volume_.get(), 0, length, start, DATA_ZONE);
        if (rl == nullptr) fail("reserving free space");
        fence.add(rl);
    };
    // Free extents minus keep_free and the MFT zone, found by reading $Bitmap in chunks.
    auto place = [&](LCN start, LCN end) {
        auto it = std::lower_bound(keep_free.begin(), keep_free.end(), start,
                                   [](const ClusterRun& r, LCN lcn) { return r.lcn + r.length <= lcn; });
        for (; start < end && it != keep_free.end() && it->lcn < end; ++it) {
            hold(start, std::max<LCN>(0, it->lcn - start));
            start = std::max(start, it->lcn + it->length);
        }
        if (start < end) hold(start, end - start);
    };
    auto free_extent = [&](LCN start, LCN end) {
        const LCN zone_start = volume_.get()->mft_zone_start;
        const LCN zone_end = volume_.get()->mft_zone_end;
        if (start < zone_start) place(start, std::min(end, zone_start));
        if (end > zone_end) place(std::max(start, zone_end), end);
    };
    const s64 clusters = volume_.get()->nr_clusters;
    std::vector<unsigned char> bits(1 << 16);
    LCN run_start = -1;
    for (s64 byte = 0; byte * 8 < clusters; byte += static_cast<s64>(bits.size())) {
        const s64 got = ntfs_attr_pread(volume_.get()->lcnbmp_na, byte, static_cast<s64>(bits.size()), bits.data());
        if (got <= 0) fail("reading $Bitmap");
        for (s64 i = 0; i < got * 8 && byte * 8 + i < clusters; ++i) {
            const unsigned char b = bits[static_cast<std::size_t>(i >> 3)];
            if ((i & 7) == 0 && ((b == 0xFF && run_start < 0) || (b == 0 && run_start >= 0))) {
                i += 7;  // a whole byte that neither starts nor ends a free run
                continue;
            }
            const LCN lcn = byte * 8 + i;
            const bool used = (b >> (i & 7)) & 1;
            if (!used && run_start < 0) run_start = lcn;
            if (used && run_start >= 0) {
                // Allocating changes $Bitmap behind us, but only inside runs already read.
                free_extent(run_start, lcn);
                run_start = -1;
            }
        }
    }
    if (run_start >= 0) free_extent(run_start, clusters);
    // Search from the volume start, as an allocator does once a volume has wrapped around.
    volume_.get()->data1_zone_pos = volume_.get()->mft_zone_end;
    volume_.get()->data2_zone_pos = 0;
    return fence;
}

}  // namespace guestfrag::mkimage
