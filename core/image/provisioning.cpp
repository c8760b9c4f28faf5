// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/provisioning.hpp"

#include <array>
#include <utility>

namespace guestfrag {

namespace {

constexpr std::array<std::pair<Provisioning, std::string_view>, 3> kNames{{
    {Provisioning::Thin, "thin"},
    {Provisioning::Lazy, "lazy"},
    {Provisioning::Eager, "eager"},
}};

}  // namespace

std::string_view provisioning_name(Provisioning type) noexcept {
    for (const auto& [value, name] : kNames)
        if (value == type) return name;
    return "thin";
}

std::optional<Provisioning> provisioning_from_name(std::string_view name) noexcept {
    for (const auto& [value, text] : kNames)
        if (text == name) return value;
    return std::nullopt;
}

LayerProvisioning raw_provisioning(bool fully_allocated, std::uint64_t unit) {
    if (!fully_allocated)
        return {Provisioning::Thin, unit, false,
                "the file has holes (SEEK_HOLE, or an NBD server's block status): the host file system "
                "allocates them on first write"};
    return {Provisioning::Eager, unit, true,
            "the file has no holes, which does not tell lazy from eager: eager assumed, as a file written "
            "whole at creation (dd, qemu-img preallocation=full) is"};
}

}  // namespace guestfrag
