// placeholder until implemented
#include "core/image/vmdk.hpp"

#include "core/error.hpp"

namespace guestfrag {

std::unique_ptr<LayerFile> open_vmdk(const std::string&) {
    throw Error(ErrorKind::Unsupported, "vmdk images are not supported yet");
}

}  // namespace guestfrag
