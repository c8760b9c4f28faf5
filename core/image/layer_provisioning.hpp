// SPDX-License-Identifier: GPL-2.0-or-later
// The provisioning of each layer as the user's --provisioning and --zero-block leave it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/image/disk_image.hpp"

namespace guestfrag {

/// One `--provisioning [DEPTH=]TYPE`: the type of the layer at `depth` (0 = the image named,
/// the layer writes go to).
struct ProvisioningOverride {
    int depth = 0;
    Provisioning type = Provisioning::Thin;

    bool operator==(const ProvisioningOverride&) const = default;
};

/// Parses "TYPE" (depth 0) or "DEPTH=TYPE", TYPE one of thin, lazy, eager and DEPTH a
/// decimal layer depth (0 = the image, 1 = its parent, ...), as `--parent DEPTH=PATH`
/// names layers. nullopt for anything else.
[[nodiscard]] std::optional<ProvisioningOverride> parse_provisioning_override(std::string_view text);

/// Each layer's provisioning (top first): as detected, with the type of every override
/// that names it (the last one wins; its `assumed` is cleared and its basis says so) and,
/// when given, `zero_block` as every layer's zeroing block. Throws Error(Unsupported)
/// when an override names a depth the chain does not have.
[[nodiscard]] std::vector<LayerProvisioning> effective_provisioning(std::span<const Layer> layers,
                                                                    std::span<const ProvisioningOverride> overrides,
                                                                    std::optional<std::uint64_t> zero_block);

}  // namespace guestfrag
