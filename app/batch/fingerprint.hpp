// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>

#include "app/batch/image_result.hpp"

namespace guestfrag::batch {

/// Size, modification time and a hash of the first 64 KiB of the file at `path` (a VMDK
/// descriptor's text, a container's header and first tables, a raw disk's partition table
/// and boot sectors). An NBD URI has no modification time (0): its export's size and first
/// 64 KiB stand for it. Throws Error(NotFound / Io).
[[nodiscard]] Fingerprint fingerprint(const std::string& path);

}  // namespace guestfrag::batch
