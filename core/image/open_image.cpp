// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/open_image.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/nbd_uri.hpp"
#include "core/image/open_chain.hpp"
#include "core/image/raw_image.hpp"
#include "core/image/source_opener.hpp"

namespace guestfrag {

namespace {

bool has_at(std::span<const std::byte> bytes, std::size_t offset, std::string_view magic) {
    if (bytes.size() < offset || bytes.size() - offset < magic.size()) return false;
    return std::equal(magic.begin(), magic.end(), bytes.begin() + static_cast<std::ptrdiff_t>(offset),
                      [](char m, std::byte b) { return static_cast<std::byte>(m) == b; });
}

bool contains(std::span<const std::byte> bytes, std::string_view text) {
    const auto it = std::search(bytes.begin(), bytes.end(), text.begin(), text.end(),
                                [](std::byte b, char t) { return b == static_cast<std::byte>(t); });
    return it != bytes.end();
}

}  // namespace

ImageFormat detect_format(std::span<const std::byte> head, std::span<const std::byte> tail) noexcept {
    using namespace std::string_view_literals;
    if (has_at(head, 0, "QFI\xfb"sv)) return ImageFormat::Qcow2;
    if (has_at(head, 0, "KDMV"sv)) return ImageFormat::VmdkSparse;
    if (has_at(head, 0, "COWD"sv)) return ImageFormat::VmdkCowd;
    // seSparse constant header: little-endian u64 0x00000000cafebabe.
    if (has_at(head, 0, "\xbe\xba\xfe\xca\0\0\0\0"sv)) return ImageFormat::VmdkSeSparse;
    if (has_at(head, 0, "vhdxfile"sv)) return ImageFormat::Vhdx;
    if (has_at(head, 0, "QED\0"sv)) return ImageFormat::Qed;
    if (has_at(head, 64, "\x7f\x10\xda\xbe"sv)) return ImageFormat::Vdi;
    // Fixed VHDs carry only the footer; dynamic ones also a copy at offset 0. Very old
    // Virtual PC versions wrote a 511-byte footer, hence the second tail position.
    if (has_at(head, 0, "conectix"sv)) return ImageFormat::Vhd;
    if (tail.size() == 512 && (has_at(tail, 0, "conectix"sv) || has_at(tail, 1, "conectix"sv)))
        return ImageFormat::Vhd;
    if (contains(head.first(std::min(head.size(), detect_head_bytes)), "# Disk DescriptorFile"sv))
        return ImageFormat::VmdkDescriptor;
    return ImageFormat::Raw;
}

ImageFormat sniff_format(const std::string& path) { return sniff_format(HostFile(path)); }

ImageFormat sniff_format(const HostFile& file) {
    std::vector<std::byte> head(static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), detect_head_bytes)));
    file.read_exact(0, head, "header");
    std::vector<std::byte> tail(static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), 512)));
    file.read_exact(file.size() - tail.size(), tail, "footer");
    return detect_format(head, tail);
}

namespace {

/// The image whose bytes `raw` reads: `raw` itself when the content (or the forced format)
/// is raw, else the chain of layers starting from the same source.
std::unique_ptr<DiskImage> open_from(std::unique_ptr<RawImage> raw, const SourceOpener& opener,
                                     const OpenOptions& options) {
    const ImageFormat detected = sniff_format(HostFile(raw->source()));
    const ImageFormat format = options.format.value_or(detected);
    if (format == ImageFormat::Raw) {
        if (!options.parents.empty())
            throw Error(ErrorKind::Unsupported, "a raw image has no parent; --parent does not apply");
        return raw;
    }
    if (!options.format) return open_chain(raw->source(), opener, options.parents);
    // A forced format is read by its reader whatever the content looks like (a fixed VHD
    // whose guest disk starts with a qcow2 magic is detected as qcow2). When that reader
    // refuses the content, the message says it was the user's choice.
    std::unique_ptr<LayerFile> top;
    try {
        top = open_layer(raw->source(), format, opener);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::Corrupt && e.kind() != ErrorKind::Unsupported) throw;
        throw Error(e.kind(), "not a " + std::string(format_name(format)) + " image as --format says (its content is " +
                                  std::string(format_name(detected)) + "): " + e.what());
    }
    return open_chain(std::move(top), opener, options.parents);
}

}  // namespace

std::unique_ptr<DiskImage> open_image(const std::string& path, const OpenOptions& options) {
    const FileOpener opener(options.nbd_timeout, options.opened);
    if (is_nbd_uri(path)) return open_from(std::make_unique<RawImage>(opener.open(path)), opener, options);
    // The raw reader goes first: it turns open/stat failures (missing, directory, empty)
    // into our error kinds, and when the content is raw it is the answer.
    auto raw = std::make_unique<RawImage>(path);
    if (options.opened) options.opened(path);
    return open_from(std::move(raw), opener, options);
}

std::unique_ptr<DiskImage> open_image(const SourceOpener& opener, const std::string& path,
                                      const OpenOptions& options) {
    return open_from(std::make_unique<RawImage>(opener.open(path)), opener, options);
}

}  // namespace guestfrag
