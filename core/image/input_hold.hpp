// SPDX-License-Identifier: GPL-2.0-or-later
// The files of an input image held while they are read, as qemu holds the images it opens:
// with qemu's own OFD locks, so that no hypervisor starts writing them meanwhile, and with
// what they looked like, so that a writer that takes no lock is still noticed.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

#include "core/image/unique_fd.hpp"

namespace guestfrag {

/// The first of `paths` (host files; NBD URIs are passed over) that another process holds
/// open for writing by qemu's file locking: a lock on the byte of the "write" permission
/// (offset 101 of the file; QEMU's raw-posix driver, which locks every image file it opens,
/// qcow2, VMDK extents and backing files alike); nothing when none is held or the file
/// system keeps no locks. Takes no lock. Throws nothing.
[[nodiscard]] std::optional<std::string> held_for_writing(const std::vector<std::string>& paths);

/// Holds the files of an input image (docs/apply.md, step 1). Each file is
/// opened again read-only and locked as qemu-img locks an image it opens read-only: a shared
/// OFD lock on the "consistent read" permission byte (100) and on the byte that says the
/// "write" permission is not shared (201). A qemu, qemu-nbd or qemu-img that then opens the
/// file for writing fails to get its "write" lock; readers are not disturbed. Size, mtime
/// and ctime are recorded, so that check_unchanged() finds a writer that took no lock
/// (dd, a hypervisor without locking). The locks go with the object.
class InputHold {
public:
    /// Throws Error(Unsafe, "PATH is open for writing by another process ...") when another
    /// process holds a file's write lock (or an exclusive lock on the bytes we lock), and
    /// Error(Io) when a file cannot be opened or stat'ed. A file system without OFD locks
    /// (ENOLCK, EOPNOTSUPP, EINVAL) is held by its stat alone.
    explicit InputHold(const std::vector<std::string>& paths);

    /// Throws Error(Unsafe, "the input changed while it was read (PATH: what); nothing was
    /// written") when a file's size, mtime or ctime is no longer what it was when held.
    void check_unchanged() const;

private:
    struct Held {
        std::string path;
        UniqueFd fd;
        struct stat at{};
    };
    std::vector<Held> held_;
};

}  // namespace guestfrag
