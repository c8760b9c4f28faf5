// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <vector>

#include "core/estimate/io.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// Whether `max_io` is a usable IO size cap: a positive multiple of 512 bytes.
[[nodiscard]] bool valid_max_io(std::uint64_t max_io) noexcept;
/// Throws Error(Unsupported) unless valid_max_io(max_io).
void check_max_io(std::uint64_t max_io);

/// Appends to `out` the IOs that read (or write) `stream` front to back (docs/design.md §4).
/// The stream's extents are its allocated runs in VCN order with runs merged when they
/// continue each other both in VCN and on disk (mapping pairs split runs at attribute-list
/// boundaries; that is not a seek); a hole always ends an extent. Each extent is cut into
/// IOs of at most `max_io` bytes that never cross its end; reading stops at the stream's
/// size rounded up to 512 bytes, so a 1000-byte file in one 4 KiB cluster gives one
/// 1024-byte IO, and runs wholly beyond it (preallocation) are not read. LBNs are
/// (volume.partition_offset + lcn · cluster_size) / 512 plus the offset inside the
/// extent. Runs whose numbers would overflow 64-bit byte offsets (corrupt maps) are
/// skipped. Throws Error(Unsupported) when `max_io` is not valid_max_io or the volume's
/// cluster size is not a positive multiple of 512. O(runs + IOs appended).
void append_stream_ios(const VolumeMap& volume, const Stream& stream, std::uint64_t max_io,
                       std::vector<Io>& out);

}  // namespace guestfrag
