// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/model/volume_map.hpp"
#include "support/fixtures.hpp"

namespace guestfrag::test {

/// The small fragmented disk every GUI test opens: generated once per build (cached in the
/// scratch directory), a few seconds to make, large enough to fill a cluster map.
inline std::filesystem::path gui_test_image() {
    MkImageOptions options;
    options.disk_size = 64ull << 20;
    options.files = 900;
    options.interleave = 12;
    options.delete_fraction = 0.3;
    options.seed = 6;
    return generated_image("gui_small", options);
}

/// Σ Stream::fragments() over the volume: the figure an apply's or a compaction's
/// verification reports before and after.
inline std::uint64_t total_fragments(const VolumeMap& map) {
    std::uint64_t n = 0;
    for (const Stream& s : map.streams) n += s.fragments();
    return n;
}

}  // namespace guestfrag::test
