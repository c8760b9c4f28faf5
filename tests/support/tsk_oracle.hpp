// SPDX-License-Identifier: GPL-2.0-or-later
// The Sleuth Kit as an independent oracle: its NTFS code shares nothing with libntfs-3g.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag::test {

/// Physical runs as (lcn, clusters) with LCN-contiguous neighbours merged and holes dropped:
/// the form in which two readers' runlists must agree whatever run splitting each keeps.
using Fragments = std::vector<std::pair<std::int64_t, std::int64_t>>;

/// Fragments of a stream of ours, within its data size (the part istat shows).
Fragments fragments_of(const Stream& stream, std::uint32_t cluster_size);

/// `istat -r -o SECTOR IMAGE RECORD`: the non-resident $DATA attributes of one record by
/// name ("" for the unnamed one), as Fragments.
std::map<std::string, Fragments> tsk_data_fragments(const std::filesystem::path& image, std::uint64_t sector,
                                                    std::uint64_t record);

/// `fls -r -p -o SECTOR IMAGE`: the meta address ("64-128-2") of every regular file and
/// stream it lists that is not deleted, by path.
std::map<std::string, std::string> tsk_files(const std::filesystem::path& image, std::uint64_t sector);

/// `icat -o SECTOR IMAGE ADDRESS`: the contents of one file or stream.
std::string tsk_icat(const std::filesystem::path& image, std::uint64_t sector, const std::string& address);

/// The contents of every file and stream of `files` (tsk_files of the same image, which the
/// caller has already), by path: the plain files from one `tsk_recover -a` run, the named
/// streams and the files it leaves out (the system files) by `icat`. The same bytes as an
/// icat of each, in a process count that does not grow with the files (an icat costs tens of
/// milliseconds; a volume of the suite holds hundreds of files). Throws when tsk_recover or
/// icat is missing.
std::map<std::string, std::string> tsk_contents(const std::filesystem::path& image, std::uint64_t sector,
                                                const std::map<std::string, std::string>& files);

/// Partition slots from `mmls`: (start sector, length in sectors) of every non-meta,
/// non-unallocated slot, in order.
std::vector<std::pair<std::uint64_t, std::uint64_t>> mmls_partitions(const std::filesystem::path& image);

}  // namespace guestfrag::test
