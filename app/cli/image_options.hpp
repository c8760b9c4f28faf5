// SPDX-License-Identifier: GPL-2.0-or-later
// The options of every command that opens an image (--parent, --format), read in one place.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/image/open_image.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag::cli {

/// The texts of --parent (repeatable) and --format as given, and --nbd-timeout.
struct ImageOptions {
    std::vector<std::string> parents;
    std::string format;
    double nbd_timeout_seconds = 60;
};

/// Adds --parent, --format and --nbd-timeout to `cmd`, storing into `options` (which must
/// outlive the parse). Malformed values are usage errors (exit 1).
void add_image_options(CLI::App& cmd, ImageOptions& options);

/// The OpenOptions the checked texts say.
[[nodiscard]] OpenOptions open_options(const ImageOptions& options);

/// Opens `image` as `options` say and analyses it (analyze_opened, with the "reading MFT"
/// progress meter), then prints each layer's warnings to stderr ("guestfrag: warning:
/// LAYER: text"). Throws as open_and_analyze does; a failed analysis of an image with
/// warnings has them appended to its message instead (one line on exit 2).
[[nodiscard]] OpenedImage open_and_analyze_image(const std::string& image, const ImageOptions& options,
                                                 std::optional<int> partition, const CopyOptions& copy = {});

/// open_and_analyze_image of every volume, except that a disk with no NTFS volume the
/// analysis reads (it refuses the disk as Unsupported: a new thin disk, no partition table,
/// other file systems) is returned open with a null `analysis`, for the work that needs
/// only the disk.
[[nodiscard]] OpenedImage open_and_analyze_if_any(const std::string& image, const ImageOptions& options);

}  // namespace guestfrag::cli
