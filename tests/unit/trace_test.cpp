// SPDX-License-Identifier: GPL-2.0-or-later
// Trace sources of the estimator: Windows Prefetch files (against libscca's own sccainfo),
// Layout.ini and text lists (hand-made fixtures), and NTFS files read by path (against
// The Sleuth Kit's fls/icat).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <unistd.h>

#include "analyzers/analysis.hpp"
#include "core/estimate/layout_ini.hpp"
#include "core/estimate/prefetch.hpp"
#include "core/estimate/trace_source.hpp"
#include "core/image/open_image.hpp"
#include "core/ntfs/file_reader.hpp"
#include "core/ntfs/ntfs3g.hpp"
#include "support/fixtures.hpp"

using namespace guestfrag;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kSamples = {"CMD.EXE-087B4001.pf", "PING.EXE-B29F6629.pf",
                                           "WUAUCLT.EXE-830BCC14.pf", "NOTEPAD.EXE-D8414F97.pf"};

fs::path sample(const std::string& name) { return test::testdata("prefetch/" + name); }

// Host-file trace sources never touch the image: an empty one stands in for it.
class NoImage final : public DiskImage {
public:
    [[nodiscard]] std::uint64_t size() const override { return 0; }
    void read(std::uint64_t, std::span<std::byte>) const override {
        throw Error(ErrorKind::Internal, "host-file traces must not read the image");
    }
    [[nodiscard]] ImageFormat format() const override { return ImageFormat::Raw; }
    [[nodiscard]] const std::string& path() const override { return path_; }
    [[nodiscard]] const std::vector<Layer>& layers() const override { return layers_; }

private:
    std::string path_ = "none";
    std::vector<Layer> layers_;
};

// What libscca's own command-line tool prints about a Prefetch file.
struct SccaInfo {
    std::uint32_t version = 0;
    std::string executable;
    std::vector<std::string> filenames;                          // as printed: NT device paths
    std::vector<std::string> run_times;                          // as printed, "Not set (0)" included
    std::vector<std::pair<std::string, std::uint32_t>> volumes;  // device path, serial
};

SccaInfo sccainfo(const fs::path& pf) {
    const auto r = test::run({"sccainfo", pf.string()});
    REQUIRE(r.status == 0);
    static const std::regex filename(R"(^\s*Filename: \d+\s*: (.*)$)");
    static const std::regex version(R"(^\s*Format version\s*: (\d+)$)");
    static const std::regex executable(R"(^\s*Executable filename\s*: (.*)$)");
    static const std::regex run_time(R"(^\s*Last run time:[ \t0-9]*: (.*)$)");
    static const std::regex device(R"(^\s*Device path\s*: (.*)$)");
    static const std::regex serial(R"(^\s*Serial number\s*: 0x([0-9a-f]+)$)");
    SccaInfo info;
    std::istringstream in(r.out);
    std::string line;
    std::string pending_device;
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_match(line, m, filename))
            info.filenames.push_back(m[1]);
        else if (std::regex_match(line, m, version))
            info.version = static_cast<std::uint32_t>(std::stoul(m[1]));
        else if (std::regex_match(line, m, executable))
            info.executable = m[1];
        else if (std::regex_match(line, m, run_time))
            info.run_times.push_back(m[1]);
        else if (std::regex_match(line, m, device))
            pending_device = m[1];
        else if (std::regex_match(line, m, serial))
            info.volumes.emplace_back(pending_device,
                                      static_cast<std::uint32_t>(std::stoul(m[1], nullptr, 16)));
    }
    return info;
}

// The oracle's own prefix stripping: "\\DEVICE\\<one component>" or "\\VOLUME{...}".
std::vector<std::string> strip_devices(const std::vector<std::string>& names) {
    static const std::regex prefix(R"(^\\(DEVICE\\[^\\]+|VOLUME\{[^}]*\}))", std::regex::icase);
    std::vector<std::string> out;
    for (const auto& n : names) out.push_back(std::regex_replace(n, prefix, ""));
    return out;
}

// A FILETIME as sccainfo prints it: "Mar 10, 2013 10:11:49.281250000 UTC".
std::string sccainfo_time(std::uint64_t filetime) {
    if (filetime == 0) return "Not set (0)";
    const auto unix_seconds = static_cast<std::time_t>(filetime / 10'000'000 - 11'644'473'600ull);
    std::tm tm{};
    gmtime_r(&unix_seconds, &tm);
    char date[64];
    std::strftime(date, sizeof date, "%b %d, %Y %H:%M:%S", &tm);
    char fraction[32];
    std::snprintf(fraction, sizeof fraction, ".%07llu00 UTC",
                  static_cast<unsigned long long>(filetime % 10'000'000));
    return std::string(date) + fraction;
}

void write_bytes(const fs::path& path, std::span<const std::byte> content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
    REQUIRE(out.good());
}

void write_text(const fs::path& path, const std::string& text) {
    write_bytes(path, std::as_bytes(std::span(text.data(), text.size())));
}

// UTF-16 bytes of `text` (a char16_t literal: the compiler did the encoding), BOM first.
std::vector<std::byte> utf16(std::u16string_view text, bool big_endian) {
    std::vector<std::byte> out;
    const auto put = [&](char16_t unit) {
        const auto hi = std::byte(static_cast<unsigned>(unit) >> 8),
                   lo = std::byte(static_cast<unsigned>(unit) & 0xFF);
        if (big_endian)
            out.insert(out.end(), {hi, lo});
        else
            out.insert(out.end(), {lo, hi});
    };
    put(u'\uFEFF');
    for (char16_t unit : text) put(unit);
    return out;
}

std::string from_u8(std::u8string_view text) { return std::string(text.begin(), text.end()); }

fs::path scratch(const std::string& name) { return test::scratch_dir() / name; }

ErrorKind kind_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        INFO(e.what());
        return e.kind();
    }
    FAIL("no error thrown");
    return ErrorKind::Internal;
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    FAIL("no error thrown");
    return {};
}

}  // namespace

TEST_CASE("to_volume_path strips device, volume, namespace and drive prefixes", "[trace]") {
    CHECK(to_volume_path("\\DEVICE\\HARDDISKVOLUME1\\WINDOWS\\SYSTEM32\\NTDLL.DLL") ==
          "\\WINDOWS\\SYSTEM32\\NTDLL.DLL");
    CHECK(to_volume_path("\\Device\\HarddiskVolumeShadowCopy3\\x\\y.txt") == "\\x\\y.txt");
    CHECK(to_volume_path("\\VOLUME{01d3096ba3a46863-2ca3d1ae}\\WINDOWS\\NOTEPAD.EXE") ==
          "\\WINDOWS\\NOTEPAD.EXE");
    CHECK(to_volume_path("C:\\WINDOWS\\System32\\ntoskrnl.exe") == "\\WINDOWS\\System32\\ntoskrnl.exe");
    CHECK(to_volume_path("c:/Program Files/app/a.dll") == "\\Program Files\\app\\a.dll");
    CHECK(to_volume_path("\\\\?\\C:\\pagefile.sys") == "\\pagefile.sys");
    CHECK(to_volume_path("\\??\\D:\\data\\x.bin") == "\\data\\x.bin");
    CHECK(to_volume_path("\\\\?\\GLOBALROOT\\Device\\HarddiskVolume2\\boot\\bcd") == "\\boot\\bcd");
    CHECK(to_volume_path("\\\\?\\Volume{4c1b02c1-d990-11dc-99ae-806e6f6e6963}\\a") == "\\a");
    CHECK(to_volume_path("Windows\\notepad.exe") == "\\Windows\\notepad.exe");
    CHECK(to_volume_path("  \\Windows\\Fonts\\  \r") == "\\Windows\\Fonts");
    CHECK(to_volume_path("\\DEVICE\\HARDDISKVOLUME1") == "\\");
    CHECK(to_volume_path("C:\\") == "\\");
    CHECK(to_volume_path("") == "");
    CHECK(to_volume_path("\\$MFT") == "\\$MFT");
}

TEST_CASE("prefetch samples: names equal sccainfo's, device prefixes stripped", "[trace][prefetch]") {
    test::require_tools({"sccainfo"});
    const NoImage image;
    const VolumeMap volume;  // serial 0: matches none of the samples' volumes
    std::size_t compared = 0;
    for (const std::string& name : kSamples) {
        const fs::path pf = sample(name);
        INFO(name);
        const SccaInfo oracle = sccainfo(pf);
        REQUIRE(oracle.filenames.size() >= 20);

        const PrefetchFile ours = read_prefetch(pf);
        CHECK(ours.format_version == oracle.version);
        CHECK(ours.executable == oracle.executable);
        CHECK(ours.filenames == oracle.filenames);
        // Versions ≤ 23 keep one run time, later ones eight with the newest first.
        REQUIRE_FALSE(oracle.run_times.empty());
        CHECK(sccainfo_time(ours.last_run) == oracle.run_times.front());
        REQUIRE(ours.volumes.size() == oracle.volumes.size());
        for (std::size_t i = 0; i < ours.volumes.size(); ++i) {
            CHECK(ours.volumes[i].device_path == oracle.volumes[i].first);
            CHECK(ours.volumes[i].serial == oracle.volumes[i].second);
        }

        const auto paths = load_trace(pf.string(), image, volume);
        CHECK(paths == strip_devices(oracle.filenames));
        CHECK(paths.front() == "\\WINDOWS\\SYSTEM32\\NTDLL.DLL");
        compared += paths.size();
    }
    // CMD 33 + PING 27 + WUAUCLT 103 + NOTEPAD 56 names when all four samples are there.
    CHECK(compared >= 20);
}

TEST_CASE("prefetch content read from memory equals the file read by path", "[trace][prefetch]") {
    // A private TMPDIR (this process only) shows that the temporary copies are removed.
    const fs::path tmp = scratch("trace-tmp." + std::to_string(::getpid()));
    fs::create_directories(tmp);
    const char* old_tmpdir = std::getenv("TMPDIR");
    const std::string saved = old_tmpdir != nullptr ? old_tmpdir : "";
    ::setenv("TMPDIR", tmp.c_str(), 1);
    std::size_t compared = 0;
    for (const std::string& name : kSamples) {
        const fs::path pf = sample(name);
        INFO(name);
        const auto content = test::file_bytes(pf);
        CHECK(looks_like_prefetch(content));
        const PrefetchFile from_path = read_prefetch(pf);
        const PrefetchFile from_memory = read_prefetch(content, name);
        CHECK(from_memory.filenames == from_path.filenames);
        CHECK(from_memory.last_run == from_path.last_run);
        CHECK(from_memory.format_version == from_path.format_version);
        compared += from_memory.filenames.size();
    }
    CHECK(fs::is_empty(tmp));
    if (old_tmpdir != nullptr)
        ::setenv("TMPDIR", saved.c_str(), 1);
    else
        ::unsetenv("TMPDIR");
    fs::remove_all(tmp);
    CHECK(compared >= 20);
    CHECK_FALSE(looks_like_prefetch(std::as_bytes(std::span("\\Windows\\x.exe\n", 14))));
}

TEST_CASE("prefetch paths keep only the files of the analysed volume", "[trace][prefetch]") {
    PrefetchFile pf;
    pf.volumes = {{"\\DEVICE\\HARDDISKVOLUME2", 0x11112222}, {"\\VOLUME{01d3-5678abcd}", 0x5678abcd}};
    pf.filenames = {"\\DEVICE\\HARDDISKVOLUME2\\WINDOWS\\SYSTEM32\\NTDLL.DLL",
                    "\\VOLUME{01d3-5678abcd}\\DATA\\INPUT.CSV",
                    "\\DEVICE\\HARDDISKVOLUME2\\PROGRAM FILES\\APP\\APP.EXE",
                    "\\DEVICE\\HARDDISKVOLUME20\\OTHER.DLL", "\\DEVICE\\MUP\\SERVER\\SHARE\\REMOTE.DLL"};
    // The volume serial is 64-bit; the prefetcher keeps its low half.
    CHECK(prefetch_volume_paths(pf, 0xAAAABBBB11112222ull) ==
          std::vector<std::string>{"\\WINDOWS\\SYSTEM32\\NTDLL.DLL", "\\PROGRAM FILES\\APP\\APP.EXE"});
    CHECK(prefetch_volume_paths(pf, 0x000000005678ABCDull) == std::vector<std::string>{"\\DATA\\INPUT.CSV"});
    // No volume of the file is ours: a trace from elsewhere, every name kept.
    CHECK(prefetch_volume_paths(pf, 0x99).size() == 5);

    // An executable stored with a path that the list lacks goes first.
    pf.executable = "\\DEVICE\\HARDDISKVOLUME2\\TOOLS\\RUN.EXE";
    CHECK(prefetch_volume_paths(pf, 0x11112222).front() == "\\TOOLS\\RUN.EXE");
    CHECK(prefetch_volume_paths(pf, 0x11112222).size() == 3);
    pf.executable = "APP.EXE";  // the usual case: a name only
    CHECK(prefetch_volume_paths(pf, 0x11112222).size() == 2);

    // A real sample whose volume serial is ours (0x24cb074b in CMD's header) keeps all.
    const fs::path cmd = sample("CMD.EXE-087B4001.pf");
    const PrefetchFile real = read_prefetch(cmd);
    CHECK(prefetch_volume_paths(real, 0x0123456724CB074Bull) == prefetch_volume_paths(real, 0));
    CHECK(prefetch_volume_paths(real, 0x0123456724CB074Bull).size() == real.filenames.size());
}

TEST_CASE("corrupt prefetch files are refused as corrupt", "[trace][prefetch]") {
    const NoImage image;
    const VolumeMap volume;
    struct Damage {
        std::string sample;
        std::string copy;
        std::size_t truncate_to;  // 0: keep the size
        std::size_t offset;       // where 0xFF bytes are written
        std::size_t count;
    };
    // 0x64: the filename strings offset of versions 17/23 (out of bounds as 0xFFFFFFFF);
    // NOTEPAD byte 100 lies in its compressed stream.
    const std::vector<Damage> damages = {
        {"CMD.EXE-087B4001.pf", "trace-truncated.pf", 200, 0, 0},
        {"PING.EXE-B29F6629.pf", "trace-flipped.pf", 0, 0x64, 4},
        {"NOTEPAD.EXE-D8414F97.pf", "trace-flipped-mam.pf", 0, 100, 8},
        {"NOTEPAD.EXE-D8414F97.pf", "trace-truncated-mam.pf", 3000, 0, 0},
    };
    for (const Damage& d : damages) {
        const fs::path source = sample(d.sample);
        INFO(d.copy);
        auto content = test::file_bytes(source);
        if (d.truncate_to != 0) content.resize(d.truncate_to);
        for (std::size_t i = 0; i < d.count; ++i) content.at(d.offset + i) = std::byte{0xFF};
        const fs::path copy = scratch(d.copy);
        write_bytes(copy, content);
        // sccainfo agrees that the copy is unreadable.
        test::require_tools({"sccainfo"});
        CHECK(test::run({"sccainfo", copy.string()}).status != 0);

        CHECK(kind_of([&] { (void)load_trace(copy.string(), image, volume); }) == ErrorKind::Corrupt);
        const std::string message = message_of([&] { (void)load_trace(copy.string(), image, volume); });
        CHECK(message.rfind("prefetch file " + copy.string() + ": ", 0) == 0);
        CHECK(message.find('\n') == std::string::npos);
        CHECK(message.size() > ("prefetch file " + copy.string() + ": ").size() + 10);

        // From memory too, and the message never names the temporary copy.
        const std::string in_memory =
            message_of([&] { (void)read_prefetch(content, "\\Windows\\Prefetch\\X.pf"); });
        CHECK(in_memory.rfind("prefetch file \\Windows\\Prefetch\\X.pf: ", 0) == 0);
        CHECK(in_memory.find("guestfrag-prefetch-") == std::string::npos);
        fs::remove(copy);
    }
}

TEST_CASE("Layout.ini in UTF-16 with a byte-order mark", "[trace][layout]") {
    const NoImage image;
    const VolumeMap volume;
    // As Windows writes it, plus a comment, a blank line and names outside ASCII
    // (U+00DC, and U+1F600 which UTF-16 stores as a surrogate pair).
    const std::u16string text =
        u"[OptimalLayoutFile]\r\nVersion=1\r\nC:\\WINDOWS\\System32\\ntoskrnl.exe\r\n\r\n"
        u"C:\\WINDOWS\\Fonts\\vgaoem.fon\r\n; not a path\r\nC:\\Program Files\\\u00DCber\\\U0001F600.txt\r\n"
        u"C:\\WINDOWS\\system32\\config\\SYSTEM";
    const std::vector<std::string> expected = {
        "\\WINDOWS\\System32\\ntoskrnl.exe", "\\WINDOWS\\Fonts\\vgaoem.fon",
        from_u8(u8"\\Program Files\\\u00DCber\\\U0001F600.txt"), "\\WINDOWS\\system32\\config\\SYSTEM"};
    const fs::path le = scratch("trace-layout-le.ini");
    write_bytes(le, utf16(text, false));
    CHECK(load_trace(le.string(), image, volume) == expected);
    const fs::path be = scratch("trace-layout-be.ini");
    write_bytes(be, utf16(text, true));
    CHECK(load_trace(be.string(), image, volume) == expected);

    // A lone high surrogate is not UTF-16 text.
    auto broken = utf16(u"C:\\a\r\nC:\\b", false);
    broken[4] = std::byte{0x00};
    broken[5] = std::byte{0xD8};
    const fs::path bad = scratch("trace-layout-bad.ini");
    write_bytes(bad, broken);
    CHECK(kind_of([&] { (void)load_trace(bad.string(), image, volume); }) == ErrorKind::Unsupported);
}

TEST_CASE("text lists of paths", "[trace][layout]") {
    const NoImage image;
    const VolumeMap volume;
    const fs::path list = scratch("trace-list.txt");
    write_text(list,
               from_u8(u8"\xEF\xBB\xBF/Windows/notepad.exe\nC:\\Users\\a b\\x.txt\r\n# comment\n\n"
                       u8"\\dir\\k=v.txt\n  D:/data/file.bin  \nsetting=1\n\\Users\\\u00E9t\u00E9\\f.doc\n"));
    CHECK(load_trace(list.string(), image, volume) ==
          std::vector<std::string>{"\\Windows\\notepad.exe", "\\Users\\a b\\x.txt", "\\dir\\k=v.txt",
                                   "\\data\\file.bin", from_u8(u8"\\Users\\\u00E9t\u00E9\\f.doc")});

    // Latin-1 bytes are not UTF-8, NUL bytes are not text.
    const fs::path latin1 = scratch("trace-latin1.txt");
    write_text(latin1, "\\Users\\\xE9t\xE9\\f.doc\n");
    CHECK(kind_of([&] { (void)load_trace(latin1.string(), image, volume); }) == ErrorKind::Unsupported);
    const fs::path binary = scratch("trace-binary.bin");
    write_text(binary, std::string("\x7F"
                                   "ELF\x02\x01\x01\x00\x00\x00",
                                   10));
    CHECK(kind_of([&] { (void)load_trace(binary.string(), image, volume); }) == ErrorKind::Unsupported);
}

TEST_CASE("trace sources that name nothing or do not exist", "[trace]") {
    const NoImage image;
    const VolumeMap volume;
    const fs::path empty = scratch("trace-empty.txt");
    write_text(empty, "; nothing\n\n[OptimalLayoutFile]\nVersion=1\n");
    CHECK(kind_of([&] { (void)load_trace(empty.string(), image, volume); }) == ErrorKind::Unsupported);
    CHECK(message_of([&] { (void)load_trace(empty.string(), image, volume); }) ==
          "trace " + empty.string() + " names no files");

    const std::string missing = scratch("trace-missing.pf").string();
    CHECK(kind_of([&] { (void)load_trace(missing, image, volume); }) == ErrorKind::NotFound);
    CHECK(kind_of([&] { (void)read_prefetch(fs::path(missing)); }) == ErrorKind::NotFound);
    CHECK(kind_of([&] { (void)load_trace("@boot", image, volume); }) == ErrorKind::Unsupported);
}

namespace {

MkImageOptions reader_image() {
    // The same options and key as ntfs_reader_test's MBR disk: one cached image for both.
    MkImageOptions o;
    o.disk_size = 64ull << 20;
    o.table = "msdos";
    o.files = 600;
    o.seed = 7;
    return o;
}

// fls's view of one directory: allocated names → record, stream suffixes (":name")
// dropped, TSK's virtual entries ($OrphanFiles) and deleted names left out.
std::map<std::string, std::uint64_t> fls_directory(const fs::path& image, std::uint64_t sector,
                                                   std::uint64_t directory_record) {
    const auto r = test::run({"fls", "-f", "ntfs", "-o", std::to_string(sector), image.string(),
                              std::to_string(directory_record)});
    REQUIRE(r.status == 0);
    static const std::regex entry(R"(^([a-z-])/([a-z-]) (\d+)-\d+-\d+:\t(.*)$)");
    std::map<std::string, std::uint64_t> names;
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line)) {
        std::smatch m;
        if (!std::regex_match(line, m, entry)) continue;  // deleted ("* ") and virtual ("V/V") entries
        // "$Secure:$SDS" is all fls shows of $Secure (no unnamed $DATA): keep the file name.
        const std::string name = m[4];
        names[name.substr(0, name.find(':'))] = std::stoull(m[3]);
    }
    return names;
}

std::vector<std::byte> icat(const fs::path& image, std::uint64_t sector, std::uint64_t record) {
    const auto r = test::run(
        {"icat", "-f", "ntfs", "-o", std::to_string(sector), image.string(), std::to_string(record)});
    REQUIRE(r.status == 0);
    std::vector<std::byte> out(r.out.size());
    std::memcpy(out.data(), r.out.data(), r.out.size());
    return out;
}

}  // namespace

TEST_CASE("file reader lists and reads files as The Sleuth Kit does", "[trace][ntfs][tsk]") {
    test::require_tools({"fls", "icat"});
    const fs::path image_path = test::generated_image("small-msdos", reader_image());
    const auto disk = open_image(image_path.string());
    const ImageAnalysis analysis = analyze_image(*disk);
    REQUIRE(analysis.volumes.size() == 1);
    const VolumeMap& map = analysis.volumes[0].map;
    const std::uint64_t sector = map.partition_offset / 512;
    const ntfs::VolumeFiles files(*disk, map.partition_offset, disk->size() - map.partition_offset);

    // Every directory's listing equals fls's.
    std::size_t directories = 0;
    for (const FileEntry& f : map.files) {
        if (!f.directory) continue;
        const std::string path = f.mft_record == 5 ? "\\" : map.path_of(f.mft_record);
        INFO(path);
        std::map<std::string, std::uint64_t> ours;
        for (const ntfs::DirectoryEntry& e : files.list_directory(path)) {
            ours[e.name] = e.mft_record;
            const FileEntry* named = map.find_file(e.mft_record);
            REQUIRE(named != nullptr);
            CHECK(e.directory == named->directory);
        }
        CHECK(ours == fls_directory(image_path, sector, f.mft_record));
        ++directories;
    }
    CHECK(directories >= 3);

    // Fragmented, sparse and resident files read like icat's.
    std::vector<std::uint64_t> records;
    std::set<std::uint64_t> with_data;
    for (const Stream& s : map.streams) {
        if (s.type != static_cast<std::uint32_t>(AttrType::Data) || !s.name.empty()) continue;
        with_data.insert(s.mft_record);
        const bool sparse = std::any_of(s.extents.begin(), s.extents.end(),
                                        [](const Extent& e) { return e.lcn == Extent::kSparse; });
        if (s.mft_record >= 64 && (s.fragments() > 1 || sparse) && records.size() < 6)
            records.push_back(s.mft_record);
    }
    REQUIRE(records.size() >= 3);
    std::size_t resident = 0;
    for (const FileEntry& f : map.files)
        if (f.mft_record >= 64 && !f.directory && with_data.count(f.mft_record) == 0 && resident < 3) {
            records.push_back(f.mft_record);
            ++resident;
        }
    CHECK(resident >= 1);
    std::uint64_t bytes = 0;
    for (const std::uint64_t record : records) {
        const std::string path = map.path_of(record);
        INFO(path << " (record " << record << ")");
        const auto content = files.read_file(path);
        CHECK(content == icat(image_path, sector, record));
        bytes += content.size();
    }
    CHECK(bytes > 100'000);

    // Windows' lookup ignores case; so does ours.
    const std::string some = map.path_of(records.front());
    std::string upper = some;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    CHECK(files.read_file(upper) == files.read_file(some));

    // Errors: missing, a directory, a file as directory, over the cap.
    CHECK(kind_of([&] { (void)files.read_file("\\no\\such\\file.txt"); }) == ErrorKind::NotFound);
    CHECK(kind_of([&] { (void)files.list_directory("\\no-such-directory"); }) == ErrorKind::NotFound);
    CHECK(kind_of([&] { (void)files.read_file("\\"); }) == ErrorKind::Unsupported);
    CHECK(kind_of([&] { (void)files.list_directory(some); }) == ErrorKind::Unsupported);
    const auto size = files.read_file(some).size();
    REQUIRE(size > 1);
    CHECK(kind_of([&] { (void)files.read_file(some, size - 1); }) == ErrorKind::Unsupported);
    CHECK(files.read_file(some, size).size() == size);
}

TEST_CASE("@prefetch and @layout on a volume without Windows say so", "[trace][ntfs]") {
    const fs::path image_path = test::generated_image("small-msdos", reader_image());
    const auto disk = open_image(image_path.string());
    const ImageAnalysis analysis = analyze_image(*disk);
    const VolumeMap& map = analysis.volumes.at(0).map;
    CHECK(kind_of([&] { (void)load_trace("@prefetch", *disk, map); }) == ErrorKind::NotFound);
    CHECK(message_of([&] { (void)load_trace("@prefetch", *disk, map); }).find("\\Windows\\Prefetch") !=
          std::string::npos);
    CHECK(kind_of([&] { (void)load_trace("@layout", *disk, map); }) == ErrorKind::NotFound);
    CHECK(message_of([&] { (void)load_trace("@layout", *disk, map); }).find("Layout.ini") !=
          std::string::npos);
}

namespace {

// Test-only writer: puts files into a bare NTFS volume image with libntfs-3g read-write.
class GuestWriter {
public:
    explicit GuestWriter(const fs::path& bare_volume)
        : volume_(ntfs_mount(bare_volume.c_str(), NTFS_MNT_NONE)) {
        REQUIRE(volume_ != nullptr);
    }
    ~GuestWriter() { ntfs_umount(volume_, FALSE); }
    GuestWriter(const GuestWriter&) = delete;
    GuestWriter& operator=(const GuestWriter&) = delete;

    // Creates directory `name` in the directory with record `parent`; returns its record.
    std::uint64_t mkdir(std::uint64_t parent, const std::string& name) {
        return create(parent, name, S_IFDIR, {});
    }
    void write(std::uint64_t parent, const std::string& name, std::span<const std::byte> content) {
        (void)create(parent, name, S_IFREG, content);
    }

private:
    std::uint64_t create(std::uint64_t parent, const std::string& name, mode_t type,
                         std::span<const std::byte> content) {
        ntfs_inode* dir = ntfs_inode_open(volume_, parent);
        REQUIRE(dir != nullptr);
        ntfschar* uname = nullptr;
        const int len = ntfs_mbstoucs(name.c_str(), &uname);
        REQUIRE(len > 0);
        ntfs_inode* inode = ntfs_create(dir, const_cpu_to_le32(0), uname, static_cast<u8>(len), type);
        std::free(uname);
        // The parent goes first: closing the child updates its entry in the parent's index
        // through a second open of the parent, whose changes a later close of ours would undo.
        ntfs_inode_close(dir);
        REQUIRE(inode != nullptr);
        const std::uint64_t record = inode->mft_no;
        if (!content.empty()) {
            ntfs_attr* data = ntfs_attr_open(inode, AT_DATA, AT_UNNAMED, 0);
            REQUIRE(data != nullptr);
            const auto n = static_cast<s64>(content.size());
            CHECK(ntfs_attr_pwrite(data, 0, n, content.data()) == n);
            ntfs_attr_close(data);
        }
        ntfs_inode_close(inode);
        return record;
    }

    ntfs_volume* volume_;
};

}  // namespace

TEST_CASE("@prefetch and @layout read the guest's Prefetch directory", "[trace][ntfs][prefetch]") {
    test::require_tools({"sccainfo"});

    MkImageOptions o;
    o.disk_size = 32ull << 20;
    o.table = "none";
    o.files = 100;
    o.seed = 11;
    const fs::path base = test::generated_image("trace-bare", o);
    const fs::path image_path = scratch("trace-prefetch.img");
    fs::copy_file(base, image_path, fs::copy_options::overwrite_existing);

    // An XP-style tree ("WINDOWS"): lookups of "\\Windows\\Prefetch" must ignore case.
    const std::u16string layout =
        u"[OptimalLayoutFile]\r\nVersion=1\r\nC:\\WINDOWS\\system32\\ntoskrnl.exe\r\n"
        u"C:\\WINDOWS\\system32\\hal.dll\r\n";
    {
        GuestWriter writer(image_path);
        const std::uint64_t windows = writer.mkdir(5, "WINDOWS");
        const std::uint64_t prefetch = writer.mkdir(windows, "Prefetch");
        for (const std::string& name : kSamples) writer.write(prefetch, name, test::file_bytes(sample(name)));
        writer.write(prefetch, "Layout.ini", utf16(layout, false));
        const std::string not_pf = "not a prefetch file";
        writer.write(prefetch, "ReadyBoot.etl", std::as_bytes(std::span(not_pf.data(), not_pf.size())));
        (void)writer.mkdir(prefetch, "ReadyBoot");
    }

    const auto disk = open_image(image_path.string());
    const ImageAnalysis analysis = analyze_image(*disk);
    const VolumeMap& map = analysis.volumes.at(0).map;

    CHECK(load_trace("@layout", *disk, map) ==
          std::vector<std::string>{"\\WINDOWS\\system32\\ntoskrnl.exe", "\\WINDOWS\\system32\\hal.dll"});

    // Oldest last run first, by sccainfo's dates: WUAUCLT (Mar 15, 2012), PING (Apr 06,
    // 2012), CMD (Mar 10, 2013), NOTEPAD (Jun 05, 2019).
    std::vector<std::string> expected;
    for (const char* name : {"WUAUCLT.EXE-830BCC14.pf", "PING.EXE-B29F6629.pf", "CMD.EXE-087B4001.pf",
                             "NOTEPAD.EXE-D8414F97.pf"}) {
        const auto names = strip_devices(sccainfo(sample(name)).filenames);
        expected.insert(expected.end(), names.begin(), names.end());
    }
    const auto paths = load_trace("@prefetch", *disk, map);
    CHECK(paths.size() == 103 + 27 + 33 + 56);
    CHECK(paths == expected);
}
