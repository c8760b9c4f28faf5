// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>

#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"

namespace guestfrag {

/// Opens one vmdk file as a layer: a text descriptor (its extents resolved against the
/// descriptor's directory: FLAT/VMFS, ZERO, SPARSE, VMFSSPARSE, SESPARSE), a hosted
/// sparse file (monolithicSparse, streamOptimized, one extent of a split disk), or a bare
/// COWD or seSparse extent. The parent, if any, comes from parentCID/parentFileNameHint
/// (or a legacy COWD header). Throws Error(NotFound) naming a missing extent file,
/// Error(Corrupt) for inconsistent headers, tables or descriptors, Error(Unsupported)
/// for host-device disks, raw device mappings, NOACCESS extents and unknown format
/// features, Error(Io) for read failures.
[[nodiscard]] std::unique_ptr<LayerFile> open_vmdk(const std::string& path);

class SourceOpener;  // core/image/source_opener.hpp

/// The same, reading an already open `file` and opening the extent files its descriptor
/// names through `opener` (resolved against the directory of file.path(), as above).
[[nodiscard]] std::unique_ptr<LayerFile> open_vmdk(HostFile file, const SourceOpener& opener);

}  // namespace guestfrag
