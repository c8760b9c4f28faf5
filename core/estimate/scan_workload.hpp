// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include "core/estimate/io.hpp"
#include "core/estimate/workload.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// The streams the scan workload reads, in its order (docs/design.md §4, docs/estimate.md):
/// every $DATA stream of the map (unnamed or named; the map holds only non-resident ones)
/// with size > 0. Metadata files ($MFT, $LogFile, ...) and excluded files (pagefile.sys, ...)
/// are included: a backup or antivirus scan reads them too.
/// - ScanOrder::Mft: ordered by (mft_record, label);
/// - ScanOrder::Path: depth-first path order (path_order), and the walk reads each
///   directory's index ($INDEX_ALLOCATION:$I30, when non-resident) before its entries.
/// The pointers point into `volume.streams`. O(streams · log streams).
[[nodiscard]] std::vector<const Stream*> scan_streams(const VolumeMap& volume, Workload::ScanOrder order);

}  // namespace guestfrag
