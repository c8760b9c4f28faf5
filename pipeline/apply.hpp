// SPDX-License-Identifier: GPL-2.0-or-later
// The offline apply use case: a plan carried out on a new copy of the disk, then proved
// (docs/apply.md). The CLI's `guestfrag apply` runs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/image/open_image.hpp"

#include "core/apply/mover.hpp"
#include "core/plan/plan.hpp"
#include "core/plan/plan_io.hpp"
#include "core/progress.hpp"

namespace guestfrag {

class RateLimiter;

/// What apply writes (`--output-format`).
enum class ApplyOutputFormat {
    Raw,    ///< a sparse raw file holding the whole virtual disk
    Qcow2,  ///< a qcow2 overlay holding only the clusters the moves wrote; backing file: the input
};

/// "raw" or "qcow2", as --output-format and the outputs name it.
[[nodiscard]] constexpr const char* output_format_name(ApplyOutputFormat format) {
    return format == ApplyOutputFormat::Qcow2 ? "qcow2" : "raw";
}

/// The steps of apply_to_copy, in the order they run. The progress it reports restarts in
/// each step and counts in that step's unit, so a front end that shows bytes or an ETA needs
/// to know which step is running (ApplyOptions::on_step).
enum class ApplyStep {
    Analyse,        ///< the input's analysis: MFT records
    Copy,           ///< the raw copy: how far into the virtual disk, in bytes (holes are passed over)
    Move,           ///< the moves: moves of the plan
    /// hashing the input's streams: streams. It starts with the copy (or the moves), on a
    /// thread of its own; the step is what is left of it when the moves are done.
    HashInput,
    AnalyseOutput,  ///< the output's analysis: MFT records
    HashOutput,     ///< hashing the output's streams: streams
};

/// How to apply.
struct ApplyOptions {
    std::string output;       ///< the new disk; replaced only when everything passed
    /// false: an existing `output` is never replaced: refused before anything is written,
    /// and the final rename fails rather than replace a file that appeared meanwhile.
    bool replace = true;
    ApplyOutputFormat format = ApplyOutputFormat::Raw;
    bool verify = true;       ///< false: skip the proofs after the moves (--no-verify)
    bool allow_vss = false;   ///< apply even when shadow copy stores exist
    /// Borrowed, may be shared with other work (one budget): every byte apply copies (the
    /// raw copy's reads, each block a move copies, each part of a cluster the overlay fills
    /// from the input) first takes its tokens from it. None: unlimited.
    RateLimiter* limiter = nullptr;
    /// Runs before move i is tried, with the progress's stop token, and may block: a
    /// schedule waits there until the move may start (docs/schedule.md §7); a stop request
    /// must end the wait (then throw Error(Cancelled)). May throw.
    std::function<void(std::size_t, const std::stop_token&)> before_move;
    /// Test seams: run after move i is done, and on the temporary disk's path just before
    /// verification (a test may corrupt it there). Either may throw.
    std::function<void(std::size_t)> after_move;
    std::function<void(const std::string&)> before_verify;
    /// Called on apply's thread as each step begins (those of apply_steps), before its first
    /// progress report. May throw.
    std::function<void(ApplyStep)> on_step;
};

/// What the proofs found (all of them passed, or apply_to_copy threw).
struct ApplyVerification {
    /// Streams whose contents matched: all but those that record the moves ($MFT and its
    /// $BITMAP, $MFTMirr, $Bitmap, the attribute lists of the files moved)
    std::uint64_t streams_hashed = 0;
    std::uint64_t records_changed = 0;  ///< MFT records that differ, all of files whose streams moved
    std::uint64_t records_freed = 0;    ///< of them, extension records a shorter runlist no longer needs
    std::uint64_t records_added = 0;    ///< of them, extension records a longer runlist needed
    /// Clusters of non-resident attribute lists libntfs-3g freed as it removed their entries
    std::uint64_t attribute_list_clusters_freed = 0;
    /// Clusters libntfs-3g took for attribute lists of moved files that a longer runlist needed
    std::uint64_t attribute_list_clusters_taken = 0;
    std::uint64_t fragments_before = 0;      ///< Σ Stream::fragments() on the input
    std::uint64_t fragments_predicted = 0;   ///< on apply_plan's after-state of the moves done
    std::uint64_t fragments_after = 0;       ///< on the output, as analysed
};

/// What apply_to_copy did.
struct ApplyResult {
    std::string output;
    int partition = 0;
    Plan plan;  ///< the plan carried out (without a summary)
    MoveOutcome moves;
    ApplyOutputFormat format = ApplyOutputFormat::Raw;
    /// Data bytes the output holds: the raw copy's non-zero blocks, or the overlay's clusters
    std::uint64_t disk_bytes_written = 0;
    std::uint64_t output_file_bytes = 0;  ///< the output file's size (a raw file's is the disk's)
    std::optional<ApplyVerification> verification;  ///< none with verify = false
    /// For the front end to show: the input's layer_warnings, and each leftover temporary
    /// output of a killed apply that was removed
    std::vector<std::string> warnings;
    double seconds = 0;
};

/// Carries `plan` out offline: opens the image at `path` (as `open` says) read-only and
/// analyses the plan's partition; refuses (Error(Unsafe)) a volume that is dirty,
/// hibernated, has an unclean $LogFile, a $MFTMirr that differs from $MFT, or shadow copy
/// stores unless `options.allow_vss`; refuses (Error(Corrupt)) a plan whose identity is not
/// this volume's, and (Error(Unsupported)) an existing output unless `options.replace`,
/// all before anything is written. Then, for a raw output, writes the whole
/// virtual disk into a new sparse raw file beside `options.output` under a temporary name
/// and runs the moves on it; for a qcow2 output, runs the moves on a CopyOnWriteDisk over
/// the input whose writes land straight in a new qcow2 overlay (under the temporary name):
/// it holds the 64 KiB clusters the moves wrote, and its backing file is the input (its
/// name relative to the output's directory when `path` is relative, as qemu resolves it). Moves
/// that cannot be done safely are skipped with their reason (carry_out_moves). Unless told
/// not to, the result (the overlay read through its backing chain, with `open`'s parents one
/// layer deeper) is proved: every stream's contents hash the same as the input's;
/// the output's analysis has exactly the allocation apply_plan predicts for the moves done;
/// $Bitmap equals the union of all runlists; $MFTMirr mirrors $MFT. Only then is the file
/// renamed to `options.output`. Any failure (Error(Corrupt) "verification failed: ..." for a
/// proof) or Error(Cancelled) from `progress` removes the temporary file: no output is left.
/// The input is never written. Cost: reads the input's allocated bytes once for a raw copy
/// (a qcow2 overlay writes each cluster a move touches once, filled from the input), every
/// moved cluster twice, and every stream of both disks once to verify.
[[nodiscard]] ApplyResult apply_to_copy(const std::string& path, const OpenOptions& open, Plan plan,
                                        const ApplyOptions& options, const Progress& progress = {});

/// apply_to_copy of a plan still being read: the input is analysed as soon as the plan's
/// partition is known, beside the reading of its moves. What the reading throws comes
/// first, also when the input could not be analysed either.
[[nodiscard]] ApplyResult apply_to_copy(const std::string& path, const OpenOptions& open, PendingPlan& plan,
                                        const ApplyOptions& options, const Progress& progress = {});

/// The steps apply_to_copy runs with `options`, in order: Analyse, then Copy and Move for a
/// raw output or Move for a qcow2 one (the moves write into the overlay), then unless `options.verify` is false
/// HashInput, AnalyseOutput and HashOutput.
[[nodiscard]] std::vector<ApplyStep> apply_steps(const ApplyOptions& options);

/// Throws Error(Unsupported) when `output` exists and is not a regular file (a directory, a
/// device node, a FIFO or a socket: only a regular file is ever replaced) or exists and may
/// not be replaced, and Error(Io) when its directory does not let a file be created there,
/// as apply_to_copy refuses it before it analyses anything, so that a front end can refuse
/// before any work or wait (a schedule's first window).
void check_output_path(const std::string& output, bool replace = true);

/// check_output_path, and Error(Unsupported) when `output` is the input image or one of its
/// layers (writing it would write the input), as apply_to_copy refuses it.
void check_apply_output(const std::string& output, const DiskImage& input, bool replace = true);

/// Throws Error(Unsupported) when apply_to_copy could not write a qcow2 overlay at `output`
/// over the image opened from `path`: a format qemu has no name for, a backing file name
/// over qemu's 1023 bytes, a disk over what the qcow2 reader accepts.
void check_qcow2_output(const std::string& path, const DiskImage& input, const std::string& output);

/// How to open apply_to_copy's output of `format` for the input opened with `input`: a raw
/// output as it is, a qcow2 overlay with the input's given parents one layer deeper.
[[nodiscard]] OpenOptions apply_output_open_options(const OpenOptions& input, ApplyOutputFormat format);

}  // namespace guestfrag
