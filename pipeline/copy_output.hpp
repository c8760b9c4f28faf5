// SPDX-License-Identifier: GPL-2.0-or-later
// What apply and compact share (internal to the pipeline): the output under a temporary
// name beside OUT, the leftovers of killed runs, and the proofs that a copy holds what a
// plan's moves predicted (docs/apply.md, "What happens").
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "core/apply/mover.hpp"
#include "core/apply/verify.hpp"
#include "core/apply/volume_checks.hpp"
#include "core/image/input_hold.hpp"
#include "core/io/background.hpp"
#include "pipeline/apply.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag {

/// `output`'s directory, "." for a bare name.
[[nodiscard]] std::filesystem::path directory_of(const std::filesystem::path& output);

/// "the output OUT exists (it is not replaced)".
[[nodiscard]] std::string already_exists(const std::string& output);

/// Removes the temporary outputs for `output` that a run killed before it could clean up
/// (SIGKILL, a crash, a reboot) left beside it; returns a line for each, naming the kind of
/// `run` ("an apply").
std::vector<std::string> remove_dead_leftovers(const std::filesystem::path& output, const std::string& run);

/// The output under its temporary name beside OUT, named after OUT and its owner
/// (".OUT.guestfrag-HOST~BOOT-ID~PID~START-TICKS.XXXXXX", so that a later run can tell a
/// leftover of a killed one): removed on destruction unless commit() renamed it to OUT.
class TemporaryDisk {
public:
    /// `replace` false: commit() never replaces a file that appeared at OUT meanwhile.
    TemporaryDisk(const std::filesystem::path& output, bool replace);
    ~TemporaryDisk();
    TemporaryDisk(const TemporaryDisk&) = delete;
    TemporaryDisk& operator=(const TemporaryDisk&) = delete;

    [[nodiscard]] int fd() const { return fd_; }
    [[nodiscard]] const std::string& path() const { return path_; }

    /// Starts writing the file's dirty pages to the host disk on a thread of its own and
    /// returns at once. The kernel's own write-back stops at its background threshold (a
    /// tenth of memory), so after a copy of gigabytes sync() would otherwise write the rest
    /// itself, after the proofs, while nothing else runs (docs/apply.md).
    void start_writeback();
    /// fsync; Error(Io) naming the file.
    void sync();
    /// Renames the file to OUT: Error(Unsupported) when OUT appeared and may not be
    /// replaced, Error(Io) for another failure.
    void commit();

private:
    bool rename_no_replace() const;

    std::filesystem::path output_;
    bool replace_ = true;
    std::string path_;
    int fd_ = -1;
    bool committed_ = false;
    std::jthread writeback_;
};

/// Error(Unfinished, "verification failed: WHAT"): the tool's own work did not prove,
/// which no input explains (exit 4).
[[noreturn]] void verification_failed(const std::string& what);

/// Runs `proofs`; when they fail (Error(Unfinished)) on an input that changed meanwhile,
/// throws what InputHold::check_unchanged throws instead: a writer explains any difference,
/// and the fault is then not the tool's.
void prove_held(const InputHold& hold, const std::function<void()>& proofs);

/// The work of a copy with the moves beside it (copy_beside_moves).
struct CopyAndMoves {
    /// The copy, on a thread of its own (copy_disk_sparse through a CopyFrontier).
    std::function<void(const Progress&)> copy;
    /// First on this thread, beside the copy (apply's rehearsal).
    std::function<void()> before = [] {};
    /// The moves' step begins: once the copy and `before` have ended, on the thread of the
    /// one that ended last.
    std::function<void()> begin = [] {};
    /// The moves, on this thread once `before` has ended.
    std::function<void(const Progress&)> moves;
};

/// Runs `work`: on two cores the copy and the moves each kept one busy while the other had
/// little to do. Each stops the other when it fails (as `halt`, which stops both, does),
/// and the error thrown is the copy's when it failed for a reason of its own, else that of
/// `before` or the moves. `progress` hears one thread at a time: the copy until it ends
/// (its step, the one shown, goes on as long as the copy does), then the moves. Returns
/// when both have ended.
void copy_beside_moves(const CopyAndMoves& work, std::stop_source& halt, const Progress& progress);

/// What the proofs of one volume need of the input, made on a thread of its own from when
/// the object is made: stream_digests of the input (beside the copy and the moves, which
/// wait on writes; docs/apply.md step 5), then, while the moves run, expect_moves as every
/// move of the plan done leaves the volume. Every stream is hashed but $MFT's, $MFTMirr's
/// and $Bitmap's: which files' attribute lists record the moves is known only after them.
class InputHashing {
public:
    /// `image`, `before` and `plan` must outlive the object, whose end stops the hashing
    /// and waits for its thread.
    InputHashing(const DiskImage& image, const VolumeMap& before, const Plan& plan);

    /// expect_moves of the moves `outcome` did (call once): the volume made beside the
    /// moves when they were all done, otherwise one made now. Meanwhile `progress` hears
    /// how many streams are hashed, and its stop cancels the hashing. Throws what
    /// stream_digests and expect_moves throw.
    [[nodiscard]] ExpectedVolume expected(const MoveOutcome& outcome, const Progress& progress);

private:
    /// The volume as every move done leaves it, or what making it threw.
    struct Guess {
        std::optional<ExpectedVolume> volume;
        std::exception_ptr error;
    };

    const VolumeMap& before_;
    const Plan& plan_;
    std::atomic<std::uint64_t> done_{0};
    std::atomic<std::uint64_t> total_{0};
    std::vector<std::optional<std::uint64_t>> digests_;  ///< written by the thread before guess_ ends
    Background<Guess> guess_;                            // last: its thread uses the members above
};

/// What the proofs of one volume need of the input: `before` as the moves `outcome` did of
/// `plan` leave it (expect_volume), with the input's `digests` (InputHashing). After this,
/// neither `before` nor the plan's after-map need be held. Throws Error(Corrupt,
/// "verification failed: …") when the moves done do not replay without the skipped ones.
[[nodiscard]] ExpectedVolume expect_moves(const VolumeMap& before, const Plan& plan, const MoveOutcome& outcome,
                                          const std::vector<std::optional<std::uint64_t>>& digests);

/// The proofs of docs/apply.md step 5 for one volume: `copy` (opened with `open`) holds what
/// `expected` (expect_moves) says of the volume on `input`, and nothing else changed.
/// `on_step` is told as each step begins; `analysed`, when given, runs with the output's map
/// once it is analysed and before any proof reads the copy (compaction punches the free
/// clusters there, so the proofs see the final file). Throws Error(Corrupt, "verification
/// failed: …") for the first difference.
[[nodiscard]] ApplyVerification verify_copy(const DiskImage& input, const ExpectedVolume& expected,
                                            const std::string& copy, const OpenOptions& open,
                                            const VolumeWindow& window,
                                            const std::function<void(ApplyStep)>& on_step,
                                            const Progress& progress,
                                            const std::function<void(const VolumeMap&)>& analysed = {});

}  // namespace guestfrag
