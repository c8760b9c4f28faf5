// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>

namespace guestfrag {

/// Bytes per logical block: LBNs and seek distances count 512-byte sectors (docs/design.md §4).
inline constexpr std::uint64_t kSectorBytes = 512;

/// One IO a workload issues to the virtual disk (docs/design.md §4).
struct Io {
    std::int64_t lbn = 0;      ///< first 512-byte sector on the virtual disk (partition offset included)
    std::uint64_t length = 0;  ///< bytes; a multiple of kSectorBytes for every IO the generators make
    bool write = false;        ///< the direction: a write (else a read)

    /// Sectors the IO covers (its length rounded up to whole sectors).
    [[nodiscard]] std::int64_t sectors() const noexcept {
        return static_cast<std::int64_t>((length + kSectorBytes - 1) / kSectorBytes);
    }

    friend bool operator==(const Io&, const Io&) = default;
};

/// vscsiStats seek distance of `current` after `previous`, in sectors:
/// start(current) − (start(previous) + sectors(previous) − 1). A perfectly sequential
/// IO is at distance +1; re-reading the previous IO's last sector is 0.
[[nodiscard]] inline std::int64_t seek_distance(const Io& previous, const Io& current) noexcept {
    return current.lbn - (previous.lbn + previous.sectors() - 1);
}

}  // namespace guestfrag
