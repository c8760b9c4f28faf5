// SPDX-License-Identifier: GPL-2.0-or-later
// The NTFS reader against The Sleuth Kit, on generated disks and on disks Windows made.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "analyzers/analysis.hpp"
#include "core/apply/verify.hpp"
#include "core/image/open_image.hpp"
#include "core/ntfs/volume_reader.hpp"
#include "core/partition/partition.hpp"
#include "support/fixtures.hpp"
#include "support/ntfs_edit.hpp"
#include "support/tsk_oracle.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

void require_tsk() { test::require_tools({"istat", "blkls", "ils"}); }

// Every in-use file's non-resident $DATA streams equal istat's, both ways.
void require_streams_match_tsk(const fs::path& image, const VolumeMap& map) {
    const std::uint64_t sector = map.partition_offset / 512;
    std::map<std::uint64_t, std::map<std::string, test::Fragments>> ours;
    for (const Stream& s : map.streams)
        if (s.type == static_cast<std::uint32_t>(AttrType::Data)) ours[s.mft_record][std::string(s.name)] = test::fragments_of(s, map.cluster_size);
    std::size_t compared = 0;
    for (const FileEntry& f : map.files) {
        const auto theirs = test::tsk_data_fragments(image, sector, f.mft_record);
        const auto it = ours.find(f.mft_record);
        const std::map<std::string, test::Fragments> mine = it == ours.end() ? decltype(theirs){} : it->second;
        INFO("record " << f.mft_record << " " << map.path_of(f.mft_record));
        REQUIRE(mine == theirs);
        compared += mine.size();
    }
    CHECK(compared >= 10);  // at least the system files' streams took part
}

// Free clusters equal what blkls lists as unallocated; in-use records equal ils's.
void require_counts_match_tsk(const fs::path& image, const VolumeMap& map) {
    const std::string sector = std::to_string(map.partition_offset / 512);
    const auto blkls = test::run({"sh", "-c", "blkls -f ntfs -o " + sector + " '" + image.string() + "' | wc -c"});
    REQUIRE(blkls.status == 0);
    CHECK(map.free_clusters() * static_cast<std::int64_t>(map.cluster_size) == std::stoll(blkls.out));

    const auto ils = test::run({"ils", "-f", "ntfs", "-a", "-o", sector, image.string()});
    REQUIRE(ils.status == 0);
    std::set<std::uint64_t> allocated;
    std::istringstream in(ils.out);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0])))
            allocated.insert(std::stoull(line.substr(0, line.find('|'))));
    // TSK adds one virtual directory ($OrphanFiles) after the last real record.
    allocated.erase(std::prev(allocated.end()));
    std::set<std::uint64_t> bases;
    for (const FileEntry& f : map.files) bases.insert(f.mft_record);
    // ils lists base records only; our in-use count also holds extension records.
    CHECK(bases == allocated);
    CHECK(map.mft_records_in_use >= bases.size());
}

void check_image_against_tsk(const fs::path& image) {
    const auto before = test::file_fingerprint(image);
    const auto disk = open_image(image.string());
    const ImageAnalysis analysis = analyze_image(*disk);
    REQUIRE_FALSE(analysis.volumes.empty());
    for (const VolumeAnalysis& v : analysis.volumes) {
        INFO("partition " << v.map.partition);
        require_streams_match_tsk(image, v.map);
        require_counts_match_tsk(image, v.map);
    }
    // Analysis never writes the image (docs/design.md §1).
    CHECK(test::file_fingerprint(image) == before);
}

MkImageOptions small(const std::string& table) {
    MkImageOptions o;
    o.disk_size = 64ull << 20;
    o.table = table;
    o.files = 600;
    o.seed = 7;
    return o;
}

fs::path to_raw(const std::string& testdata_name, const std::string& raw_name) {
    const fs::path source = test::testdata(testdata_name);
    test::require_tools({"qemu-img"});
    const fs::path raw = test::scratch_dir() / raw_name;
    if (!fs::exists(raw)) {
        const auto r = test::run({"qemu-img", "convert", "-O", "raw", source.string(), raw.string()});
        if (r.status != 0) throw std::runtime_error("qemu-img convert failed: " + r.err);
    }
    return raw;
}

}  // namespace

TEST_CASE("generated MBR disk: every stream matches The Sleuth Kit", "[ntfs][tsk]") {
    require_tsk();
    check_image_against_tsk(test::generated_image("small-msdos", small("msdos")));
}

TEST_CASE("generated GPT disk: every stream matches The Sleuth Kit", "[ntfs][tsk]") {
    require_tsk();
    check_image_against_tsk(test::generated_image("small-gpt", small("gpt")));
}

TEST_CASE("generated bare volume: every stream matches The Sleuth Kit", "[ntfs][tsk]") {
    require_tsk();
    check_image_against_tsk(test::generated_image("small-none", small("none")));
}

TEST_CASE("generated files with attribute lists are read whole", "[ntfs]") {
    const fs::path image = test::generated_image("small-msdos", small("msdos"));
    const auto disk = open_image(image.string());
    const auto analysis = analyze_image(*disk);
    const VolumeMap& map = analysis.volumes.at(0).map;
    // A runlist spread over extension records shows up as a stream with more runs than
    // one 1 KiB record can describe; at least one such stream must exist and be complete.
    std::size_t long_runlists = 0;
    for (const Stream& s : map.streams) {
        if (s.extents.size() < 120) continue;
        ++long_runlists;
        std::int64_t vcn = 0;
        for (const Extent& e : s.extents) {
            CHECK(e.vcn == vcn);
            vcn += e.clusters;
        }
        CHECK(static_cast<std::uint64_t>(vcn) * map.cluster_size >= s.size);
    }
    CHECK(long_runlists >= 1);
}

TEST_CASE("$MFT as the mount maps it is the one its records map, and The Sleuth Kit's", "[ntfs][tsk]") {
    require_tsk();
    const fs::path image = test::generated_image("small-msdos", small("msdos"));
    const auto disk = open_image(image.string());
    const VolumeMap full = analyze_image(*disk).volumes.at(0).map;
    const PartitionTable table = read_partitions(*disk);
    const auto partition = std::ranges::find(table.partitions, full.partition, &Partition::number);
    REQUIRE(partition != table.partitions.end());
    const VolumeMap mft = read_mft_map(*disk, *partition);
    CHECK(mft.partition_offset == full.partition_offset);
    CHECK(mft.mft_record_size == full.mft_record_size);
    CHECK(mft.mft_records_total == full.mft_records_total);
    REQUIRE(mft.streams.size() == 2);
    CHECK(mft.streams[0].has_label("$DATA"));
    CHECK(mft.streams[1].has_label("$BITMAP"));
    CHECK(mft.files.empty());
    CHECK_FALSE(mft_map_difference(mft, full));
    const auto theirs = test::tsk_data_fragments(image, full.partition_offset / 512, 0);
    REQUIRE(theirs.contains(""));
    CHECK(test::fragments_of(mft.streams[0], mft.cluster_size) == theirs.at(""));

    VolumeMap moved = mft;
    moved.streams[0].extents.back().lcn += 1;
    CHECK(mft_map_difference(moved, full) ==
          "the runs of $MFT's $DATA differ as its mount and its records map them");
    VolumeMap shorter = mft;
    shorter.mft_records_total -= 1;
    CHECK(mft_map_difference(shorter, full) ==
          "the records of $MFT differ as its mount and its records count them");
}

TEST_CASE("a file's named streams come in map order, whatever NTFS's collation of their names",
          "[ntfs][tsk]") {
    require_tsk();
    MkImageOptions o = small("none");
    o.disk_size = 32ull << 20;
    o.files = 200;
    const fs::path image = test::scratch_dir() / "named-streams.img";
    fs::copy_file(test::generated_image("named-streams-none", o), image,
                  fs::copy_options::overwrite_existing);
    // NTFS collates names by their upper case, "a" before "B"; map_order by their bytes,
    // "B" before "a". Four 16 KiB streams, each non-resident, in one base record; the
    // names outside ASCII are decoded by libntfs-3g, the others by the scan itself.
    const std::uint64_t record =
        test::add_named_streams(image, "forks-J\u00fcrgen.bin", {"a", "B", "c", "\u00fc\u20ac"}, 16 << 10);
    const auto disk = open_image(image.string());
    const ImageAnalysis analysis = analyze_image(*disk);
    const VolumeMap& map = analysis.volumes.at(0).map;
    CHECK(std::ranges::is_sorted(
        map.streams, [](const Stream& a, const Stream& b) { return map_order(a) < map_order(b); }));
    std::vector<std::string> names;
    for (const Stream& s : map.streams)
        if (s.mft_record == record) names.emplace_back(s.name);
    CHECK(names == std::vector<std::string>{"B", "a", "c", "\u00fc\u20ac"});
    CHECK(map.path_of(record) == "\\forks-J\u00fcrgen.bin");
    require_streams_match_tsk(image, map);
}

TEST_CASE("DFTT disk with two unaligned NTFS partitions matches The Sleuth Kit", "[ntfs][tsk][testdata]") {
    require_tsk();
    const fs::path image = test::testdata("dftt-10-ntfs-disk.dd.xz");
    const auto disk = open_image(image.string());
    const auto analysis = analyze_image(*disk);
    REQUIRE(analysis.volumes.size() == 2);
    CHECK(analysis.volumes[0].map.partition_offset == 63 * 512);
    CHECK(analysis.volumes[1].map.partition_offset == 96390 * 512);
    check_image_against_tsk(image);
}

TEST_CASE("Hyper-V dynamic VHDX contents match The Sleuth Kit", "[ntfs][tsk][testdata]") {
    require_tsk();
    const fs::path raw = to_raw("hyperv-dynamic.vhdx.gz", "hyperv-dynamic.raw");
    check_image_against_tsk(raw);
}

TEST_CASE("Hyper-V fixed VHDX contents match The Sleuth Kit", "[ntfs][tsk][testdata]") {
    require_tsk();
    const fs::path raw = to_raw("hyperv-fixed.vhdx.gz", "hyperv-fixed.raw");
    check_image_against_tsk(raw);
}

TEST_CASE("Windows-made bare NTFS volume matches The Sleuth Kit", "[ntfs][tsk][testdata]") {
    require_tsk();
    const fs::path raw = to_raw("windows_volume.qcow2", "windows_volume.raw");
    check_image_against_tsk(raw);
}
