// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/ntfs_edit.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/ntfs/ntfs3g.hpp"

extern "C" {
#include <ntfs-3g/bitmap.h>
}

namespace guestfrag::test {
namespace {

struct Unmount {
    void operator()(ntfs_volume* v) const noexcept { ntfs_umount(v, FALSE); }
};

/// Where a bare volume keeps $MFT and $MFTMirr, and its sizes, from its boot sector.
struct Geometry {
    std::uint64_t cluster = 0;
    std::uint64_t record_size = 0;
    std::uint64_t mft_lcn = 0;
    std::uint64_t mftmirr_lcn = 0;
};

Geometry read_geometry(std::fstream& f) {
    NTFS_BOOT_SECTOR bs;
    f.seekg(0);
    f.read(reinterpret_cast<char*>(&bs), sizeof bs);
    if (!f) throw std::runtime_error("cannot read the boot sector");
    // Sectors per cluster over 128 (clusters over 64 KiB): 2 to the power of its negation.
    const unsigned spc = bs.bpb.sectors_per_cluster;
    const std::uint64_t sectors = spc <= 0x80 ? spc : std::uint64_t{1} << (256 - spc);
    Geometry g;
    g.cluster = std::uint64_t{le16_to_cpu(bs.bpb.bytes_per_sector)} * sectors;
    // Clusters per MFT record: a power of two's negative exponent when below one cluster.
    const auto per_record = static_cast<std::int8_t>(bs.clusters_per_mft_record);
    g.record_size = per_record < 0 ? std::uint64_t{1} << -per_record
                                   : static_cast<std::uint64_t>(per_record) * g.cluster;
    g.mft_lcn = static_cast<std::uint64_t>(sle64_to_cpu(bs.mft_lcn));
    g.mftmirr_lcn = static_cast<std::uint64_t>(sle64_to_cpu(bs.mftmirr_lcn));
    return g;
}

std::unique_ptr<ntfs_volume, Unmount> mount_rw(const std::filesystem::path& path) {
    std::unique_ptr<ntfs_volume, Unmount> vol(ntfs_mount(path.c_str(), NTFS_MNT_NONE));
    if (!vol) throw std::runtime_error("cannot mount " + path.string() + " read-write");
    return vol;
}

using Inode = ntfs::InodePtr;

Inode create(ntfs_inode* dir, const char* utf8, mode_t type) {
    ntfschar* name = nullptr;
    const int len = ntfs_mbstoucs(utf8, &name);
    if (len < 0) throw std::runtime_error(std::string("cannot convert the name ") + utf8);
    Inode made(ntfs_create(dir, const_cpu_to_le32(0), name, static_cast<u8>(len), type));
    free(name);
    if (!made) throw std::runtime_error(std::string("cannot create ") + utf8);
    return made;
}

void write_data(ntfs_inode* file, const std::vector<char>& bytes) {
    ntfs::AttrPtr data(ntfs_attr_open(file, AT_DATA, AT_UNNAMED, 0));
    if (!data) throw std::runtime_error("cannot open a $DATA attribute");
    if (ntfs_attr_pwrite(data.get(), 0, static_cast<s64>(bytes.size()), bytes.data()) != static_cast<s64>(bytes.size()))
        throw std::runtime_error("cannot write file data");
}

}  // namespace

std::uint64_t add_shadow_copy_store(const std::filesystem::path& bare_volume, std::uint64_t store_bytes) {
    auto vol = mount_rw(bare_volume);
    Inode root(ntfs_inode_open(vol.get(), FILE_root));
    if (!root) throw std::runtime_error("cannot open the root directory");
    Inode svi = create(root.get(), "System Volume Information", S_IFDIR);
    write_data(create(svi.get(), "{3808876b-c176-4e48-b7ae-04046e6cc752}", S_IFREG).get(), std::vector<char>(16384, 'c'));
    Inode store = create(svi.get(), "{5d7e2c1a-93b4-4e0f-8a61-2f0c9b7d4e13}{3808876b-c176-4e48-b7ae-04046e6cc752}", S_IFREG);
    std::vector<char> bytes(store_bytes);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>('s' + i % 7);
    write_data(store.get(), bytes);
    return store->mft_no;
}

void mark_volume_dirty(const std::filesystem::path& bare_volume) {
    auto vol = mount_rw(bare_volume);
    if (ntfs_volume_write_flags(vol.get(), vol->flags | VOLUME_IS_DIRTY) != 0)
        throw std::runtime_error("cannot set the dirty flag");
}

void add_hibernation_file(const std::filesystem::path& bare_volume, const char* signature) {
    auto vol = mount_rw(bare_volume);
    Inode root(ntfs_inode_open(vol.get(), FILE_root));
    if (!root) throw std::runtime_error("cannot open the root directory");
    ntfschar* name = nullptr;
    const int len = ntfs_mbstoucs("hiberfil.sys", &name);
    Inode file(ntfs_create(root.get(), const_cpu_to_le32(0), name, static_cast<u8>(len), S_IFREG));
    free(name);
    if (!file) throw std::runtime_error("cannot create hiberfil.sys");
    ntfs::AttrPtr data(ntfs_attr_open(file.get(), AT_DATA, AT_UNNAMED, 0));
    if (!data) throw std::runtime_error("cannot open hiberfil.sys data");
    std::vector<char> header(8192, 0);
    std::copy(signature, signature + 4, header.begin());
    if (ntfs_attr_pwrite(data.get(), 0, static_cast<s64>(header.size()), header.data()) != static_cast<s64>(header.size()))
        throw std::runtime_error("cannot write hiberfil.sys");
}

std::uint64_t add_file(const std::filesystem::path& bare_volume, const std::string& name, std::uint64_t bytes) {
    auto vol = mount_rw(bare_volume);
    Inode root(ntfs_inode_open(vol.get(), FILE_root));
    if (!root) throw std::runtime_error("cannot open the root directory");
    Inode file = create(root.get(), name.c_str(), S_IFREG);
    std::vector<char> data(bytes);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 23);
    write_data(file.get(), data);
    return file->mft_no;
}

std::uint64_t add_named_streams(const std::filesystem::path& bare_volume, const std::string& name,
                                const std::vector<std::string>& streams, std::uint64_t bytes) {
    auto vol = mount_rw(bare_volume);
    Inode root(ntfs_inode_open(vol.get(), FILE_root));
    if (!root) throw std::runtime_error("cannot open the root directory");
    Inode file = create(root.get(), name.c_str(), S_IFREG);
    const std::vector<char> data(bytes, 'n');
    for (const std::string& stream : streams) {
        ntfschar* uname = nullptr;
        const int len = ntfs_mbstoucs(stream.c_str(), &uname);
        if (len < 0) throw std::runtime_error("cannot convert the name " + stream);
        const std::unique_ptr<ntfschar, decltype(&::free)> owned(uname, &::free);
        if (ntfs_attr_add(file.get(), AT_DATA, uname, static_cast<u8>(len), nullptr, 0) != 0)
            throw std::runtime_error("cannot add the stream " + stream);
        ntfs::AttrPtr attr(ntfs_attr_open(file.get(), AT_DATA, uname, static_cast<u32>(len)));
        if (!attr || ntfs_attr_pwrite(attr.get(), 0, static_cast<s64>(data.size()), data.data()) !=
                         static_cast<s64>(data.size()))
            throw std::runtime_error("cannot write the stream " + stream);
    }
    return file->mft_no;
}

std::uint64_t add_compressed_file(const std::filesystem::path& bare_volume, const std::string& dir,
                                  const std::string& name, std::uint64_t bytes) {
    auto vol = mount_rw(bare_volume);
    NVolSetCompression(vol.get());
    Inode root(ntfs_inode_open(vol.get(), FILE_root));
    if (!root) throw std::runtime_error("cannot open the root directory");
    Inode folder = create(root.get(), dir.c_str(), S_IFDIR);
    folder->flags = static_cast<FILE_ATTR_FLAGS>(folder->flags | FILE_ATTR_COMPRESSED);
    NInoSetDirty(folder.get());
    Inode file = create(folder.get(), name.c_str(), S_IFREG);
    std::vector<char> data(bytes);
    std::uint64_t x = 0x9e3779b97f4a7c15ull;
    for (char& c : data) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c = static_cast<char>(x);
    }
    write_data(file.get(), data);
    return file->mft_no;
}

void set_data_runs(const std::filesystem::path& bare_volume, std::uint64_t record,
                   const std::vector<std::pair<std::int64_t, std::int64_t>>& runs) {
    auto vol = mount_rw(bare_volume);
    Inode file(ntfs_inode_open(vol.get(), record));
    if (!file) throw std::runtime_error("cannot open MFT record " + std::to_string(record));
    ntfs::AttrPtr data(ntfs_attr_open(file.get(), AT_DATA, AT_UNNAMED, 0));
    if (!data || !NAttrNonResident(data.get()) || ntfs_attr_map_whole_runlist(data.get()) != 0)
        throw std::runtime_error("record " + std::to_string(record) + " has no non-resident $DATA");
    s64 clusters = 0;
    for (const auto& [lcn, length] : runs) clusters += length;
    if (clusters << vol->cluster_size_bits != data->allocated_size)
        throw std::runtime_error("the new runs map another number of clusters than the attribute has");
    // libntfs-3g owns na->rl (malloc'd, terminated by a zero-length element) and encodes it
    // into the record's mapping pairs.
    auto* rl = static_cast<runlist_element*>(std::calloc(runs.size() + 1, sizeof(runlist_element)));
    if (rl == nullptr) throw std::bad_alloc();
    s64 vcn = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        rl[i] = {vcn, runs[i].first, runs[i].second};
        vcn += runs[i].second;
    }
    rl[runs.size()] = {vcn, LCN_ENOENT, 0};
    std::free(data->rl);
    data->rl = rl;
    if (ntfs_attr_update_mapping_pairs(data.get(), 0) != 0) throw std::runtime_error("cannot write the mapping pairs");
}

/// Calls edit(attribute, inode) on the first unnamed attribute of `type` in record `record`
/// (named `type_name` in errors), then writes the record back through libntfs-3g.
template <class Edit>
void edit_attribute(const std::filesystem::path& bare_volume, std::uint64_t record, ATTR_TYPES type,
                    const char* type_name, Edit&& edit) {
    auto vol = mount_rw(bare_volume);
    Inode file(ntfs_inode_open(vol.get(), record));
    if (!file) throw std::runtime_error("cannot open MFT record " + std::to_string(record));
    {
        ntfs::SearchCtxPtr ctx(ntfs_attr_get_search_ctx(file.get(), nullptr));
        if (!ctx || ntfs_attr_lookup(type, AT_UNNAMED, 0, CASE_SENSITIVE, 0, nullptr, 0, ctx.get()) != 0)
            throw std::runtime_error("record " + std::to_string(record) + " has no " + type_name);
        edit(*ctx->attr, *file);
        ntfs_inode_mark_dirty(ctx->ntfs_ino);
    }
    if (ntfs_inode_close(file.release()) != 0) throw std::runtime_error("cannot write MFT record " + std::to_string(record));
}

void mark_data_encrypted(const std::filesystem::path& bare_volume, std::uint64_t record) {
    edit_attribute(bare_volume, record, AT_DATA, "$DATA", [](ATTR_RECORD& attr, ntfs_inode& file) {
        attr.flags = static_cast<ATTR_FLAGS>(attr.flags | ATTR_IS_ENCRYPTED);
        file.flags = static_cast<FILE_ATTR_FLAGS>(file.flags | FILE_ATTR_ENCRYPTED);
        NInoSetDirty(&file);
    });
}

void set_file_name_fields(const std::filesystem::path& bare_volume, std::uint64_t record, std::uint8_t name_space,
                          std::uint8_t name_length) {
    edit_attribute(bare_volume, record, AT_FILE_NAME, "$FILE_NAME", [&](ATTR_RECORD& attr, ntfs_inode&) {
        // Raw bytes, not the struct's fields: a namespace outside FILE_NAME_TYPE_FLAGS is
        // exactly what is being written.
        auto* value = reinterpret_cast<std::uint8_t*>(&attr) + le16_to_cpu(attr.value_offset);
        value[offsetof(FILE_NAME_ATTR, file_name_length)] = name_length;
        value[offsetof(FILE_NAME_ATTR, file_name_type)] = name_space;
    });
}

void clear_bitmap_bits(const std::filesystem::path& bare_volume, std::int64_t lcn, std::int64_t count) {
    auto vol = mount_rw(bare_volume);
    if (ntfs_bitmap_clear_run(vol->lcnbmp_na, lcn, count) != 0) throw std::runtime_error("cannot clear $Bitmap bits");
}

void set_mft_attribute_size(const std::filesystem::path& bare_volume, std::uint32_t type, std::uint64_t data_size) {
    std::fstream f(bare_volume, std::ios::in | std::ios::out | std::ios::binary);
    const Geometry g = read_geometry(f);
    const std::uint64_t record_size = g.record_size;
    for (const std::uint64_t lcn : {g.mft_lcn, g.mftmirr_lcn}) {
        const auto offset = static_cast<std::streamoff>(lcn * g.cluster);
        std::vector<char> rec(record_size);
        f.seekg(offset);
        f.read(rec.data(), static_cast<std::streamsize>(rec.size()));
        auto* header = reinterpret_cast<NTFS_RECORD*>(rec.data());
        if (!f || ntfs_mst_post_read_fixup(header, static_cast<u32>(record_size)) != 0)
            throw std::runtime_error("cannot read $MFT record 0");
        std::size_t pos = le16_to_cpu(reinterpret_cast<MFT_RECORD*>(rec.data())->attrs_offset);
        bool found = false;
        while (pos + sizeof(ATTR_RECORD) <= record_size) {
            auto* attr = reinterpret_cast<ATTR_RECORD*>(rec.data() + pos);
            if (attr->type == AT_END || attr->length == 0) break;
            if (le32_to_cpu(attr->type) == type && attr->name_length == 0 && attr->non_resident) {
                attr->data_size = cpu_to_sle64(static_cast<s64>(data_size));
                found = true;
                break;
            }
            pos += le32_to_cpu(attr->length);
        }
        if (!found) throw std::runtime_error("$MFT has no unnamed non-resident attribute of that type");
        if (ntfs_mst_pre_write_fixup(header, static_cast<u32>(record_size)) != 0)
            throw std::runtime_error("cannot protect $MFT record 0");
        f.seekp(offset);
        f.write(rec.data(), static_cast<std::streamsize>(rec.size()));
    }
    if (!f) throw std::runtime_error("cannot write $MFT record 0");
}

void mark_logfile_unclean(const std::filesystem::path& bare_volume) {
    // The pages are written through the mounted volume, after whatever mounting read-write
    // does to $LogFile, so they are what is left on disk.
    auto vol = mount_rw(bare_volume);
    Inode log(ntfs_inode_open(vol.get(), FILE_LogFile));
    if (!log) throw std::runtime_error("cannot open $LogFile");
    ntfs::AttrPtr data(ntfs_attr_open(log.get(), AT_DATA, AT_UNNAMED, 0));
    if (!data) throw std::runtime_error("cannot open the data of $LogFile");
    constexpr std::size_t kPage = 4096;
    std::vector<unsigned char> page(kPage, 0);
    auto put = [&page](std::size_t at, std::uint64_t value, int width) {
        for (int i = 0; i < width; ++i) page[at + static_cast<std::size_t>(i)] = static_cast<unsigned char>(value >> (8 * i));
    };
    page[0] = 'R'; page[1] = 'S'; page[2] = 'T'; page[3] = 'R';
    put(4, 0x1e, 2);      // update sequence array offset
    put(6, 9, 2);         // its count: one number and eight sectors
    put(16, kPage, 4);    // system page size
    put(20, kPage, 4);    // log page size
    put(24, 0x30, 2);     // restart area offset
    put(26, 1, 2);        // minor version
    put(28, 1, 2);        // major version
    put(0x30, 0x2000, 8); // current LSN
    put(0x38, 1, 2);      // log clients
    put(0x3a, 0xffff, 2); // client free list: none
    put(0x3c, 0, 2);      // client in use list: client 0
    put(0x3e, 0, 2);      // flags: RESTART_VOLUME_IS_CLEAN not set
    for (std::size_t at = 0; at < 2 * kPage; at += kPage)
        if (ntfs_attr_pwrite(data.get(), static_cast<s64>(at), kPage, page.data()) != static_cast<s64>(kPage))
            throw std::runtime_error("cannot write $LogFile");
}

void stale_mirror_record(const std::filesystem::path& bare_volume, std::uint64_t record) {
    std::fstream f(bare_volume, std::ios::in | std::ios::out | std::ios::binary);
    const Geometry g = read_geometry(f);
    if ((record + 1) * g.record_size > std::max<std::uint64_t>(g.cluster, 4 * g.record_size))
        throw std::runtime_error("record " + std::to_string(record) + " lies past the mirror");
    const std::uint64_t at = g.mftmirr_lcn * g.cluster + record * g.record_size + 0x50;
    f.seekg(static_cast<std::streamoff>(at));
    const int c = f.get();
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(~c));
    if (!f) throw std::runtime_error("cannot change the mirror of " + bare_volume.string());
}

}  // namespace guestfrag::test
