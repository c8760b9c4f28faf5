// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/copy_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>

#include "core/apply/verify.hpp"
#include "core/error.hpp"
#include "core/image/open_image.hpp"
#include "core/io/heap.hpp"
#include "core/io/process_owner.hpp"
#include "core/ntfs/volume_reader.hpp"
#include "core/partition/partition.hpp"
#include "core/plan/apply.hpp"

namespace guestfrag {

[[noreturn]] void verification_failed(const std::string& what) {
    throw Error(ErrorKind::Unfinished, "verification failed: " + what);
}

void prove_held(const InputHold& hold, const std::function<void()>& proofs) {
    try {
        proofs();
    } catch (const Error& e) {
        if (e.kind() == ErrorKind::Unfinished) hold.check_unchanged();
        throw;
    }
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

/// Whether the contents of `stream` of the input may differ in the output by design: the
/// streams that record the moves, each proved another way. $MFT (every record compared,
/// changed_records), its $BITMAP (likewise), $MFTMirr (mirrors the new $MFT,
/// mft_mirror_difference), $Bitmap (the union of the runlists, bitmap_difference), and the
/// attribute list of a file whose streams moved (its entries name the records the new runlist
/// lies in).
bool records_moves(const Stream& stream, const std::vector<std::uint64_t>& moved) {
    const std::uint64_t record = stream.mft_record;
    if (record == kMftRecord) return stream.has_label("$DATA") || stream.has_label("$BITMAP");
    if (record == kMftMirrRecord || record == kBitmapRecord) return stream.has_label("$DATA");
    return stream.has_label("$ATTRIBUTE_LIST") && std::ranges::binary_search(moved, record);
}

/// The output's partition that holds the volume the input has in `window` as partition
/// `partition`, found as the input's was: in its own partition table.
Partition output_partition(const DiskImage& output, int partition, const VolumeWindow& window) {
    for (const Partition& p : read_partitions(output).partitions)
        if (p.number == partition && p.start == window.offset && p.length == window.length) return p;
    verification_failed("the output's partition table has no partition " + std::to_string(partition) +
                        " where the input's was");
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
    if (writeback_.joinable()) writeback_.join();  // before its descriptor is closed
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
}

void TemporaryDisk::start_writeback() {
    if (writeback_.joinable()) return;
    // A hint: sync() reports what fails. It blocks while the device's queue is full, over a
    // second for 5 GB, which is why it has a thread.
    writeback_ = std::jthread([fd = fd_] { (void)::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); });
}

void TemporaryDisk::sync() {
    if (writeback_.joinable()) writeback_.join();
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

void copy_beside_moves(const CopyAndMoves& work, std::stop_source& halt, const Progress& progress) {
    // The copy's step shows until it ends, then the moves': begun by whichever of the copy
    // and `before` ends last, with the last count the moves reported meanwhile.
    std::mutex reporting;
    bool copied = false;
    bool ready = false;
    bool moving = false;
    std::optional<std::pair<std::uint64_t, std::uint64_t>> held;
    const auto report = [&](std::uint64_t done, std::uint64_t total) {
        if (progress.report) progress.report(done, total);
    };
    const auto ended = [&](bool& which) {
        const std::lock_guard lock(reporting);
        which = true;
        if (!copied || !ready) return;
        work.begin();
        moving = true;
        if (held) report(held->first, held->second);
    };
    const Progress copy_progress{[&](std::uint64_t done, std::uint64_t total) {
                                     const std::lock_guard lock(reporting);
                                     if (!copied) report(done, total);
                                 },
                                 halt.get_token()};
    const Progress moves_progress{[&](std::uint64_t done, std::uint64_t total) {
                                      const std::lock_guard lock(reporting);
                                      if (moving)
                                          report(done, total);
                                      else
                                          held.emplace(done, total);
                                  },
                                  halt.get_token()};
    std::future<void> copying = std::async(std::launch::async, [&] {
        try {
            work.copy(copy_progress);
            ended(copied);
        } catch (...) {
            halt.request_stop();
            throw;
        }
    });
    try {
        work.before();
        ended(ready);
        work.moves(moves_progress);
    } catch (...) {
        halt.request_stop();
        try {
            copying.get();
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::Cancelled || progress.stop.stop_requested()) throw;
        }
        throw;
    }
    copying.get();
}

InputHashing::InputHashing(const DiskImage& image, const VolumeMap& before, const Plan& plan)
    : before_(before), plan_(plan), guess_([this, &image](std::stop_token stop) {
          Progress progress;
          progress.stop = std::move(stop);
          progress.report = [this](std::uint64_t done, std::uint64_t total) {
              done_ = done;
              total_ = total;
          };
          digests_ =
              stream_digests(image, before_, progress, [](const Stream& s) { return records_moves(s, {}); });
          // While the moves run, the volume as every move done leaves it, which is what
          // they almost always do: the proofs then need not wait for it (docs/apply.md).
          Guess guess;
          try {
              guess.volume = expect_volume(before_, plan_, files_moved(plan_.moves), digests_);
          } catch (const Error&) {
              guess.error = std::current_exception();
          }
          return guess;
      }) {}

ExpectedVolume InputHashing::expected(const MoveOutcome& outcome, const Progress& progress) {
    while (!guess_.ended_within(std::chrono::milliseconds(100))) progress.update(done_, total_);
    progress.update(total_, total_);
    Guess guess = guess_.get();
    if (outcome.done.size() != plan_.moves.size()) return expect_moves(before_, plan_, outcome, digests_);
    if (guess.error) std::rethrow_exception(guess.error);
    return std::move(*guess.volume);
}

ExpectedVolume expect_moves(const VolumeMap& before, const Plan& plan, const MoveOutcome& outcome,
                            const std::vector<std::optional<std::uint64_t>>& digests) {
    // The moves that were done; skipped ones are left out, and what remains must still
    // replay on the volume as it was.
    const Plan* replayed = &plan;
    Plan done;
    if (outcome.done.size() != plan.moves.size()) {
        done.moves.reserve(outcome.done.size());
        for (const std::size_t i : outcome.done) done.moves.push_back(plan.moves[i]);
        replayed = &done;
    }
    try {
        return expect_volume(before, *replayed, files_moved(replayed->moves), digests);
    } catch (const Error& e) {
        // With every move done, the plan replays as it was validated: anything else is no
        // verdict on the copy. Moves are skipped only in a plan edited by hand (or one for a
        // stream no plan may move): that plan is at fault, not the tool.
        if (e.kind() != ErrorKind::Corrupt || outcome.skipped.empty()) throw;
        throw Error(ErrorKind::Corrupt,
                    std::string("the plan's moves done do not replay without the skipped ones: ") + e.what());
    }
}

ApplyVerification verify_copy(const DiskImage& input, const ExpectedVolume& expected, const std::string& copy,
                              const OpenOptions& open, const VolumeWindow& window,
                              const std::function<void(ApplyStep)>& on_step, const Progress& progress,
                              const std::function<void(const VolumeMap&)>& analysed) {
    begin(on_step, ApplyStep::AnalyseOutput);
    const std::shared_ptr<const DiskImage> output = open_image(copy, open);
    const Partition partition = output_partition(*output, expected.input_mft.partition, window);
    // The records are compared while the copy is analysed, through $MFT as the mount maps
    // it, on one thread: that needs none of the map the analysis makes. After it, the
    // proofs and the hashing share the cores. On the 1M-file volume the comparison took
    // 0.35 s on two threads there, beside the hashing.
    std::stop_source halt;
    const std::stop_callback cancelled(progress.stop, [&halt] { halt.request_stop(); });
    const VolumeMap output_mft = read_mft_map(*output, partition);
    std::future<ChangedRecords> comparing = std::async(std::launch::async, [&] {
        return changed_records(input, expected.input_mft, *output, output_mft, expected.moved,
                               halt.get_token());
    });
    const VolumeMap after = [&] {
        try {
            return read_ntfs_volume(*output, partition, progress, VolumeDetail::Allocation);
        } catch (...) {
            halt.request_stop();
            throw;
        }
    }();
    release_freed_memory();  // the scan's own tables (its file entries), before the proofs' fill
    if (analysed) analysed(after);
    ApplyVerification result;
    // The proofs of the allocation and the records read the copy's metadata alone, and the
    // hashing reads its streams where `after` (the copy's own map) puts them: neither waits
    // for the other, so they run side by side, the proofs on a thread of their own. A
    // proof that fails stops the hashing, and is the answer either way: it says what went
    // wrong before a stream's bytes could.
    std::future<void> proofs = std::async(std::launch::async, [&] {
        try {
            const AttributeListChanges lists = attribute_list_changes(expected, after);
            result.attribute_list_clusters_freed = lists.freed;
            result.attribute_list_clusters_taken = lists.taken;
            if (const auto d = allocation_difference(expected, after, lists)) verification_failed(*d);
            if (const auto d = bitmap_difference(after)) verification_failed(*d);
            if (const auto d = mft_mirror_difference(*output, window)) verification_failed(*d);
            if (const auto d = mft_map_difference(output_mft, after)) verification_failed(*d);
            const ChangedRecords records = comparing.get();
            if (records.difference) verification_failed(*records.difference);
            result.records_changed = records.records;
            result.records_freed = records.freed;
            result.records_added = records.added;
        } catch (...) {
            halt.request_stop();
            throw;
        }
    });
    // The streams that record the moves are proved by the proofs, and not read again here.
    begin(on_step, ApplyStep::HashOutput);
    std::vector<std::optional<std::uint64_t>> got;
    try {
        // On every core: beside the proofs, nothing else runs now (the input was hashed
        // beside the copy).
        got = stream_digests(
            *output, after, {progress.report, halt.get_token()},
            [&](const Stream& s) { return records_moves(s, expected.moved); },
            std::max(1u, std::thread::hardware_concurrency()));
    } catch (...) {
        proofs.get();  // a proof's failure stopped the hashing: it is the answer
        throw;
    }
    proofs.get();
    if (const auto d = digest_difference(expected, after, got))
        verification_failed("the contents of " + *d + " differ from the input's");
    result.streams_hashed =
        static_cast<std::uint64_t>(std::count_if(got.begin(), got.end(), [](const auto& d) { return d.has_value(); }));
    result.fragments_before = expected.fragments_before;
    result.fragments_predicted = expected.fragments_expected;
    result.fragments_after = total_fragments(after);
    return result;
}

}  // namespace guestfrag
