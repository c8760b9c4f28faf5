// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/layer_provisioning.hpp"

#include <charconv>
#include <string>

#include "core/error.hpp"

namespace guestfrag {

std::optional<ProvisioningOverride> parse_provisioning_override(std::string_view text) {
    ProvisioningOverride out;
    const std::size_t eq = text.find('=');
    if (eq != std::string_view::npos) {
        const std::string_view digits = text.substr(0, eq);
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out.depth);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || out.depth < 0)
            return std::nullopt;
        text = text.substr(eq + 1);
    }
    const std::optional<Provisioning> type = provisioning_from_name(text);
    if (!type) return std::nullopt;
    out.type = *type;
    return out;
}

std::vector<LayerProvisioning> effective_provisioning(std::span<const Layer> layers,
                                                      std::span<const ProvisioningOverride> overrides,
                                                      std::optional<std::uint64_t> zero_block) {
    std::vector<LayerProvisioning> out;
    out.reserve(layers.size());
    for (const Layer& layer : layers) out.push_back(layer.provisioning);
    for (const ProvisioningOverride& o : overrides) {
        if (static_cast<std::size_t>(o.depth) >= out.size())
            throw Error(ErrorKind::Unsupported, "--provisioning names layer " + std::to_string(o.depth) +
                                                    ", but the image has " + std::to_string(out.size()) +
                                                    (out.size() == 1 ? " layer" : " layers"));
        LayerProvisioning& p = out[static_cast<std::size_t>(o.depth)];
        p.type = o.type;
        p.assumed = false;
        p.basis = "set by --provisioning";
    }
    if (zero_block)
        for (LayerProvisioning& p : out) p.zero_block = *zero_block;
    return out;
}

}  // namespace guestfrag
