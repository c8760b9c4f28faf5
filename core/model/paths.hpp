// SPDX-License-Identifier: GPL-2.0-or-later
// Paths of a volume's files as traces name them, and the order a tree walk reads streams in:
// shared by the trace and scan workloads (core/estimate) and the planner's --order (core/plan).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/volume_map.hpp"

namespace guestfrag {

/// The form trace paths are compared in: '/' becomes '\\', a leading '\\' is added when
/// missing, trailing '\\' are dropped (except the root's), and ASCII letters are folded to
/// lower case. NTFS compares names through the volume's $UpCase table; folding only ASCII
/// means non-ASCII names must match case exactly (docs/estimate.md).
[[nodiscard]] std::string fold_trace_path(std::string_view path);

/// Folded path (fold_trace_path) → base record, for every file of the volume. With names
/// differing only in case (POSIX namespace) the lower record wins.
/// O(files · log files) time, one string per file.
[[nodiscard]] std::unordered_map<std::string, std::uint64_t> index_paths(const VolumeMap& volume);

/// The base records of the files a depth-first walk of the tree from the root meets, in
/// that order, each once (where its first name is met): the root, then its entries by name
/// (ASCII case folded, then record), each directory's subtree where its name falls.
/// Records the walk does not reach (orphans, a parent loop) are not in it.
/// O(files · log files).
[[nodiscard]] std::vector<std::uint64_t> path_walk(const VolumeMap& volume);

/// Indices into `volume.streams` in depth-first path order (path_walk), the order a file-level backup or
/// a virus scan walks the tree: a directory's own streams (its index) first, then its
/// entries by name (ASCII case folded, then record), each directory's subtree where its
/// name falls; a file's streams in map order. Streams of records the walk from the root
/// does not reach (orphans, a parent loop) follow in map order, so every stream appears
/// exactly once. O(files · log files + streams · log streams).
[[nodiscard]] std::vector<std::size_t> path_order(const VolumeMap& volume);
/// path_order over `walk`, path_walk(volume) made already.
[[nodiscard]] std::vector<std::size_t> path_order(const VolumeMap& volume,
                                                  std::span<const std::uint64_t> walk);

}  // namespace guestfrag
