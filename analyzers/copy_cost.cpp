// SPDX-License-Identifier: GPL-2.0-or-later
#include "analyzers/copy_cost.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/image/host_layout.hpp"

namespace guestfrag {
namespace {

using Bytes = ByteSet::interval_type;

std::uint64_t ceil_div(std::uint64_t value, std::uint64_t unit) { return value / unit + (value % unit != 0); }

/// Adds to `out` the bytes of `stored` (disjoint ranges in guest order) that no run of
/// `runs` (in guest order, each inside `stored`) places: the compressed data. Each
/// compressed cluster or grain is stored (and so copied) on its own, so the transfers are
/// the granules those bytes touch. One merged walk over both: O(ranges + runs).
template <typename Ranges>
void add_compressed(CopySource& out, const Ranges& stored, const std::vector<HostExtent>& runs,
                    std::uint64_t granule) {
    const std::uint64_t g = std::max<std::uint64_t>(granule, 1);
    const auto add = [&](std::uint64_t lo, std::uint64_t hi) {
        if (lo >= hi) return;
        out.compressed_bytes += hi - lo;
        out.compressed_transfers += (hi - 1) / g - lo / g + 1;
    };
    auto run = runs.begin();
    for (const auto& r : stored) {
        std::uint64_t at = r.lower();
        while (run != runs.end() && run->virtual_offset < r.upper()) {
            if (run->virtual_offset + run->length > at) {
                add(at, std::max(at, run->virtual_offset));
                at = std::max(at, run->virtual_offset + run->length);
            }
            ++run;
        }
        add(at, r.upper());
    }
}

/// Highest file index of `layer`'s runs, plus one: how many file numbers it takes.
std::uint32_t files_of(const Layer& layer) {
    std::uint32_t n = 1;
    for (const HostExtent& e : layer.host_extents) n = std::max(n, e.file + 1);
    return std::max(n, static_cast<std::uint32_t>(layer.file_spans.size()));
}

std::string size_text(std::uint64_t bytes) {
    char text[32];
    if (bytes % kCopyMiB == 0)
        std::snprintf(text, sizeof text, "%llu MiB", static_cast<unsigned long long>(bytes / kCopyMiB));
    else
        std::snprintf(text, sizeof text, "%llu KiB", static_cast<unsigned long long>(bytes / 1024));
    return text;
}

/// Reads [file_offset, +length) of a file starting at byte `base` of the datastore, in
/// pieces of at most `io` bytes.
void add_reads(std::vector<Io>& ios, std::uint64_t base, std::uint64_t file_offset, std::uint64_t length,
               std::uint64_t io) {
    for (std::uint64_t done = 0; done < length; done += io)
        ios.push_back({static_cast<std::int64_t>((base + file_offset + done) / kSectorBytes),
                       std::min(io, length - done)});
}

/// The ratio a/b with one decimal ("10.7").
std::string ratio_text(std::uint64_t a, std::uint64_t b) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f",
                  static_cast<double>(a) / static_cast<double>(std::max<std::uint64_t>(b, 1)));
    return text;
}

/// The chain `layers` (top first) as a full clone reads it: chain_copy_source over pointers,
/// so that a layer can be swapped for another without copying the rest.
CopySource chain_source(const std::vector<const Layer*>& layers) {
    CopySource out;
    ByteSet above;  // what the layers above store or declare zero: hidden below them
    std::uint32_t file_base = 0;
    std::vector<HostExtent> runs;
    ByteSet copied;
    for (const Layer* each : layers) {
        const Layer& layer = *each;
        const ByteSet visible = layer.allocated - above;
        std::vector<HostExtent> shown;  // the layer's runs clipped to what it shows
        for (const HostExtent& e : layer.host_extents) {
            const auto [first, last] =
                visible.equal_range(Bytes::right_open(e.virtual_offset, e.virtual_offset + e.length));
            for (auto it = first; it != last; ++it) {
                const std::uint64_t lo = std::max(it->lower(), e.virtual_offset);
                const std::uint64_t hi = std::min(it->upper(), e.virtual_offset + e.length);
                if (lo < hi)
                    shown.push_back(
                        {lo, e.file_offset + (lo - e.virtual_offset), hi - lo, file_base + e.file});
            }
        }
        add_compressed(out, visible, shown, layer.growth_granule());
        runs.insert(runs.end(), shown.begin(), shown.end());
        copied += visible;
        above += layer.allocated;
        above += layer.zero;
        file_base += files_of(layer);
    }
    std::sort(runs.begin(), runs.end(),
              [](const HostExtent& a, const HostExtent& b) { return a.virtual_offset < b.virtual_offset; });
    for (const HostExtent& e : runs) append_host_extent(out.runs, e);
    out.copied.assign(copied.begin(), copied.end());
    return out;
}

}  // namespace

const OffloadPreset* find_offload_preset(std::string_view name) noexcept {
    for (const OffloadPreset& p : kOffloadPresets)
        if (name == p.name) return &p;
    return nullptr;
}

void check_copy_options(const CopyOptions& options) {
    if (options.transfer_sizes.empty()) throw Error(ErrorKind::Unsupported, "no transfer size given");
    for (const std::uint64_t t : options.transfer_sizes)
        if (t == 0 || t % kSectorBytes != 0 || t > 16 * kCopyMiB)
            throw Error(ErrorKind::Unsupported,
                        "transfer size " + std::to_string(t) +
                            " bytes: give a multiple of 512 bytes up to 16 MiB (ESXi's largest)");
    if (options.host_io_bytes == 0 || options.host_io_bytes % kSectorBytes != 0)
        throw Error(ErrorKind::Unsupported, "host copy IO size must be a positive multiple of 512 bytes");
    for (const double cost : {options.preset.command_seconds, options.preset.byte_seconds})
        if (!std::isfinite(cost) || cost < 0)
            throw Error(ErrorKind::Unsupported, "offload costs must be finite and not negative");
}

CopySource layer_copy_source(const Layer& layer) {
    CopySource out;
    out.runs = layer.host_extents;
    out.copied.assign(layer.allocated.begin(), layer.allocated.end());
    add_compressed(out, layer.allocated, layer.host_extents, layer.growth_granule());
    return out;
}

CopySource chain_copy_source(std::span<const Layer> layers) {
    std::vector<const Layer*> chain;
    for (const Layer& layer : layers) chain.push_back(&layer);
    return chain_source(chain);
}

CopySource image_copy_source(std::span<const Layer> layers) {
    return layers.size() == 1 ? layer_copy_source(layers.front()) : chain_copy_source(layers);
}

CopyStates copy_states(std::span<const Layer> layers, const Layer& top_after, const CopyOptions& options) {
    check_copy_options(options);
    if (layers.empty()) throw Error(ErrorKind::Internal, "copy states of an image without layers");
    CopyStates out;
    out.now = copy_figures(image_copy_source(layers), options);
    std::vector<const Layer*> after{&top_after};
    for (const Layer& layer : layers.subspan(1)) after.push_back(&layer);
    out.after_plan =
        copy_figures(after.size() == 1 ? layer_copy_source(top_after) : chain_source(after), options);
    out.advice = copy_advice(out.now, out.after_plan);
    return out;
}

const OffloadFigures* offload_at(const CopyFigures& figures, std::uint64_t transfer) noexcept {
    for (const OffloadFigures& f : figures.offload)
        if (f.transfer_size == transfer) return &f;
    return nullptr;
}

const OffloadFigures* reference_offload(const CopyFigures& figures) noexcept {
    if (const OffloadFigures* f = offload_at(figures, 4 * kCopyMiB)) return f;
    return figures.offload.empty() ? nullptr : &figures.offload.front();
}

std::vector<CopyWarning> copy_advice(const CopyFigures& now, const CopyFigures& after_plan) {
    const OffloadFigures* n = reference_offload(now);
    const OffloadFigures* a = reference_offload(after_plan);
    if (n == nullptr || a == nullptr) return {};
    const std::uint64_t A = n->commands;
    const std::uint64_t B = a->commands;
    const std::uint64_t C = a->relaid_commands;
    const std::string at = " at " + size_text(a->transfer_size) + " transfers";
    // B ≥ 1.1·A in integers: 10·B ≥ 11·A.
    if (B > A && 10 * B >= 11 * A)
        return {{"COPY_PLAN_SCATTERS",
                 "this plan raises the offload commands of a full copy" + at + " from " + std::to_string(A) +
                     " to " + std::to_string(B) +
                     " (the container appends the blocks it writes new); re-lay "
                     "the image after applying it (clone it, Storage vMotion, or `qemu-img convert`): " +
                     std::to_string(C) + " commands, " + ratio_text(B, C) + "x fewer"}};
    if (C > 0 && B >= 2 * C)
        return {{"COPY_RELAY_AFTER_PLAN",
                 "clone this image (template) after applying the plan: copies of the re-laid file issue " +
                     ratio_text(B, C) + "x fewer offload commands" + at + " (" + std::to_string(B) + " -> " +
                     std::to_string(C) + ")"}};
    return {};
}

CopyFigures copy_figures(const CopySource& source, const CopyOptions& options) {
    CopyFigures out;
    for (const auto& r : source.copied) out.bytes += r.upper() - r.lower();
    out.runs = source.runs.size();
    out.relaid_runs = source.copied.size();
    out.compressed_bytes = source.compressed_bytes;
    out.compressed_transfers = source.compressed_transfers;
    const double bytes = static_cast<double>(out.bytes);
    const auto seconds = [&](std::uint64_t commands) {
        return static_cast<double>(commands) * options.preset.command_seconds +
               bytes * options.preset.byte_seconds;
    };
    for (const std::uint64_t t : options.transfer_sizes) {
        OffloadFigures f;
        f.transfer_size = t;
        f.command_limit = options.vmfs5_thin ? std::min(t, kVmfs5ThinCap) : t;
        for (const HostExtent& e : source.runs) f.commands += ceil_div(e.length, f.command_limit);
        f.compressed_commands = source.compressed_transfers;
        f.commands += f.compressed_commands;
        for (const auto& r : source.copied)
            f.relaid_commands += ceil_div(r.upper() - r.lower(), f.command_limit);
        if (f.commands > 0) f.average_bytes = bytes / static_cast<double>(f.commands);
        if (f.relaid_commands > 0) f.relaid_average_bytes = bytes / static_cast<double>(f.relaid_commands);
        f.seconds = seconds(f.commands);
        f.relaid_seconds = seconds(f.relaid_commands);
        out.offload.push_back(f);
    }

    // The files as they would lie on a datastore, one after another in file order.
    std::vector<std::uint64_t> base;
    for (const HostExtent& e : source.runs) {
        if (base.size() <= e.file) base.resize(std::size_t{e.file} + 1, 0);
        base[e.file] = std::max(base[e.file], e.file_offset + e.length);
    }
    std::uint64_t next = 0;
    for (std::uint64_t& b : base) {
        const std::uint64_t end = b;
        b = next;
        next += ceil_div(end, kSectorBytes) * kSectorBytes;
    }
    std::vector<Io> ios;
    ios.reserve(source.runs.size());
    for (const HostExtent& e : source.runs)
        add_reads(ios, base[e.file], e.file_offset, e.length, options.host_io_bytes);
    out.host_copy = summarize_ios(ios, options.devices);
    ios.clear();
    std::uint64_t at = 0;
    for (const auto& r : source.copied) {
        add_reads(ios, 0, at, r.upper() - r.lower(), options.host_io_bytes);
        at += ceil_div(r.upper() - r.lower(), kSectorBytes) * kSectorBytes;
    }
    out.host_copy_relaid = summarize_ios(ios, options.devices);
    return out;
}

std::vector<CopyWarning> copy_warnings(const CopyFigures& figures) {
    const OffloadFigures* worst = nullptr;
    for (const OffloadFigures& f : figures.offload) {
        if (f.relaid_commands == 0 || f.commands < 2 * f.relaid_commands) continue;
        // The largest ratio, compared without division: a/b > c/d ⇔ a·d > c·b.
        if (worst == nullptr ||
            static_cast<double>(f.commands) * static_cast<double>(worst->relaid_commands) >
                static_cast<double>(worst->commands) * static_cast<double>(f.relaid_commands))
            worst = &f;
    }
    if (worst == nullptr) return {};
    const std::string ratio = ratio_text(worst->commands, worst->relaid_commands);
    return {{"COPY_LAYOUT_SCATTERED",
             "at " + size_text(worst->transfer_size) + " transfers a full copy issues " +
                 std::to_string(worst->commands) + " offload commands, " + ratio + "x the " +
                 std::to_string(worst->relaid_commands) +
                 " of the same data laid out contiguously: cloning or converting the image re-lays it"}};
}

PhysicalFigures physical_figures(const PhysicalFile& file) {
    PhysicalFigures out;
    // Everything but the extents, which can be many and are summed up here.
    out.file.file = file.file;
    out.file.path = file.path;
    out.file.note = file.note;
    out.file.unplaced_extents = file.unplaced_extents;
    const PhysicalExtent* previous = nullptr;
    for (const PhysicalExtent& e : file.extents) {
        out.mapped_bytes += e.length;
        if (previous == nullptr || previous->logical + previous->length != e.logical ||
            previous->physical + previous->length != e.physical)
            ++out.extents;
        previous = &e;
    }
    return out;
}

ImageCopyCost analyze_copy_cost(const DiskImage& image, const CopyOptions& options) {
    check_copy_options(options);
    ImageCopyCost out;
    const std::vector<Layer>& layers = image.layers();
    for (std::size_t i = 0; i < layers.size(); ++i) {
        out.layers.push_back(copy_figures(layer_copy_source(layers[i]), options));
        std::vector<PhysicalFigures> files;
        try {
            for (const PhysicalFile& f : image.physical_files(i)) files.push_back(physical_figures(f));
        } catch (const Error& e) {
            // The physical level is a second opinion: a failure to read it is said, not fatal.
            PhysicalFigures failed;
            failed.file.path = layers[i].path;
            failed.file.note = e.what();
            files = {failed};
        }
        out.physical.push_back(std::move(files));
    }
    out.chain = layers.size() == 1 ? out.layers.front() : copy_figures(chain_copy_source(layers), options);
    out.warnings = copy_warnings(out.chain);
    return out;
}

}  // namespace guestfrag
