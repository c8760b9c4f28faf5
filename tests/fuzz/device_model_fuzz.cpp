// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the device model reader (--device-model FILE): the input is the
// file, read by read_device_model_file from a memory file (memfd) as from any regular file.
// guestfrag::Error is the expected way to refuse bad input; anything else (crash, sanitizer
// report, runaway allocation or loop) is a bug. A model it accepts must print and read back
// to the same parameters.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "core/estimate/device_model_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const int fd = ::memfd_create("model", MFD_CLOEXEC);
    if (fd < 0) return 0;
    for (std::size_t done = 0; done < size;) {
        const ssize_t n = ::write(fd, data + done, size - done);
        if (n <= 0) {
            ::close(fd);
            return 0;
        }
        done += static_cast<std::size_t>(n);
    }
    try {
        const guestfrag::DeviceModels models =
            guestfrag::read_device_model_file("/proc/self/fd/" + std::to_string(fd), guestfrag::DeviceModels{});
        const auto printed = guestfrag::device_models_json(models);
        const guestfrag::DeviceModels back =
            guestfrag::read_device_models(nlohmann::json::parse(printed.dump()), guestfrag::DeviceModels{});
        if (guestfrag::device_models_json(back) != printed) std::abort();  // what it prints, it reads back
    } catch (const guestfrag::Error&) {
        // the expected refusal of bad input
    }
    ::close(fd);
    return 0;
}
