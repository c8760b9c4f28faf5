// SPDX-License-Identifier: GPL-2.0-or-later
#include <vector>

#include "core/error.hpp"
#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/open_image.hpp"
#include "core/image/qcow2.hpp"
#include "core/image/raw_layer.hpp"
#include "core/image/source_opener.hpp"
#include "core/image/vhd.hpp"
#include "core/image/vhdx.hpp"
#include "core/image/vmdk.hpp"

namespace guestfrag {

std::unique_ptr<LayerFile> open_layer(const std::string& path) {
    return open_layer(file_opener().open(path), file_opener());
}

std::unique_ptr<LayerFile> open_layer(const std::string& path, ImageFormat format) {
    return open_layer(file_opener().open(path), format, file_opener());
}

std::unique_ptr<LayerFile> open_layer(std::shared_ptr<const ByteSource> source, const SourceOpener& opener) {
    HostFile file(std::move(source));
    const ImageFormat format = sniff_format(file);
    return open_layer(file.shared_source(), format, opener);
}

std::unique_ptr<LayerFile> open_layer(std::shared_ptr<const ByteSource> source, ImageFormat format,
                                      const SourceOpener& opener) {
    switch (format) {
        case ImageFormat::Raw: return std::make_unique<RawLayer>(std::move(source));
        case ImageFormat::Qcow2: return open_qcow2(HostFile(std::move(source)));
        case ImageFormat::Vhd: return open_vhd(HostFile(std::move(source)));
        case ImageFormat::Vhdx: return open_vhdx(HostFile(std::move(source)));
        case ImageFormat::Vmdk:
        case ImageFormat::VmdkSparse:
        case ImageFormat::VmdkDescriptor:
        case ImageFormat::VmdkCowd:
        case ImageFormat::VmdkSeSparse: return open_vmdk(HostFile(std::move(source)), opener);
        default: throw Error(ErrorKind::Unsupported, std::string(format_name(format)) + " images are not supported");
    }
}

}  // namespace guestfrag
