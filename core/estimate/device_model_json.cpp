// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/device_model_json.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "core/io/json_input.hpp"

namespace guestfrag {

namespace {

/// What values a parameter takes. The bounds keep a model's arithmetic finite and say what a
/// device can be; a value outside them is a typo, not a device.
enum class Range {
    Seconds,  ///< a time: 0 to 3600 s
    Rate,     ///< bytes per second: above 0, up to 1e13 (100 Tbit/s)
    Rpm,      ///< revolutions per minute: 1 to 100000
    Bytes,    ///< a length: above 0, up to 1e18
    Window,   ///< an integer number of bytes, a multiple of 512, up to 2^40
};

/// Calls f(path, value, range) for every parameter of `m` (a DeviceModels, const or not), in
/// the order device_models_json prints them. `path` is the parameter's keys joined by dots.
template <typename Models, typename F>
void each_parameter(Models& m, F&& f) {
    const auto first_write = [&f](const std::string& model, auto& c) {
        f(model + ".first_write.zero_bytes_per_second", c.zero_bytes_per_second, Range::Rate);
        f(model + ".first_write.allocate_seconds", c.allocate_seconds, Range::Seconds);
    };
    f("hdd.rpm", m.hdd.rpm, Range::Rpm);
    f("hdd.settle_seconds", m.hdd.settle_seconds, Range::Seconds);
    f("hdd.full_stroke_seconds", m.hdd.full_stroke_seconds, Range::Seconds);
    f("hdd.stroke_bytes", m.hdd.stroke_bytes, Range::Bytes);
    f("hdd.transfer_bytes_per_second", m.hdd.transfer_bytes_per_second, Range::Rate);
    f("hdd.write_transfer_bytes_per_second", m.hdd.write_transfer_bytes_per_second, Range::Rate);
    first_write("hdd", m.hdd.first_write);
    f("ssd.io_latency_seconds", m.ssd.io_latency_seconds, Range::Seconds);
    f("ssd.transfer_bytes_per_second", m.ssd.transfer_bytes_per_second, Range::Rate);
    f("ssd.write_latency_seconds", m.ssd.write_latency_seconds, Range::Seconds);
    f("ssd.write_transfer_bytes_per_second", m.ssd.write_transfer_bytes_per_second, Range::Rate);
    first_write("ssd", m.ssd.first_write);
    f("array.random_io_seconds", m.array.random_io_seconds, Range::Seconds);
    f("array.sequential_io_seconds", m.array.sequential_io_seconds, Range::Seconds);
    f("array.sequential_window_bytes", m.array.sequential_window_bytes, Range::Window);
    f("array.transfer_bytes_per_second", m.array.transfer_bytes_per_second, Range::Rate);
    f("array.write_io_seconds", m.array.write_io_seconds, Range::Seconds);
    f("array.write_transfer_bytes_per_second", m.array.write_transfer_bytes_per_second, Range::Rate);
    first_write("array", m.array.first_write);
}

/// "must be …" for `range`.
std::string range_text(Range range) {
    switch (range) {
        case Range::Seconds: return "must be a number of seconds from 0 to 3600";
        case Range::Rate: return "must be a number of bytes per second above 0 and at most 1e13";
        case Range::Rpm: return "must be a number from 1 to 100000";
        case Range::Bytes: return "must be a number of bytes above 0 and at most 1e18";
        case Range::Window: return "must be a whole number of bytes, a multiple of 512, at most 2^40";
    }
    return {};
}

bool in_range(const nlohmann::json& v, Range range) {
    if (range == Range::Window) {
        if (!v.is_number_unsigned()) return false;
        const auto bytes = v.get<std::uint64_t>();
        return bytes % 512 == 0 && bytes <= (std::uint64_t{1} << 40);
    }
    if (!v.is_number()) return false;
    const auto x = v.get<double>();
    switch (range) {
        case Range::Seconds: return x >= 0 && x <= 3600;
        case Range::Rate: return x > 0 && x <= 1e13;
        case Range::Rpm: return x >= 1 && x <= 100000;
        case Range::Bytes: return x > 0 && x <= 1e18;
        case Range::Window: break;
    }
    return false;
}

/// Whether some parameter's path continues `path` (so `path` names an object of them).
bool is_group(const DeviceModels& m, const std::string& path) {
    bool found = false;
    each_parameter(m, [&](const std::string& p, const auto&, Range) { found = found || p.starts_with(path + "."); });
    return found;
}

void read_object(const nlohmann::json& doc, const std::string& prefix, DeviceModels& models) {
    for (auto it = doc.begin(); it != doc.end(); ++it) {
        const nlohmann::json& value = it.value();  // not a structured binding: lambdas below take it
        const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
        bool leaf = false;
        each_parameter(models, [&](const std::string& p, auto& target, Range range) {
            if (p != path) return;
            leaf = true;
            if (!in_range(value, range)) throw Error(ErrorKind::Unsupported, path + ": " + range_text(range));
            target = value.get<std::remove_reference_t<decltype(target)>>();
        });
        if (leaf) continue;
        if (!is_group(models, path)) throw Error(ErrorKind::Unsupported, path + ": no such device model parameter");
        if (!value.is_object()) throw Error(ErrorKind::Unsupported, path + ": must be an object");
        read_object(value, path, models);
    }
}

}  // namespace

nlohmann::ordered_json device_models_json(const DeviceModels& models) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::object();
    each_parameter(models, [&doc](std::string path, const auto& value, Range) {
        std::replace(path.begin(), path.end(), '.', '/');
        doc[nlohmann::ordered_json::json_pointer("/" + path)] = value;
    });
    return doc;
}

DeviceModels read_device_models(const nlohmann::json& doc, DeviceModels base) {
    if (!doc.is_object())
        throw Error(ErrorKind::Unsupported, "a device model must be an object with hdd, ssd or array");
    read_object(doc, "", base);
    return base;
}

DeviceModels read_device_model_file(const std::string& path, DeviceModels base) {
    return read_device_models(read_json_file(path, "device model", kDeviceModelPipeTimeout), base);
}

}  // namespace guestfrag
