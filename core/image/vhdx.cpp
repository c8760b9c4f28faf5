// SPDX-License-Identifier: GPL-2.0-or-later
// The VHDX LayerFile: opening (headers → log replay → region table → metadata → BAT),
// run coalescing for map(), reads of stored blocks and sectors, and the parent link.
// Structure parsing lives in vhdx_format.cpp, the log in vhdx_log.cpp, the BAT in
// vhdx_bat.cpp.
#include "core/image/vhdx.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/image/nbd_uri.hpp"
#include "core/image/host_file.hpp"
#include "core/image/vhdx_layer.hpp"

namespace guestfrag {
namespace {

namespace fs = std::filesystem;
using namespace vhdx;

/// Steps (a block, or a run of blocks in one state) one map() call takes at most, bounding
/// its cost for random access while a sequential walk of a large disk still takes few calls.
constexpr std::uint64_t kScanBlocks = 65536;
/// Memory the sector bitmap cache may hold (one block's bits are block/sector/8 bytes,
/// 512 bytes for Hyper-V's 2 MiB differencing blocks).
constexpr std::uint64_t kBitmapCacheBytes = 8 * MiB;

[[noreturn]] void corrupt(const std::string& what) { throw Error(ErrorKind::Corrupt, "vhdx: " + what); }

/// Collects reads of file-contiguous stored data into one read.
class PendingRead {
public:
    explicit PendingRead(const FileView& file) : file_(file) {}
    PendingRead(const PendingRead&) = delete;
    PendingRead& operator=(const PendingRead&) = delete;

    void add(std::uint64_t host, std::span<std::byte> out) {
        if (!dest_.empty() && host_ + dest_.size() == host && dest_.data() + dest_.size() == out.data()) {
            dest_ = std::span<std::byte>(dest_.data(), dest_.size() + out.size());
            return;
        }
        flush();
        host_ = host;
        dest_ = out;
    }
    void flush() {
        if (!dest_.empty()) file_.read(host_, dest_, "vhdx payload block");
        dest_ = {};
    }

private:
    const FileView& file_;
    std::uint64_t host_ = 0;
    std::span<std::byte> dest_;
};

std::optional<Header> read_header_slot(const HostFile& file, std::uint64_t offset) {
    if (file.size() < offset + kHeaderBytes) return std::nullopt;
    std::vector<std::byte> bytes(kHeaderBytes);
    file.read_exact(offset, bytes, "vhdx header");
    return parse_header(bytes);
}

std::string to_host_separators(std::string path) {
    std::replace(path.begin(), path.end(), '\\', '/');
    return path;
}

bool test_bit(const std::vector<std::uint64_t>& bits, std::uint64_t i) { return ((bits[i / 64] >> (i % 64)) & 1) != 0; }

}  // namespace

/// Everything read at open, built before the layer so its members can be const-like.
struct VhdxLayer::Parts {
    Header header;
    FileView file;
    Metadata meta;
    Bat bat;
    std::vector<Guid> parent_linkages;
};

VhdxLayer::VhdxLayer(HostFile file) : VhdxLayer(load(std::move(file))) {}

VhdxLayer::VhdxLayer(Parts parts)
    : header_(parts.header),
      file_(std::move(parts.file)),
      meta_(std::move(parts.meta)),
      bat_(std::move(parts.bat)),
      parent_linkages_(std::move(parts.parent_linkages)) {}

VhdxLayer::Parts VhdxLayer::load(HostFile host) {
    std::byte identifier[8]{};
    if (host.size() < sizeof identifier) corrupt("the file is too short for a file type identifier");
    host.read_exact(0, identifier, "vhdx file type identifier");
    if (std::memcmp(identifier, "vhdxfile", 8) != 0) corrupt("no \"vhdxfile\" file type identifier");

    const auto first = read_header_slot(host, kHeaderOffsets[0]);
    const auto second = read_header_slot(host, kHeaderOffsets[1]);
    if (!first && !second && host.size() < kRegionTableOffsets[0])
        corrupt("the file (" + std::to_string(host.size()) + " bytes) ends before its headers");
    const Header header = current_header(first, second);
    LogReplay replay = replay_log(host, header);
    FileView file(std::move(host), std::move(replay));

    std::optional<std::vector<Region>> table;
    for (const std::uint64_t offset : kRegionTableOffsets) {
        if (file.size() < offset + kRegionTableBytes) break;
        std::vector<std::byte> bytes(kRegionTableBytes);
        file.read(offset, bytes, "vhdx region table");
        if ((table = parse_region_table(bytes))) break;
    }
    if (!table) corrupt("neither region table (at 192 KiB and 256 KiB) has a valid signature and checksum");
    const Regions regions = check_regions(*table, file.size());

    std::vector<std::byte> metadata_table(kMetadataTableBytes);
    file.read(regions.metadata.file_offset, metadata_table, "vhdx metadata table");
    Metadata meta = parse_metadata(metadata_table, regions.metadata.length,
                                   [&](std::uint64_t offset, std::span<std::byte> out) {
                                       file.read(regions.metadata.file_offset + offset, out, "vhdx metadata item");
                                   });

    const std::uint64_t entries = meta.bat_entries();
    if (entries > regions.bat.length / 8)
        corrupt("the BAT region (" + std::to_string(regions.bat.length) + " bytes) is too small for " +
                std::to_string(entries) + " entries");
    std::vector<FileExtent> reserved{
        {0, MiB, "the file header area"},
        {regions.bat.file_offset, regions.bat.length, "the BAT region"},
        {regions.metadata.file_offset, regions.metadata.length, "the metadata region"},
    };
    if (header.log_length != 0) reserved.push_back({header.log_offset, header.log_length, "the log"});
    const auto read_bat = [&](std::uint64_t offset, std::span<std::byte> out) {
        file.read(regions.bat.file_offset + offset, out, "vhdx BAT");
    };
    Bat bat(read_bat, meta, file.size(), reserved);

    // MS-VHDX: the parent is the one whose DataWriteGuid is parent_linkage or, when
    // present, parent_linkage2 (an alternative identity; a nil one names no disk).
    std::vector<Guid> linkages;
    if (meta.has_parent) {
        for (const std::string_view key : {"parent_linkage", "parent_linkage2"}) {
            const std::string* text = meta.locator_value(key);
            if (text == nullptr) {
                if (key == "parent_linkage") corrupt("the parent locator has no parent_linkage");
                continue;
            }
            const auto linkage = Guid::parse(*text);
            if (!linkage)
                corrupt("the parent locator's " + std::string(key) + " \"" + *text + "\" is not a GUID");
            if (linkages.empty() || (!linkage->is_zero() && *linkage != linkages.front()))
                linkages.push_back(*linkage);
        }
    }
    return Parts{header, std::move(file), std::move(meta), std::move(bat), std::move(linkages)};
}

std::shared_ptr<const VhdxLayer::Bitmap> VhdxLayer::bitmap(std::uint64_t block) const {
    {
        const std::lock_guard lock(mutex_);
        for (auto it = bitmaps_.begin(); it != bitmaps_.end(); ++it)
            if (it->first == block) {
                bitmaps_.splice(bitmaps_.begin(), bitmaps_, it);
                return it->second;
            }
    }
    // Read without the lock; two threads may load the same bits, which is harmless.
    const std::uint64_t bytes = meta_.block_size / meta_.logical_sector_size / 8;
    const std::uint64_t ratio = meta_.chunk_ratio();
    std::vector<std::byte> raw(bytes);
    file_.read(bat_.bitmap_offset(block / ratio) + (block % ratio) * bytes, raw, "vhdx sector bitmap");
    auto bits = std::make_shared<Bitmap>(bytes / 8);
    for (std::size_t i = 0; i < bits->size(); ++i) (*bits)[i] = load_le(raw.data() + i * 8, 8);

    const std::lock_guard lock(mutex_);
    bitmaps_.emplace_front(block, bits);
    const std::uint64_t capacity = std::max<std::uint64_t>(4, kBitmapCacheBytes / bytes);
    if (bitmaps_.size() > capacity) bitmaps_.pop_back();
    return bits;
}

std::uint64_t VhdxLayer::bit_run_end(const Bitmap& bits, std::uint64_t sector, std::uint64_t limit) {
    const bool value = test_bit(bits, sector);
    for (std::uint64_t i = sector; i < limit;) {
        const std::uint64_t word = i / 64;
        std::uint64_t differing = value ? ~bits[word] : bits[word];
        differing &= ~std::uint64_t{0} << (i % 64);
        if (differing != 0) return std::min(limit, word * 64 + static_cast<std::uint64_t>(std::countr_zero(differing)));
        i = (word + 1) * 64;
    }
    return limit;
}

VhdxLayer::Run VhdxLayer::compute_run(std::uint64_t offset) const {
    const std::uint64_t block_size = meta_.block_size;
    const std::uint64_t sector = meta_.logical_sector_size;
    Run run;
    run.start = offset;
    bool first = true;
    std::uint64_t next_host = 0;
    // Whether a piece of `length` bytes in state `s` (stored at `host`) continues the run.
    const auto extend = [&](Allocation s, std::uint64_t host, std::uint64_t length) {
        if (first) {
            first = false;
            run.state = s;
            run.host = host;
        } else if (s != run.state || (s == Allocation::Data && host != next_host)) {
            return false;
        }
        next_host = host + length;
        return true;
    };

    std::uint64_t pos = offset;
    bool done = false;
    for (std::uint64_t budget = kScanBlocks; !done && pos < meta_.virtual_size && budget > 0; --budget) {
        const std::uint64_t block = pos / block_size;
        const std::uint64_t start = block * block_size;
        const std::uint64_t end = std::min(start + block_size, meta_.virtual_size);
        // Blocks up to the run's end share the state and, stored, follow each other in the
        // file: one step takes them all, so a huge empty (NOT_PRESENT or ZERO) disk maps in one.
        const std::uint64_t run_end = std::min(bat_.run_end(block) * block_size, meta_.virtual_size);
        switch (bat_.state(block)) {
            case BlockState::FullyPresent:
                if (!extend(Allocation::Data, bat_.offset(block) + (pos - start), run_end - pos))
                    done = true;
                else
                    pos = run_end;
                break;
            case BlockState::PartiallyPresent: {
                const auto bits = bitmap(block);
                const std::uint64_t sectors = (end - start) / sector;
                while (pos < end) {
                    const std::uint64_t index = (pos - start) / sector;
                    const bool present = test_bit(*bits, index);
                    const std::uint64_t piece_end = std::min(end, start + bit_run_end(*bits, index, sectors) * sector);
                    const bool more = present ? extend(Allocation::Data, bat_.offset(block) + (pos - start), piece_end - pos)
                                              : extend(Allocation::Unallocated, 0, piece_end - pos);
                    if (!more) {
                        done = true;
                        break;
                    }
                    pos = piece_end;
                }
                break;
            }
            case BlockState::Zero:
                if (!extend(Allocation::Zero, 0, run_end - pos))
                    done = true;
                else
                    pos = run_end;
                break;
            case BlockState::NotPresent:
            case BlockState::Undefined:
            case BlockState::Unmapped:
                if (!extend(Allocation::Unallocated, 0, run_end - pos))
                    done = true;
                else
                    pos = run_end;
                break;
        }
    }
    run.end = pos;
    return run;
}

Mapping VhdxLayer::map(std::uint64_t offset) const {
    if (offset >= meta_.virtual_size)
        throw Error(ErrorKind::Internal, "vhdx: map at offset " + std::to_string(offset) + " past the end of the disk");
    const auto answer = [offset](const Run& run) {
        Mapping m{run.state, run.end - offset, std::nullopt};
        if (run.state == Allocation::Data) m.file_offset = run.host + (offset - run.start);
        return m;
    };
    {
        const std::lock_guard lock(mutex_);
        if (last_run_ && last_run_->start <= offset && offset < last_run_->end) return answer(*last_run_);
    }
    const Run run = compute_run(offset);
    {
        const std::lock_guard lock(mutex_);
        last_run_ = run;
    }
    return answer(run);
}

void VhdxLayer::read(std::uint64_t offset, std::span<std::byte> out) const {
    if (offset > meta_.virtual_size || out.size() > meta_.virtual_size - offset)
        throw Error(ErrorKind::Corrupt, "vhdx: read past the end of the disk (offset " + std::to_string(offset) + ", " +
                                            std::to_string(out.size()) + " bytes)");
    const std::uint64_t block_size = meta_.block_size;
    const std::uint64_t sector = meta_.logical_sector_size;
    PendingRead pending(file_);
    while (!out.empty()) {
        const std::uint64_t block = offset / block_size;
        const std::uint64_t start = block * block_size;
        const std::uint64_t end = std::min(start + block_size, meta_.virtual_size);
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), end - offset));
        const auto part = out.first(n);
        switch (bat_.state(block)) {
            case BlockState::FullyPresent: pending.add(bat_.offset(block) + (offset - start), part); break;
            case BlockState::PartiallyPresent: {
                // Callers read within one map() run, but sectors the bitmap leaves to the
                // parent read as zero here rather than as stale block contents.
                const auto bits = bitmap(block);
                const std::uint64_t sectors = (end - start) / sector;
                for (std::uint64_t pos = offset; pos < offset + n;) {
                    const std::uint64_t index = (pos - start) / sector;
                    const std::uint64_t piece_end =
                        std::min(offset + n, start + bit_run_end(*bits, index, sectors) * sector);
                    const auto piece = part.subspan(pos - offset, piece_end - pos);
                    if (test_bit(*bits, index)) pending.add(bat_.offset(block) + (pos - start), piece);
                    else std::memset(piece.data(), 0, piece.size());
                    pos = piece_end;
                }
                break;
            }
            case BlockState::Zero:
            case BlockState::NotPresent:
            case BlockState::Undefined:
            case BlockState::Unmapped: std::memset(part.data(), 0, n); break;
        }
        offset += n;
        out = out.subspan(n);
    }
    pending.flush();
}

std::optional<ParentLink> VhdxLayer::parent() const {
    if (!meta_.has_parent) return std::nullopt;
    const std::string* relative = meta_.locator_value("relative_path");
    const std::string* absolute = meta_.locator_value("absolute_win32_path");
    const auto in_child_dir = [&](const std::string& name) {
        return normal_sibling_path(file_.path(), to_host_separators(name));
    };

    std::vector<std::string> candidates;
    const auto add = [&](std::string candidate) {
        if (!candidate.empty() && std::find(candidates.begin(), candidates.end(), candidate) == candidates.end())
            candidates.push_back(std::move(candidate));
    };
    // Hyper-V's order: the relative path first. One with a drive letter or a root is
    // relative to something other than the child's directory and names nothing here.
    if (relative != nullptr && !relative->empty() && relative->find(':') == std::string::npos &&
        relative->front() != '\\' && relative->front() != '/')
        add(in_child_dir(*relative));
    // A Windows absolute path ("C:\...") names nothing on this host; a POSIX one may.
    if (absolute != nullptr && !absolute->empty() && absolute->front() == '/') add(*absolute);
    // Disks moved together keep their names: try them beside the child.
    for (const std::string* recorded : {absolute, relative})
        if (recorded != nullptr)
            if (const std::string name = recorded_file_name(*recorded); !name.empty() && name != "." && name != "..")
                add(in_child_dir(name));

    ParentLink link;
    link.recorded = absolute != nullptr && !absolute->empty() ? *absolute
                    : relative != nullptr && !relative->empty()
                        ? *relative
                        : "(no parent path recorded; parent_linkage " + parent_linkages_.front().text() + ")";
    link.candidates = std::move(candidates);
    // The locator type is the VHDX one (others are refused at open): the parent is a VHDX.
    link.format = ImageFormat::Vhdx;
    link.recorded_format = format_name(ImageFormat::Vhdx);
    for (const Guid& linkage : parent_linkages_) link.expected_identities.push_back(linkage.text());
    return link;
}

std::unique_ptr<LayerFile> open_vhdx(HostFile file) { return std::make_unique<VhdxLayer>(std::move(file)); }

std::unique_ptr<LayerFile> open_vhdx(const std::string& path) { return open_vhdx(HostFile(path)); }

LayerProvisioning VhdxLayer::provisioning(bool) const {
    if (meta_.has_parent)
        return {Provisioning::Thin, meta_.block_size, false,
                "differencing vhdx: a payload block is allocated on its first write"};
    if (!meta_.leave_blocks_allocated)
        return {Provisioning::Thin, meta_.block_size, false,
                "dynamic vhdx: a payload block is allocated on its first write"};
    return {Provisioning::Eager, meta_.block_size, true,
            "fixed vhdx (LeaveBlockAllocated): preallocated, and the file does not record lazy against eager: "
            "eager assumed, as Hyper-V zero-fills a fixed disk when it creates it"};
}

}  // namespace guestfrag
