// SPDX-License-Identifier: GPL-2.0-or-later
// Giving a raw disk file's space back to the host: what it stores, and holes punched where
// the guest keeps nothing (docs/compact.md).
#pragma once

#include <cstdint>
#include <string>

#include "core/image/disk_image.hpp"
#include "core/progress.hpp"

namespace guestfrag {

/// Whether the file system of `fd` can punch holes (fallocate PUNCH_HOLE): probed on the
/// file's first byte, which must be a hole or data that may be zeroed. Throws Error(Io) for
/// any other failure.
[[nodiscard]] bool can_punch_holes(int fd);

/// Frees every byte of `discard` that the raw disk file `fd` (`path` names it in errors) of
/// `size` bytes stores: punched out, or with `holes` false (a file system without
/// PUNCH_HOLE, a file that is only an intermediate) written as zeros. A file system block
/// `discard` covers only in part is zeroed there and stays. Throws Error(Io).
void discard_stored(int fd, const std::string& path, std::uint64_t size, const ByteSet& discard, bool holes);

/// Frees (as discard_stored) every block of `block` bytes (the file system's, so that each
/// punch frees whole blocks) that touches `within`, is stored and reads all zero; returns
/// the stored blocks touching `within` that are left, the ones holding data. Throws
/// Error(Io) and Error(Cancelled) from `progress` (bytes of the file done).
/// Cost: reads every stored byte of those blocks once; memory 1 MiB.
ByteSet discard_zero_blocks(int fd, const std::string& path, std::uint64_t size, const ByteSet& within,
                            std::uint64_t block, bool holes, const Progress& progress = {});

}  // namespace guestfrag
