// SPDX-License-Identifier: GPL-2.0-or-later
// The offline apply use case: a plan carried out on a new copy of the disk, then proved
// (docs/apply.md). The CLI's `guestfrag apply` runs it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/image/open_image.hpp"

#include "core/apply/mover.hpp"
#include "core/plan/plan.hpp"
#include "core/progress.hpp"

namespace guestfrag {

/// How to apply.
struct ApplyOptions {
    std::string output;       ///< the new raw disk; replaced only when everything passed
    bool verify = true;       ///< false: skip the proofs after the moves (--no-verify)
    bool allow_vss = false;   ///< apply even when shadow copy stores exist
    /// Test seams: run after move i is done, and on the temporary disk's path just before
    /// verification (a test may corrupt it there). Either may throw.
    std::function<void(std::size_t)> after_move;
    std::function<void(const std::string&)> before_verify;
};

/// What the proofs found (all of them passed, or apply_to_copy threw).
struct ApplyVerification {
    std::uint64_t streams_hashed = 0;  ///< streams whose contents matched ($MFT and $Bitmap change by design)
    std::uint64_t fragments_before = 0;      ///< Σ Stream::fragments() on the input
    std::uint64_t fragments_predicted = 0;   ///< on apply_plan's after-state of the moves done
    std::uint64_t fragments_after = 0;       ///< on the output, as analysed
};

/// What apply_to_copy did.
struct ApplyResult {
    std::string output;
    int partition = 0;
    Plan plan;                  ///< the plan as adopted (summary recomputed)
    MoveOutcome moves;
    std::uint64_t disk_bytes_written = 0;  ///< bytes the sparse copy of the disk wrote
    std::optional<ApplyVerification> verification;  ///< none with verify = false
    double seconds = 0;
};

/// Carries `plan` out offline: opens the image at `path` (as `open` says) read-only and
/// analyses the plan's partition; refuses (Error(Unsafe)) a volume that is dirty,
/// hibernated, has an unclean $LogFile, a $MFTMirr that differs from $MFT, or shadow copy
/// stores unless `options.allow_vss`; refuses (Error(Corrupt)) a plan whose identity is not
/// this volume's, all before anything is written. Then writes the whole virtual disk into a
/// new sparse raw file beside `options.output` under a temporary name, runs the moves on it
/// (carry_out_moves: moves that cannot be done safely are skipped with their reason) and,
/// unless told not to, proves it: every stream's contents hash the same as the input's;
/// the output's analysis has exactly the allocation apply_plan predicts for the moves done;
/// $Bitmap equals the union of all runlists; $MFTMirr mirrors $MFT. Only then is the file
/// renamed to `options.output`. Any failure (Error(Corrupt) "verification failed: ..." for a
/// proof) or Error(Cancelled) from `progress` removes the temporary file: no output is left.
/// The input is never written. Cost: reads the input's allocated bytes once for the copy,
/// every moved cluster twice, and every stream of both disks once to verify.
[[nodiscard]] ApplyResult apply_to_copy(const std::string& path, const OpenOptions& open, Plan plan,
                                        const ApplyOptions& options, const Progress& progress = {});

}  // namespace guestfrag
