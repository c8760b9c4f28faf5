// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/compact.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyzers/layer_usage.hpp"
#include "core/apply/disk_copy.hpp"
#include "core/apply/mover.hpp"
#include "core/apply/sparsify.hpp"
#include "core/apply/volume_checks.hpp"
#include "core/error.hpp"
#include "core/image/byte_source.hpp"
#include "core/image/nbd_source.hpp"
#include "core/image/nbd_uri.hpp"
#include "core/image/open_image.hpp"
#include "core/image/writable_raw_file.hpp"
#include "core/io/background.hpp"
#include "core/io/child_process.hpp"
#include "core/io/heap.hpp"
#include "core/io/rate_limiter.hpp"
#include "core/plan/growth.hpp"
#include "pipeline/copy_output.hpp"
#include "pipeline/pipeline.hpp"

namespace guestfrag {
namespace {

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;

struct FormatInfo {
    CompactFormat format;
    std::string_view name;
    std::uint64_t default_granule;
};

constexpr std::array<FormatInfo, 4> kFormats{{
    {CompactFormat::Raw, "raw", kMiB},
    {CompactFormat::Qcow2, "qcow2", 64 * kKiB},
    {CompactFormat::Vmdk, "vmdk", 64 * kKiB},
    {CompactFormat::Vhdx, "vhdx", kMiB},
}};

bool power_of_two(std::uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

std::uint64_t granules(const ByteSet& bytes, std::uint64_t granule) {
    return boost::icl::length(whole_granules_touching(bytes, granule)) / granule;
}

/// Bytes the host file at `path` holds (st_blocks · 512); for an NBD export, what its block
/// status calls data.
std::uint64_t held_bytes(const std::string& path) {
    if (is_nbd_uri(path)) {
        const auto source = NbdSource::open(path);
        return boost::icl::length(source->stored_ranges(source->allocation_unit().value_or(512)));
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return 0;
    return static_cast<std::uint64_t>(st.st_blocks) * 512;
}

/// Bytes the input's files hold on the host: each layer's own file and the raw or flat
/// files it names (a VMDK's extents), each once.
std::uint64_t input_held_bytes(const DiskImage& image) {
    std::set<std::string> files;
    for (std::size_t i = 0; i < image.layers().size(); ++i) {
        files.insert(image.layers()[i].path);
        for (const PhysicalFile& f : image.physical_files(i)) files.insert(f.path);
    }
    std::uint64_t total = 0;
    for (const std::string& f : files) total += held_bytes(f);
    return total;
}

/// The file system block of the file `fd`: the unit a punched hole frees.
std::uint64_t file_block(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_blksize <= 0) return 4096;
    const auto block = static_cast<std::uint64_t>(st.st_blksize);
    return power_of_two(block) && block <= kMiB ? block : 4096;
}

void begin(const CompactOptions& options, CompactStep step) {
    if (options.on_step) options.on_step(step);
}

/// qemu-img's -o options for `format` allocating in `granule`-byte blocks.
std::string create_options(CompactFormat format, std::uint64_t granule) {
    switch (format) {
        case CompactFormat::Qcow2:
            return "cluster_size=" + std::to_string(granule);
        case CompactFormat::Vmdk:
            return "subformat=monolithicSparse";
        case CompactFormat::Vhdx:
            return "subformat=dynamic,block_size=" + std::to_string(granule);
        case CompactFormat::Raw:
            break;
    }
    return {};
}

/// The virtual-disk bytes `qemu-img map` says the image at `path` stores data for.
ByteSet mapped_data(const std::string& qemu_img, const std::string& format, const std::string& path,
                    const std::stop_token& stop) {
    const std::string text = run_program({qemu_img, "map", "--output=json", "-f", format, path}, stop);
    ByteSet out;
    try {
        for (const auto& entry : nlohmann::json::parse(text))
            if (entry.at("data").get<bool>()) {
                const auto start = entry.at("start").get<std::uint64_t>();
                out += ByteSet::interval_type::right_open(start,
                                                          start + entry.at("length").get<std::uint64_t>());
            }
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorKind::Internal,
                    std::string("qemu-img map printed what is not its JSON map: ") + e.what());
    }
    return out;
}

/// Converts the proved raw disk `raw` into `format` at `target` with qemu-img and proves the
/// container: its own check, the same bytes as `raw`, and data stored in exactly the
/// granules `raw` stores data in. Returns the granules it stores data in.
std::uint64_t convert(const std::string& raw, std::uint64_t disk_size, const std::string& target,
                      CompactFormat format, std::uint64_t granule, const ByteSet& raw_data,
                      const CompactOptions& options, const Progress& progress) {
    const std::string qemu_img = find_program("qemu-img", "qemu-utils");
    const std::string name(compact_format_name(format));
    // Created first and filled with --target-is-zero: the holes of the raw disk are then
    // never written, where a plain convert writes zeros into formats without a zero-write
    // of their own (vhdx) and so allocates every block.
    (void)run_program({qemu_img, "create", "-q", "-f", name, "-o", create_options(format, granule), target,
                       std::to_string(disk_size)},
                      progress.stop);
    std::vector<std::string> args{qemu_img, "convert", "-q", "-n", "--target-is-zero",
                                  "-f",     "raw",     "-O", name};
    if (options.limiter != nullptr && options.limiter->rate() != 0)
        args.insert(args.end(), {"-r", std::to_string(options.limiter->rate())});
    args.insert(args.end(), {raw, target});
    (void)run_program(args, progress.stop);
    // qemu's vhdx driver reports no block status (`qemu-img map` calls every byte data), so
    // a vhdx output's blocks are read from its BAT by guestfrag's own reader.
    const ByteSet data = format == CompactFormat::Vhdx ? open_image(target)->layers().front().allocated
                                                       : mapped_data(qemu_img, name, target, progress.stop);
    if (options.verify) {
        (void)run_program({qemu_img, "check", "-q", "-f", name, target}, progress.stop);
        (void)run_program({qemu_img, "compare", "-q", "-f", "raw", "-F", name, raw, target}, progress.stop);
        const ByteSet want = whole_granules_touching(raw_data, granule);
        const ByteSet got = whole_granules_touching(data, granule);
        if (want != got)
            verification_failed(
                "the " + name + " output stores data in " + std::to_string(granules(data, granule)) +
                " granules, the verified raw disk in " + std::to_string(granules(raw_data, granule)));
    }
    return granules(data, granule);
}

}  // namespace

std::string_view compact_format_name(CompactFormat format) noexcept {
    for (const FormatInfo& f : kFormats)
        if (f.format == format) return f.name;
    return "raw";
}

std::optional<CompactFormat> parse_compact_format(std::string_view name) noexcept {
    for (const FormatInfo& f : kFormats)
        if (f.name == name) return f.format;
    return std::nullopt;
}

std::uint64_t default_granule(CompactFormat format) noexcept {
    for (const FormatInfo& f : kFormats)
        if (f.format == format) return f.default_granule;
    return kMiB;
}

void check_granule(CompactFormat format, std::uint64_t granule) {
    const auto refuse = [&](const std::string& what) {
        throw Error(ErrorKind::Unsupported, "a " + std::string(compact_format_name(format)) +
                                                " output cannot allocate in " + std::to_string(granule) +
                                                "-byte granules: " + what);
    };
    switch (format) {
        case CompactFormat::Raw:
            if (!power_of_two(granule) || granule < 4 * kKiB) refuse("give a power of two of at least 4 KiB");
            break;
        case CompactFormat::Qcow2:
            if (!power_of_two(granule) || granule < 512 || granule > 2 * kMiB)
                refuse("its cluster size is a power of two from 512 B to 2 MiB");
            break;
        case CompactFormat::Vmdk:
            if (granule != 64 * kKiB) refuse("its grain is 64 KiB");
            break;
        case CompactFormat::Vhdx:
            if (!power_of_two(granule) || granule < kMiB || granule > 256 * kMiB)
                refuse("its block size is a power of two from 1 MiB to 256 MiB");
            break;
    }
}

std::vector<CompactStep> compact_steps(const CompactOptions& options) {
    std::vector<CompactStep> steps{CompactStep::Analyse};
    if (options.pack) steps.push_back(CompactStep::Plan);
    steps.push_back(CompactStep::Copy);
    if (options.pack) steps.push_back(CompactStep::Move);
    if (options.verify)
        steps.insert(steps.end(), {CompactStep::HashInput, CompactStep::AnalyseOutput, CompactStep::Sparsify,
                                   CompactStep::HashOutput});
    else
        steps.push_back(CompactStep::Sparsify);
    if (options.format != CompactFormat::Raw) steps.push_back(CompactStep::Convert);
    return steps;
}

CompactResult compact_to_copy(const std::string& path, const OpenOptions& open, const CompactOptions& options,
                              const Progress& progress) {
    const auto started = std::chrono::steady_clock::now();
    CompactResult result;
    result.output = options.output;
    result.format = options.format;
    result.packed = options.pack;
    result.granule = options.granule != 0 ? options.granule : default_granule(options.format);
    check_granule(options.format, result.granule);
    if (options.format != CompactFormat::Raw) (void)find_program("qemu-img", "qemu-utils");
    check_output_path(options.output, options.replace);  // before the analysis: it takes a while
    result.warnings = remove_dead_leftovers(options.output, "a compact");

    begin(options, CompactStep::Analyse);
    // Not const: its maps are let go before the output is analysed.
    OpenedImage input = open_and_hold(path, open, std::nullopt, progress);
    check_apply_output(options.output, *input.image, options.replace);
    const DiskImage& image = *input.image;
    const ImageAnalysis& analysis = *input.analysis;
    if (analysis.volumes.empty())
        throw Error(ErrorKind::Unsupported,
                    "the disk has no NTFS volume guestfrag can read: nothing to compact");
    const std::vector<std::string> layer_text = layer_warnings(image);
    result.warnings.insert(result.warnings.begin(), layer_text.begin(), layer_text.end());

    // Everything that may refuse runs before the first byte is written, but the packing's
    // planning: what the copy wrote beside it goes with the temporary file.
    std::vector<VolumeWindow> windows;
    for (const VolumeAnalysis& v : analysis.volumes) {
        const VolumeWindow window = volume_window(analysis, v.map);
        check_volume_state(image, window, v.map, options.allow_vss);
        windows.push_back(window);
    }
    // The raw disk: the output itself, or the intermediate a container is converted from.
    const bool raw = options.format == CompactFormat::Raw;
    TemporaryDisk disk_file(options.output, options.replace);
    const bool holes = can_punch_holes(disk_file.fd());
    if (!holes && raw)
        throw Error(ErrorKind::Unsupported,
                    "the file system of " + directory_of(options.output).string() +
                        " cannot punch holes, so a raw output would store the whole disk: "
                        "use --output-format qcow2");
    const std::uint64_t block = file_block(disk_file.fd());
    const std::uint64_t size = image.size();
    result.disk_bytes = size;
    const ByteSet disk(ByteSet::interval_type::right_open(0, size));

    // The copy (step 3) goes in two parts. What no packing moves, the NTFS metadata the
    // file system pins ($MFT the most of it) and everything outside the NTFS volumes, is
    // copied beside the planning: the copy waits on the host disk's writes and leaves a
    // core free that the planning takes (docs/compact.md step 2).
    ByteSet pinned;
    std::optional<Background<SparseCopy>> pinned_copy;
    if (options.pack) {
        pinned = disk;
        for (const VolumeWindow& w : windows)
            pinned -= ByteSet::interval_type::right_open(w.offset, w.offset + w.length);
        for (const VolumeAnalysis& v : analysis.volumes) pinned += pinned_bytes(v.map);
        pinned_copy.emplace(
            [&image, fd = disk_file.fd(), &pinned, block, limiter = options.limiter](std::stop_token stop) {
                Progress silent;  // the planning's step is the one shown meanwhile
                silent.stop = std::move(stop);
                return copy_disk_sparse(
                    image, fd, silent, limiter,
                    {.only = &pinned, .hole_block = block, .relocated = {}, .frontier = nullptr});
            },
            progress.stop);
    }
    std::vector<PlannedVolume> planned;
    if (options.pack) begin(options, CompactStep::Plan);
    for (std::size_t i = 0; i < analysis.volumes.size(); ++i) {
        if (options.pack) {
            PlanOptions packing;
            packing.strategy = Strategy::Shrink;
            packing.granule = result.granule;
            packing.split_streams = true;
            packing.carried_out_at_once = true;
            planned.push_back(plan_volume(input, i, packing, progress));
        } else {
            PlannedVolume as_is;
            as_is.volume = i;
            // The input's own map, shared rather than copied: nothing moves.
            as_is.after = std::shared_ptr<const VolumeMap>(input.analysis, &analysis.volumes[i].map);
            planned.push_back(std::move(as_is));
        }
    }

    ByteSet free_before;
    ByteSet moved_out;  // the moves' sources
    {
        const ByteSet stored = image.stored() & disk;
        ByteSet free_after;
        ByteSet written = stored;
        for (std::size_t i = 0; i < planned.size(); ++i) {
            free_before += free_bytes_on_disk(analysis.volumes[i].map);
            free_after += free_bytes_on_disk(*planned[i].after);
            written += moved_bytes(analysis.volumes[i].map, planned[i].plan, &Move::to_lcn);
            moved_out += moved_bytes(analysis.volumes[i].map, planned[i].plan, &Move::from_lcn);
            planned[i].after.reset();  // the proofs replay the moves done themselves (expect_moves)
        }
        result.granules_input = granules(stored, result.granule);
        result.granules_sparsified = granules(stored - free_before, result.granule);
        result.granules_packed = granules((written & disk) - free_after, result.granule);
    }
    result.host_bytes_input = input_held_bytes(image);

    std::vector<std::unique_ptr<InputHashing>> hashing;
    if (options.verify)
        for (std::size_t i = 0; i < planned.size(); ++i)
            hashing.push_back(
                std::make_unique<InputHashing>(image, analysis.volumes[i].map, planned[i].plan));
    begin(options, CompactStep::Copy);
    // Copied in the file system's blocks, each tested for zeros as it is read: afterwards
    // only the blocks written since (the moves, libntfs-3g's records) and those a discard
    // cuts into need reading again. The clusters the moves take data out of are left out:
    // the moves read them from the input (DeferredCopyDisk) and find them written already,
    // in this pass, at their destinations (copied_ahead), those the packing fills again
    // with other data among them, so none is read again, written twice or punched out
    // afterwards.
    moved_out -= free_before;  // a stream moved twice: its second move's source was free
    std::vector<Relocation> destinations;
    SparseCopy copy;
    {
        const ByteSet keep = disk - free_before - moved_out;
        for (std::size_t i = 0; i < planned.size(); ++i) {
            const std::vector<Relocation> d =
                moves_to_copy_ahead(analysis.volumes[i].map, planned[i].plan, keep, free_before);
            destinations.insert(destinations.end(), d.begin(), d.end());
        }
        std::ranges::sort(destinations, {}, &Relocation::to);  // the volumes are disjoint
        if (pinned_copy) copy = pinned_copy->get();
        pinned_copy.reset();
        const ByteSet rest = keep - pinned;
        const SparseCopy rest_copy = copy_disk_sparse(
            image, disk_file.fd(), progress, options.limiter,
            {.only = &rest, .hole_block = block, .relocated = destinations, .frontier = nullptr});
        copy.bytes_written += rest_copy.bytes_written;
        copy.blocks += rest_copy.blocks;
    }
    // Their nodes, before the moves' tables fill: on the 1M-file volume the moves then
    // held 207-247 MiB instead of 276.
    free_before.clear();
    pinned.clear();
    release_freed_memory();
    result.bytes_copied = copy.bytes_written;
    disk_file.start_writeback();  // beside the moves and the proofs
    WritableRawFile file(disk_file.fd(), disk_file.path(), /*record_writes=*/true);
    // After the copy, not beside it as apply's moves (copy_beside_moves): the packing's
    // moves are a fifth of its time, and beside the copy and the input's hashing they
    // found no core free (docs/benchmarks.md, "The moves beside the copy").
    DeferredCopyDisk output(file, image, std::move(moved_out), destinations);
    if (options.pack) begin(options, CompactStep::Move);
    for (std::size_t i = 0; i < planned.size(); ++i) {
        CompactVolume volume;
        volume.partition = analysis.volumes[i].map.partition;
        if (!planned[i].plan.moves.empty()) {
            volume.moves = carry_out_moves(output, windows[i], analysis.volumes[i].map, planned[i].plan,
                                           progress, {}, options.limiter);
            // What a skipped move left where it was, or libntfs-3g kept, is still in use.
            result.bytes_copied += output.copy(bytes_in_use(output, windows[i], output.deferred()),
                                               options.limiter, progress.stop);
        }
        result.volumes.push_back(std::move(volume));
    }
    // No fsync yet: the copy's bytes are on their way to the host disk, and what the moves
    // leave free is punched out below, so what is punched before it reaches the disk is
    // never written at all. The one fsync comes before OUT is kept.
    release_freed_memory();  // what the copy and the mover freed, before the proofs' tables fill
    // Each volume as the moves done leave it; without verification, its free clusters are
    // what sparsifying punches out.
    std::vector<ExpectedVolume> expected;
    for (std::size_t i = 0; i < planned.size(); ++i) {
        if (options.verify) {
            begin(options, CompactStep::HashInput);
            expected.push_back(hashing[i]->expected(result.volumes[i].moves, progress));
            hashing[i].reset();
        } else {
            expected.push_back(
                expect_moves(analysis.volumes[i].map, planned[i].plan, result.volumes[i].moves, {}));
        }
    }
    input.analysis.reset();  // the input's maps are gone: the proofs need only `expected` of them
    release_freed_memory();  // their runs, before the output's are read

    // Each volume's free clusters and zero blocks are found before its proofs read the file,
    // and freed beside them (Discards): what the proofs read of those bytes reads as zeros
    // either way. `data` is what the file stores, block by block; `unchecked` the part of it
    // no zero test has seen since it was last written.
    ByteSet unchecked = whole_granules_touching(file.written(), block) & disk;
    ByteSet data = std::move(copy.blocks) + unchecked;
    Discards discards(disk_file.fd(), disk_file.path(), size, holes);
    const auto drop_zero_blocks = [&](const ByteSet& blocks, const Progress& meter) {
        data -= blocks;
        data += discards.zero_blocks(blocks, block, meter);
        unchecked -= blocks;
    };
    const auto sparsify_volume = [&](std::size_t i, const ByteSet& free) {
        begin(options, CompactStep::Sparsify);
        discards.stored(free);
        const ByteSet gone = whole_granules_within(free, block);
        data -= gone;
        unchecked -= gone;
        // A block the free clusters cover in part is zeroed there and may then be all zero.
        const ByteSet window(
            ByteSet::interval_type::right_open(windows[i].offset, windows[i].offset + windows[i].length));
        drop_zero_blocks((unchecked + (whole_granules_touching(free, block) - gone)) &
                             whole_granules_touching(window, block) & data,
                         progress);
        discards.start();
        result.volumes[i].free_bytes = boost::icl::length(free);
        release_freed_memory();  // the byte sets above, before the proofs' tables fill
    };
    const OpenOptions output_open;  // the raw file stands alone
    const auto relay = [&](ApplyStep step) {
        if (step == ApplyStep::AnalyseOutput) begin(options, CompactStep::AnalyseOutput);
        if (step == ApplyStep::HashOutput) begin(options, CompactStep::HashOutput);
    };
    for (std::size_t i = 0; i < planned.size(); ++i) {
        if (options.verify)
            prove_held(*input.hold, [&] {
                result.volumes[i].verification =
                    verify_copy(image, expected[i], disk_file.path(), output_open, windows[i], relay, progress,
                                [&](const VolumeMap& after) { sparsify_volume(i, free_bytes_on_disk(after)); });
            });
        else
            sparsify_volume(i, free_bytes_on_disk(expected[i].input_mft, expected[i].free));
        result.volumes[i].plan = std::move(planned[i].plan);
    }
    // Written outside every volume: nothing libntfs-3g does, a few blocks at most. Not
    // metered: the last step's meter counts streams, not bytes of the disk.
    drop_zero_blocks(unchecked, {});
    discards.finish();
    disk_file.sync();
    if (holes) {
        // The host must have freed what was punched: the file stores exactly the data kept.
        const ByteSet kept = host_stored_ranges(disk_file.fd(), size);
        if (kept != data)
            verification_failed("the raw disk stores " + std::to_string(boost::icl::length(kept)) +
                                " bytes, not the " + std::to_string(boost::icl::length(data)) +
                                " bytes of data it keeps (the file system did not free the holes punched)");
    }
    result.data_bytes_output = boost::icl::length(data);

    input.hold->check_unchanged();  // what was read and proved is the input as it is now
    if (raw) {
        result.granules_output = granules(data, result.granule);
        disk_file.commit();
        result.output_file_bytes = size;
    } else {
        begin(options, CompactStep::Convert);
        TemporaryDisk container(options.output, options.replace);
        result.granules_output = convert(disk_file.path(), size, container.path(), options.format,
                                         result.granule, data, options, progress);
        container.sync();
        container.commit();
        struct stat st {};
        if (::stat(options.output.c_str(), &st) == 0)
            result.output_file_bytes = static_cast<std::uint64_t>(st.st_size);
    }
    result.host_bytes_output = held_bytes(options.output);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
}

}  // namespace guestfrag
