// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/io_stats_json.hpp"

namespace guestfrag::cli {
namespace {

using Json = nlohmann::ordered_json;

Json histogram_json(const Histogram& h) { return Json{{"limits", h.limits()}, {"counts", h.counts()}}; }

}  // namespace

Json io_stats_json(const IoStats& s) {
    Json r;
    r["ios"] = s.ios;
    r["bytes"] = s.bytes;
    r["mean_io_bytes"] = s.mean_io_bytes;
    r["sequential_percent"] = s.sequential_percent;
    r["near_sequential_percent"] = s.near_sequential_percent;
    r["device_seconds"] = {
        {"hdd", s.device_seconds.hdd}, {"ssd", s.device_seconds.ssd}, {"array", s.device_seconds.array}};
    r["histograms"] = {{"ioLength", histogram_json(s.io_length)},
                       {"seekDistance", histogram_json(s.seek_distance)}};
    return r;
}

Json provisioned_json(const IoStats& s) {
    Json out = Json::array();
    for (const ProvisionedSeconds& p : s.provisioned) {
        const DeviceSeconds& t = p.device_seconds;
        Json models = Json::object();
        for (const auto& [name, seconds] : {std::pair{"hdd", t.hdd}, {"ssd", t.ssd}, {"array", t.array}}) {
            const Throughput th = throughput(s.ios, s.bytes, seconds);
            models[name] = {{"device_seconds", seconds},
                            {"iops", th.iops},
                            {"mb_per_second", th.mb_per_second},
                            {"mean_latency_seconds", th.mean_latency_seconds}};
        }
        out.push_back({{"type", provisioning_name(p.type)},
                       {"ios", s.ios},
                       {"first_writes", p.first_writes},
                       {"models", std::move(models)}});
    }
    return out;
}

}  // namespace guestfrag::cli
