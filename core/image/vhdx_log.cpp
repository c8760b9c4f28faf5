// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vhdx_log.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "core/error.hpp"

namespace guestfrag::vhdx {
namespace {

constexpr std::uint64_t kLogSector = 4 * KiB;
constexpr std::uint64_t kEntryHeaderBytes = 64;
constexpr std::uint64_t kDescriptorBytes = 32;

bool signature_is(const std::byte* p, const char (&sig)[5]) { return std::memcmp(p, sig, 4) == 0; }

/// One validated log entry.
struct Entry {
    std::uint64_t offset = 0;  ///< within the log
    std::uint64_t length = 0;
    std::uint64_t tail = 0;
    std::uint64_t sequence = 0;
    std::uint64_t flushed_file_offset = 0;
    std::uint64_t last_file_offset = 0;
};

/// The log read into memory, with reads that wrap around its end (entries may).
class LogBuffer {
public:
    explicit LogBuffer(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
    [[nodiscard]] std::uint64_t size() const { return bytes_.size(); }
    /// `length` bytes from `offset`, wrapping; a view when no wrap is needed.
    [[nodiscard]] std::span<const std::byte> at(std::uint64_t offset, std::uint64_t length,
                                                std::vector<std::byte>& scratch) const {
        if (offset + length <= bytes_.size()) return std::span(bytes_).subspan(offset, length);
        scratch.resize(length);
        const std::uint64_t first = bytes_.size() - offset;
        std::memcpy(scratch.data(), bytes_.data() + offset, first);
        std::memcpy(scratch.data() + first, bytes_.data(), length - first);
        return scratch;
    }

private:
    std::vector<std::byte> bytes_;
};

/// Checks the entry starting at `offset`: header fields, checksum, descriptors and data
/// sector sequence numbers. nullopt when any is wrong (the entry is then not part of the log).
std::optional<Entry> valid_entry(const LogBuffer& log, std::uint64_t offset, const Guid& log_guid) {
    std::vector<std::byte> scratch;
    const auto head = log.at(offset, kLogSector, scratch);
    if (!signature_is(head.data(), "loge")) return std::nullopt;
    Entry e;
    e.offset = offset;
    e.length = load_le(head.data() + 8, 4);
    e.tail = load_le(head.data() + 12, 4);
    e.sequence = load_le(head.data() + 16, 8);
    const std::uint64_t descriptors = load_le(head.data() + 24, 4);
    e.flushed_file_offset = load_le(head.data() + 48, 8);
    e.last_file_offset = load_le(head.data() + 56, 8);
    if (Guid::at(head.data() + 32) != log_guid) return std::nullopt;
    if (e.length == 0 || e.length % kLogSector != 0 || e.length > log.size() || e.tail % kLogSector != 0 ||
        e.tail >= log.size())
        return std::nullopt;
    const std::uint64_t descriptor_sectors =
        (kEntryHeaderBytes + descriptors * kDescriptorBytes + kLogSector - 1) / kLogSector;
    const std::uint64_t sectors = e.length / kLogSector;
    if (descriptor_sectors > sectors) return std::nullopt;

    const auto entry = log.at(offset, e.length, scratch);
    if (crc32c_without(entry, 4) != load_le(entry.data() + 4, 4)) return std::nullopt;
    std::uint64_t data_sectors = 0;
    for (std::uint64_t i = 0; i < descriptors; ++i) {
        const std::byte* d = entry.data() + kEntryHeaderBytes + i * kDescriptorBytes;
        const std::uint64_t file_offset = load_le(d + 16, 8);
        if (load_le(d + 24, 8) != e.sequence || file_offset % kLogSector != 0) return std::nullopt;
        if (signature_is(d, "zero")) {
            const std::uint64_t length = load_le(d + 8, 8);
            if (length % kLogSector != 0 || length > ~std::uint64_t{0} - file_offset) return std::nullopt;
        } else if (signature_is(d, "desc")) {
            if (file_offset > ~std::uint64_t{0} - kLogSector) return std::nullopt;
            if (descriptor_sectors + data_sectors >= sectors) return std::nullopt;
            const std::byte* sector = entry.data() + (descriptor_sectors + data_sectors) * kLogSector;
            if (!signature_is(sector, "data") ||
                ((load_le(sector + 4, 4) << 32) | load_le(sector + kLogSector - 4, 4)) != e.sequence)
                return std::nullopt;
            ++data_sectors;
        } else {
            return std::nullopt;
        }
    }
    if (descriptor_sectors + data_sectors != sectors) return std::nullopt;
    return e;
}

/// Applies one entry's descriptors to the overlay, in order.
void apply_entry(const LogBuffer& log, const Entry& e, Overlay& overlay) {
    std::vector<std::byte> scratch;
    const auto entry = log.at(e.offset, e.length, scratch);
    const std::uint64_t descriptors = load_le(entry.data() + 24, 4);
    const std::uint64_t descriptor_sectors =
        (kEntryHeaderBytes + descriptors * kDescriptorBytes + kLogSector - 1) / kLogSector;
    auto data = std::make_shared<std::vector<std::byte>>((e.length / kLogSector - descriptor_sectors) * kLogSector);
    std::uint64_t next = 0;
    for (std::uint64_t i = 0; i < descriptors; ++i) {
        const std::byte* d = entry.data() + kEntryHeaderBytes + i * kDescriptorBytes;
        const std::uint64_t file_offset = load_le(d + 16, 8);
        if (signature_is(d, "zero")) {
            overlay.zero(file_offset, load_le(d + 8, 8));
            continue;
        }
        // The 4 KiB written = the descriptor's 8 leading bytes, the sector's 4084 data bytes
        // and the descriptor's 4 trailing bytes (the sector's own first 8 and last 4 bytes
        // hold its signature and sequence number).
        std::byte* out = data->data() + next * kLogSector;
        const std::byte* sector = entry.data() + (descriptor_sectors + next) * kLogSector;
        std::memcpy(out, d + 8, 8);
        std::memcpy(out + 8, sector + 8, kLogSector - 12);
        std::memcpy(out + kLogSector - 4, d + 4, 4);
        ++next;
    }
    // Second pass, now that `data` is complete: record the writes in descriptor order.
    next = 0;
    for (std::uint64_t i = 0; i < descriptors; ++i) {
        const std::byte* d = entry.data() + kEntryHeaderBytes + i * kDescriptorBytes;
        if (!signature_is(d, "desc")) continue;
        overlay.write(load_le(d + 16, 8), data, static_cast<std::size_t>(next * kLogSector), kLogSector);
        ++next;
    }
}

}  // namespace

void Overlay::assign(std::uint64_t start, Segment segment) {
    const std::uint64_t end = segment.end;
    // A segment that starts before `start` and reaches into the new one: keep its head,
    // and its tail if it also reaches past `end`.
    if (auto it = segments_.upper_bound(start); it != segments_.begin()) {
        auto prev = std::prev(it);
        if (prev->second.end > start) {
            if (prev->second.end > end) {
                Segment tail = prev->second;
                if (tail.data) tail.data_offset += static_cast<std::size_t>(end - prev->first);
                segments_.emplace(end, tail);
            }
            if (prev->first == start) segments_.erase(prev);
            else prev->second.end = start;
        }
    }
    // Segments starting inside [start, end): drop them, keeping a tail past `end`.
    for (auto it = segments_.lower_bound(start); it != segments_.end() && it->first < end;) {
        if (it->second.end > end) {
            Segment tail = it->second;
            if (tail.data) tail.data_offset += static_cast<std::size_t>(end - it->first);
            segments_.erase(it);
            segments_.emplace(end, tail);
            break;
        }
        it = segments_.erase(it);
    }
    segments_.emplace(start, std::move(segment));
}

void Overlay::write(std::uint64_t offset, std::shared_ptr<const std::vector<std::byte>> data, std::size_t data_offset,
                    std::uint64_t length) {
    if (length == 0) return;
    assign(offset, Segment{offset + length, std::move(data), data_offset});
}

void Overlay::zero(std::uint64_t offset, std::uint64_t length) {
    if (length == 0) return;
    assign(offset, Segment{offset + length, nullptr, 0});
}

void Overlay::apply(std::uint64_t offset, std::span<std::byte> out) const {
    if (segments_.empty() || out.empty()) return;
    const std::uint64_t end = offset + out.size();
    auto it = segments_.upper_bound(offset);
    if (it != segments_.begin()) --it;
    for (; it != segments_.end() && it->first < end; ++it) {
        const std::uint64_t from = std::max(offset, it->first);
        const std::uint64_t to = std::min(end, it->second.end);
        if (from >= to) continue;
        std::byte* dest = out.data() + (from - offset);
        if (it->second.data)
            std::memcpy(dest, it->second.data->data() + it->second.data_offset + (from - it->first), to - from);
        else
            std::memset(dest, 0, to - from);
    }
}

LogReplay replay_log(const HostFile& file, const Header& header) {
    LogReplay replay;
    replay.file_size = file.size();
    if (header.log_guid.is_zero()) return replay;
    if (header.log_length == 0)
        throw Error(ErrorKind::Corrupt, "vhdx: the header names a log but the log region is empty");
    if (header.log_offset > file.size() || header.log_length > file.size() - header.log_offset)
        throw Error(ErrorKind::Corrupt, "vhdx: the log at offset " + std::to_string(header.log_offset) + " (" +
                                            std::to_string(header.log_length) +
                                            " bytes) lies past the end of the file (" + std::to_string(file.size()) +
                                            " bytes)");
    if (header.log_length > kMaxLogBytes)
        throw Error(ErrorKind::Unsupported, "vhdx: a log of " + std::to_string(header.log_length) +
                                                " bytes is not supported (at most " + std::to_string(kMaxLogBytes) +
                                                ")");
    std::vector<std::byte> bytes(header.log_length);
    file.read_exact(header.log_offset, bytes, "vhdx log");
    const LogBuffer log(std::move(bytes));

    std::unordered_map<std::uint64_t, Entry> entries;  // by offset in the log
    for (std::uint64_t offset = 0; offset < log.size(); offset += kLogSector)
        if (auto e = valid_entry(log, offset, header.log_guid)) entries.emplace(offset, *e);
    if (entries.empty()) return replay;  // nothing was logged under this GUID: the log is empty

    // Each entry's successor is the valid entry right after it with the next sequence
    // number; following successors gives a sequence. Sequence numbers rise by one at each
    // step, so successors never loop; the last entry of each start's sequence is memoised
    // to keep the search linear.
    const auto successor = [&](const Entry& e) -> const Entry* {
        const auto it = entries.find((e.offset + e.length) % log.size());
        return it != entries.end() && it->second.sequence == e.sequence + 1 ? &it->second : nullptr;
    };
    std::unordered_map<std::uint64_t, const Entry*> last_of;
    const auto last_entry = [&](const Entry& first) {
        std::vector<const Entry*> path;
        const Entry* e = &first;
        const Entry* last = nullptr;
        while (true) {
            if (const auto known = last_of.find(e->offset); known != last_of.end()) {
                last = known->second;
                break;
            }
            path.push_back(e);
            const Entry* next = successor(*e);
            if (next == nullptr) {
                last = e;
                break;
            }
            e = next;
        }
        for (const Entry* p : path) last_of[p->offset] = last;
        return last;
    };
    const Entry* best_first = nullptr;
    const Entry* best_last = nullptr;
    for (const auto& [offset, e] : entries) {
        const Entry* last = last_entry(e);
        // Complete: the newest entry's tail is where this sequence starts.
        if (last->tail != offset) continue;
        if (best_last == nullptr || last->sequence > best_last->sequence) {
            best_first = &e;
            best_last = last;
        }
    }
    if (best_first == nullptr) return replay;  // no complete sequence: nothing to replay

    if (file.size() < best_last->flushed_file_offset)
        throw Error(ErrorKind::Corrupt, "vhdx: the file (" + std::to_string(file.size()) +
                                            " bytes) is shorter than its log says was flushed (" +
                                            std::to_string(best_last->flushed_file_offset) + " bytes)");
    for (const Entry* e = best_first;; e = successor(*e)) {
        apply_entry(log, *e, replay.overlay);
        ++replay.entries;
        if (e == best_last) break;
    }
    replay.file_size = std::max(file.size(), best_last->last_file_offset);
    replay.last_sequence = best_last->sequence;
    return replay;
}

FileView::FileView(HostFile file, LogReplay replay) : file_(std::move(file)), replay_(std::move(replay)) {}

void FileView::read(std::uint64_t offset, std::span<std::byte> out, const char* what) const {
    if (replay_.entries == 0) {
        file_.read_exact(offset, out, what);
        return;
    }
    if (offset > replay_.file_size || out.size() > replay_.file_size - offset)
        throw Error(ErrorKind::Corrupt, std::string(what) + " at offset " + std::to_string(offset) +
                                            " lies past the end of the file (" + std::to_string(replay_.file_size) +
                                            " bytes)");
    // The log may have extended the file: bytes past the host file's end read as zero.
    file_.read_padded(offset, out);
    replay_.overlay.apply(offset, out);
}

}  // namespace guestfrag::vhdx
