// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "core/estimate/guest_model.hpp"

namespace guestfrag::cli {

/// --guest and --read-ahead: how the guest's reads reach the virtual disk.
struct GuestOptions {
    std::string name{default_guest_profile().name};
    std::string read_ahead;  ///< "" keeps the profile's window
};

/// Adds --guest (a profile name) and --read-ahead (a size) to `cmd`.
void add_guest_options(CLI::App& cmd, GuestOptions& options);

/// The profile `options` name, its window replaced by --read-ahead when given. The option
/// checks accepted both; a window that is no multiple of the page is a usage error (exit 1).
[[nodiscard]] GuestProfile guest_option(const GuestOptions& options);

/// Help footer: one line of meaning per guest profile.
inline constexpr const char* kGuestMeanings =
    "Guests (--guest; how file reads reach the virtual disk, docs/estimate.md 1.1):\n"
    "  windows         Windows' cache manager: each file's own cache, 64 KiB reads, read-ahead "
    "128 KiB inside the file, $MFT read through its cache\n"
    "  linux-ntfs3g    Linux with ntfs-3g: the disk's page cache, read-ahead running on past a "
    "file's end (measured)\n"
    "  linux-ntfs3     Linux with the kernel's ntfs3: each file's cache, $MFT records a page at a "
    "time (measured)\n"
    "  raw             no guest: each file's extents as IOs of up to --max-io\n";

}  // namespace guestfrag::cli
