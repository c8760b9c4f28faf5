// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/apply.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <optional>
#include <stop_token>
#include <utility>
#include <vector>

#include "analyzers/layer_usage.hpp"
#include "core/apply/cow_disk.hpp"
#include "core/apply/disk_copy.hpp"
#include "core/apply/mover.hpp"
#include "core/apply/volume_checks.hpp"
#include "core/error.hpp"
#include "core/image/nbd_uri.hpp"
#include "core/image/open_image.hpp"
#include "core/image/writable_raw_file.hpp"
#include "core/io/heap.hpp"
#include "pipeline/copy_output.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag {
namespace {

namespace fs = std::filesystem;

/// The backing file an overlay at `output` records for the input at `input`: absolute as
/// given, or relative to the overlay's directory (qemu resolves relative names from there),
/// with the input's format as qemu names it.
Qcow2Backing backing_for(const std::string& input, const DiskImage& image, const fs::path& output) {
    const std::string_view format = image_formats[static_cast<std::size_t>(image.format())].qemu_name;
    if (format.empty())
        throw Error(ErrorKind::Unsupported, "a qcow2 overlay cannot name a backing file of format " +
                                                std::string(format_name(image.format())));
    fs::path name = input;
    // qemu opens an NBD URI as a backing file as it stands.
    if (is_nbd_uri(input)) return {input, std::string(format)};
    if (name.is_relative())
        name = fs::absolute(input).lexically_normal().lexically_relative(
            fs::absolute(directory_of(output)).lexically_normal());
    return {name.string(), std::string(format)};
}

}  // namespace

ApplyResult apply_to_copy(const std::string& path, const OpenOptions& open, Plan plan,
                          const ApplyOptions& options, const Progress& progress) {
    PendingPlan read(std::move(plan));
    return apply_to_copy(path, open, read, options, progress);
}

ApplyResult apply_to_copy(const std::string& path, const OpenOptions& open, PendingPlan& pending,
                          const ApplyOptions& options, const Progress& progress) {
    const auto started = std::chrono::steady_clock::now();
    check_output_path(options.output, options.replace);  // before the analysis: it takes a while
    std::vector<std::string> removed = remove_dead_leftovers(options.output, "an apply");
    if (options.on_step) options.on_step(ApplyStep::Analyse);
    // Not const: its map is let go before the output is analysed.
    OpenedImage input = [&] {
        try {
            return open_and_hold(path, open, pending.partition(), progress);
        } catch (...) {
            (void)pending.take();  // a plan that cannot be read is the first thing to fix
            throw;
        }
    }();
    Plan plan = pending.take();
    const VolumeMap& before = input.analysis->volumes.front().map;
    const VolumeWindow window = volume_window(*input.analysis, before);
    check_apply_output(options.output, *input.image, options.replace);

    // Everything that may refuse runs before the first byte is written, but the rehearsal
    // (adopt_plan's second half: about a second on a million moves), which needs nothing
    // the copy writes: it runs beside the copy, which its refusal stops, and the moves wait
    // for it. Either way no output is kept.
    check_volume_state(*input.image, window, before, options.allow_vss);
    std::optional<VolumeMap> after = replay_plan_file(input, 0, plan);
    std::stop_source refused;
    const std::stop_callback cancelled(progress.stop, [&refused] { refused.request_stop(); });
    std::future<void> rehearsal = std::async(std::launch::async, [&] {
        try {
            rehearse_plan_file(input, 0, *after, plan);
        } catch (...) {
            refused.request_stop();
            throw;
        }
        after.reset();  // the proofs replay the moves done themselves (expect_moves)
    });

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
    std::optional<InputHashing> hashing;
    if (options.verify) hashing.emplace(*input.image, before, plan);
    TemporaryDisk disk(options.output, options.replace);
    if (overlay) {
        Qcow2OverlayWriter writer(disk.fd(), disk.path(), input.image->size(), *backing);
        CopyOnWriteDisk cow(*input.image, writer, options.limiter);
        rehearsal.get();
        if (options.on_step) options.on_step(ApplyStep::Move);
        result.moves = carry_out_moves(cow, window, before, plan, progress, options.after_move,
                                       options.limiter, options.before_move);
        (void)cow.release_unchanged();
        result.disk_bytes_written = writer.clusters_stored() * Qcow2OverlayWriter::kClusterSize;
        result.output_file_bytes = writer.finish();
    } else {
        if (options.on_step) options.on_step(ApplyStep::Copy);
        // As compaction does (docs/compact.md): the clusters the moves take data out of are
        // left out of the copy and read from the input when a move needs them, and the
        // moves' destinations are written in the same pass, so that the moves find their
        // bytes in place and neither read nor write them again. What the moves leave free
        // reads as zeros in the output. $MFT is left out too and copied after the moves,
        // where they left it: they rewrite the records of the files they move, which on
        // the 1M-file volume's optimize plan was nearly all of its 1.15 GB.
        const ByteSet disk_bytes(ByteSet::interval_type::right_open(0, input.image->size()));
        const ByteSet free = free_bytes_on_disk(before);
        ByteSet moved_out = (moved_bytes(before, plan, &Move::from_lcn) - free) + mft_bytes(before);
        const ByteSet keep = disk_bytes - moved_out - moved_bytes(before, plan, &Move::to_lcn);
        const std::vector<Relocation> ahead = moves_to_copy_ahead(before, plan, keep, free);
        // The moves run beside the copy once the rehearsal accepts the plan. What the copy
        // has not written yet they read from the input, and what they write the copy leaves.
        CopyFrontier frontier(disk.fd(), input.image->size());
        WritableRawFile file(disk.fd(), disk.path());
        DeferredCopyDisk output(file, *input.image, std::move(moved_out), ahead, {&frontier, &keep});
        copy_beside_moves(
            {.copy =
                 [&](const Progress& copying) {
                     try {
                         result.disk_bytes_written =
                             copy_disk_sparse(*input.image, disk.fd(), copying, options.limiter,
                                              {.only = &keep, .relocated = ahead, .frontier = &frontier})
                                 .bytes_written;
                     } catch (const Error& e) {
                         // A disk whose bytes are not all readable (a truncated fixed VHD)
                         // cannot be copied whole, but an overlay needs only the clusters
                         // the moves touch.
                         if (e.kind() != ErrorKind::Corrupt) throw;
                         throw Error(
                             ErrorKind::Corrupt,
                             std::string("a raw output is a copy of the whole disk, which cannot be read: ") +
                                 e.what() + "; --output-format qcow2 needs only what the moves touch");
                     }
                 },
             .before =
                 [&] {
                     rehearsal.get();
                     // The after-map and the rehearsal's tables, before the moves' fill.
                     release_freed_memory();
                 },
             .begin =
                 [&] {
                     if (options.on_step) options.on_step(ApplyStep::Move);
                 },
             .moves =
                 [&](const Progress& moving) {
                     result.moves = carry_out_moves(output, window, before, plan, moving, options.after_move,
                                                    options.limiter, options.before_move);
                 }},
            refused, progress);
        result.output_file_bytes = input.image->size();
        disk.start_writeback();  // beside the last copy and the proofs
        // What a skipped move left where it was, the records the moves did not write, or
        // what libntfs-3g kept, is still in use.
        result.disk_bytes_written +=
            output.copy(bytes_in_use(output, window, output.deferred()), options.limiter, progress.stop);
    }
    // No fsync yet: a raw output's pages go to the host disk while the proofs read them
    // (start_writeback); the one fsync comes before OUT is kept.
    if (options.verify) {
        if (options.before_verify) options.before_verify(disk.path());
        if (options.on_step) options.on_step(ApplyStep::HashInput);
        const ExpectedVolume expected = hashing->expected(result.moves, progress);
        hashing.reset();
        input.analysis.reset();  // `before` is gone: the proofs need only `expected` of it
        release_freed_memory();  // its runs, before the output's are read
        prove_held(*input.hold, [&] {
            result.verification = verify_copy(*input.image, expected, disk.path(),
                                              apply_output_open_options(open, options.format), window,
                                              options.on_step, progress);
        });
    }
    disk.sync();
    input.hold->check_unchanged();  // what was read and proved is the input as it is now
    disk.commit();
    result.plan = std::move(plan);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

std::vector<ApplyStep> apply_steps(const ApplyOptions& options) {
    std::vector<ApplyStep> steps{ApplyStep::Analyse};
    if (options.format == ApplyOutputFormat::Qcow2)
        steps.push_back(ApplyStep::Move);
    else
        steps.insert(steps.end(), {ApplyStep::Copy, ApplyStep::Move});
    if (options.verify)
        steps.insert(steps.end(), {ApplyStep::HashInput, ApplyStep::AnalyseOutput, ApplyStep::HashOutput});
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
