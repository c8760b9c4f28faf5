// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/image/disk_image.hpp"

namespace guestfrag {

/// Deepest chain guestfrag follows; deeper ones are refused as corrupt (or loops).
inline constexpr std::size_t kMaxChainDepth = 64;

/// A parent file given instead of the one a layer records (`--parent`). It says which
/// layer of the chain it is, so that it can never take the place of another one: by
/// depth (1 = the image's own parent, 2 = its grandparent, ...) or by the name its child
/// records for it. Both may be set (the GUI answering a MissingParentError does).
struct ParentOverride {
    std::size_t depth = 0;  ///< the depth of the layer it is; 0 when only `name` says
    std::string name;       ///< the name its child records (or that name's last component); may be empty
    std::string path;       ///< the file to open

    /// The override as `--parent` spells it ("2=PATH", "base.qcow2=PATH"), for messages.
    [[nodiscard]] std::string text() const;
};

/// Parses one `--parent` value, the one place that reads it:
///  - "DEPTH=PATH": the layer at DEPTH (a decimal ≥ 1);
///  - "NAME=PATH": the parent its child records as NAME (the whole recorded name or its
///    last component), wherever it is in the chain;
///  - "PATH" without '=': the image's own parent, as "1=PATH".
/// Only the first '=' separates, so PATH may contain '=' when a key is given ("1=a=b").
/// nullopt when the value is empty, or its key or path is ("=PATH", "0=PATH", "NAME=").
[[nodiscard]] std::optional<ParentOverride> parse_parent_override(std::string_view text);

/// Opens a layered image: the file at `path`, then its parent, grandparent, ... as the
/// formats record them. An override in `parents` replaces the recorded parent of the layer
/// it names. A parent recorded as raw is opened as raw without looking at its content.
///
/// Every parent must be the one its child records: its content of the recorded format,
/// and of the recorded identity where the format records one (VHD unique id, VHDX linkage,
/// VMDK CID). A given parent whose identity cannot be compared (qcow2, a VMDK without
/// parentCID) must instead carry the recorded file name (unless given by that name, which
/// says it is that file renamed) and the child's virtual size. So a parent given for the
/// wrong depth is refused rather than silently dropping the layer it replaces.
///
/// Throws MissingParentError (NotFound, "parent not found: CHILD (depth D) records parent
/// NAME ...; give it with --parent D+1=PATH") for a parent that is neither given nor where the
/// hypervisor looks; Error(NotFound) for a given file that does not exist; Error(Unsupported)
/// for a recorded parent format guestfrag does not read, and for overrides that name no
/// layer of the chain or the same layer twice; Error(Corrupt) for loops, chains deeper
/// than kMaxChainDepth, parents whose content is not their recorded format, identity,
/// name or size.
[[nodiscard]] std::unique_ptr<DiskImage> open_chain(const std::string& path,
                                                    const std::vector<ParentOverride>& parents = {});

class ByteSource;    // core/image/byte_source.hpp
class SourceOpener;  // core/image/source_opener.hpp
class LayerFile;     // core/image/layer_file.hpp

/// The same from the already open top layer `top` (non-null), with every other file
/// (extents, parents, --parent overrides) opened and looked for through `opener`.
[[nodiscard]] std::unique_ptr<DiskImage> open_chain(std::shared_ptr<const ByteSource> top,
                                                    const SourceOpener& opener,
                                                    const std::vector<ParentOverride>& parents = {});

/// The same from a top layer the caller opened itself (e.g. with a format given by the
/// user instead of detected).
[[nodiscard]] std::unique_ptr<DiskImage> open_chain(std::unique_ptr<LayerFile> top, const SourceOpener& opener,
                                                    const std::vector<ParentOverride>& parents = {});

}  // namespace guestfrag
