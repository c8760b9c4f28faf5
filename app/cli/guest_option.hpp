// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "core/estimate/guest_model.hpp"

namespace guestfrag::cli {

/// --guest, --read-ahead and --reader: how the guest's reads reach the virtual disk.
struct GuestOptions {
    std::string name{default_guest_profile().name};
    std::string read_ahead;  ///< "" keeps the profile's window
    std::string reader;      ///< "" keeps the profile's reader
};

/// Adds --guest (a profile name), --read-ahead (a size) and --reader (a reader's name) to `cmd`.
void add_guest_options(CLI::App& cmd, GuestOptions& options);

/// The profile `options` name, its window replaced by --read-ahead and its reader by
/// --reader when given. The option checks accepted the names and the size; a window that is
/// no multiple of the page, or a reader for a guest that takes none, is a usage error (exit 1).
[[nodiscard]] GuestProfile guest_option(const GuestOptions& options);

/// Help footer: one line of meaning per guest profile.
inline constexpr const char* kGuestMeanings =
    "Guests (--guest; how file reads reach the virtual disk, docs/estimate.md 1.1):\n"
    "  windows         Windows' cache manager: each file's own cache, 64 KiB reads, read-ahead "
    "128 KiB inside the file, $MFT read through its cache\n"
    "  linux-ntfs3g    Linux with ntfs-3g: each file's FUSE cache, then the disk's page cache, "
    "read-ahead running on past a file's end (measured)\n"
    "  linux-ntfs3     Linux with the kernel's ntfs3: each file's cache, $MFT records a page at a "
    "time (measured)\n"
    "  raw             no guest: each file's extents as IOs of up to --max-io\n"
    "Readers (--reader; what reads each file in a Linux guest):\n"
    "  cat             128 KiB reads, sequential access advised: the window doubled (default)\n"
    "  tar             fills 10 KiB records: a file's first read is what its record has left\n";

}  // namespace guestfrag::cli
