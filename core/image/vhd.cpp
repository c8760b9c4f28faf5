// placeholder until implemented
#include "core/image/vhd.hpp"

#include "core/error.hpp"

namespace guestfrag {

std::unique_ptr<LayerFile> open_vhd(const std::string&) {
    throw Error(ErrorKind::Unsupported, "vhd images are not supported yet");
}

}  // namespace guestfrag
