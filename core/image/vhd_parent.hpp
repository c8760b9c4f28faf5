// SPDX-License-Identifier: GPL-2.0-or-later
// Where a differencing VHD's parent is: its parent locators and unicode name turned into
// host paths to try.
#pragma once

#include <string>

#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/vhd_format.hpp"

namespace guestfrag::vhd {

/// Longest locator path data read (a Windows path is at most 32767 UTF-16 units).
inline constexpr std::uint32_t kMaxLocatorBytes = 65536;

/// Builds the parent link of the differencing VHD `file` from its dynamic header.
/// Candidates, in the order Hyper-V tries them: the relative path (W2ru, then the
/// deprecated Wi2r) resolved against the child's directory; the absolute path (W2ku,
/// Wi2k, MacX) when it is a path on this host; then the absolute path's file name and the
/// parent unicode name, each in the child's directory. `recorded` is the absolute path if
/// any, else the relative one, else the unicode name. The parent's format is vhd and its
/// one expected identity the parent unique id. Throws Error(Corrupt) when a locator's
/// data lies outside the file or is implausibly long.
[[nodiscard]] ParentLink parent_link(const HostFile& file, const DynamicHeader& header);

}  // namespace guestfrag::vhd
