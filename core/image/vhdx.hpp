// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>

#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"

namespace guestfrag {

/// Opens one VHDX file (fixed, dynamic or differencing; MS-VHDX v1.0) as a layer; see
/// VhdxLayer (core/image/vhdx_layer.hpp) for what map() reports and what is validated. A
/// log left by a disk that was not closed cleanly is replayed in memory (never written).
/// Throws Error (NotFound, Corrupt, Unsupported, Io).
[[nodiscard]] std::unique_ptr<LayerFile> open_vhdx(const std::string& path);

/// The same, reading an already open `file` (any ByteSource: a host file, memory, ...).
/// Throws like open_vhdx(path), less the errors of opening.
[[nodiscard]] std::unique_ptr<LayerFile> open_vhdx(HostFile file);

}  // namespace guestfrag
