// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/image_options.hpp"

#include <iostream>

#include "app/cli/progress_meter.hpp"
#include "core/error.hpp"
#include "core/image/input_hold.hpp"
#include "core/image/open_chain.hpp"

namespace guestfrag::cli {

namespace {

std::string format_choices() {
    std::string out;
    for (const ImageFormatInfo& info : image_formats)
        if (is_readable_family(info)) out += (out.empty() ? "" : "|") + std::string(info.name);
    return out;
}

}  // namespace

void add_image_options(CLI::App& cmd, ImageOptions& options) {
    cmd.add_option("--parent", options.parents,
                   "A parent (backing) image that moved or is missing: DEPTH=PATH (1 = the image's parent, "
                   "2 = its grandparent, ...), NAME=PATH (the name its child records), or PATH (depth 1); "
                   "each is checked against what its child records")
        ->check(CLI::Validator(
            [](const std::string& text) {
                return parse_parent_override(text) ? std::string()
                                                   : "'" + text + "' is not PATH, DEPTH=PATH or NAME=PATH";
            },
            "[DEPTH=|NAME=]PATH"));
    const std::string choices = format_choices();
    cmd.add_option("--format", options.format,
                   "Read the image as this format instead of detecting it; raw reads the file's bytes as "
                   "the disk")
        ->check(CLI::Validator(
            [choices](const std::string& text) {
                return readable_family_from_name(text) ? std::string()
                                                       : "'" + text + "' is not one of " + choices;
            },
            choices));
    cmd.add_option("--nbd-timeout", options.nbd_timeout_seconds,
                   "Seconds an NBD server (an image or --parent given as nbd://, nbd+unix://, ...) may take to "
                   "connect or to answer one request before guestfrag gives up")
        ->capture_default_str()
        ->check(CLI::Range(0.001, 86400.0));
}

OpenOptions open_options(const ImageOptions& options) {
    OpenOptions out;
    // The validators above accepted these texts.
    if (!options.format.empty()) out.format = readable_family_from_name(options.format);
    for (const std::string& text : options.parents) out.parents.push_back(*parse_parent_override(text));
    out.nbd_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(options.nbd_timeout_seconds * 1000 + 0.5));
    return out;
}

namespace {

/// open_and_analyze_image; when `volume_optional`, a disk the analysis refuses as
/// Unsupported (no NTFS volume it reads) is returned open, without an analysis.
OpenedImage open_then_analyze(const std::string& image, const ImageOptions& options, std::optional<int> partition,
                              const CopyOptions& copy, bool volume_optional) {
    std::vector<std::string> files;
    OpenOptions open = open_options(options);
    open.opened = [&files](const std::string& file) { files.push_back(file); };
    std::shared_ptr<const DiskImage> disk = open_image(image, open);
    std::vector<std::string> warnings = layer_warnings(*disk);
    // A running VM (or a writable qemu-nbd) changes the disk while it is read: the figures
    // are a snapshot that may already be stale.
    if (const auto writer = held_for_writing(files))
        warnings.push_back(*writer + " is open for writing by another process (it holds qemu's write lock): "
                                     "the figures may already be stale");
    OpenedImage opened;
    try {
        ProgressMeter meter("reading MFT");
        opened = analyze_opened(disk, partition, meter.progress(), copy);
    } catch (const Error& e) {
        if (volume_optional && e.kind() == ErrorKind::Unsupported) {
            opened.image = std::move(disk);
        } else {
            // What the warnings say is the likely cause (libntfs-3g reports a read past a
            // truncated file's data as a bare I/O error): it goes into the one line of the
            // failure rather than on a line of its own.
            if (warnings.empty() || e.kind() == ErrorKind::Cancelled || e.kind() == ErrorKind::Internal) throw;
            std::string reason = e.what();
            for (const std::string& warning : warnings) reason += "; " + warning;
            throw Error(e.kind(), reason);
        }
    }
    for (const std::string& warning : warnings) std::cerr << "guestfrag: warning: " << warning << '\n';
    opened.files = std::move(files);
    return opened;
}

}  // namespace

OpenedImage open_and_analyze_image(const std::string& image, const ImageOptions& options,
                                   std::optional<int> partition, const CopyOptions& copy) {
    return open_then_analyze(image, options, partition, copy, false);
}

OpenedImage open_and_analyze_if_any(const std::string& image, const ImageOptions& options) {
    return open_then_analyze(image, options, std::nullopt, {}, true);
}

}  // namespace guestfrag::cli
