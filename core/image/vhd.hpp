// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>

#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"

namespace guestfrag {

/// Opens one VHD file (Virtual PC / Hyper-V "vpc": fixed, dynamic or differencing) as a
/// layer. The footer, dynamic header, block allocation table and (for differencing disks)
/// every sector bitmap are read and validated here, so map() does no I/O afterwards;
/// memory is bounded by the file size (4 bytes per block plus block_size/4096 bytes per
/// stored block).
///
/// Allocation reported by map():
///  - fixed: everything is Data at its own offset in the file; granule 512 bytes. A
///    truncated fixed disk (fewer data bytes before the footer than its current size) is
///    opened anyway, with a warning (warnings()) saying how many bytes are missing: its
///    missing tail is still Data, without a file offset, and reading any of it throws
///    Error(Corrupt), so only what needs the missing bytes fails.
///  - dynamic: a stored block is Data as a whole (its sector bitmap is ignored, as qemu
///    and Hyper-V read it), an absent block Unallocated; granule = block size (2 MiB
///    by default).
///  - differencing: inside a stored block a sector with its bitmap bit set is Data,
///    clear is Unallocated (the parent shows through), absent blocks Unallocated;
///    granule 512 bytes, although the file grows by whole blocks.
/// The virtual size is the footer's current size (Hyper-V's reading; Virtual PC's CHS
/// rounding is not applied). identity() is the footer's unique id as lower-case
/// 8-4-4-4-12 hex in file byte order; a differencing disk's parent() expects the same form.
///
/// Throws Error(NotFound/Io) from opening the file, Error(Corrupt) for damaged or
/// inconsistent structures (bad checksum, truncated dynamic file, table or block past the end of
/// the file, overlapping blocks, absurd size), Error(Unsupported) for other disk types and
/// versions.
[[nodiscard]] std::unique_ptr<LayerFile> open_vhd(const std::string& path);

/// The same, reading an already open `file` (any ByteSource: a host file, memory, ...).
/// Throws like open_vhd(path), less the errors of opening.
[[nodiscard]] std::unique_ptr<LayerFile> open_vhd(HostFile file);

}  // namespace guestfrag
