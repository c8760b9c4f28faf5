// placeholder until implemented
#include "core/image/vhdx.hpp"

#include "core/error.hpp"

namespace guestfrag {

std::unique_ptr<LayerFile> open_vhdx(const std::string&) {
    throw Error(ErrorKind::Unsupported, "vhdx images are not supported yet");
}

}  // namespace guestfrag
