// SPDX-License-Identifier: GPL-2.0-or-later
// A plan's identity: which image, volume and allocation state it was made for.
#include <string_view>

#include "core/error.hpp"
#include "core/io/hex.hpp"
#include "core/plan/apply.hpp"
#include "core/plan/free_index.hpp"

namespace guestfrag {

namespace {

/// FNV-1a 64 fed with fixed-width little-endian integers, so the digest does not depend on
/// the host's byte order.
class Fnv1a {
public:
    void u64(std::uint64_t value) {
        for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>(value >> (8 * i)));
    }
    void i64(std::int64_t value) { u64(static_cast<std::uint64_t>(value)); }
    void text(std::string_view s) {
        u64(s.size());  // length first: "ab"+"c" and "a"+"bc" differ
        for (const char c : s) byte(static_cast<unsigned char>(c));
    }
    [[nodiscard]] std::uint64_t value() const { return hash_; }

private:
    void byte(unsigned char b) {
        hash_ ^= b;
        hash_ *= 0x100000001b3ULL;
    }
    std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

PlanIdentity identify(const VolumeMap& volume, const std::string& image_path, std::uint64_t virtual_size) {
    Fnv1a h;
    h.u64(volume.free.iterative_size());
    for (const auto& i : volume.free) {
        h.i64(first_cluster(i));
        h.i64(end_cluster(i));
    }
    h.u64(volume.streams.size());
    for (const Stream& s : volume.streams) {
        h.u64(s.mft_record);
        h.u64(s.type);
        h.text(s.name);
        h.u64(s.extents.size());
        for (const Extent& e : s.extents) {
            h.i64(e.vcn);
            h.i64(e.lcn);
            h.i64(e.clusters);
        }
    }
    PlanIdentity id;
    id.image_path = image_path;
    id.virtual_size = virtual_size;
    id.partition = volume.partition;
    id.volume_serial = volume.serial;
    id.total_clusters = volume.total_clusters;
    id.cluster_size = volume.cluster_size;
    id.allocation_digest = h.value();
    return id;
}

void check_identity(const PlanIdentity& planned, const PlanIdentity& actual) {
    std::string differs;
    const auto compare = [&differs](const char* what, const std::string& plan, const std::string& image) {
        if (differs.empty() && plan != image) differs = std::string(what) + " " + plan + " in the plan, " + image + " now";
    };
    compare("virtual size", std::to_string(planned.virtual_size), std::to_string(actual.virtual_size));
    compare("partition", std::to_string(planned.partition), std::to_string(actual.partition));
    compare("volume serial", hex16(planned.volume_serial), hex16(actual.volume_serial));
    compare("cluster size", std::to_string(planned.cluster_size), std::to_string(actual.cluster_size));
    compare("total clusters", std::to_string(planned.total_clusters), std::to_string(actual.total_clusters));
    compare("allocation digest", hex16(planned.allocation_digest), hex16(actual.allocation_digest));
    if (!differs.empty())
        throw Error(ErrorKind::Corrupt, "plan was made for another image or the image changed since (" + differs + ")");
}

}  // namespace guestfrag
