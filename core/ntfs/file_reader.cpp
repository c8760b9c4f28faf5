// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/ntfs/file_reader.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/error.hpp"
#include "core/ntfs/ntfs3g.hpp"

namespace guestfrag::ntfs {
namespace {

// Read-only: closing writes nothing back.
using InodeHandle = InodePtr;
using AttrHandle = AttrPtr;

// "\\Windows/Prefetch\\" → "\\Windows\\Prefetch": how paths appear in our messages.
std::string display_path(std::string_view path) {
    std::string shown(path);
    for (char& c : shown)
        if (c == '/') c = '\\';
    while (shown.size() > 1 && shown.back() == '\\') shown.pop_back();
    if (shown.empty() || shown.front() != '\\') shown.insert(shown.begin(), '\\');
    return shown;
}

// libntfs-3g mounts case-sensitive and its lookup honours the volume flag; Windows names
// are case-insensitive (trace files name "\\WINDOWS\\SYSTEM32\\NTDLL.DLL"). The flag is
// switched off only around lookups because ntfs_readdir() would otherwise report every
// name in lower case (it needs a locase table we do not build).
class CaseInsensitiveLookup {
public:
    explicit CaseInsensitiveLookup(ntfs_volume* volume)
        : volume_(volume), was_sensitive_(NVolCaseSensitive(volume)) {
        NVolClearCaseSensitive(volume_);
    }
    ~CaseInsensitiveLookup() {
        if (was_sensitive_) NVolSetCaseSensitive(volume_);
    }
    CaseInsensitiveLookup(const CaseInsensitiveLookup&) = delete;
    CaseInsensitiveLookup& operator=(const CaseInsensitiveLookup&) = delete;

private:
    ntfs_volume* volume_;
    bool was_sensitive_;
};

InodeHandle open_path(ntfs_volume* volume, std::string_view path) {
    std::string posix(path);
    for (char& c : posix)
        if (c == '\\') c = '/';
    errno = 0;
    ntfs_inode* inode = nullptr;
    {
        CaseInsensitiveLookup insensitive(volume);
        inode = ntfs_pathname_to_inode(volume, nullptr, posix.c_str());
    }
    if (inode == nullptr) {
        const int err = errno;
        if (err == ENOENT)
            throw Error(ErrorKind::NotFound, "no " + display_path(path) + " on the NTFS volume");
        throw Error(ErrorKind::Corrupt, "cannot open " + display_path(path) + ": " + library_reason(err));
    }
    return InodeHandle(inode);
}

bool is_directory(const ntfs_inode* inode) { return (inode->mrec->flags & MFT_RECORD_IS_DIRECTORY) != 0; }

// What ntfs_readdir() hands each name to; collects entries or the first failure.
struct Listing {
    std::vector<DirectoryEntry> entries;
    std::string failure;
};

bool is_dot_entry(const ntfschar* name, int length) {
    const ntfschar dot = const_cpu_to_le16('.');
    return (length == 1 && name[0] == dot) || (length == 2 && name[0] == dot && name[1] == dot);
}

int collect_entry(void* context, const ntfschar* name, const int name_length, const int name_type, const s64,
                  const MFT_REF mref, const unsigned dt_type) {
    auto& listing = *static_cast<Listing*>(context);
    // A DOS 8.3 alias repeats a long name that the index lists as well.
    if (name_type == FILE_NAME_DOS || is_dot_entry(name, name_length)) return 0;
    char* converted = nullptr;
    if (ntfs_ucstombs(name, name_length, &converted, 0) < 0) {
        listing.failure = "a directory entry's name is not valid UTF-16";
        return -1;
    }
    DirectoryEntry entry;
    entry.name = converted;
    std::free(converted);
    // MFT_REF carries the sequence number in its top 16 bits.
    entry.mft_record = static_cast<std::uint64_t>(mref) & 0x0000FFFFFFFFFFFFull;
    entry.directory = dt_type == NTFS_DT_DIR;
    listing.entries.push_back(std::move(entry));
    return 0;
}

}  // namespace

VolumeFiles::VolumeFiles(const DiskImage& image, std::uint64_t offset, std::uint64_t length)
    : volume_(Device(image, offset, length)) {}

std::vector<std::byte> VolumeFiles::read_file(std::string_view path, std::uint64_t max_bytes) const {
    const InodeHandle inode = open_path(volume_.get(), path);
    const std::string shown = display_path(path);
    if (is_directory(inode.get())) throw Error(ErrorKind::Unsupported, shown + " is a directory, not a file");

    errno = 0;
    const AttrHandle data(ntfs_attr_open(inode.get(), AT_DATA, AT_UNNAMED, 0));
    if (!data) {
        const int err = errno;
        if (err == ENOENT) throw Error(ErrorKind::Corrupt, shown + " has no data stream");
        throw Error(ErrorKind::Corrupt, "cannot open the data of " + shown + ": " + library_reason(err));
    }
    if ((data->data_flags & ATTR_IS_ENCRYPTED) != 0)
        throw Error(ErrorKind::Unsupported,
                    shown + " is encrypted (EFS); its content cannot be read offline");
    if (data->data_size < 0) throw Error(ErrorKind::Corrupt, shown + " has a negative data size");
    const auto size = static_cast<std::uint64_t>(data->data_size);
    if (size > max_bytes)
        throw Error(ErrorKind::Unsupported, shown + " holds " + std::to_string(size) +
                                                " bytes, more than the " + std::to_string(max_bytes) +
                                                "-byte limit");

    std::vector<std::byte> content(size);
    std::uint64_t done = 0;
    while (done < size) {
        errno = 0;
        const s64 got = ntfs_attr_pread(data.get(), static_cast<s64>(done), static_cast<s64>(size - done),
                                        content.data() + done);
        if (got <= 0) {
            const int err = errno;
            const std::string reason = got == 0 ? "unexpected end of data" : library_reason(err);
            throw Error(err == EIO ? ErrorKind::Io : ErrorKind::Corrupt,
                        "cannot read " + shown + " at byte " + std::to_string(done) + ": " + reason);
        }
        done += static_cast<std::uint64_t>(got);
    }
    return content;
}

std::vector<DirectoryEntry> VolumeFiles::list_directory(std::string_view path) const {
    const InodeHandle inode = open_path(volume_.get(), path);
    const std::string shown = display_path(path);
    if (!is_directory(inode.get()))
        throw Error(ErrorKind::Unsupported, shown + " is a file, not a directory");

    Listing listing;
    s64 position = 0;
    errno = 0;
    if (ntfs_readdir(inode.get(), &position, &listing, collect_entry) != 0) {
        const int err = errno;
        const std::string reason = listing.failure.empty() ? library_reason(err) : listing.failure;
        throw Error(ErrorKind::Corrupt, "cannot list " + shown + ": " + reason);
    }
    return std::move(listing.entries);
}

}  // namespace guestfrag::ntfs
