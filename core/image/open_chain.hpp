// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/image/disk_image.hpp"

namespace guestfrag {

/// Deepest chain guestfrag follows; deeper ones are refused as corrupt (or loops).
inline constexpr std::size_t kMaxChainDepth = 64;

/// Opens a layered image: the file at `path`, then its parent, grandparent, ... as the
/// formats record them. `parents[i]`, when given, replaces the recorded parent of the
/// layer at depth i (so `--parent` supplies a moved or missing base; the parent's recorded
/// format and identity are still checked). A parent recorded as raw is opened as raw
/// without looking at its content. Throws MissingParentError (NotFound, "parent not found:
/// <recorded> ...", with the depth that needs it), Error(Unsupported) for a recorded parent format
/// guestfrag does not read, Error(Corrupt) for loops, chains deeper than kMaxChainDepth,
/// parents whose content is not their recorded format and identity mismatches.
[[nodiscard]] std::unique_ptr<DiskImage> open_chain(const std::string& path,
                                                    const std::vector<std::string>& parents = {});

class ByteSource;    // core/image/byte_source.hpp
class SourceOpener;  // core/image/source_opener.hpp

/// The same from the already open top layer `top` (non-null), with every other file
/// (extents, parents, --parent overrides) opened and looked for through `opener`.
[[nodiscard]] std::unique_ptr<DiskImage> open_chain(std::shared_ptr<const ByteSource> top,
                                                    const SourceOpener& opener,
                                                    const std::vector<std::string>& parents = {});

}  // namespace guestfrag
