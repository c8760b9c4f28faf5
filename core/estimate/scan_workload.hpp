// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>

#include "core/estimate/io.hpp"
#include "core/estimate/workload.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// Hands `read` what the scan workload reads, in its order (docs/design.md §4,
/// docs/estimate.md): each file's base record with each stream it reads, and a file with
/// none once with nullptr (its data lies in its record, or it has none: opening it still
/// reads the record). The streams read: every $DATA stream of the map (unnamed or named;
/// the map holds only non-resident ones) with size > 0. Metadata files ($MFT, $LogFile,
/// ...) and excluded files (pagefile.sys, ...) are included: a backup or antivirus scan
/// reads them too.
/// - ScanOrder::Mft: by (mft_record, label), every file of the map;
/// - ScanOrder::Path: the files in depth-first path order (path_walk), each directory's
///   index ($INDEX_ALLOCATION:$I30, when non-resident) read before its entries, then the
///   streams of records the walk does not reach (path_order).
/// The streams point into `volume.streams`. O(streams · log streams + files · log files).
void scan_reads(const VolumeMap& volume, Workload::ScanOrder order,
                const std::function<void(std::uint64_t, const Stream*)>& read);

}  // namespace guestfrag
