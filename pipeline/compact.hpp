// SPDX-License-Identifier: GPL-2.0-or-later
// The offline compaction use case (docs/compact.md): a new image of the disk that holds only
// what NTFS uses, its data first packed into the fewest host granules by the same mover and
// proofs as apply. The CLI's `guestfrag compact` and `batch --compact-to` run it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/image/open_image.hpp"
#include "pipeline/apply.hpp"

namespace guestfrag {

class RateLimiter;

/// What compact writes (`--output-format`).
enum class CompactFormat { Raw, Qcow2, Vmdk, Vhdx };

/// "raw", "qcow2", "vmdk" or "vhdx", as --output-format and the outputs name them.
[[nodiscard]] std::string_view compact_format_name(CompactFormat format) noexcept;
/// The format of that name, nullopt for anything else.
[[nodiscard]] std::optional<CompactFormat> parse_compact_format(std::string_view name) noexcept;

/// The granule `format` packs at when none is given: the block the output allocates in
/// (docs/compact.md §2): raw 1 MiB, qcow2 64 KiB, vmdk 64 KiB, vhdx 1 MiB.
[[nodiscard]] std::uint64_t default_granule(CompactFormat format) noexcept;

/// Throws Error(Unsupported) naming what `format` accepts when it cannot allocate in
/// granules of `granule` bytes: raw a power of two of at least 4 KiB; qcow2 a cluster size
/// (a power of two, 512 B to 2 MiB); vmdk only its 64 KiB grain; vhdx a block size (a power
/// of two, 1 MiB to 256 MiB).
void check_granule(CompactFormat format, std::uint64_t granule);

/// The steps of compact_to_copy, in the order they run (compact_steps).
enum class CompactStep {
    Analyse,        ///< the input's analysis: MFT records
    Plan,           ///< the packing plans: streams considered
    Copy,           ///< the used clusters into a sparse raw file: bytes of the virtual disk
    Move,           ///< the packing moves: moves
    /// per volume, the input's streams. Hashing starts with the copy, on a thread of its own;
    /// the step is what is left of it when the moves are done.
    HashInput,
    AnalyseOutput,  ///< per volume, the output's analysis: MFT records
    Sparsify,       ///< per volume, free clusters and zero blocks punched out: bytes of the virtual disk
    HashOutput,     ///< per volume, the output's streams
    Convert,        ///< qemu-img convert into the container, then its check (no counts)
};

struct CompactOptions {
    std::string output;   ///< the new image; replaced only when everything passed
    bool replace = true;  ///< as ApplyOptions::replace
    CompactFormat format = CompactFormat::Raw;
    std::uint64_t granule = 0;  ///< bytes; 0: default_granule(format)
    bool pack = true;           ///< false: sparsify only, move nothing
    bool verify = true;         ///< false: skip the proofs (--no-verify)
    bool allow_vss = false;     ///< compact even when shadow copy stores exist
    /// Borrowed, may be shared: every byte copied or moved first takes its tokens, and the
    /// conversion runs at its rate (qemu-img convert -r). None: unlimited.
    RateLimiter* limiter = nullptr;
    /// Called as each step begins (those of compact_steps), before its first progress report.
    std::function<void(CompactStep)> on_step;
};

/// One NTFS volume of the disk, as compaction left it.
struct CompactVolume {
    int partition = 0;
    Plan plan;  ///< the packing plan (strategy shrink at the granule); empty without packing
    MoveOutcome moves;
    std::optional<ApplyVerification> verification;  ///< none with verify = false
    std::uint64_t free_bytes = 0;  ///< NTFS-free bytes of the volume after packing, none of them stored
};

/// What compact_to_copy did. Granules are `granule`-byte blocks of the virtual disk.
struct CompactResult {
    std::string output;
    CompactFormat format = CompactFormat::Raw;
    std::uint64_t granule = 0;
    bool packed = true;
    std::vector<CompactVolume> volumes;
    std::uint64_t disk_bytes = 0;  ///< the virtual disk's size
    /// Granules the input stores any byte of (every layer, as the flattened disk).
    std::uint64_t granules_input = 0;
    /// Granules holding a used NTFS cluster or data outside the NTFS volumes that the input
    /// stores, before packing: what sparsifying alone leaves in use (zero blocks aside).
    std::uint64_t granules_sparsified = 0;
    /// The same after the packing plans (their destinations count as stored).
    std::uint64_t granules_packed = 0;
    /// Granules the output stores data in: its non-zero blocks (raw), or the blocks
    /// `qemu-img map` reports as data (containers), which the proof requires to be the same.
    std::uint64_t granules_output = 0;
    std::uint64_t data_bytes_output = 0;  ///< virtual-disk bytes the output stores (non-zero blocks)
    std::uint64_t host_bytes_input = 0;   ///< bytes the input's layer files hold on the host
    std::uint64_t host_bytes_output = 0;  ///< bytes the output file holds on the host
    std::uint64_t output_file_bytes = 0;  ///< the output file's size
    std::uint64_t bytes_copied = 0;       ///< bytes copied from the input (moves' destinations included)
    std::vector<std::string> warnings;    ///< as ApplyResult::warnings
    double seconds = 0;
};

/// Compacts the image at `path` (opened as `open` says, read-only) into a new image at
/// `options.output`: every NTFS volume is analysed and refused as apply refuses one (dirty,
/// hibernated, unclean $LogFile, $MFTMirr, shadow copies unless allowed); with packing, a
/// shrink plan at the granule per volume (docs/planner.md §8); then the stored bytes outside
/// NTFS-free clusters are copied into a sparse raw file beside the output, the plans' moves
/// carried out on it (carry_out_moves), each volume proved as apply proves one once its free
/// clusters and zero blocks are punched out, and the rest of the disk's zero blocks punched.
/// For a container format, qemu-img converts the raw file and the result is checked
/// (`qemu-img check`, `qemu-img compare` with the raw file, `qemu-img map` granule for
/// granule). Only then is it renamed to the output. Throws Error(Unsupported) for an
/// output that is the input, exists (unless replace) or is not a regular file, a disk
/// without NTFS volumes, a granule the format cannot take, a raw output on a file system
/// without holes, or a missing qemu-img; Error(Unsafe) for a volume apply would refuse;
/// Error(Corrupt, "verification failed: …"); Error(Cancelled) from `progress`. Any failure
/// leaves no output and no temporary file. The input is never written.
/// Cost: reads the input's used, stored bytes once to copy, the moved clusters twice, each
/// stream of both disks once to prove, the output's stored bytes once to find zero blocks,
/// and for a container the raw file twice more (convert, compare); disk space: the raw file
/// (the used data) plus the container.
[[nodiscard]] CompactResult compact_to_copy(const std::string& path, const OpenOptions& open,
                                            const CompactOptions& options, const Progress& progress = {});

/// The steps compact_to_copy runs with `options`, in order: Analyse, Plan (packing), Copy,
/// Move (packing), then HashInput once per NTFS volume, then AnalyseOutput, Sparsify and
/// HashOutput (without verify, Sparsify alone) once per volume, the last Sparsify going on
/// over the disk outside the volumes, and Convert for a container.
[[nodiscard]] std::vector<CompactStep> compact_steps(const CompactOptions& options);

}  // namespace guestfrag
