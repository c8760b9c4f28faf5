// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>

#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"

namespace guestfrag {

/// Opens one qcow2 file as a layer. Throws Error (NotFound, Corrupt, Unsupported, Io).
[[nodiscard]] std::unique_ptr<LayerFile> open_qcow2(const std::string& path);

/// The same, reading an already open `file` (any ByteSource: a host file, memory, ...).
/// Throws like open_qcow2(path), less the errors of opening.
[[nodiscard]] std::unique_ptr<LayerFile> open_qcow2(HostFile file);

}  // namespace guestfrag
