// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace guestfrag::batch {

/// Shard K of N (1 ≤ K ≤ N) of a fleet-wide batch.
struct Shard {
    std::uint32_t index = 1;
    std::uint32_t count = 1;
};

/// "K/N" → Shard; nullopt when malformed or out of range.
[[nodiscard]] std::optional<Shard> parse_shard(const std::string& text);

/// FNV-1a 64 of the bytes of `path`.
[[nodiscard]] std::uint64_t path_hash(const std::string& path);

/// Whether `path` (absolute) belongs to `shard`: FNV-1a 64 of the path's bytes modulo N
/// equals K − 1. Stable across machines and runs, so a job array that gives each task
/// its K covers every image exactly once.
[[nodiscard]] bool in_shard(const std::string& path, const Shard& shard);

/// Where `batch --apply-to` and `--compact-to` write each image's result:
/// `directory`/NAME.`extension`, NAME the image's file name (an NBD image's export name)
/// without its last extension, and where two images of `images` share a NAME, each NAME
/// followed by "-" and 8 hex digits of path_hash(image), so that no two images of the
/// batch write the same file. Depends only on `images`, so every shard of a
/// batch given the whole list names an image alike.
[[nodiscard]] std::map<std::string, std::string> output_paths(const std::vector<std::string>& images,
                                                              const std::string& directory,
                                                              const std::string& extension);

/// Whether `path` lies inside `directory` (both resolved through symbolic links as far as
/// they exist): the outputs of `batch --apply-to` and `--compact-to` are not images of the batch.
[[nodiscard]] bool is_inside(const std::string& path, const std::string& directory);

/// The mount point of the file system that holds `path` (the image's datastore), as df
/// names it: the longest mount point of /proc/self/mountinfo that contains the path with its
/// symbolic links resolved; "/" when the table cannot be read. An NBD URI's datastore is its
/// server (nbd_server).
[[nodiscard]] std::string mount_point_of(const std::string& path);

/// Whether a file name looks like a guest disk image a directory scan should take: the
/// disk-image extensions (.vmdk .vhd .vhdx .avhd .avhdx .qcow2 .qcow .img .raw .dd),
/// except the extent files a VMDK descriptor names (-flat, -sNNN, -fNNN, -delta,
/// -sesparse, -ctk), which are part of another image.
[[nodiscard]] bool looks_like_image(const std::string& file_name);

/// The images a batch covers, as absolute normalised paths without duplicates, in the
/// order given: each argument is an image file or a directory (searched recursively,
/// files chosen by looks_like_image, in name order); `list`, when given, is a file with
/// one path per line ('#' starts a comment; relative paths are relative to the list). NBD
/// URIs (docs/nbd.md) are kept as written.
/// Paths that do not exist are kept (their rows record the error). Throws Error(NotFound)
/// only for a list file that cannot be read.
[[nodiscard]] std::vector<std::string> expand_images(const std::vector<std::string>& arguments,
                                                     const std::optional<std::string>& list);

}  // namespace guestfrag::batch
