// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the device model reader (--device-model FILE): the input is the
// file, read by read_device_model_file from a memory file (memfd) as from any regular file.
// guestfrag::Error is the expected way to refuse bad input; anything else (crash, sanitizer
// report, runaway allocation or loop) is a bug. A model it accepts must print and read back
// to the same parameters.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "core/estimate/device_model_json.hpp"
#include "memory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const guestfrag::fuzz::MemoryFile file(data, size);
    if (file.path().empty()) return 0;
    try {
        const guestfrag::DeviceModels models =
            guestfrag::read_device_model_file(file.path(), guestfrag::DeviceModels{});
        const auto printed = guestfrag::device_models_json(models);
        const guestfrag::DeviceModels back =
            guestfrag::read_device_models(nlohmann::json::parse(printed.dump()), guestfrag::DeviceModels{});
        if (guestfrag::device_models_json(back) != printed) std::abort();  // what it prints, it reads back
    } catch (const guestfrag::Error&) {
        // the expected refusal of bad input
    }
    return 0;
}
