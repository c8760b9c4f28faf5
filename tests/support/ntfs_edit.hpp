// SPDX-License-Identifier: GPL-2.0-or-later
// Test-only writers that put a bare NTFS volume image into states Windows leaves volumes in.
#pragma once

#include <cstdint>
#include <filesystem>

namespace guestfrag::test {

/// Sets VOLUME_IS_DIRTY in $Volume, as Windows does while the volume is mounted.
void mark_volume_dirty(const std::filesystem::path& bare_volume);

/// Creates \System Volume Information with the VSS catalog and one shadow copy store
/// ("{GUID}{3808876b-...}") of `store_bytes` bytes of non-zero data, named as Windows names
/// them. Returns the store's MFT record number.
std::uint64_t add_shadow_copy_store(const std::filesystem::path& bare_volume, std::uint64_t store_bytes);

/// Creates \hiberfil.sys with a "hibr" header, as a hibernated Windows leaves it, or with
/// another four-byte `signature` ("HIBR" after Fast Startup, "wake" while resuming).
void add_hibernation_file(const std::filesystem::path& bare_volume, const char* signature = "hibr");

/// Writes two $LogFile restart pages ("RSTR") whose restart area has a log client in use
/// and no RESTART_VOLUME_IS_CLEAN flag, as a crash or a power cut leaves them.
void mark_logfile_unclean(const std::filesystem::path& bare_volume);

}  // namespace guestfrag::test
