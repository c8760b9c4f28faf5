// SPDX-License-Identifier: GPL-2.0-or-later
// Test-only writers that put a bare NTFS volume image into states the reader must refuse.
#pragma once

#include <filesystem>

namespace guestfrag::test {

/// Sets VOLUME_IS_DIRTY in $Volume, as Windows does while the volume is mounted.
void mark_volume_dirty(const std::filesystem::path& bare_volume);

/// Creates \hiberfil.sys with a "hibr" header, as a hibernated Windows leaves it.
void add_hibernation_file(const std::filesystem::path& bare_volume);

}  // namespace guestfrag::test
