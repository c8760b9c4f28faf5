// SPDX-License-Identifier: GPL-2.0-or-later
// Provisioning per layer (docs/formats.md "Provisioning"): detected on generated images of
// every format against what their headers say, and the --provisioning / --zero-block rules.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/image/layer_provisioning.hpp"
#include "core/image/open_image.hpp"
#include "support/error_kind.hpp"
#include "support/fixtures.hpp"
#include "support/qemu_tools.hpp"
#include "support/vhd_writer.hpp"
#include "support/vhdx_writer.hpp"
#include "support/vmdk_writer.hpp"

namespace fs = std::filesystem;
using namespace guestfrag;
using guestfrag::test::run_ok;

namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;
constexpr std::uint64_t kDisk = 8 * MiB;

LayerProvisioning top_of(const fs::path& path) { return open_image(path.string())->layers().front().provisioning; }

/// A raw file of kDisk bytes: with holes (sparse) or written whole.
void raw_file(const fs::path& path, bool sparse) {
    if (sparse) {
        std::ofstream(path, std::ios::binary).put('x');
        fs::resize_file(path, kDisk);
        return;
    }
    std::ofstream out(path, std::ios::binary);
    const std::string chunk(MiB, 'x');
    for (std::uint64_t i = 0; i < kDisk / MiB; ++i) out << chunk;
}

}  // namespace

TEST_CASE("provisioning: raw files, sparse or written whole", "[provisioning][image]") {
    const test::WorkDir dir("provisioning-raw");
    raw_file(dir / "sparse.raw", true);
    raw_file(dir / "full.raw", false);
    const LayerProvisioning sparse = top_of(dir / "sparse.raw");
    CHECK(sparse.type == Provisioning::Thin);
    CHECK_FALSE(sparse.assumed);
    const LayerProvisioning full = top_of(dir / "full.raw");
    CHECK(full.type == Provisioning::Eager);
    CHECK(full.assumed);
    CHECK(full.basis.find("eager assumed") != std::string::npos);
    // The host allocation unit (st_blksize, the raw layer's granule) is the zeroing block.
    CHECK(full.zero_block == open_image((dir / "full.raw").string())->layers().front().granule_size);
    CHECK(full.zero_block >= 512);
}

TEST_CASE("provisioning: qcow2 preallocation modes", "[provisioning][image]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir dir("provisioning-qcow2");
    for (const std::string mode : {"off", "metadata", "full"})
        run_ok({"qemu-img", "create", "-q", "-f", "qcow2", "-o", "cluster_size=128K,preallocation=" + mode,
                (dir / (mode + ".qcow2")).string(), std::to_string(kDisk)});
    const LayerProvisioning off = top_of(dir / "off.qcow2");
    CHECK(off.type == Provisioning::Thin);
    CHECK(off.zero_block == 128 * KiB);  // the header's cluster size
    const LayerProvisioning metadata = top_of(dir / "metadata.qcow2");
    CHECK(metadata.type == Provisioning::Lazy);
    CHECK_FALSE(metadata.assumed);
    CHECK(metadata.zero_block == 128 * KiB);
    const LayerProvisioning full = top_of(dir / "full.qcow2");
    CHECK(full.type == Provisioning::Eager);
    CHECK(full.assumed);
}

TEST_CASE("provisioning: vhd dynamic and fixed", "[provisioning][image]") {
    const test::WorkDir dir("provisioning-vhd");
    test::VhdSpec spec;
    spec.disk_type = 3;
    spec.virtual_size = kDisk;
    spec.block_size = 1u << 20;  // not the 2 MiB default: read from the header
    test::write_vhd(dir / "dynamic.vhd", spec);
    const LayerProvisioning dynamic = top_of(dir / "dynamic.vhd");
    CHECK(dynamic.type == Provisioning::Thin);
    CHECK(dynamic.zero_block == MiB);
    CHECK_FALSE(dynamic.assumed);

    raw_file(dir / "fixed.vhd", false);
    test::append_fixed_vhd_footer(dir / "fixed.vhd", kDisk);
    const LayerProvisioning fixed = top_of(dir / "fixed.vhd");
    CHECK(fixed.type == Provisioning::Eager);
    CHECK(fixed.assumed);
    CHECK(fixed.zero_block == 2 * MiB);
}

TEST_CASE("provisioning: vhdx dynamic, differencing and fixed", "[provisioning][image]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir dir("provisioning-vhdx");
    test::VhdxSpec spec;
    spec.virtual_size = kDisk;
    spec.block_size = 4u << 20;
    test::VhdxWriter(spec).save(dir / "dynamic.vhdx");
    const LayerProvisioning dynamic = top_of(dir / "dynamic.vhdx");
    CHECK(dynamic.type == Provisioning::Thin);
    CHECK(dynamic.zero_block == 4 * MiB);  // the file's payload block size

    run_ok({"qemu-img", "create", "-q", "-f", "vhdx", "-o", "subformat=fixed,block_size=8M",
            (dir / "fixed.vhdx").string(), std::to_string(kDisk)});
    const LayerProvisioning fixed = top_of(dir / "fixed.vhdx");
    CHECK(fixed.type == Provisioning::Eager);
    CHECK(fixed.assumed);
    CHECK(fixed.zero_block == 8 * MiB);
}

TEST_CASE("provisioning: vmdk sparse, thin on VMFS, thick on VMFS, hosted flat", "[provisioning][image]") {
    test::require_tools({"qemu-img"});
    const test::WorkDir dir("provisioning-vmdk");
    run_ok({"qemu-img", "create", "-q", "-f", "vmdk", (dir / "sparse.vmdk").string(), std::to_string(kDisk)});
    const LayerProvisioning sparse = top_of(dir / "sparse.vmdk");
    CHECK(sparse.type == Provisioning::Thin);
    CHECK(sparse.zero_block == 64 * KiB);  // qemu's default grain of 128 sectors

    raw_file(dir / "disk-flat.vmdk", true);
    const std::vector<test::DescriptorExtent> extents{{kDisk / 512, "VMFS", "disk-flat.vmdk"}};
    const std::string thick = test::vmdk_descriptor_text(0x1, 0xffffffff, "vmfs", extents);
    test::write_text_file(dir / "thick.vmdk", thick);
    test::write_text_file(dir / "thin.vmdk", thick + "ddb.thinProvisioned = \"1\"\n");
    const LayerProvisioning thin = top_of(dir / "thin.vmdk");
    CHECK(thin.type == Provisioning::Thin);
    CHECK(thin.zero_block == MiB);
    CHECK_FALSE(thin.assumed);
    // createType vmfs without ddb.thinProvisioned: thick, zeroing unknown.
    const LayerProvisioning lazy = top_of(dir / "thick.vmdk");
    CHECK(lazy.type == Provisioning::Lazy);
    CHECK(lazy.assumed);
    CHECK(lazy.zero_block == MiB);

    // A hosted flat disk is its host file: sparse here.
    const std::vector<test::DescriptorExtent> flat{{kDisk / 512, "FLAT", "disk-flat.vmdk", 0}};
    test::write_text_file(dir / "flat.vmdk", test::vmdk_descriptor_text(0x1, 0xffffffff, "monolithicFlat", flat));
    const LayerProvisioning hosted = top_of(dir / "flat.vmdk");
    CHECK(hosted.type == Provisioning::Thin);
    CHECK(hosted.basis.starts_with("createType monolithicFlat"));
}

TEST_CASE("provisioning: --provisioning and --zero-block per layer", "[provisioning]") {
    CHECK(parse_provisioning_override("lazy") == ProvisioningOverride{0, Provisioning::Lazy});
    CHECK(parse_provisioning_override("1=eager") == ProvisioningOverride{1, Provisioning::Eager});
    for (const char* bad : {"", "thick", "=thin", "-1=thin", "x=thin", "0=", "0=thin=1"})
        CHECK_FALSE(parse_provisioning_override(bad));

    std::vector<Layer> layers(2);
    layers[0].provisioning = {Provisioning::Eager, 2 * MiB, true, "fixed"};
    layers[1].provisioning = {Provisioning::Thin, 64 * KiB, false, "sparse"};
    const std::vector<ProvisioningOverride> overrides{{0, Provisioning::Thin}, {0, Provisioning::Lazy}};
    const std::vector<LayerProvisioning> out = effective_provisioning(layers, overrides, 4 * MiB);
    REQUIRE(out.size() == 2);
    CHECK(out[0].type == Provisioning::Lazy);  // the last one wins
    CHECK_FALSE(out[0].assumed);
    CHECK(out[0].basis == "set by --provisioning");
    CHECK(out[0].zero_block == 4 * MiB);
    CHECK(out[1].type == Provisioning::Thin);
    CHECK(out[1].zero_block == 4 * MiB);
    CHECK(effective_provisioning(layers, {}, std::nullopt)[1] == layers[1].provisioning);
    const std::vector<ProvisioningOverride> too_deep{{2, Provisioning::Thin}};
    CHECK_THROWS_AS(effective_provisioning(layers, too_deep, std::nullopt), Error);
}
