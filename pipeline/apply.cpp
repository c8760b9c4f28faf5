// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/apply.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/apply/cow_disk.hpp"
#include "core/apply/disk_copy.hpp"
#include "core/apply/verify.hpp"
#include "core/apply/volume_checks.hpp"
#include "core/error.hpp"
#include "core/image/open_image.hpp"
#include "core/image/writable_raw_file.hpp"
#include "core/io/process_owner.hpp"
#include "core/plan/apply.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag {
namespace {

namespace fs = std::filesystem;

/// `output`'s directory, "." for a bare name.
fs::path directory_of(const fs::path& output) { return output.has_parent_path() ? output.parent_path() : fs::path("."); }

std::string already_exists(const std::string& output) { return "the output " + output + " exists (it is not replaced)"; }

/// What a temporary output's name starts with: "." + OUT's name + ".guestfrag-".
std::string temporary_prefix(const fs::path& output) {
    return "." + output.filename().string() + ".guestfrag-";
}

/// A temporary output's name: the prefix, then its owner, "HOST~BOOT-ID~PID~START-TICKS", then
/// mkstemp's ".XXXXXX", so that a later apply can tell a leftover of a killed one.
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

/// Removes the temporary outputs for `output` that an apply killed before it could clean up
/// (SIGKILL, a crash, a reboot) left beside it; returns a line for each.
std::vector<std::string> remove_dead_leftovers(const fs::path& output) {
    std::vector<std::string> removed;
    const std::string prefix = temporary_prefix(output);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(directory_of(output), ec)) {
        const std::string name = entry.path().filename().string();
        const std::optional<ProcessOwner> owner = owner_of(name, prefix);
        if (!owner || may_be_alive(*owner) || !entry.is_regular_file(ec)) continue;
        if (fs::remove(entry.path(), ec))
            removed.push_back("removed " + entry.path().string() + ", left by an apply (process " +
                              std::to_string(owner->pid) + ") that was killed before it finished");
    }
    return removed;
}

/// A new file beside `output` named after it (temporary_name); the path is returned in `path`.
int create_beside(const fs::path& output, std::string& path) {
    std::string pattern = (directory_of(output) / temporary_name(output)).string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) throw Error(ErrorKind::Io, "cannot create a file beside " + output.string() + ": " + std::strerror(errno));
    path = pattern;
    return fd;
}

/// The output under its temporary name: removed on destruction unless commit() renamed it.
class TemporaryDisk {
public:
    TemporaryDisk(const fs::path& output, bool replace) : output_(output), replace_(replace) {
        fd_ = create_beside(output, path_);
    }
    ~TemporaryDisk() {
        if (fd_ >= 0) ::close(fd_);
        if (!committed_) ::unlink(path_.c_str());
    }
    TemporaryDisk(const TemporaryDisk&) = delete;
    TemporaryDisk& operator=(const TemporaryDisk&) = delete;

    [[nodiscard]] int fd() const { return fd_; }
    [[nodiscard]] const std::string& path() const { return path_; }

    void sync() const {
        if (::fsync(fd_) != 0) throw Error(ErrorKind::Io, "cannot write " + path_ + ": " + std::strerror(errno));
    }
    void commit() {
        if (replace_ ? ::rename(path_.c_str(), output_.c_str()) != 0 : !rename_no_replace()) {
            if (errno == EEXIST) throw Error(ErrorKind::Unsupported, already_exists(output_.string()));
            throw Error(ErrorKind::Io, "cannot rename " + path_ + " to " + output_.string() + ": " + std::strerror(errno));
        }
        committed_ = true;
    }

private:
    /// Atomically: the rename fails with EEXIST when the output exists. A file system
    /// without RENAME_NOREPLACE gets a hard link (which never replaces) and an unlink.
    bool rename_no_replace() const {
        if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, output_.c_str(), RENAME_NOREPLACE) == 0) return true;
        if (errno != EINVAL && errno != ENOSYS) return false;
        if (::link(path_.c_str(), output_.c_str()) != 0) return false;
        ::unlink(path_.c_str());
        return true;
    }

    fs::path output_;
    bool replace_ = true;
    std::string path_;
    int fd_ = -1;
    bool committed_ = false;
};

constexpr std::uint64_t kMftRecord = 0;      // $MFT
constexpr std::uint64_t kMftMirrRecord = 1;  // $MFTMirr
constexpr std::uint64_t kBitmapRecord = 6;   // $Bitmap

std::uint64_t total_fragments(const VolumeMap& map) {
    std::uint64_t n = 0;
    for (const Stream& s : map.streams) n += s.fragments();
    return n;
}

[[noreturn]] void verification_failed(const std::string& what) {
    throw Error(ErrorKind::Corrupt, "verification failed: " + what);
}

/// The backing file an overlay at `output` records for the input at `input`: absolute as
/// given, or relative to the overlay's directory (qemu resolves relative names from there),
/// with the input's format as qemu names it.
Qcow2Backing backing_for(const std::string& input, const DiskImage& image, const fs::path& output) {
    const std::string_view format = image_formats[static_cast<std::size_t>(image.format())].qemu_name;
    if (format.empty())
        throw Error(ErrorKind::Unsupported, "a qcow2 overlay cannot name a backing file of format " +
                                                std::string(format_name(image.format())));
    fs::path name = input;
    if (name.is_relative())
        name = fs::absolute(input).lexically_normal().lexically_relative(fs::absolute(directory_of(output)).lexically_normal());
    return {name.string(), std::string(format)};
}

/// Tells `options.on_step` that `step` begins.
void begin(const ApplyOptions& options, ApplyStep step) {
    if (options.on_step) options.on_step(step);
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

ApplyVerification verify_copy(const OpenedImage& input, const VolumeMap& before, VolumeMap predicted,
                              const std::set<std::uint64_t>& moved, const std::string& copy,
                              const OpenOptions& open, const VolumeWindow& window,
                              const ApplyOptions& options, const Progress& progress) {
    begin(options, ApplyStep::AnalyseOutput);
    const OpenedImage output = analyze_opened(open_image(copy, open), before.partition, progress);
    if (output.analysis->volumes.empty()) verification_failed("the output has no NTFS volume");
    const VolumeMap& after = output.analysis->volumes.front().map;
    ApplyVerification result;
    result.attribute_list_clusters_freed = adopt_attribute_list_shrinks(predicted, after, moved);
    if (const auto d = allocation_difference(predicted, after)) verification_failed(*d);
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
    begin(options, ApplyStep::HashInput);
    const auto want = stream_digests(*input.image, before, progress, recording);
    begin(options, ApplyStep::HashOutput);
    const auto got = stream_digests(*output.image, after, progress, recording);
    for (const auto& [key, digest] : want) {
        const auto it = got.find(key);
        if (it == got.end() || it->second != digest)
            verification_failed("the contents of record " + std::to_string(key.first) + " " + key.second +
                                " differ from the input's");
        ++result.streams_hashed;
    }
    result.fragments_before = total_fragments(before);
    result.fragments_predicted = total_fragments(predicted);
    result.fragments_after = total_fragments(after);
    return result;
}

}  // namespace

ApplyResult apply_to_copy(const std::string& path, const OpenOptions& open, Plan plan,
                          const ApplyOptions& options, const Progress& progress) {
    const auto started = std::chrono::steady_clock::now();
    check_output_path(options.output, options.replace);  // before the analysis: it takes a while
    std::vector<std::string> removed = remove_dead_leftovers(options.output);
    begin(options, ApplyStep::Analyse);
    const OpenedImage input = open_and_analyze(path, open, plan.identity.partition, progress);
    const VolumeMap& before = input.analysis->volumes.front().map;
    VolumeWindow window;
    for (const Partition& p : input.analysis->table.partitions)
        if (p.number == before.partition) window = {p.start, p.length};
    if (window.length == 0) throw Error(ErrorKind::Internal, "the analysed partition is not in the table");
    check_apply_output(options.output, *input.image, options.replace);

    // Everything that may refuse runs before the first byte is written.
    check_volume_state(*input.image, window, before, options.allow_vss);
    PlannedVolume adopted = adopt_plan(input, 0, std::move(plan));

    const bool overlay = options.format == ApplyOutputFormat::Qcow2;
    const std::optional<Qcow2Backing> backing =
        overlay ? std::optional(backing_for(path, *input.image, options.output)) : std::nullopt;
    if (overlay) Qcow2OverlayWriter::check_possible(input.image->size(), backing);

    ApplyResult result;
    result.output = options.output;
    result.partition = before.partition;
    result.format = options.format;
    result.warnings = layer_warnings(*input.image);
    result.warnings.insert(result.warnings.end(), removed.begin(), removed.end());
    TemporaryDisk disk(options.output, options.replace);
    if (overlay) {
        Qcow2OverlayWriter writer(disk.fd(), disk.path(), input.image->size(), *backing);
        CopyOnWriteDisk cow(*input.image, writer, options.limiter);
        begin(options, ApplyStep::Move);
        result.moves = carry_out_moves(cow, window, before, adopted.plan, progress, options.after_move, options.limiter,
                                      options.before_move);
        (void)cow.release_unchanged();
        result.disk_bytes_written = writer.clusters_stored() * Qcow2OverlayWriter::kClusterSize;
        result.output_file_bytes = writer.finish();
    } else {
        begin(options, ApplyStep::Copy);
        try {
            result.disk_bytes_written = copy_disk_sparse(*input.image, disk.fd(), progress, options.limiter);
        } catch (const Error& e) {
            // A disk whose bytes are not all readable (a truncated fixed VHD) cannot be
            // copied whole, but an overlay needs only the clusters the moves touch.
            if (e.kind() != ErrorKind::Corrupt) throw;
            throw Error(ErrorKind::Corrupt, std::string("a raw output is a copy of the whole disk, which cannot be read: ") +
                                                e.what() + "; --output-format qcow2 needs only what the moves touch");
        }
        result.output_file_bytes = input.image->size();
        WritableRawFile file(disk.fd(), disk.path());
        begin(options, ApplyStep::Move);
        result.moves = carry_out_moves(file, window, before, adopted.plan, progress, options.after_move, options.limiter,
                                      options.before_move);
    }
    disk.sync();

    if (options.verify) {
        // The after-state of the moves that were done; skipped ones are left out, and what
        // remains must still replay on the volume as it was.
        std::shared_ptr<const VolumeMap> predicted = adopted.after;
        if (!result.moves.skipped.empty()) {
            Plan done = adopted.plan;
            done.moves.clear();
            for (const std::size_t i : result.moves.done) done.moves.push_back(adopted.plan.moves[i]);
            try {
                predicted = std::make_shared<const VolumeMap>(apply_plan(before, done));
            } catch (const Error& e) {
                verification_failed(std::string("the moves done do not replay without the skipped ones: ") + e.what());
            }
        }
        if (options.before_verify) options.before_verify(disk.path());
        std::set<std::uint64_t> moved;
        for (const std::size_t i : result.moves.done) moved.insert(adopted.plan.moves[i].mft_record);
        result.verification =
            verify_copy(input, before, *predicted, moved, disk.path(),
                        apply_output_open_options(open, options.format), window, options, progress);
    }
    disk.commit();
    result.plan = std::move(adopted.plan);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

std::vector<ApplyStep> apply_steps(const ApplyOptions& options) {
    std::vector<ApplyStep> steps{ApplyStep::Analyse};
    if (options.format == ApplyOutputFormat::Qcow2)
        steps.push_back(ApplyStep::Move);
    else
        steps.insert(steps.end(), {ApplyStep::Copy, ApplyStep::Move});
    if (options.verify) steps.insert(steps.end(), {ApplyStep::AnalyseOutput, ApplyStep::HashInput, ApplyStep::HashOutput});
    return steps;
}

void check_output_path(const std::string& output, bool replace) {
    struct stat st {};
    if (::stat(output.c_str(), &st) == 0) {
        // Only a regular file is ever replaced: the rename would put a file where a device
        // node (as root, /dev/sdX), a FIFO or a socket was, and cannot replace a directory.
        const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                           : S_ISBLK(st.st_mode)  ? "a block device"
                           : S_ISCHR(st.st_mode)  ? "a character device"
                           : S_ISFIFO(st.st_mode) ? "a FIFO"
                           : S_ISSOCK(st.st_mode) ? "a socket"
                                                  : nullptr;
        if (kind != nullptr)
            throw Error(ErrorKind::Unsupported, "the output " + output + " is " + kind +
                                                    ", not a regular file: give the path of a new file");
        if (!replace) throw Error(ErrorKind::Unsupported, already_exists(output));
    }
    const std::string dir = directory_of(output).string();
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw Error(ErrorKind::Io, "cannot create the output in " + dir + ": " + std::strerror(errno));
}

void check_apply_output(const std::string& output, const DiskImage& input, bool replace) {
    check_output_path(output, replace);
    std::error_code ec;
    if (!fs::exists(output, ec)) return;
    for (const Layer& layer : input.layers())
        if (fs::equivalent(output, layer.path, ec))
            throw Error(ErrorKind::Unsupported, "the output " + output + " is the input image " + layer.path);
}

void check_qcow2_output(const std::string& path, const DiskImage& input, const std::string& output) {
    Qcow2OverlayWriter::check_possible(input.size(), backing_for(path, input, output));
}

OpenOptions apply_output_open_options(const OpenOptions& input, ApplyOutputFormat format) {
    OpenOptions out;
    if (format == ApplyOutputFormat::Raw) return out;
    // The overlay is one layer more: the input's given parents are one layer deeper under it.
    for (ParentOverride p : input.parents) {
        if (p.depth != 0) ++p.depth;
        out.parents.push_back(std::move(p));
    }
    return out;
}

}  // namespace guestfrag
