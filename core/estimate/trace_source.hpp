// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// The files a trace workload reads, in order, as volume paths ("\\Windows\\notepad.exe").
/// `source` is a host file (a Windows Prefetch .pf file of any version, a Layout.ini, a
/// text file with one path per line, or a block IO trace: the files it reads, in the order
/// it first reads each, IoTraceReplay::files_read), "@prefetch" (every .pf file in the image's
/// \Windows\Prefetch, oldest last-run first) or "@layout" (the image's
/// \Windows\Prefetch\Layout.ini). Device prefixes (\DEVICE\HARDDISKVOLUME1\, C:\) are
/// stripped. Throws Error(NotFound / Corrupt / Unsupported).
[[nodiscard]] std::vector<std::string> load_trace(const std::string& source, const DiskImage& image,
                                                  const VolumeMap& volume);

}  // namespace guestfrag
