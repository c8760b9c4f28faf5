// SPDX-License-Identifier: GPL-2.0-or-later
// Giving a raw disk file's space back to the host: what it stores, and holes punched where
// the guest keeps nothing (docs/compact.md).
#pragma once

#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/progress.hpp"

namespace guestfrag {

/// Whether the file system of `fd` can punch holes (fallocate PUNCH_HOLE): probed on the
/// file's first byte, which must be a hole or data that may be zeroed. Throws Error(Io) for
/// any other failure.
[[nodiscard]] bool can_punch_holes(int fd);

/// What sparsifying frees of the raw disk file `fd` (`path` names it in errors) of `size`
/// bytes: punched out, or with `holes` false (a file system without PUNCH_HOLE, a file that
/// is only an intermediate) written as zeros. Everything is found first and freed on a
/// thread of its own: on a host whose file system discards what a punch frees (ext4
/// without a journal, mounted with `discard`), a punch of blocks already written back waits
/// for the device, behind the write-back queued before it (0.8 s for 24 KiB at the end of
/// the 1M-file volume's compaction), and holds the file meanwhile. Reads of its cached
/// pages go on beside it; finding what it stores (SEEK_DATA) waits for it. The object's
/// end waits for what it frees.
class Discards {
public:
    Discards(int fd, std::string path, std::uint64_t size, bool holes);
    Discards(Discards&&) = delete;  // its thread holds `this`
    Discards& operator=(Discards&&) = delete;

    /// Adds every byte of `discard` that the file stores. A file system block `discard`
    /// covers only in part is zeroed there and stays. Throws Error(Io).
    void stored(const ByteSet& discard);
    /// Adds every block of `block` bytes (the file system's, so that each punch frees whole
    /// blocks) that touches `within`, is stored and reads all zero once what was added is
    /// freed; returns the stored blocks touching `within` that are left, the ones holding
    /// data. Throws Error(Io) and Error(Cancelled) from `progress` (bytes of the file done).
    /// Cost: reads every stored byte of those blocks once; memory 1 MiB.
    ByteSet zero_blocks(const ByteSet& within, std::uint64_t block, const Progress& progress = {});
    /// Begins freeing what was added since the last start, on a thread of its own.
    void start();
    /// Frees what was added since the last start, and waits until everything is freed.
    /// Throws Error(Io) for what could not be.
    void finish();

private:
    int fd_;
    std::string path_;
    std::uint64_t size_;
    bool holes_;
    ByteSet added_;    ///< everything added: it reads as zeros once freed
    ByteSet pending_;  ///< added since the last start
    std::vector<std::future<void>> freeing_;
};

}  // namespace guestfrag
