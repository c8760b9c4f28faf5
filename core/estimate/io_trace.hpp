// SPDX-License-Identifier: GPL-2.0-or-later
// Block IO traces as users have them (docs/estimate.md §2.3): what a guest sent to its
// virtual disk, recorded at the disk by nbdkit's log filter, blktrace/blkparse, or
// vscsiStats' command trace converted to CSV. Replayed before a plan as recorded and after
// it with each read of a file's clusters laid where the plan puts them.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/estimate/io.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

enum class IoTraceFormat {
    NbdkitLog,     ///< nbdkit --filter=log: "… connection=N Read id=N offset=0x… count=0x… …"
    Blkparse,      ///< blkparse's default output: "8,0 1 7 0.1 42 D R 2048 + 8 [cat]"
    VscsiStatsCsv  ///< "#Vscsi Cmd Trace", then "serial,length,sg,read|write,lbn,µs" lines
};

[[nodiscard]] std::string_view io_trace_format_name(IoTraceFormat format) noexcept;

/// The format whose trace `first_line` (a file's first line) begins, nullopt for any other
/// text (a list of paths, Layout.ini). O(line).
[[nodiscard]] std::optional<IoTraceFormat> detect_io_trace(std::string_view first_line);

/// The read and write IOs of a trace in `format`, in issue order: nbdkit's requests as
/// logged (replies, Zero, Trim and Cache are not reads or writes); blkparse's D (issued to
/// the device) events, or its Q events when it has none; vscsiStats' commands by time
/// stamp. Lines of other kinds are skipped. Throws Error(Corrupt) naming `what` and the line
/// for a read or write line whose numbers are missing or out of range (offsets and lengths
/// past 2^62 bytes, a zero length). O(bytes read); memory 24 bytes per IO.
[[nodiscard]] std::vector<Io> parse_io_trace(std::istream& in, IoTraceFormat format, const std::string& what);

/// The host file `path` opened for reading as a trace source (an IO trace, a path list, a
/// Prefetch file). Throws Error(NotFound) when it is missing, Error(Unsupported) when it is
/// not a regular file (a directory, a FIFO nobody writes to, a device), Error(Io) when it
/// cannot be opened.
[[nodiscard]] std::ifstream open_trace_file(const std::string& path);

/// The IOs of the trace source `in` (named `path` in errors) when it is an IO trace
/// (detect_io_trace on its first line), nullopt when it is not; `in` is then back at its
/// start, for the caller to read it as another kind of source. Throws Error(Io) when it
/// cannot be read, and what parse_io_trace throws.
[[nodiscard]] std::optional<std::vector<Io>> read_io_trace(std::istream& in, const std::string& path);

/// The same for the host file `path`, opened by open_trace_file.
[[nodiscard]] std::optional<std::vector<Io>> read_io_trace(const std::string& path);

/// A trace's IOs tied to the volume they read, so that they can be replayed on any state of
/// it. What lies outside the volume is left out (another volume's workload, the partition
/// table's). Each IO is cut where the clusters it covers change owner: a piece inside a
/// stream's run is kept as (stream, VCN), any other piece (metadata outside every stream's
/// runs, free clusters a read-ahead passed over) at its disk address. O((streams' runs + IOs) · log runs) to
/// build; memory 40 bytes per piece plus the stream keys.
class IoTraceReplay {
public:
    IoTraceReplay(const VolumeMap& before, std::vector<Io> ios);

    /// Hands `each` the trace's IOs on `state` (the volume `before` was, or it after a
    /// plan), in trace order: the pieces of one traced IO that still lie one after another
    /// on the disk make one IO, each other place one more. A stream `state` lacks, or a VCN
    /// it no longer maps, keeps the piece's disk address. O(pieces · log runs).
    void replay(const VolumeMap& state, const std::function<void(const Io&)>& each) const;

    /// The volume paths of the files whose unnamed $DATA the trace reads, in the order it
    /// first reads each (a trace order for the planner, docs/planner.md). O(pieces).
    [[nodiscard]] std::vector<std::string> files_read(const VolumeMap& before) const;

    [[nodiscard]] std::size_t ios() const noexcept { return traced_; }

private:
    struct StreamKey {
        std::uint64_t mft_record = 0;
        std::uint32_t type = 0;
        std::string name;
        friend auto operator<=>(const StreamKey&, const StreamKey&) = default;
    };
    struct Piece {
        std::uint32_t io = 0;  ///< index of the traced IO it is part of
        bool write = false;
        std::int32_t stream = -1;  ///< into keys_; −1: no stream's, replayed at `byte`
        std::int64_t vcn = 0;      ///< stream pieces: the VCN of the cluster `byte` is in
        std::uint64_t byte = 0;    ///< where the trace read it on the disk
        std::uint64_t length = 0;
    };
    std::vector<StreamKey> keys_;
    std::vector<Piece> pieces_;
    std::size_t traced_ = 0;
};

}  // namespace guestfrag
