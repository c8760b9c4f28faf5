// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/io_trace.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <unordered_set>

#include "core/error.hpp"

namespace guestfrag {
namespace {

// Offsets and lengths beyond this are no real disk's (docs/estimate.md §2.3).
constexpr std::uint64_t kMaxTraceNumber = std::uint64_t{1} << 62;

std::vector<std::string_view> split(std::string_view line, char separator) {
    std::vector<std::string_view> out;
    if (separator == ' ') {
        std::size_t i = 0;
        while (i < line.size()) {
            while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
            const std::size_t start = i;
            while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
            if (i > start) out.push_back(line.substr(start, i - start));
        }
        return out;
    }
    for (std::size_t start = 0;;) {
        const std::size_t end = line.find(separator, start);
        out.push_back(line.substr(start, end == std::string_view::npos ? end : end - start));
        if (end == std::string_view::npos) return out;
        start = end + 1;
    }
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

/// A decimal, or with "0x" a hexadecimal, number that uses all of `text`.
std::optional<std::uint64_t> number(std::string_view text) {
    int base = 10;
    if (text.starts_with("0x") || text.starts_with("0X")) {
        text.remove_prefix(2);
        base = 16;
    }
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

/// The value of "key=VALUE" among `fields`.
std::optional<std::uint64_t> field(const std::vector<std::string_view>& fields, std::string_view key) {
    for (const std::string_view f : fields)
        if (f.size() > key.size() && f.starts_with(key) && f[key.size()] == '=')
            return number(f.substr(key.size() + 1));
    return std::nullopt;
}

bool digits(std::string_view s) {
    return !s.empty() && std::ranges::all_of(s, [](char c) { return c >= '0' && c <= '9'; });
}

/// "YYYY-MM-DD HH:MM:SS", the way nbdkit's log filter begins every line.
bool nbdkit_time(std::string_view line) {
    constexpr std::string_view kPattern = "0000-00-00 00:00:00";
    if (line.size() <= kPattern.size()) return false;
    for (std::size_t i = 0; i < kPattern.size(); ++i)
        if (kPattern[i] == '0' ? !(line[i] >= '0' && line[i] <= '9') : line[i] != kPattern[i]) return false;
    return line[kPattern.size()] == '.' || line[kPattern.size()] == ' ';
}

/// "8,0": blkparse's device column.
bool device_numbers(std::string_view s) {
    const std::size_t comma = s.find(',');
    return comma != std::string_view::npos && digits(s.substr(0, comma)) && digits(s.substr(comma + 1));
}

class LineError {
public:
    LineError(const std::string& what, std::uint64_t line) : what_(what), line_(line) {}
    [[noreturn]] void operator()(const std::string& why) const {
        throw Error(ErrorKind::Corrupt, what_ + " line " + std::to_string(line_) + ": " + why);
    }

private:
    const std::string& what_;
    std::uint64_t line_;
};

Io checked_io(std::optional<std::uint64_t> byte, std::optional<std::uint64_t> length, bool write,
              const LineError& fail) {
    if (!byte || !length) fail("an IO without its offset or length");
    if (*byte > kMaxTraceNumber || *length > kMaxTraceNumber || *length == 0)
        fail("an IO at byte " + std::to_string(*byte) + " of " + std::to_string(*length) +
             " bytes is no real disk's");
    return {static_cast<std::int64_t>(*byte / kSectorBytes), *length, write};
}

}  // namespace

std::string_view io_trace_format_name(IoTraceFormat format) noexcept {
    switch (format) {
        case IoTraceFormat::NbdkitLog:
            return "nbdkit log";
        case IoTraceFormat::Blkparse:
            return "blkparse output";
        case IoTraceFormat::VscsiStatsCsv:
            break;
    }
    return "vscsiStats trace";
}

std::optional<IoTraceFormat> detect_io_trace(std::string_view line) {
    line = trim(line);
    if (line.starts_with("#Vscsi Cmd Trace")) return IoTraceFormat::VscsiStatsCsv;
    if (nbdkit_time(line)) return IoTraceFormat::NbdkitLog;
    const std::vector<std::string_view> f = split(line, ' ');
    if (f.size() >= 6 && device_numbers(f[0]) && digits(f[1]) && digits(f[2]) &&
        f[3].find('.') != std::string_view::npos)
        return IoTraceFormat::Blkparse;
    return std::nullopt;
}

std::vector<Io> parse_io_trace(std::istream& in, IoTraceFormat format, const std::string& what) {
    std::vector<Io> ios;
    std::vector<Io> queued;  // blkparse's Q events, kept for a trace without D events
    std::vector<std::pair<std::uint64_t, Io>> stamped;  // vscsiStats: (time stamp, IO)
    std::string text;
    for (std::uint64_t number_of_line = 1; std::getline(in, text); ++number_of_line) {
        const std::string_view line = trim(text);
        const LineError fail(what, number_of_line);
        switch (format) {
            case IoTraceFormat::NbdkitLog: {
                // "… connection=1 Read id=3 offset=0x… count=0x… …"; the reply is "...Read".
                const std::vector<std::string_view> f = split(line, ' ');
                const auto op =
                    std::ranges::find_if(f, [](std::string_view s) { return s == "Read" || s == "Write"; });
                if (op == f.end()) break;
                ios.push_back(checked_io(field(f, "offset"), field(f, "count"), *op == "Write", fail));
                break;
            }
            case IoTraceFormat::Blkparse: {
                // "8,0 3 1 0.000000000 1234 D R 2048 + 8 [cat]": sectors of 512 bytes.
                const std::vector<std::string_view> f = split(line, ' ');
                if (f.size() < 10 || !device_numbers(f[0]) || (f[5] != "D" && f[5] != "Q") || f[8] != "+")
                    break;
                const bool read = f[6].find('R') != std::string_view::npos;
                const bool write = f[6].find('W') != std::string_view::npos;
                if (read == write) break;  // a flush, a discard, or neither
                const auto sector = number(f[7]);
                const auto sectors = number(f[9]);
                if (!sector || !sectors || *sector > kMaxTraceNumber / kSectorBytes ||
                    *sectors > kMaxTraceNumber / kSectorBytes)
                    fail("an IO whose sector or length is not a number in range");
                if (*sectors == 0) break;  // a barrier carries no data
                const Io io = checked_io(*sector * kSectorBytes, *sectors * kSectorBytes, write, fail);
                (f[5] == "D" ? ios : queued).push_back(io);
                break;
            }
            case IoTraceFormat::VscsiStatsCsv: {
                // "serial,length,sg entries,read|write,LBN,time stamp (µs)".
                if (line.empty() || line.starts_with('#')) break;
                const std::vector<std::string_view> f = split(line, ',');
                if (f.size() < 6) fail("a command with " + std::to_string(f.size()) + " fields, not 6");
                const std::string_view type = trim(f[3]);
                if (type != "read" && type != "write") break;
                const auto lbn = number(trim(f[4]));
                const auto stamp = number(trim(f[5]));
                if (!lbn || *lbn > kMaxTraceNumber / kSectorBytes || !stamp)
                    fail("a command whose LBN or time stamp is not a number in range");
                stamped.emplace_back(
                    *stamp, checked_io(*lbn * kSectorBytes, number(trim(f[1])), type == "write", fail));
                break;
            }
        }
        if (ios.size() + queued.size() + stamped.size() > std::numeric_limits<std::uint32_t>::max())
            fail("more than 2^32 IOs");
    }
    if (in.bad()) throw Error(ErrorKind::Io, "cannot read " + what);
    if (format == IoTraceFormat::Blkparse && ios.empty()) return queued;
    if (format == IoTraceFormat::VscsiStatsCsv) {
        // vscsiStats lists commands as they complete; they were issued in time-stamp order.
        std::ranges::stable_sort(stamped, {}, &std::pair<std::uint64_t, Io>::first);
        for (const auto& each : stamped) ios.push_back(each.second);
    }
    return ios;
}

std::ifstream open_trace_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(path, ec)) throw Error(ErrorKind::NotFound, "trace file " + path + " does not exist");
    if (!fs::is_regular_file(path, ec))
        throw Error(ErrorKind::Unsupported, "trace file " + path + " is not a regular file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::Io, "cannot open trace file " + path);
    return in;
}

std::optional<std::vector<Io>> read_io_trace(std::istream& in, const std::string& path) {
    std::string first;
    // A first line longer than this is no trace's (nor a path's): not an IO trace.
    constexpr std::size_t kLongestFirstLine = 64 * 1024;
    char c = 0;
    while (first.size() < kLongestFirstLine && in.get(c) && c != '\n') first.push_back(c);
    if (in.bad()) throw Error(ErrorKind::Io, "cannot read trace file " + path);
    in.clear();
    in.seekg(0);
    const std::optional<IoTraceFormat> format = detect_io_trace(first);
    if (!format) return std::nullopt;
    return parse_io_trace(in, *format, std::string(io_trace_format_name(*format)) + " " + path);
}

std::optional<std::vector<Io>> read_io_trace(const std::string& path) {
    std::ifstream in = open_trace_file(path);
    return read_io_trace(in, path);
}

IoTraceReplay::IoTraceReplay(const VolumeMap& before, std::vector<Io> ios) : traced_(ios.size()) {
    if (ios.size() > std::numeric_limits<std::uint32_t>::max())
        throw Error(ErrorKind::Unsupported, "a trace of more than 2^32 IOs");
    // Which stream holds each allocated cluster run, by LCN.
    struct Owned {
        std::int64_t lcn, clusters, vcn;
        std::size_t stream;
    };
    std::vector<Owned> owned;
    for (std::size_t s = 0; s < before.streams.size(); ++s)
        for (const Extent& e : before.streams[s].extents)
            if (e.lcn != Extent::kSparse && e.clusters > 0) owned.push_back({e.lcn, e.clusters, e.vcn, s});
    std::ranges::sort(owned, {}, &Owned::lcn);

    const std::uint64_t cs = before.cluster_size;
    const std::uint64_t first = before.partition_offset;
    const std::uint64_t last = first + static_cast<std::uint64_t>(before.total_clusters) * cs;
    std::vector<std::int32_t> key_of(before.streams.size(), -1);
    for (std::uint32_t i = 0; i < ios.size(); ++i) {
        const Io& io = ios[i];
        std::uint64_t at = static_cast<std::uint64_t>(io.lbn) * kSectorBytes;
        const std::uint64_t end = at + io.length;
        while (at < end && at < last) {  // past the volume: not its workload
            if (at < first) {
                at = std::min(end, first);  // before it: the same
                continue;
            }
            Piece piece{.io = i, .write = io.write, .byte = at};
            const auto cluster = static_cast<std::int64_t>((at - first) / cs);
            const auto next = std::ranges::upper_bound(owned, cluster, {}, &Owned::lcn);
            if (next != owned.begin() && cluster < std::prev(next)->lcn + std::prev(next)->clusters) {
                const Owned& o = *std::prev(next);
                const std::uint64_t run_end = first + static_cast<std::uint64_t>(o.lcn + o.clusters) * cs;
                piece.length = std::min(end, run_end) - at;
                std::int32_t& key = key_of[o.stream];
                if (key < 0) {
                    const Stream& s = before.streams[o.stream];
                    key = static_cast<std::int32_t>(keys_.size());
                    keys_.push_back({s.mft_record, s.type, std::string(s.name)});
                }
                piece.stream = key;
                piece.vcn = o.vcn + (cluster - o.lcn);
            } else {
                // Clusters no stream holds: up to the next run, the volume's end or the IO's.
                const std::uint64_t stop =
                    next == owned.end() ? last : first + static_cast<std::uint64_t>(next->lcn) * cs;
                piece.length = std::min({end, stop, last}) - at;
            }
            at += piece.length;
            pieces_.push_back(piece);
        }
    }
}

void IoTraceReplay::replay(const VolumeMap& state, const std::function<void(const Io&)>& each) const {
    // The trace's streams in `state`: matched by record, type and name.
    std::vector<const Stream*> stream_of(keys_.size(), nullptr);
    std::vector<std::int32_t> sorted(keys_.size());
    for (std::size_t i = 0; i < sorted.size(); ++i) sorted[i] = static_cast<std::int32_t>(i);
    std::ranges::sort(sorted, [&](std::int32_t a, std::int32_t b) { return keys_[a] < keys_[b]; });
    for (const Stream& s : state.streams) {
        const auto key = std::tuple{s.mft_record, s.type, s.name};
        const auto found = std::ranges::lower_bound(sorted, key, {}, [&](std::int32_t k) {
            return std::tuple{keys_[k].mft_record, keys_[k].type, std::string_view(keys_[k].name)};
        });
        if (found != sorted.end() && keys_[*found].mft_record == s.mft_record &&
            keys_[*found].type == s.type && keys_[*found].name == s.name)
            stream_of[*found] = &s;
    }

    const std::uint64_t cs = state.cluster_size;
    std::optional<Io> pending;
    std::uint32_t pending_io = 0;
    const auto emit = [&](std::uint32_t io, bool write, std::uint64_t byte, std::uint64_t length) {
        if (pending && pending_io == io && pending->write == write &&
            static_cast<std::uint64_t>(pending->lbn) * kSectorBytes + pending->length == byte) {
            pending->length += length;
            return;
        }
        if (pending) each(*pending);
        pending = Io{static_cast<std::int64_t>(byte / kSectorBytes), length, write};
        pending_io = io;
    };
    for (const Piece& p : pieces_) {
        const Stream* s = p.stream < 0 ? nullptr : stream_of[static_cast<std::size_t>(p.stream)];
        std::int64_t vcn = p.vcn;
        std::uint64_t offset = s == nullptr ? 0 : (p.byte - state.partition_offset) % cs;
        std::uint64_t done = 0;
        while (s != nullptr && done < p.length) {
            const auto next = std::ranges::upper_bound(s->extents, vcn, {}, &Extent::vcn);
            if (next == s->extents.begin()) break;
            const Extent& e = *std::prev(next);
            if (e.lcn == Extent::kSparse || vcn >= e.vcn + e.clusters) break;
            const std::uint64_t room = static_cast<std::uint64_t>(e.vcn + e.clusters - vcn) * cs - offset;
            const std::uint64_t take = std::min(p.length - done, room);
            emit(p.io, p.write,
                 state.partition_offset + static_cast<std::uint64_t>(e.lcn + (vcn - e.vcn)) * cs + offset,
                 take);
            done += take;
            vcn += static_cast<std::int64_t>((offset + take) / cs);
            offset = (offset + take) % cs;
        }
        // Not a stream's, a stream `state` lacks, or VCNs it no longer maps: where the trace
        // read them.
        if (done < p.length) emit(p.io, p.write, p.byte + done, p.length - done);
    }
    if (pending) each(*pending);
}

std::vector<std::string> IoTraceReplay::files_read(const VolumeMap& before) const {
    std::vector<std::string> paths;
    std::unordered_set<std::int32_t> seen;
    for (const Piece& p : pieces_) {
        if (p.stream < 0) continue;
        const StreamKey& k = keys_[static_cast<std::size_t>(p.stream)];
        if (k.type == static_cast<std::uint32_t>(AttrType::Data) && k.name.empty() &&
            seen.insert(p.stream).second)
            paths.push_back(before.path_of(k.mft_record));
    }
    return paths;
}

}  // namespace guestfrag
