// SPDX-License-Identifier: GPL-2.0-or-later
// Test-only writers that put a bare NTFS volume image into states Windows leaves volumes in.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

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

/// Creates the regular file \`name` holding `bytes` bytes of non-zero data (non-resident
/// when larger than a record). Returns its MFT record number.
std::uint64_t add_file(const std::filesystem::path& bare_volume, const std::string& name, std::uint64_t bytes);

/// Creates the regular file \`name` with an empty unnamed $DATA and one named $DATA of
/// `bytes` bytes of non-zero data for each of `streams`, added in the order given (NTFS
/// keeps them in its own collation of the names). Returns its MFT record number.
std::uint64_t add_named_streams(const std::filesystem::path& bare_volume, const std::string& name,
                                const std::vector<std::string>& streams, std::uint64_t bytes);

/// Creates `dir`\`name` in the root, `dir` marked compressed, so that libntfs-3g (with
/// compression allowed, as ntfs-3g's `compression` mount option does) writes the file's
/// `bytes` bytes of pseudo-random (incompressible) data as a compressed $DATA stored in
/// whole 16-cluster compression units. Returns the file's MFT record number.
std::uint64_t add_compressed_file(const std::filesystem::path& bare_volume, const std::string& dir,
                                  const std::string& name, std::uint64_t bytes);

/// Rewrites the mapping pairs of record `record`'s unnamed $DATA to `runs` ((lcn, clusters),
/// VCN 0 upwards), which must map as many clusters as the attribute has. $Bitmap and every
/// other file are left alone: pointing the runs at another file's clusters cross-links them.
void set_data_runs(const std::filesystem::path& bare_volume, std::uint64_t record,
                   const std::vector<std::pair<std::int64_t, std::int64_t>>& runs);

/// Marks record `record`'s unnamed $DATA encrypted as an EFS file carries it: the attribute
/// flag ATTR_IS_ENCRYPTED (0x4000) and the file attribute FILE_ATTR_ENCRYPTED in
/// $STANDARD_INFORMATION (libntfs-3g refuses to open an attribute whose flag the file's
/// attributes do not match), written through libntfs-3g. No $EFS stream is added: the flag is
/// what a mover looks at, and the data stays readable as it was.
void mark_data_encrypted(const std::filesystem::path& bare_volume, std::uint64_t record);

/// Writes `name_space` and `name_length` (in UTF-16 units) into the first $FILE_NAME of
/// record `record`, in the MFT record only (the directory index keeps its copy), as a
/// hostile or damaged volume may hold them: any byte, a length of 0.
void set_file_name_fields(const std::filesystem::path& bare_volume, std::uint64_t record, std::uint8_t name_space,
                          std::uint8_t name_length);

/// Clears the $Bitmap bits of clusters [lcn, lcn + count): free as far as NTFS knows.
void clear_bitmap_bits(const std::filesystem::path& bare_volume, std::int64_t lcn, std::int64_t count);

/// Sets the data size (and the initialized size, when it would exceed it, left as is
/// otherwise) of the unnamed non-resident attribute `type` (0x80 $DATA, 0xB0 $BITMAP) of
/// $MFT's record 0, in $MFT and in $MFTMirr alike, runlist unchanged: a size that lies.
/// Edits the raw records (update sequence undone and redone) so no library corrects it.
void set_mft_attribute_size(const std::filesystem::path& bare_volume, std::uint32_t type, std::uint64_t data_size);

/// Changes a byte in the used part of $MFTMirr's copy of record `record` (its
/// $STANDARD_INFORMATION's creation time, 0x50 into the record), and nothing in $MFT: past
/// record 15, what Windows 10 leaves in the mirror of a large cluster (format-time copies of
/// records the volume has used since); below 16, a mirror chkdsk has to repair. The mirror
/// is found from the boot sector; the record must lie in its first cluster.
void stale_mirror_record(const std::filesystem::path& bare_volume, std::uint64_t record);

}  // namespace guestfrag::test
