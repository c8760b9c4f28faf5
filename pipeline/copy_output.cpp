// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/copy_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <stop_token>
#include <utility>

#include "core/apply/verify.hpp"
#include "core/error.hpp"
#include "core/image/open_image.hpp"
#include "core/io/process_owner.hpp"
#include "core/plan/apply.hpp"

namespace guestfrag {

[[noreturn]] void verification_failed(const std::string& what) {
    throw Error(ErrorKind::Corrupt, "verification failed: " + what);
}

namespace {

namespace fs = std::filesystem;

/// What a temporary output's name starts with: "." + OUT's name + ".guestfrag-".
std::string temporary_prefix(const fs::path& output) {
    return "." + output.filename().string() + ".guestfrag-";
}

/// A temporary output's name: the prefix, then its owner, "HOST~BOOT-ID~PID~START-TICKS", then
/// mkstemp's ".XXXXXX", so that a later run can tell a leftover of a killed one.
std::string temporary_name(const fs::path& output) {
    const ProcessOwner self = this_process();
    return temporary_prefix(output) + self.host + "~" + self.boot_id + "~" + std::to_string(self.pid) + "~" +
           std::to_string(self.start_ticks) + ".XXXXXX";
}

/// The owner a temporary output's name records, nullopt for a name that is not one.
std::optional<ProcessOwner> owner_of(const std::string& name, const std::string& prefix) {
    if (!name.starts_with(prefix) || name.size() < prefix.size() + 7) return std::nullopt;
    std::string fields = name.substr(prefix.size(), name.size() - prefix.size() - 7);  // without ".XXXXXX"
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
        const std::size_t tilde = fields.find('~', at);
        parts.push_back(fields.substr(at, tilde == std::string::npos ? std::string::npos : tilde - at));
        if (tilde == std::string::npos) break;
        at = tilde + 1;
    }
    if (parts.size() != 4) return std::nullopt;
    try {
        return ProcessOwner{parts[0], parts[1], std::stoll(parts[2]), std::stoll(parts[3])};
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

/// The process's file mode creation mask, read without changing it (umask(2) can only set
/// it, and setting it back races with other threads creating files).
mode_t process_umask() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("Umask:")) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
    return 022;
}

/// A new file beside `output` named after it (temporary_name); the path is returned in `path`.
int create_beside(const fs::path& output, std::string& path) {
    std::string pattern = (directory_of(output) / temporary_name(output)).string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0)
        throw Error(ErrorKind::Io,
                    "cannot create a file beside " + output.string() + ": " + std::strerror(errno));
    path = pattern;
    return fd;
}

constexpr std::uint64_t kMftRecord = 0;      // $MFT
constexpr std::uint64_t kMftMirrRecord = 1;  // $MFTMirr
constexpr std::uint64_t kBitmapRecord = 6;   // $Bitmap

std::uint64_t total_fragments(const VolumeMap& map) {
    std::uint64_t n = 0;
    for (const Stream& s : map.streams) n += s.fragments();
    return n;
}

/// Tells `on_step` that `step` begins.
void begin(const std::function<void(ApplyStep)>& on_step, ApplyStep step) {
    if (on_step) on_step(step);
}

/// Whether the contents of stream `key` of the input may differ in the output by design: the
/// streams that record the moves, each proved another way. $MFT (every record compared,
/// changed_records), its $BITMAP (likewise), $MFTMirr (mirrors the new $MFT,
/// mft_mirror_difference), $Bitmap (the union of the runlists, bitmap_difference), and the
/// attribute list of a file whose streams moved (its entries name the records the new runlist
/// lies in).
bool records_moves(const std::pair<std::uint64_t, std::string>& key, const std::set<std::uint64_t>& moved) {
    const auto& [record, label] = key;
    if (record == kMftRecord) return label == "$DATA" || label == "$BITMAP";
    if (record == kMftMirrRecord || record == kBitmapRecord) return label == "$DATA";
    return label == "$ATTRIBUTE_LIST" && moved.count(record) != 0;
}

ApplyVerification verify_copy(const OpenedImage& input, const VolumeMap& before,
                              std::shared_ptr<const VolumeMap> predicted,
                              const std::set<std::uint64_t>& moved, const std::string& copy,
                              const OpenOptions& open, const VolumeWindow& window,
                              const std::function<void(ApplyStep)>& on_step, const Progress& progress,
                              const std::function<void(const VolumeMap&)>& analysed) {
    begin(on_step, ApplyStep::AnalyseOutput);
    const OpenedImage output = analyze_opened(open_image(copy, open), before.partition, progress);
    if (output.analysis->volumes.empty()) verification_failed("the output has no NTFS volume");
    const VolumeMap& after = output.analysis->volumes.front().map;
    if (analysed) analysed(after);
    ApplyVerification result;
    const AttributeListChanges lists = attribute_list_changes(*predicted, after, moved);
    result.attribute_list_clusters_freed = lists.freed;
    result.attribute_list_clusters_taken = lists.taken;
    if (const auto d = allocation_difference(*predicted, after, lists)) verification_failed(*d);
    result.fragments_predicted = total_fragments(*predicted);
    predicted.reset();  // proved: the hashing below would hold three maps (the prediction: ~90 MB at 806k streams)
    if (const auto d = bitmap_difference(after)) verification_failed(*d);
    if (const auto d = mft_mirror_difference(*output.image, window)) verification_failed(*d);
    const ChangedRecords records = changed_records(*input.image, before, *output.image, after, moved);
    if (records.difference) verification_failed(*records.difference);
    result.records_changed = records.records;
    result.records_freed = records.freed;
    result.records_added = records.added;
    // The streams that record the moves are proved above, and not read again here.
    const auto recording = [&moved](const Stream& s) {
        return records_moves({s.mft_record, s.label()}, moved);
    };
    // The two disks are hashed at once, the input on a thread of its own: each pass is
    // bound by reading and hashing on one core. Whatever ends this scope (an error of the
    // output's pass, a cancel) stops the input's pass before its future is waited for.
    begin(on_step, ApplyStep::HashInput);
    std::stop_source halt;
    const std::stop_callback forward_cancel(progress.stop, [&halt] { halt.request_stop(); });
    std::future<std::vector<std::optional<std::uint64_t>>> want = std::async(std::launch::async, [&] {
        Progress quiet;
        quiet.stop = halt.get_token();
        return stream_digests(*input.image, before, quiet, recording);
    });
    const struct Halt {
        std::stop_source& source;
        ~Halt() { source.request_stop(); }
    } halt_on_exit{halt};
    begin(on_step, ApplyStep::HashOutput);
    const auto got = stream_digests(*output.image, after, progress, recording);
    const auto wanted = want.get();
    if (const auto d = digest_difference(before, wanted, after, got))
        verification_failed("the contents of " + *d + " differ from the input's");
    result.streams_hashed = static_cast<std::uint64_t>(
        std::count_if(wanted.begin(), wanted.end(), [](const auto& d) { return d.has_value(); }));
    result.fragments_before = total_fragments(before);
    result.fragments_after = total_fragments(after);
    return result;
}

}  // namespace

fs::path directory_of(const fs::path& output) {
    return output.has_parent_path() ? output.parent_path() : fs::path(".");
}

std::string already_exists(const std::string& output) {
    return "the output " + output + " exists (it is not replaced)";
}

std::vector<std::string> remove_dead_leftovers(const fs::path& output, const std::string& run) {
    std::vector<std::string> removed;
    const std::string prefix = temporary_prefix(output);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(directory_of(output), ec)) {
        const std::string name = entry.path().filename().string();
        const std::optional<ProcessOwner> owner = owner_of(name, prefix);
        if (!owner || may_be_alive(*owner) || !entry.is_regular_file(ec)) continue;
        if (fs::remove(entry.path(), ec))
            removed.push_back("removed " + entry.path().string() + ", left by " + run + " (process " +
                              std::to_string(owner->pid) + ") that was killed before it finished");
    }
    return removed;
}

TemporaryDisk::TemporaryDisk(const fs::path& output, bool replace) : output_(output), replace_(replace) {
    fd_ = create_beside(output, path_);
    // mkstemp creates 0600; the output gets what any new file would, as cp's do.
    (void)::fchmod(fd_, 0666 & ~process_umask());
}

TemporaryDisk::~TemporaryDisk() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
}

void TemporaryDisk::sync() const {
    if (::fsync(fd_) != 0) throw Error(ErrorKind::Io, "cannot write " + path_ + ": " + std::strerror(errno));
}

void TemporaryDisk::commit() {
    if (replace_ ? ::rename(path_.c_str(), output_.c_str()) != 0 : !rename_no_replace()) {
        if (errno == EEXIST) throw Error(ErrorKind::Unsupported, already_exists(output_.string()));
        throw Error(ErrorKind::Io,
                    "cannot rename " + path_ + " to " + output_.string() + ": " + std::strerror(errno));
    }
    committed_ = true;
}

/// Atomically: the rename fails with EEXIST when the output exists. A file system without
/// RENAME_NOREPLACE gets a hard link (which never replaces) and an unlink.
bool TemporaryDisk::rename_no_replace() const {
    if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, output_.c_str(), RENAME_NOREPLACE) == 0) return true;
    if (errno != EINVAL && errno != ENOSYS) return false;
    if (::link(path_.c_str(), output_.c_str()) != 0) return false;
    ::unlink(path_.c_str());
    return true;
}

ApplyVerification prove_moves(const OpenedImage& input, const VolumeMap& before, PlannedVolume& planned,
                              const MoveOutcome& outcome, const std::string& copy, const OpenOptions& open,
                              const VolumeWindow& window, const std::function<void(ApplyStep)>& on_step,
                              const Progress& progress,
                              const std::function<void(const VolumeMap&)>& analysed) {
    // The after-state of the moves that were done; skipped ones are left out, and what
    // remains must still replay on the volume as it was.
    std::shared_ptr<const VolumeMap> predicted = std::move(planned.after);
    if (!outcome.skipped.empty()) {
        predicted.reset();
        Plan done = planned.plan;
        done.moves.clear();
        for (const std::size_t i : outcome.done) done.moves.push_back(planned.plan.moves[i]);
        try {
            predicted = std::make_shared<const VolumeMap>(apply_plan(before, done));
        } catch (const Error& e) {
            verification_failed(std::string("the moves done do not replay without the skipped ones: ") +
                                e.what());
        }
    }
    std::set<std::uint64_t> moved;
    for (const std::size_t i : outcome.done) moved.insert(planned.plan.moves[i].mft_record);
    return verify_copy(input, before, std::move(predicted), moved, copy, open, window, on_step, progress, analysed);
}

}  // namespace guestfrag
