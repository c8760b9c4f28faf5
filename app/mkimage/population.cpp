// SPDX-License-Identifier: GPL-2.0-or-later
// Draws the file population: directory tree, names, sizes, append steps, named streams and
// which files get deleted. Pure computation on a seeded generator, so the same options
// always give the same plan (and, since libntfs-3g allocates deterministically, the same
// extents).
#include "app/mkimage/population.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "app/mkimage/seeded_random.hpp"
#include "core/error.hpp"

namespace guestfrag::mkimage {

namespace {

// Data below this stays resident in the MFT record (1 KiB record minus $STANDARD_INFORMATION,
// $FILE_NAME and the per-file $SECURITY_DESCRIPTOR libntfs-3g adds): no clusters.
constexpr std::uint64_t kResidentLimit = 700;
constexpr std::uint64_t kMftRecordSize = 1024;
// Each compressed log holds this many compression units (1 MiB of text at 4 KiB clusters).
constexpr std::uint64_t kCompressedUnits = 16;
constexpr std::uint64_t kMinFilesForSpecials = 8;

constexpr std::array<const char*, 24> kDirWords{
    "Documents", "Projects",  "Archive", "Photos", "Reports", "Data",      "Backup", "Music",
    "Video",     "Downloads", "Drivers", "Logs",   "Temp",    "Cache",     "Config", "Shared",
    "Tools",     "Setup",     "Source",  "Assets", "Fonts",   "Templates", "Help",   "Resources"};
constexpr std::array<const char*, 20> kStems{
    "report", "invoice", "photo",  "IMG",  "setup", "readme", "data",   "notes",  "backup", "log",
    "config", "library", "module", "scan", "draft", "budget", "letter", "manual", "chart",  "record"};
// Extensions by size class, so a listing looks like a used Windows volume.
constexpr std::array<const char*, 5> kTinyExt{".ini", ".lnk", ".url", ".txt", ".dat"};
constexpr std::array<const char*, 6> kSmallExt{".txt", ".xml", ".json", ".png", ".dll", ".js"};
constexpr std::array<const char*, 6> kMediumExt{".dll", ".jpg", ".pdf", ".docx", ".exe", ".xlsx"};
constexpr std::array<const char*, 5> kLargeExt{".msi", ".zip", ".mp4", ".cab", ".iso"};

template <std::size_t N>
const char* pick(SeededRandom& rng, const std::array<const char*, N>& words) {
    return words[rng.below(N)];
}

std::string padded(std::uint64_t value, int width) {
    std::string text = std::to_string(value);
    if (text.size() < static_cast<std::size_t>(width))
        text.insert(0, static_cast<std::size_t>(width) - text.size(), '0');
    return text;
}

/// A size drawn from a mix that resembles a Windows volume: a fifth tiny (resident), most
/// a few KiB, some hundreds of KiB, one in a hundred in the MiB range.
struct DrawnSize {
    std::uint64_t bytes;
    const char* extension;
};

DrawnSize draw_size(SeededRandom& rng) {
    const double klass = rng.unit();
    if (klass < 0.22) return {rng.below(kResidentLimit), pick(rng, kTinyExt)};
    if (klass < 0.84) {
        const double s = std::clamp(rng.lognormalish(6.0 * 1024, 1.7), double(kResidentLimit), 1024.0 * 1024);
        return {static_cast<std::uint64_t>(s), pick(rng, kSmallExt)};
    }
    if (klass < 0.99) {
        const double s = std::clamp(rng.lognormalish(160.0 * 1024, 1.3), 64.0 * 1024, 16.0 * 1024 * 1024);
        return {static_cast<std::uint64_t>(s), pick(rng, kMediumExt)};
    }
    return {static_cast<std::uint64_t>(rng.log_uniform(1024.0 * 1024, 4.0)), pick(rng, kLargeExt)};
}

/// Clusters a stream of `bytes` occupies (0 when resident).
std::uint64_t clusters_of(std::uint64_t bytes, std::uint64_t cluster) {
    return bytes < kResidentLimit ? 0 : (bytes + cluster - 1) / cluster;
}

std::uint64_t cluster_bytes(const FilePlan& f, std::uint64_t cluster) {
    std::uint64_t n = clusters_of(f.named_stream_size, cluster);
    if (f.role == FileRole::Sparse)
        n += 2 * clusters_of(sparse_piece(cluster), cluster);
    else
        n += clusters_of(f.size, cluster);
    return n * cluster;
}

/// $LogFile size as mkntfs chooses it (ntfsprogs/mkntfs.c, mkntfs_initialize_rl_logfile).
std::uint64_t logfile_bytes(std::uint64_t volume) {
    if (volume < (2ull << 20)) return 256ull << 10;
    if (volume < 4'000'000ull) return 512ull << 10;
    if (volume <= (200ull << 20)) return 2ull << 20;
    if (volume >= (12ull << 30)) return 64ull << 20;
    return volume / 200;
}

/// Scales the sizes of non-resident streams of files[first, last) by one factor so their
/// clusters fit `budget` bytes. A few rounds, because per-file cluster rounding does not
/// scale; the originals are kept so each round starts from the drawn sizes.
void fit_sizes(std::vector<FilePlan>& files, std::size_t first, std::size_t last, std::uint64_t budget,
               std::uint64_t cluster) {
    struct Original {
        std::uint64_t size, stream;
    };
    std::vector<Original> drawn;
    std::uint64_t total = 0;
    for (std::size_t i = first; i < last; ++i) {
        drawn.push_back({files[i].size, files[i].named_stream_size});
        total += cluster_bytes(files[i], cluster);
    }
    double factor = 1.0;
    for (int round = 0; round < 6 && total > budget; ++round) {
        factor *= static_cast<double>(budget) / static_cast<double>(total) * 0.98;
        total = 0;
        for (std::size_t i = first; i < last; ++i) {
            auto scale = [&](std::uint64_t bytes) -> std::uint64_t {
                if (bytes < kResidentLimit) return bytes;
                return std::max(kResidentLimit,
                                static_cast<std::uint64_t>(static_cast<double>(bytes) * factor));
            };
            files[i].size = scale(drawn[i - first].size);
            files[i].named_stream_size = scale(drawn[i - first].stream);
            total += cluster_bytes(files[i], cluster);
        }
    }
}

std::vector<DirPlan> plan_dirs(SeededRandom& rng, std::uint32_t count) {
    std::vector<DirPlan> dirs{{"", 0, 0}};
    const std::uint32_t top = std::max<std::uint32_t>(1, count / 4);
    for (std::uint32_t i = 1; i <= count; ++i) {
        std::uint32_t parent = 0;
        if (i > top) {
            // Nest under an earlier directory that is not already 3 deep; give up after a
            // few tries (a fixed number of draws) and use a top-level one.
            parent = static_cast<std::uint32_t>(1 + rng.below(top));
            for (int tries = 0; tries < 8; ++tries) {
                const auto candidate = static_cast<std::uint32_t>(1 + rng.below(i - 1));
                if (dirs[candidate].depth < 3) {
                    parent = candidate;
                    break;
                }
            }
        }
        dirs.push_back(
            {std::string(pick(rng, kDirWords)) + "-" + padded(i, 4), parent, dirs[parent].depth + 1});
    }
    return dirs;
}

}  // namespace

PopulationPlan plan_population(const MkImageOptions& options, std::uint64_t volume_length) {
    SeededRandom rng(options.seed);
    PopulationPlan plan;
    plan.interleave = options.interleave;
    plan.cluster_size = options.cluster_size;
    plan.layout_ini_files = options.layout_ini;
    const std::uint64_t cluster = options.cluster_size;
    const std::uint64_t files = options.files;

    std::uint32_t dir_count = options.directories;
    if (dir_count == 0)
        dir_count = static_cast<std::uint32_t>(
            std::max<std::uint64_t>(files / 500, std::min<std::uint64_t>(8, files / 10 + 1)));

    // Room check before drawing anything big: records, index entries and mkntfs's metadata.
    const std::uint64_t records = files + dir_count + 64 + (files >= kMinFilesForSpecials ? 16 : 0);
    const std::uint64_t index_bytes = files * 256 + dir_count * std::max<std::uint64_t>(4096, cluster);
    const std::uint64_t fixed =
        logfile_bytes(volume_length) + (2ull << 20) + volume_length / cluster / 8 + 8 * cluster;
    const std::uint64_t overhead = fixed + records * kMftRecordSize + index_bytes;
    if (overhead + overhead / 4 > volume_length) {
        const std::uint64_t need_mib = ((overhead + overhead / 4) >> 20) + 1;
        throw Error(ErrorKind::Unsupported, "the volume is too small for " + std::to_string(files) +
                                                " files and " + std::to_string(dir_count) +
                                                " directories (needs about " + std::to_string(need_mib) +
                                                " MiB); raise --size");
    }
    const auto budget =
        static_cast<std::uint64_t>(static_cast<double>(volume_length - overhead) * options.fill);

    plan.dirs = plan_dirs(rng, dir_count);

    // Specials first: they are created first too, at the start of the data zone.
    if (files >= kMinFilesForSpecials) {
        // The pair gets at most an eighth of the budget each, and 4 KiB per run below 4 KiB
        // clusters: there libntfs-3g's allocations for a file grown cluster by cluster span
        // several clusters, so the pair is sized as at 4 KiB.
        const std::uint64_t run_bytes = std::max<std::uint64_t>(cluster, 4096);
        const std::uint64_t pair_bytes =
            std::min(options.list_runs * run_bytes, budget / 8) / cluster * cluster;
        plan.files.push_back({"CBS.log", pair_bytes, 0, 0, 1, FileRole::AttrListPair, false});
        plan.files.push_back({"WindowsUpdate.log", pair_bytes, 0, 0, 1, FileRole::AttrListPair, false});
        const std::uint64_t piece = sparse_piece(cluster);
        const std::uint64_t hole = std::max<std::uint64_t>(16ull << 20, 4 * cluster);
        plan.files.push_back({"SparseDatabase.edb", piece + hole + piece, 0, 0, 1, FileRole::Sparse, false});
        if (options.compressed) {
            const std::uint64_t unit = kCompressionUnitClusters * cluster;
            const std::uint64_t units = std::min(kCompressedUnits, budget / unit / 16);
            for (const char* name : {"setupapi.dev.log", "setupact.log"})
                plan.files.push_back({name, units * unit, 0, 0, 1, FileRole::CompressedPair, false});
        }
    }
    const std::size_t specials = plan.files.size();
    std::uint64_t special_bytes = 0;
    for (const auto& f : plan.files) special_bytes += cluster_bytes(f, cluster);

    const std::uint64_t normal = files > specials ? files - specials : 0;
    const auto wanted_deletions =
        static_cast<std::uint64_t>(std::llround(options.delete_fraction * static_cast<double>(files)));
    const std::uint64_t deletions = std::min(wanted_deletions, normal);
    const std::uint64_t refills = std::min(deletions / 2, normal - deletions);
    const std::uint64_t first_pass = normal - refills;

    const std::uint32_t stream_every = options.named_stream_every;
    for (std::uint64_t k = 0; k < normal; ++k) {
        FilePlan f;
        const DrawnSize drawn = draw_size(rng);
        f.size = drawn.bytes;
        f.name = std::string(pick(rng, kStems)) + "_" + padded(k, 6) + drawn.extension;
        f.dir = static_cast<std::uint32_t>(rng.below(plan.dirs.size()));
        f.role = k < first_pass ? FileRole::Normal : FileRole::Refill;
        if (stream_every != 0 && k % stream_every == stream_every - 1) {
            // Most carry the resident Zone.Identifier of a download; every eighth a large,
            // non-resident stream (a Mac resource fork saved through SMB).
            const bool large = (k / stream_every) % 8 == 7;
            f.named_stream_size = large ? static_cast<std::uint64_t>(rng.log_uniform(64.0 * 1024, 3.0))
                                        : kZoneIdentifier.size();
        }
        plan.files.push_back(std::move(f));
    }
    plan.refill_begin = specials + first_pass;

    const std::uint64_t first_budget = budget > special_bytes ? budget - special_bytes : 0;
    fit_sizes(plan.files, specials, plan.refill_begin, first_budget, cluster);

    // Deletions: a random subset of the first-pass files, deleted in random order.
    std::vector<std::uint32_t> candidates(first_pass);
    for (std::uint64_t k = 0; k < first_pass; ++k) candidates[k] = static_cast<std::uint32_t>(specials + k);
    std::uint64_t freed = 0;
    for (std::uint64_t k = 0; k < deletions; ++k) {
        const auto j = k + rng.below(first_pass - k);
        std::swap(candidates[k], candidates[j]);
        FilePlan& victim = plan.files[candidates[k]];
        victim.deleted = true;
        freed += cluster_bytes(victim, cluster);
        plan.deletions.push_back(candidates[k]);
    }
    // New files take at most 70% of what the deletions freed: they have to fit the holes.
    fit_sizes(plan.files, plan.refill_begin, plan.files.size(), freed / 10 * 7, cluster);

    // Append steps: a third of the files are written in one go (contiguous), the others in
    // 2..16 pieces, which the round-robin turns into up to as many fragments.
    for (std::size_t i = specials; i < plan.files.size(); ++i) {
        FilePlan& f = plan.files[i];
        const std::uint64_t n = std::max<std::uint64_t>(1, (f.size + cluster - 1) / cluster);
        const std::uint64_t pieces = rng.chance(0.35) ? 1 : rng.between(2, 16);
        f.chunk_clusters =
            static_cast<std::uint32_t>(std::min<std::uint64_t>((n + pieces - 1) / pieces, 0xFFFFFFFFu));
    }
    // The compressed logs' directory comes last, so that no other file is drawn into it.
    if (std::any_of(plan.files.begin(), plan.files.end(),
                    [](const FilePlan& f) { return f.role == FileRole::CompressedPair; })) {
        plan.dirs.push_back({"Logs", 0, 1, true});
        for (FilePlan& f : plan.files)
            if (f.role == FileRole::CompressedPair) f.dir = static_cast<std::uint32_t>(plan.dirs.size() - 1);
    }
    return plan;
}

}  // namespace guestfrag::mkimage
