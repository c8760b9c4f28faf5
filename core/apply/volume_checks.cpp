// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/apply/volume_checks.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include <boost/endian/conversion.hpp>

#include "core/error.hpp"
#include "core/image/disk_image.hpp"
#include "core/impact/vss.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "core/ntfs/ntfs_volume.hpp"

namespace guestfrag {
namespace {

// Layout of $LogFile's restart page and restart area (the structures ntfs-3g's logfile.h
// describes as RESTART_PAGE_HEADER and RESTART_AREA). Offsets in bytes.
constexpr std::size_t kRestartAreaOffset = 24;  // le16, from the page start
constexpr std::size_t kCurrentLsn = 0;          // le64, in the restart area
constexpr std::size_t kClientInUseList = 12;    // le16
constexpr std::size_t kRestartFlags = 14;       // le16
constexpr std::uint16_t kNoClient = 0xffff;     // LOGFILE_NO_CLIENT
constexpr std::uint16_t kVolumeIsClean = 0x0002;  // RESTART_VOLUME_IS_CLEAN
constexpr std::size_t kBlock = 512;             // restart pages start on a 512-byte multiple
constexpr std::size_t kLogHead = 64 * 1024;

const unsigned char* at(const std::string& bytes, std::size_t offset) {
    return reinterpret_cast<const unsigned char*>(bytes.data() + offset);
}

std::string read_prefix(ntfs_volume* vol, std::uint64_t record, std::size_t want, const char* what) {
    ntfs::InodePtr ni(ntfs_inode_open(vol, static_cast<MFT_REF>(record)));
    if (!ni) ntfs::throw_library_error(ErrorKind::Corrupt, std::string("cannot open ") + what);
    ntfs::AttrPtr na(ntfs_attr_open(ni.get(), AT_DATA, AT_UNNAMED, 0));
    if (!na) ntfs::throw_library_error(ErrorKind::Corrupt, std::string("cannot open the data of ") + what);
    const auto n = static_cast<std::size_t>(std::min<s64>(na->data_size, static_cast<s64>(want)));
    std::string out(n, '\0');
    errno = 0;
    if (n > 0 && ntfs_attr_pread(na.get(), 0, static_cast<s64>(n), out.data()) != static_cast<s64>(n))
        ntfs::throw_library_error(ErrorKind::Corrupt, std::string("cannot read ") + what);
    return out;
}

/// The records $MFTMirr must hold as $MFT does: those below min(mirror size, 16). Windows 10
/// keeps only these in sync: a mirror of a whole cluster (2,048 records at 2 MiB clusters)
/// holds format-time copies past them. libntfs-3g's mount compares the same records (the
/// system files, FILE_first_user), each over its used part (bytes_in_use).
std::optional<std::string> mirror_difference(ntfs_volume* vol) {
    const int records = std::min(vol->mftmirr_size, static_cast<int>(FILE_first_user));
    const std::size_t size = vol->mft_record_size;
    const std::size_t bytes = static_cast<std::size_t>(records) * size;
    std::string mft(bytes, '\0');
    std::string mirror(bytes, '\0');
    errno = 0;
    if (ntfs_attr_pread(vol->mft_na, 0, static_cast<s64>(bytes), mft.data()) != static_cast<s64>(bytes) ||
        ntfs_attr_pread(vol->mftmirr_na, 0, static_cast<s64>(bytes), mirror.data()) != static_cast<s64>(bytes))
        ntfs::throw_library_error(ErrorKind::Corrupt, "cannot read $MFT and $MFTMirr");
    constexpr std::size_t kBytesInUse = 0x18;  // le32 in the record header
    for (int r = 0; r < records; ++r) {
        const std::size_t record = static_cast<std::size_t>(r) * size;
        // The used part of $MFT's record (all of it for a record that is no FILE record).
        std::size_t used = size;
        if (mft.compare(record, 4, "FILE") == 0)
            used = std::min<std::size_t>(size, boost::endian::load_little_u32(at(mft, record + kBytesInUse)));
        if (mft.compare(record, used, mirror, record, used) != 0)
            return "$MFTMirr does not match record " + std::to_string(r) + " of $MFT";
    }
    return std::nullopt;
}

/// Whether hiberfil.sys begins with "wake" (a hibernation image being resumed), which
/// libntfs-3g's hiberfil check (Volume::check_clean) does not know: that one sees only
/// "hibr" and "HIBR". A missing or empty file is not hibernation.
bool resuming(ntfs_volume* vol) {
    ntfs::InodePtr ni(ntfs_pathname_to_inode(vol, nullptr, "hiberfil.sys"));
    if (!ni) return false;
    ntfs::AttrPtr na(ntfs_attr_open(ni.get(), AT_DATA, AT_UNNAMED, 0));
    if (!na || na->data_size < 4) return false;
    char magic[4];
    errno = 0;
    if (ntfs_attr_pread(na.get(), 0, 4, magic) != 4)
        ntfs::throw_library_error(ErrorKind::Corrupt, "cannot read hiberfil.sys");
    const std::string_view m(magic, 4);
    return m == "wake" || m == "WAKE";
}

ntfs::Volume mount_read_only(const DiskImage& image, const VolumeWindow& window) {
    return ntfs::Volume(ntfs::Device(image, window.offset, window.length));
}

}  // namespace

std::optional<std::string> logfile_unclean_reason(const std::string& head) {
    struct Found {
        std::uint64_t lsn;
        std::uint16_t in_use;
        std::uint16_t flags;
    };
    std::vector<Found> pages;
    bool empty = true;
    // Restart pages sit at 0 and at the system page size (a power of two); anything else at
    // those places ends the search, as in ntfs-3g's ntfs_check_logfile.
    for (std::size_t pos = 0; pos + kBlock <= head.size() && pages.size() < 2; pos = pos == 0 ? kBlock : pos * 2) {
        const std::string magic = head.substr(pos, 4);
        if (magic == std::string(4, '\xff')) {
            if (!empty) break;
            continue;
        }
        empty = false;
        if (magic == "RCRD") break;
        if (magic != "RSTR" && magic != "CHKD") continue;
        const std::size_t area = pos + boost::endian::load_little_u16(at(head, pos + kRestartAreaOffset));
        // The fields we read must lie in the page's first sector, before its update
        // sequence number slot, so they need no fix-up.
        if (area < pos + 32 || area + 16 > pos + kBlock - 2) continue;
        pages.push_back({boost::endian::load_little_u64(at(head, area + kCurrentLsn)),
                         boost::endian::load_little_u16(at(head, area + kClientInUseList)),
                         boost::endian::load_little_u16(at(head, area + kRestartFlags))});
    }
    if (empty) return std::nullopt;
    if (pages.empty()) return "$LogFile holds log records but no restart page";
    const Found& recent = pages.size() == 2 && pages[1].lsn > pages[0].lsn ? pages[1] : pages[0];
    if (recent.in_use != kNoClient && (recent.flags & kVolumeIsClean) == 0)
        return "$LogFile says the volume was not shut down cleanly (a log client is still in use)";
    return std::nullopt;
}

std::optional<std::string> mft_mirror_difference(const DiskImage& image, const VolumeWindow& window) {
    ntfs::Volume volume = mount_read_only(image, window);
    return mirror_difference(volume.get());
}

void check_volume_state(const DiskImage& image, const VolumeWindow& window, const VolumeMap& map, bool allow_vss) {
    ntfs::Volume volume = mount_read_only(image, window);
    volume.check_clean();
    ntfs_volume* vol = volume.get();
    if (resuming(vol))
        throw Error(ErrorKind::Unsafe,
                    "Windows is hibernated on this volume (or Fast Startup is on); shut it down fully first");
    if (const auto reason = logfile_unclean_reason(read_prefix(vol, FILE_LogFile, kLogHead, "$LogFile")))
        throw Error(ErrorKind::Unsafe, *reason + "; boot Windows and shut it down cleanly first");
    if (const auto difference = mirror_difference(vol))
        throw Error(ErrorKind::Unsafe, *difference + "; run chkdsk in the guest first");
    const VssFigures vss = find_shadow_copies(map);
    if (vss.store_files > 0 && !allow_vss) {
        // Named, so that the administrator knows what vssadmin delete shadows removes.
        std::string names = "\\System Volume Information\\" + vss.store_names.front();
        if (vss.store_names.size() > 1)
            names += " and " + std::to_string(vss.store_names.size() - 1) + " more";
        throw Error(ErrorKind::Unsafe,
                    "the volume has " + std::to_string(vss.store_files) + " shadow copy store file(s) (" +
                        names +
                        "): an offline move bypasses the shadow copy driver's copy-on-write and leaves the "
                        "shadow copies wrong (--allow-vss to apply anyway)");
    }
}

}  // namespace guestfrag
