// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/image/disk_image.hpp"
#include "core/image/nbd_source.hpp"
#include "core/image/open_chain.hpp"

namespace guestfrag {

/// How many leading bytes detect_format() looks at.
inline constexpr std::size_t detect_head_bytes = 1024;

/// Recognises the container format from the file's first bytes (`head`, up to
/// detect_head_bytes; shorter for small files) and its last bytes (`tail`, the final 512
/// or fewer). Pure function: no I/O, never throws.
[[nodiscard]] ImageFormat detect_format(std::span<const std::byte> head,
                                        std::span<const std::byte> tail) noexcept;

/// The format of the file at `path` by its content (detect_format on its first and last
/// bytes). Throws Error(NotFound / Io) when it cannot be read.
[[nodiscard]] ImageFormat sniff_format(const std::string& path);

class HostFile;      // core/image/host_file.hpp
class SourceOpener;  // core/image/source_opener.hpp

/// The format of an open `file` by its content. Throws Error(Io) when it cannot be read.
[[nodiscard]] ImageFormat sniff_format(const HostFile& file);

/// How the user asks an image to be opened, when detection or the recorded parents are not
/// to be taken as they are (`--format`, `--parent`).
struct OpenOptions {
    /// The top file's format family, used instead of detecting it: Raw reads the file as
    /// the disk whatever it holds (a VHD's footer becomes the disk's last sector); a
    /// container family reads it with that reader, and content that is not of the family
    /// is refused. Parents are still opened as their children record them.
    std::optional<ImageFormat> format;
    std::vector<ParentOverride> parents;  ///< see open_chain
    /// How long an NBD server (an image or parent given as a URI) may keep a handshake or a
    /// request waiting before the open or read fails (`--nbd-timeout`).
    std::chrono::milliseconds nbd_timeout = kDefaultNbdTimeout;
    /// Told the path of every file the image is read from (the image, its extents, its
    /// parents) as it is opened: what an InputHold holds.
    std::function<void(const std::string&)> opened{};
};

/// Opens a disk image read-only from a host path or an NBD URI (docs/nbd.md), choosing the reader from the file's content (or
/// `options.format`): raw files directly, container formats as a chain of layers resolved as
/// the hypervisor would, less the parents `options.parents` gives (see open_chain). The
/// caller owns the result. Throws Error(NotFound / Unsupported / Corrupt / Io); a parent
/// given for a raw image is Unsupported, content that is not the forced format Corrupt.
[[nodiscard]] std::unique_ptr<DiskImage> open_image(const std::string& path, const OpenOptions& options = {});

/// The same with every file (the image, its extents and parents) opened through `opener`,
/// e.g. a MemoryOpener holding a whole chain. Errors of opening `path` are the opener's
/// (they name the path); the rest are as above.
[[nodiscard]] std::unique_ptr<DiskImage> open_image(const SourceOpener& opener, const std::string& path,
                                                    const OpenOptions& options = {});

}  // namespace guestfrag
