// SPDX-License-Identifier: GPL-2.0-or-later
// classify_placement on hand-built maps (docs/design.md §3): which streams NTFS pins, which a
// plan leaves alone, and that only whole paths match, in any case.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/volume_map.hpp"
#include "core/ntfs/placement.hpp"

using guestfrag::AttrType;
using guestfrag::FileEntry;
using guestfrag::Placement;
using guestfrag::Stream;
using guestfrag::VolumeMap;

namespace {

constexpr std::string_view kGuid = "{3808876b-c176-4e48-b7ae-04046e6cc752}";

// One unnamed $DATA stream of one cluster per file at LCN 100 + record, in record order.
VolumeMap volume_of(std::vector<FileEntry> files) {
    VolumeMap v;
    for (const FileEntry& f : files) {
        Stream s;
        s.mft_record = f.mft_record;
        s.type = static_cast<std::uint32_t>(AttrType::Data);
        s.extents = {{0, 100 + static_cast<std::int64_t>(f.mft_record), 1}};
        v.streams.push_back(s);
    }
    v.files = std::move(files);
    return v;
}

const Stream& stream_of(const VolumeMap& v, std::uint64_t record) {
    const auto it = std::ranges::find(v.streams, record, &Stream::mft_record);
    REQUIRE(it != v.streams.end());
    return *it;
}

}  // namespace

TEST_CASE("placement: pinned metadata, files in use and VSS stores, by whole path in any case",
          "[placement]") {
    const std::string store = std::string(kGuid).insert(0, "{11111111-2222-3333-4444-555555555555}");
    VolumeMap v = volume_of({
        {0, 5, false, "$MFT"},
        {2, 5, false, "$LogFile"},
        {5, 5, true, "."},
        {11, 5, true, "$Extend"},
        {40, 11, false, "$UsnJrnl"},
        {41, 11, false, "$ObjId"},
        {42, 5, false, "$UsnJrnl"},      // \$UsnJrnl: not the journal
        {50, 5, false, "PageFile.SYS"},  // \pagefile.sys in another case
        {51, 5, false, "hiberfil.sys"},
        {52, 5, false, "swapfile.sys"},
        {53, 60, false, "pagefile.sys"},  // \Windows\pagefile.sys: not the page file
        {54, 5, false, "pagefile.sys.bak"},
        {60, 5, true, "Windows"},
        {70, 5, true, "System Volume Information"},
        {71, 70, false, store},  // a store
        {72, 70, false, "tracking.log"},
        {73, 5, false, store},                                      // a store's name outside SVI
        {74, 70, false, "{3808876B-C176-4E48-B7AE-04046E6CC752}"},  // as Windows writes it
        {75, 70, false, "tracking{3808876b-c176"},                  // the GUID cut short
    });
    guestfrag::ntfs::classify_placement(v);

    CHECK(stream_of(v, 0).placement == Placement::Unmovable);
    CHECK(stream_of(v, 0).reason == "$MFT");
    CHECK(stream_of(v, 2).reason == "$LogFile");
    CHECK(stream_of(v, 40).placement == Placement::Unmovable);
    CHECK(stream_of(v, 40).reason == "$Extend\\$UsnJrnl");
    CHECK(stream_of(v, 41).reason == "$Extend\\$ObjId");
    CHECK(stream_of(v, 42).placement == Placement::Movable);
    CHECK(stream_of(v, 50).placement == Placement::Excluded);
    CHECK(stream_of(v, 50).reason == "pagefile.sys is in use by Windows whenever it runs");
    CHECK(stream_of(v, 51).reason == "hiberfil.sys is in use by Windows whenever it runs");
    CHECK(stream_of(v, 52).reason == "swapfile.sys is in use by Windows whenever it runs");
    CHECK(stream_of(v, 53).placement == Placement::Movable);
    CHECK(stream_of(v, 54).placement == Placement::Movable);
    CHECK(stream_of(v, 71).placement == Placement::Excluded);
    CHECK(stream_of(v, 71).reason == "volume shadow copy store");
    CHECK(stream_of(v, 72).placement == Placement::Movable);
    CHECK(stream_of(v, 73).placement == Placement::Movable);
    CHECK(stream_of(v, 72).reason.empty());
    CHECK(stream_of(v, 74).reason == "volume shadow copy store");
    CHECK(stream_of(v, 75).placement == Placement::Movable);

    // Pinned clusters: the metadata's, not the excluded files'.
    CHECK(boost::icl::contains(v.unmovable, 100));   // $MFT's first extent
    CHECK(boost::icl::contains(v.unmovable, 140));   // $UsnJrnl
    CHECK(!boost::icl::contains(v.unmovable, 150));  // the page file is excluded, not pinned
}

TEST_CASE("placement: the VSS GUID in a directory's name excludes the files below it", "[placement]") {
    // Windows keeps its stores directly in System Volume Information; a directory named
    // with the GUID is not its layout, but the rule is the path's, whichever name holds it.
    VolumeMap v = volume_of({
        {5, 5, true, "."},
        {70, 5, true, "System Volume Information"},
        {80, 70, true, kGuid},
        {81, 80, false, "a"},
        {82, 5, true, kGuid},  // the same name outside SVI
        {83, 82, false, "b"},
        {84, 70, false, "c"},
    });
    guestfrag::ntfs::classify_placement(v);
    CHECK(stream_of(v, 81).placement == Placement::Excluded);
    CHECK(stream_of(v, 83).placement == Placement::Movable);
    CHECK(stream_of(v, 84).placement == Placement::Movable);
}
