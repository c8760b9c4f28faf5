// placeholder until implemented
#include "core/image/qcow2.hpp"

#include "core/error.hpp"

namespace guestfrag {

std::unique_ptr<LayerFile> open_qcow2(const std::string&) {
    throw Error(ErrorKind::Unsupported, "qcow2 images are not supported yet");
}

}  // namespace guestfrag
