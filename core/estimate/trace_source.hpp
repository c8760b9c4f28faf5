// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/estimate/io_trace.hpp"
#include "core/image/disk_image.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// A trace workload's source, read once: a block IO trace, its IOs tied to the volume
/// (IoTraceReplay), or the files a path list, a Prefetch file or a Layout.ini names.
struct TraceSource {
    std::shared_ptr<const IoTraceReplay> io_trace;  ///< set for a block IO trace; paths is then empty
    std::vector<std::string> paths;                 ///< volume paths in order, otherwise (never empty)
};

/// Reads `source`: a host file (a Windows Prefetch .pf file of any version, a Layout.ini, a
/// text file with one path per line, or a block IO trace, read_io_trace), "@prefetch" (every
/// .pf file in the image's \Windows\Prefetch, oldest last-run first) or "@layout" (the
/// image's \Windows\Prefetch\Layout.ini). Device prefixes (\DEVICE\HARDDISKVOLUME1\, C:\)
/// are stripped. A host file is read once (a Prefetch file again by libscca). Throws
/// Error(NotFound / Corrupt / Unsupported), Unsupported for a source of paths that names no
/// file.
[[nodiscard]] TraceSource read_trace_source(const std::string& source, const DiskImage& image,
                                            const VolumeMap& volume);

/// The files a trace workload reads, in order, as volume paths ("\\Windows\\notepad.exe"):
/// read_trace_source's paths, or for a block IO trace the files it reads in the order it first
/// reads each (IoTraceReplay::files_read). Throws as read_trace_source, and
/// Error(Unsupported) for an IO trace that reads no file.
[[nodiscard]] std::vector<std::string> load_trace(const std::string& source, const DiskImage& image,
                                                  const VolumeMap& volume);

}  // namespace guestfrag
