// SPDX-License-Identifier: GPL-2.0-or-later
// The guest's side of a read (docs/estimate.md §1.1): a guest does not send a file's extents
// to its virtual disk. Its page cache reads whole pages, its read-ahead reads a window ahead
// of the reader (growing while the reads stay sequential, and, when the cache is the
// disk's, running on past a file's end), and its file system reads each file's $MFT record
// before the data. A guest profile names those parameters for one kind of guest.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "core/estimate/io.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// What reads each whole file through the guest's cache: a program the user names
/// (--reader), or, where the guest's own layer asks the cache (Windows' cache manager,
/// FUSE under ntfs-3g), that layer, unnamed.
struct FileReader {
    std::string_view name;                 ///< "" for a guest's own layer
    std::uint64_t request_bytes = 131072;  ///< the most it asks of the cache at once
    /// It advises sequential access (posix_fadvise POSIX_FADV_SEQUENTIAL, as cat and cp
    /// do): Linux doubles the window of each file it opens.
    bool sequential_advice = false;
    /// It writes a tar archive of records request_bytes long: each file's data follows a
    /// 512-byte header and is padded to 512 bytes, and each read fills what is left of the
    /// record, so a file's first read is usually short. Otherwise reads start at the file's
    /// start.
    bool archive = false;
};

/// The named readers: cat and tar (docs/estimate.md §1.1).
[[nodiscard]] std::span<const FileReader> file_readers() noexcept;

struct GuestProfile {
    /// Whose cache the file data is read through.
    enum class Cache : std::uint8_t {
        None,  ///< no cache: each extent piece is an IO (append_stream_ios), the "raw" profile
        /// the disk's own cache, by disk offset (ntfs-3g reads the device through it), behind
        /// each file's own cache when the profile has one (FUSE's: layer_read_ahead_bytes)
        Disk,
        File,  ///< each file's cache, by file offset: read-ahead stops at the file's end
    };
    /// How a file's $MFT record is read before its data.
    enum class RecordReads : std::uint8_t {
        None,       ///< not modelled (raw)
        DataCache,  ///< through the same cache and read-ahead as the data (ntfs-3g)
        Blocks,     ///< a page of the disk at a time, cached, never read ahead (ntfs3)
        MftCache,   ///< through $MFT's own file cache, with its read-ahead (Windows)
    };

    std::string_view name;
    Cache cache = Cache::None;
    RecordReads records = RecordReads::None;
    std::uint64_t page_bytes = 4096;          ///< the cache's unit: reads are whole pages
    std::uint64_t read_ahead_bytes = 131072;  ///< the largest read-ahead window (0: none)
    /// The largest request the guest sends; 0: the estimate's --max-io.
    std::uint64_t max_request_bytes = 0;
    /// The block that holds a file's last byte is read alone, before the rest of the window
    /// it falls in (ntfs3's get_block reads it at once to zero what lies past the data,
    /// while the pages before it wait in a bio that is sent after).
    bool tail_block_first = false;
    /// What asks the cache for each file's bytes.
    FileReader reader;
    /// Cache::Disk: the read-ahead window of each file's own cache in front of the disk's
    /// (FUSE's page cache under ntfs-3g, whose window is the FUSE connection's, not the
    /// disk's read_ahead_kb), and the largest request that cache sends the file system
    /// (FUSE's max_pages). 0: no such cache, the reader's requests go to the disk's cache.
    std::uint64_t layer_read_ahead_bytes = 0;
    std::uint64_t layer_request_bytes = 0;

    /// The read-ahead window of a file the reader opens (read_ahead_bytes, or under
    /// Cache::Disk its own cache's), doubled by sequential advice.
    [[nodiscard]] constexpr std::uint64_t file_read_ahead_bytes() const noexcept {
        return (cache == Cache::Disk ? layer_read_ahead_bytes : read_ahead_bytes) *
               (reader.sequential_advice ? 2 : 1);
    }
};

/// The named profiles: raw, windows, linux-ntfs3g, linux-ntfs3 (docs/estimate.md §1.1 gives
/// each value and where it comes from).
[[nodiscard]] std::span<const GuestProfile> guest_profiles() noexcept;
/// The profile named `name`, nullopt for none.
[[nodiscard]] std::optional<GuestProfile> find_guest_profile(std::string_view name) noexcept;
/// `profile` with its read-ahead window set to `bytes` (a guest's read_ahead_kb · 1024).
/// Throws Error(Unsupported) unless `bytes` is a multiple of the page, at most 64 MiB.
[[nodiscard]] GuestProfile with_read_ahead(GuestProfile profile, std::uint64_t bytes);
/// `profile` read by the reader named `name`. Throws Error(Unsupported) when there is no
/// such reader, or when the profile's own layer reads its files (its reader has no name).
[[nodiscard]] GuestProfile with_reader(GuestProfile profile, std::string_view name);
/// The profile estimates use unless told: windows (docs/estimate.md §1.1 argues it).
[[nodiscard]] const GuestProfile& default_guest_profile() noexcept;

/// Reads files as `profile`'s guest does and hands the IOs it sends to the disk to `each`,
/// in issue order. One reader is one guest session: what it has read stays cached for the
/// files read after, and nothing is evicted (a page read twice comes from the disk once;
/// a guest's cache holds far more than the read-ahead windows that matter here).
class GuestReader {
public:
    /// Throws Error(Unsupported) when `max_io` is not valid_max_io or the volume's cluster
    /// size is not a positive multiple of 512 (as append_stream_ios).
    GuestReader(const VolumeMap& volume, const GuestProfile& profile, std::uint64_t max_io,
                std::function<void(const Io&)> each);
    ~GuestReader();
    GuestReader(const GuestReader&) = delete;
    GuestReader& operator=(const GuestReader&) = delete;

    /// Reads `stream` front to back as the guest's reader of a whole file does: its $MFT
    /// record first, then its data as its reader asks for it, up to its size. O(runs +
    /// pages read · log cached ranges).
    void read(const Stream& stream);

    /// Opens the file of MFT record `record` without reading data from the disk: its record
    /// is read as read() reads it. A file whose data is resident in its record, or empty,
    /// costs a walk that reads it just this. O(log cached ranges).
    void open(std::uint64_t record);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace guestfrag
