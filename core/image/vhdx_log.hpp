// SPDX-License-Identifier: GPL-2.0-or-later
// The VHDX log, replayed in memory: a file whose header names a log GUID may hold metadata
// (and data) writes in its log that never reached their place in the file. Replaying them
// into an overlay gives the file as Hyper-V would see it after opening it, without
// writing anything.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/image/host_file.hpp"
#include "core/image/vhdx_format.hpp"

namespace guestfrag::vhdx {

/// Largest log replayed; Hyper-V and qemu make 1 MiB logs, so a bigger one is refused
/// (Unsupported) rather than read into memory.
inline constexpr std::uint64_t kMaxLogBytes = 256 * MiB;

/// File writes replayed from the log, keyed by file offset; later writes replace earlier
/// ones. Plain data, immutable once the replay is done.
class Overlay {
public:
    /// Records that [offset, offset + length) holds `data[data_offset...]`.
    void write(std::uint64_t offset, std::shared_ptr<const std::vector<std::byte>> data, std::size_t data_offset,
               std::uint64_t length);
    /// Records that [offset, offset + length) reads as zero.
    void zero(std::uint64_t offset, std::uint64_t length);
    [[nodiscard]] bool empty() const { return segments_.empty(); }
    /// Replaces the bytes of `out` (file bytes at `offset`) that the log rewrote.
    void apply(std::uint64_t offset, std::span<std::byte> out) const;

private:
    struct Segment {
        std::uint64_t end = 0;
        std::shared_ptr<const std::vector<std::byte>> data;  ///< null: zeros
        std::size_t data_offset = 0;
    };
    void assign(std::uint64_t start, Segment segment);

    std::map<std::uint64_t, Segment> segments_;  ///< non-overlapping, by start offset
};

/// What replaying the log gave.
struct LogReplay {
    Overlay overlay;
    std::uint64_t file_size = 0;   ///< the file's size after replay (the log may extend it)
    std::size_t entries = 0;       ///< log entries replayed (0: nothing to do)
    std::uint64_t last_sequence = 0;  ///< sequence number of the newest entry replayed
};

/// Finds the active log sequence (MS-VHDX 2.3.3: the complete run of valid, consecutively
/// numbered entries whose last entry's tail is its first entry, with the highest sequence
/// number) and replays it into an overlay. Does nothing when the header's log GUID is zero.
/// Throws Error(Corrupt) when the log lies outside the file or the file is shorter than the
/// log says was flushed, Error(Unsupported) for logs over kMaxLogBytes.
[[nodiscard]] LogReplay replay_log(const HostFile& file, const Header& header);

/// The VHDX file as the log says it is: host bytes, with replayed writes on top and zeros
/// up to the size the log gives it. Thread-safe (immutable).
class FileView {
public:
    FileView(HostFile file, LogReplay replay);

    [[nodiscard]] const std::string& path() const { return file_.path(); }
    [[nodiscard]] std::uint64_t size() const { return replay_.file_size; }
    [[nodiscard]] std::size_t replayed_entries() const { return replay_.entries; }
    /// What the host file holds plus any length the log adds to it.
    [[nodiscard]] std::uint64_t held_bytes() const {
        return file_.source().held_bytes() + (size() > file_.size() ? size() - file_.size() : 0);
    }

    /// Reads exactly out.size() bytes at `offset`; a range past size() throws
    /// Error(Corrupt, "<what> at offset N lies past the end of the file (S bytes)").
    void read(std::uint64_t offset, std::span<std::byte> out, const char* what) const;

private:
    HostFile file_;
    LogReplay replay_;
};

}  // namespace guestfrag::vhdx
