// SPDX-License-Identifier: GPL-2.0-or-later
// Device models as JSON: what estimate --json prints reads back to the same models, a file
// may give any subset, and each key, type and range it cannot take is named.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/estimate/device_model_json.hpp"

using namespace guestfrag;
using Json = nlohmann::json;

namespace {

/// The message read_device_models refuses `text` with (empty when it accepts it).
std::string refusal(const std::string& text) {
    try {
        (void)read_device_models(Json::parse(text), DeviceModels{});
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Unsupported);
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("device models: printed JSON reads back to the same models", "[estimate][device-model]") {
    const DeviceModels preset = *device_preset("3par-format");
    const Json printed = Json::parse(device_models_json(preset).dump());
    const DeviceModels back = read_device_models(printed, DeviceModels{});
    CHECK(back.array.write_transfer_bytes_per_second == preset.array.write_transfer_bytes_per_second);
    CHECK(back.array.first_write.allocate_seconds == preset.array.first_write.allocate_seconds);
    CHECK(back.array.first_write.zero_bytes_per_second == preset.array.first_write.zero_bytes_per_second);
    CHECK(back.array.sequential_window_bytes == preset.array.sequential_window_bytes);
    CHECK(back.hdd.rpm == preset.hdd.rpm);
    CHECK(back.ssd.write_latency_seconds == preset.ssd.write_latency_seconds);
    // Every parameter is printed: 8 of the disk, 6 of the SSD, 8 of the array.
    CHECK(printed["hdd"].size() + printed["hdd"]["first_write"].size() - 1 == 8);
    CHECK(printed["ssd"].size() + printed["ssd"]["first_write"].size() - 1 == 6);
    CHECK(printed["array"].size() + printed["array"]["first_write"].size() - 1 == 8);
}

TEST_CASE("device models: a subset replaces only what it names", "[estimate][device-model]") {
    const DeviceModels base = *device_preset("3par-format");
    const DeviceModels m = read_device_models(
        Json::parse(R"({"ssd": {"io_latency_seconds": 0.001}, "array": {"first_write": {"allocate_seconds": 0},
                        "sequential_window_bytes": 65536}})"),
        base);
    CHECK(m.ssd.io_latency_seconds == 0.001);
    CHECK(m.ssd.transfer_bytes_per_second == base.ssd.transfer_bytes_per_second);
    CHECK(m.array.first_write.allocate_seconds == 0);
    CHECK(m.array.first_write.zero_bytes_per_second == base.array.first_write.zero_bytes_per_second);
    CHECK(m.array.sequential_window_bytes == 65536);
    CHECK(m.array.write_transfer_bytes_per_second == base.array.write_transfer_bytes_per_second);
    CHECK(m.hdd.rpm == base.hdd.rpm);
    CHECK(refusal("{}").empty());
}

TEST_CASE("device models: unknown keys, wrong types and values out of range are named", "[estimate][device-model][bad]") {
    CHECK(refusal(R"({"tape": {}})") == "tape: no such device model parameter");
    CHECK(refusal(R"({"ssd": {"io_latency": 1}})") == "ssd.io_latency: no such device model parameter");
    CHECK(refusal(R"({"hdd": {"first_write": {"zero_seconds": 1}}})") ==
          "hdd.first_write.zero_seconds: no such device model parameter");
    CHECK(refusal(R"({"hdd": 7200})") == "hdd: must be an object");
    CHECK(refusal(R"({"hdd": {"first_write": 3}})") == "hdd.first_write: must be an object");
    CHECK(refusal(R"({"hdd": {"rpm": "7200"}})") == "hdd.rpm: must be a number from 1 to 100000");
    CHECK(refusal(R"({"hdd": {"rpm": 0}})") == "hdd.rpm: must be a number from 1 to 100000");
    CHECK(refusal(R"({"ssd": {"io_latency_seconds": -1e-6}})") ==
          "ssd.io_latency_seconds: must be a number of seconds from 0 to 3600");
    CHECK(refusal(R"({"array": {"transfer_bytes_per_second": 0}})") ==
          "array.transfer_bytes_per_second: must be a number of bytes per second above 0 and at most 1e13");
    CHECK(refusal(R"({"array": {"sequential_window_bytes": 1000}})") ==
          "array.sequential_window_bytes: must be a whole number of bytes, a multiple of 512, at most 2^40");
    CHECK(refusal(R"({"array": {"sequential_window_bytes": 512.5}})").starts_with("array.sequential_window_bytes: "));
    CHECK(refusal(R"({"hdd": {"stroke_bytes": null}})") == "hdd.stroke_bytes: must be a number of bytes above 0 and at most 1e18");
    CHECK(refusal("[1, 2]") == "a device model must be an object with hdd, ssd or array");
}
