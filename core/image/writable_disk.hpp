// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace guestfrag {

/// The writable counterpart of DiskImage, for the programs that write a disk (mkimage,
/// apply): a disk that can be read and written, where a read sees every earlier write.
/// DiskImage stays read-only (analysis never writes), so whoever writes asks for this type
/// by name. Implementations: WritableRawFile (a raw file) and CopyOnWriteDisk (writes kept
/// in a qcow2 overlay over a read-only image, core/apply). Not safe for concurrent writes.
class WritableDisk {
public:
    virtual ~WritableDisk() = default;
    WritableDisk() = default;
    WritableDisk(const WritableDisk&) = delete;
    WritableDisk& operator=(const WritableDisk&) = delete;

    /// Names the disk in libntfs-3g's messages.
    [[nodiscard]] virtual const std::string& path() const noexcept = 0;

    /// Fills `out` with the disk's bytes at `offset`. Throws Error(Io) on an OS failure and
    /// Error(Corrupt) when the range runs past the end of the disk.
    virtual void read(std::uint64_t offset, std::span<std::byte> out) const = 0;

    /// Writes all of `bytes` at `offset`. Throws Error(Io) (and Error(Corrupt) past the end
    /// of a disk of fixed size).
    virtual void write(std::uint64_t offset, std::span<const std::byte> bytes) = 0;

    /// Whether bytes [to, to + length) hold already what bytes [from, from + length) hold,
    /// because a copy made ahead wrote them there and neither range changed since; when so,
    /// the disk takes them as written now, and a copy between the two has nothing to do.
    /// False when the disk does not know (the default).
    virtual bool copied_ahead(std::uint64_t to, std::uint64_t from, std::uint64_t length) {
        (void)to, (void)from, (void)length;
        return false;
    }
};

}  // namespace guestfrag
