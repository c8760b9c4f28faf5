// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <filesystem>

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

}  // namespace guestfrag::test
