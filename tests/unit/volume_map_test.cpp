// SPDX-License-Identifier: GPL-2.0-or-later
// Stream and VolumeMap helpers on hand-built maps: labels, fragment counting (docs/design.md §3),
// allocated clusters, free clusters, record lookup, path building and the shared file table.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/model/stream_label.hpp"
#include "core/model/volume_map.hpp"

using guestfrag::AttrType;
using guestfrag::ClusterSet;
using guestfrag::Extent;
using guestfrag::FileEntry;
using guestfrag::StaticText;
using guestfrag::Stream;
using guestfrag::StreamLabel;
using guestfrag::VolumeMap;

namespace {

constexpr std::int64_t kHole = Extent::kSparse;

Stream stream_of(std::vector<Extent> runs) {
    Stream s;
    s.type = static_cast<std::uint32_t>(AttrType::Data);
    s.extents = std::move(runs);
    return s;
}

Stream named(std::uint32_t type, std::string_view name) {
    Stream s;
    s.type = type;
    s.name = name;  // a literal: Stream::name is a view
    return s;
}

ClusterSet::interval_type clusters(std::int64_t lower, std::int64_t upper) {
    return ClusterSet::interval_type::right_open(lower, upper);
}

}  // namespace

TEST_CASE("stream labels name the attribute type and the stream", "[model][label]") {
    CHECK(named(0x80, "").label() == "$DATA");
    CHECK(named(0x80, "Zone.Identifier").label() == "$DATA:Zone.Identifier");
    CHECK(named(0xA0, "$I30").label() == "$INDEX_ALLOCATION:$I30");
    CHECK(named(0xB0, "$I30").label() == "$BITMAP:$I30");
    CHECK(named(0x20, "").label() == "$ATTRIBUTE_LIST");
    CHECK(named(0xC0, "").label() == "$REPARSE_POINT");
    CHECK(named(0xD0, "").label() == "$EA_INFORMATION");
    CHECK(named(0xE0, "").label() == "$EA");
    CHECK(named(0x100, "$TXF_DATA").label() == "$LOGGED_UTILITY_STREAM:$TXF_DATA");
    CHECK(named(0x50, "").label() == "$SECURITY_DESCRIPTOR");
    // Types outside $AttrDef keep their code, in hex, two digits at least.
    CHECK(named(0x12, "").label() == "$0x12");
    CHECK(named(0x2000, "x").label() == "$0x2000:x");
    CHECK(named(0, "").label() == "$0x00");
}

TEST_CASE("has_label answers as comparing label() would", "[model][label]") {
    const std::vector<Stream> streams{named(0x80, ""),        named(0x80, "Zone.Identifier"), named(0xA0, "$I30"),
                                      named(0x12, ""),        named(0x2000, "x"),             named(0x80, "a:b")};
    const std::vector<std::string> labels{"$DATA",  "$DATA:",      "$DATA:Zone.Identifier", "$DATA:Zone.Identifie",
                                          "$DATAX", "$DATA:a:b",   "$INDEX_ALLOCATION:$I30", "$BITMAP:$I30",
                                          "$0x12",  "$0x12:",      "$0x2000:x",              "$0x2000",
                                          "",       "$0x2000:xy",  ":x",                     "$DATA:a"};
    for (const Stream& s : streams) {
        CHECK(s.has_label(s.label()));
        for (const std::string& l : labels) {
            INFO(s.label() << " against " << l);
            CHECK(s.has_label(l) == (s.label() == l));
        }
    }
}

TEST_CASE("a stream label is its text, held once", "[model][label]") {
    const std::string made = std::string("$DATA:") + "Zone.Identifier";
    const StreamLabel a = made;
    const StreamLabel b("$DATA:Zone.Identifier");
    CHECK(a == b);
    CHECK(&a.str() == &b.str());  // one text for both
    CHECK(a == "$DATA:Zone.Identifier");
    CHECK(a == std::string_view("$DATA:Zone.Identifier"));
    CHECK_FALSE(a == StreamLabel("$DATA"));
    CHECK(a.size() == made.size());
    CHECK(StreamLabel().empty());
    CHECK(StreamLabel() == StreamLabel(""));
    // Ordered by text, as the strings they stand for.
    CHECK(StreamLabel("$BITMAP:$I30") < StreamLabel("$DATA"));
    CHECK(StreamLabel("$DATA") < StreamLabel("$DATA:a"));
    CHECK((StreamLabel("$DATA") <=> StreamLabel("$DATA")) == std::strong_ordering::equal);

    // Threads naming the same texts at once get the same ones.
    std::vector<const std::string*> seen(8);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < seen.size(); ++t)
        threads.emplace_back([&seen, t] {
            for (int i = 0; i < 1000; ++i) (void)StreamLabel("$DATA:t" + std::to_string((i + t) % 50));
            seen[t] = &StreamLabel("$DATA:t7").str();
        });
    for (std::thread& t : threads) t.join();
    for (const std::string* p : seen) CHECK(p == &StreamLabel("$DATA:t7").str());
}

TEST_CASE("a stream's reason is static text or none", "[model][label]") {
    Stream s;
    CHECK(s.reason.empty());
    CHECK(s.reason == "");
    s.reason = "$MFT";
    CHECK(s.reason == "$MFT");
    CHECK(s.reason.view().size() == 4);
    CHECK_FALSE(s.reason.empty());
    CHECK(StaticText("").empty());
}

TEST_CASE("fragments merge LCN-contiguous runs", "[model][fragments]") {
    // 100+4 = 104: the second run continues the first → one fragment.
    CHECK(stream_of({{0, 100, 4}, {4, 104, 2}}).fragments() == 1);
    // 100+4 = 104 ≠ 200 (new), 200+4 = 204 ≠ 300 (new, after the hole) → 3 fragments.
    CHECK(stream_of({{0, 100, 4}, {4, 200, 4}, {8, kHole, 8}, {16, 300, 1}}).fragments() == 3);
    // One run, and no runs at all.
    CHECK(stream_of({{0, 7, 1}}).fragments() == 1);
    CHECK(stream_of({}).fragments() == 0);
    // A run placed before its predecessor, and a run that restarts at the same LCN: 2 each.
    CHECK(stream_of({{0, 100, 4}, {4, 96, 4}}).fragments() == 2);
    CHECK(stream_of({{0, 100, 4}, {4, 100, 4}}).fragments() == 2);
    // Two merges in one list: 10+4 = 14 merges, 14+2 = 16 ≠ 30 (new), 30+1 = 31 merges → 2.
    CHECK(stream_of({{0, 10, 4}, {4, 14, 2}, {6, 30, 1}, {7, 31, 5}}).fragments() == 2);
}

TEST_CASE("holes are not fragments and do not split contiguous data", "[model][fragments]") {
    // All sparse: occupies nothing → 0 fragments.
    CHECK(stream_of({{0, kHole, 16}}).fragments() == 0);
    CHECK(stream_of({{0, kHole, 16}, {16, kHole, 16}}).fragments() == 0);
    // Leading and trailing holes around one run.
    CHECK(stream_of({{0, kHole, 8}, {8, 50, 8}, {16, kHole, 8}}).fragments() == 1);
    // Compressed file: 16-cluster units stored in 5 clusters each, back to back on disk
    // (100..104, 105..109, 110..114). The holes sit between LCN-adjacent data → 1 fragment.
    CHECK(
        stream_of({{0, 100, 5}, {5, kHole, 11}, {16, 105, 5}, {21, kHole, 11}, {32, 110, 5}, {37, kHole, 11}})
            .fragments() == 1);
    // The same with the third unit elsewhere (105+5 = 110 ≠ 900) → 2.
    CHECK(
        stream_of({{0, 100, 5}, {5, kHole, 11}, {16, 105, 5}, {21, kHole, 11}, {32, 900, 5}, {37, kHole, 11}})
            .fragments() == 2);
    // Empty runs and corrupt negative LCNs occupy nothing either: 100+4 = 104 merges → 1.
    CHECK(stream_of({{0, 100, 4}, {4, 500, 0}, {4, -7, 3}, {7, 104, 4}}).fragments() == 1);
}

TEST_CASE("fragment counting does not overflow near the end of the LCN range", "[model][fragments]") {
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    // (kMax − 20) + 10 = kMax − 10: contiguous. Then kMax − 10 + 10 would be kMax: the next
    // run starts at 5 → new fragment. Nothing computes lcn + clusters past kMax.
    const Stream s = stream_of({{0, kMax - 20, 10}, {10, kMax - 10, 10}, {20, 5, 1}});
    CHECK(s.fragments() == 2);
    CHECK(s.allocated_clusters() == 21);
    // A run list whose sizes sum past INT64_MAX saturates instead of wrapping.
    CHECK(stream_of({{0, 0, kMax}, {kMax, 0, kMax}}).allocated_clusters() == kMax);
}

TEST_CASE("allocated clusters leave holes out", "[model][allocated]") {
    // 4 + 4 + 1 allocated; the 8-cluster hole is not.
    CHECK(stream_of({{0, 100, 4}, {4, 200, 4}, {8, kHole, 8}, {16, 300, 1}}).allocated_clusters() == 9);
    CHECK(stream_of({{0, kHole, 16}}).allocated_clusters() == 0);
    CHECK(stream_of({}).allocated_clusters() == 0);
    const std::int64_t big = std::int64_t{1} << 61;
    CHECK(stream_of({{0, 0, big}, {big, big + 10, big}}).allocated_clusters() == 2 * big);
}

TEST_CASE("free clusters sum the free intervals", "[model][free]") {
    VolumeMap volume;
    CHECK(volume.free_clusters() == 0);
    volume.free.add(clusters(0, 10));
    volume.free.add(clusters(20, 25));
    volume.free.add(clusters(10, 12));  // joins [0, 10) → [0, 12)
    CHECK(volume.free.iterative_size() == 2);
    CHECK(volume.free_clusters() == 12 + 5);
    volume.free.add(clusters(std::int64_t{1} << 40, (std::int64_t{1} << 40) + (std::int64_t{1} << 50)));
    CHECK(volume.free_clusters() == 17 + (std::int64_t{1} << 50));
}

namespace {

/// root(5) ─┬─ Windows(40) ── System32(41) ── kernel32.dll(42)
///          ├─ pagefile.sys(30)
///          └─ (99 is named "lost" but its parent 77 does not exist)
///  loop: 60 "a" → parent 61 "b" → parent 60;  62 "selfish" → parent 62; 63 "c" → parent 60
VolumeMap tree() {
    VolumeMap v;
    v.files = {
        {5, 5, true, "."},          {30, 5, false, "pagefile.sys"},  {40, 5, true, "Windows"},
        {41, 40, true, "System32"}, {42, 41, false, "kernel32.dll"}, {60, 61, true, "a"},
        {61, 60, true, "b"},        {62, 62, true, "selfish"},       {63, 60, false, "c"},
        {99, 77, false, "lost"},    {100, 99, false, "found"},
    };
    return v;
}

}  // namespace

TEST_CASE("find_file looks records up by number", "[model][path]") {
    const VolumeMap v = tree();
    REQUIRE(v.find_file(41) != nullptr);
    CHECK(v.find_file(41)->name == "System32");
    CHECK(v.find_file(5)->name == ".");
    CHECK(v.find_file(100)->name == "found");
    CHECK(v.find_file(0) == nullptr);
    CHECK(v.find_file(43) == nullptr);
    CHECK(v.find_file(1000) == nullptr);
    CHECK(VolumeMap{}.find_file(5) == nullptr);
}

TEST_CASE("paths walk up to the root", "[model][path]") {
    const VolumeMap v = tree();
    CHECK(v.path_of(5) == "\\");
    CHECK(VolumeMap{}.path_of(5) == "\\");  // the root needs no entry
    CHECK(v.path_of(30) == "\\pagefile.sys");
    CHECK(v.path_of(40) == "\\Windows");
    CHECK(v.path_of(42) == "\\Windows\\System32\\kernel32.dll");
}

TEST_CASE("paths without a root are orphans", "[model][path]") {
    const VolumeMap v = tree();
    // Missing parent 77: the known part of the chain is kept.
    CHECK(v.path_of(99) == "<orphan>\\lost");
    CHECK(v.path_of(100) == "<orphan>\\lost\\found");
    // A record with no entry at all.
    CHECK(v.path_of(1234) == "<orphan>\\<record 1234>");
    // Loops stop where they close: 60 → 61 → 60 again.
    CHECK(v.path_of(60) == "<orphan>\\b\\a");
    CHECK(v.path_of(61) == "<orphan>\\a\\b");
    CHECK(v.path_of(63) == "<orphan>\\b\\a\\c");
    CHECK(v.path_of(62) == "<orphan>\\selfish");
}

TEST_CASE("paths deeper than 1024 components are orphans", "[model][path]") {
    // Records 1000, 1001, ... each the parent of the next; 1000's parent is the root.
    const auto chain = [](std::uint64_t depth) {
        VolumeMap v;
        for (std::uint64_t i = 0; i < depth; ++i) {
            v.files.push_back({1000 + i, i == 0 ? 5 : 1000 + i - 1, true, "d"});
        }
        return v;
    };
    std::string deepest_1024;
    for (int i = 0; i < 1024; ++i) deepest_1024 += "\\d";

    const VolumeMap ok = chain(1024);
    CHECK(ok.path_of(1000 + 1023) == deepest_1024);

    const VolumeMap too_deep = chain(1025);
    CHECK(too_deep.path_of(1000 + 1024) == "<orphan>" + deepest_1024);
    CHECK(too_deep.path_of(1000 + 1023) == deepest_1024);
}

TEST_CASE("the name pool keeps every name intact and packs them into 64 KiB blocks", "[model][names]") {
    guestfrag::NamePool pool;
    CHECK(pool.add("").empty());
    CHECK(pool.allocated_bytes() == 0);  // the empty name needs no block

    // 10,000 names of 1..255 bytes: all readable afterwards, byte for byte, though blocks
    // were added while earlier views were held.
    std::vector<std::string> names;
    std::vector<std::string_view> views;
    std::size_t total = 0;
    for (std::size_t i = 0; i < 10'000; ++i) {
        names.push_back(std::string(1 + i % 255, static_cast<char>('a' + i % 26)) + std::to_string(i));
        views.push_back(pool.add(names.back()));
        total += names.back().size();
    }
    for (std::size_t i = 0; i < names.size(); ++i) REQUIRE(views[i] == names[i]);
    // A name never straddles blocks, so at most one name's worth (< 300 bytes) is lost at
    // the end of each 64 KiB block: blocks = ceil(total / (64K - 300)) at most.
    const std::size_t block = 64 * 1024;
    CHECK(pool.allocated_bytes() % block == 0);
    CHECK(pool.allocated_bytes() >= total);
    CHECK(pool.allocated_bytes() / block <= (total + block - 301) / (block - 300));

    // A text over a quarter block gets a block of its own and leaves the current one in use.
    const std::size_t before = pool.allocated_bytes();
    const std::string big(20'000, 'x');
    CHECK(pool.add(big) == big);
    CHECK(pool.allocated_bytes() == before + big.size());
    const std::string_view small = pool.add("after");
    CHECK(small == "after");
    CHECK(pool.allocated_bytes() == before + big.size());  // fitted in the current block
    CHECK(views.front() == names.front());
}

TEST_CASE("copies of a map share its file table until one of them changes it", "[model][files]") {
    VolumeMap a;
    a.files = {{5, 5, true, "."}, {40, 5, false, "a.txt"}};
    const VolumeMap b = a;  // an after-map, say
    CHECK(b.files.data() == a.files.data());
    CHECK(b.files.size() == 2);

    VolumeMap c = a;
    c.files.push_back({41, 5, false, "b.txt"});  // unshares: the others keep their table
    CHECK(c.files.data() != a.files.data());
    CHECK(c.files.size() == 3);
    CHECK(a.files.size() == 2);
    CHECK(b.files.size() == 2);
    CHECK(a.find_file(41) == nullptr);
    REQUIRE(c.find_file(41) != nullptr);
    CHECK(c.find_file(41)->name == "b.txt");

    // Reading a non-const map copies nothing; changing a table nobody shares keeps it.
    const FileEntry* const own = c.files.data();
    for (const FileEntry& f : c.files) CHECK(f.parent == 5);
    c.files.edit()[0].directory = true;
    CHECK(c.files.data() == own);

    const VolumeMap empty;
    CHECK(empty.files.empty());
    CHECK(empty.files.begin() == empty.files.end());
}
