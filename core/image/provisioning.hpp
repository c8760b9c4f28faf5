// SPDX-License-Identifier: GPL-2.0-or-later
// How the storage under one layer of a virtual disk provisions its blocks: what the first
// write to a block costs (docs/estimate.md §8). Detected from what each format records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace guestfrag {

/// The three provisioning types administrators choose between.
enum class Provisioning : std::uint8_t {
    Thin,   ///< blocks are allocated and zeroed on their first write
    Lazy,   ///< lazy-zeroed thick: allocated at creation, each block zeroed on its first write
    Eager,  ///< eager-zeroed thick: allocated and zeroed at creation; first writes cost nothing extra
};

/// "thin", "lazy", "eager".
[[nodiscard]] std::string_view provisioning_name(Provisioning type) noexcept;

/// The type named "thin", "lazy" or "eager"; nullopt for anything else.
[[nodiscard]] std::optional<Provisioning> provisioning_from_name(std::string_view name) noexcept;

/// One layer's provisioning as detected (LayerFile::provisioning) or set by the user.
struct LayerProvisioning {
    Provisioning type = Provisioning::Thin;
    /// The unit the storage allocates and zeroes in, bytes (VMFS file block, VHD/VHDX
    /// block, qcow2 cluster, host file system block): a first write pays for whole ones.
    std::uint64_t zero_block = 1 << 20;
    /// True when the image does not record lazy against eager and `type` is the assumption.
    bool assumed = false;
    /// What the type was read from (or why it is assumed), one lower-case phrase.
    std::string basis;

    bool operator==(const LayerProvisioning&) const = default;
};

/// VMFS5/6 file block: the unit a thin or lazy-zeroed VMDK on VMFS allocates and zeroes.
inline constexpr std::uint64_t kVmfsFileBlock = 1 << 20;

/// The provisioning of a raw file (a raw image, a raw parent): thin when the host file has
/// holes (SEEK_HOLE found one: the host file system allocates on first write), otherwise
/// eager, assumed (every block was written when the file was made, as `dd` or
/// `qemu-img -o preallocation=full` do; a file preallocated with fallocate would be lazy).
/// `unit` is the host allocation unit.
[[nodiscard]] LayerProvisioning raw_provisioning(bool fully_allocated, std::uint64_t unit);

}  // namespace guestfrag
