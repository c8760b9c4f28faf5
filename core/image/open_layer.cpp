// SPDX-License-Identifier: GPL-2.0-or-later
#include <vector>

#include "core/error.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/open_image.hpp"
#include "core/image/qcow2.hpp"
#include "core/image/raw_layer.hpp"
#include "core/image/vhd.hpp"
#include "core/image/vhdx.hpp"
#include "core/image/vmdk.hpp"

namespace guestfrag {

std::unique_ptr<LayerFile> open_layer(const std::string& path) {
    return open_layer(path, sniff_format(path));
}

std::unique_ptr<LayerFile> open_layer(const std::string& path, ImageFormat format) {
    switch (format) {
        case ImageFormat::Raw: return std::make_unique<RawLayer>(path);
        case ImageFormat::Qcow2: return open_qcow2(path);
        case ImageFormat::Vhd: return open_vhd(path);
        case ImageFormat::Vhdx: return open_vhdx(path);
        case ImageFormat::VmdkSparse:
        case ImageFormat::VmdkDescriptor:
        case ImageFormat::VmdkCowd:
        case ImageFormat::VmdkSeSparse: return open_vmdk(path);
        default: throw Error(ErrorKind::Unsupported, std::string(format_name(format)) + " images are not supported");
    }
}

}  // namespace guestfrag
