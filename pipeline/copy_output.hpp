// SPDX-License-Identifier: GPL-2.0-or-later
// What apply and compact share (internal to the pipeline): the output under a temporary
// name beside OUT, the leftovers of killed runs, and the proofs that a copy holds what a
// plan's moves predicted (docs/apply.md, "What happens").
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/apply/mover.hpp"
#include "core/apply/volume_checks.hpp"
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

    /// fsync; Error(Io) naming the file.
    void sync() const;
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
};

/// Error(Corrupt, "verification failed: WHAT").
[[noreturn]] void verification_failed(const std::string& what);

/// The proofs of docs/apply.md step 5 for one volume: `copy` (opened with `open`) holds
/// `before` (read from `input`) with the moves `outcome` did of `planned`'s plan, and
/// nothing else changed. `on_step` is told as each step begins; `analysed`, when given,
/// runs with the output's map once it is analysed and before any proof reads the copy
/// (compaction punches the free clusters there, so the proofs see the final file).
/// Takes `planned.after` (empty afterwards): the predicted map is let go once the
/// allocation is proved, before both disks are hashed beside the output's map.
/// Throws Error(Corrupt, "verification failed: …") for the first difference.
[[nodiscard]] ApplyVerification prove_moves(const OpenedImage& input, const VolumeMap& before,
                                            PlannedVolume& planned, const MoveOutcome& outcome,
                                            const std::string& copy, const OpenOptions& open,
                                            const VolumeWindow& window,
                                            const std::function<void(ApplyStep)>& on_step,
                                            const Progress& progress,
                                            const std::function<void(const VolumeMap&)>& analysed = {});

}  // namespace guestfrag
