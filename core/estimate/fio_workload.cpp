// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/fio_workload.hpp"

#include <random>

#include "core/error.hpp"
#include "core/estimate/new_file_placer.hpp"
#include "core/estimate/workload_options.hpp"

namespace guestfrag {

namespace {

constexpr std::string_view kFio = "fio";

[[noreturn]] void bad_option(std::string_view key, const std::string& reason) {
    bad_workload_option(kFio, key, reason);
}

std::uint64_t parse_number(std::string_view key, std::string_view text) {
    return parse_option_number(kFio, key, text);
}

std::uint64_t parse_fio_size(std::string_view key, std::string_view text) {
    return parse_option_size(kFio, key, text);
}

FioJob::Rw parse_rw(std::string_view text) {
    if (const auto rw = fio_rw(text)) return *rw;
    bad_option("rw", "'" + std::string(text) + "' is not read, write, randread, randwrite, readwrite or randrw");
}

/// Visits 0 … n − 1 once each per pass in a seeded order without storing it: a full-period
/// linear congruential sequence modulo the next power of two ≥ n (a ≡ 1 mod 4, c odd:
/// Hull–Dobell), skipping values ≥ n (fewer than n skips per pass).
class RandomMap {
public:
    RandomMap(std::uint64_t n, std::uint64_t seed) : n_(n) {
        while (mask_ < n - 1) mask_ = mask_ << 1 | 1;
        increment_ = (seed << 1 | 1) & mask_;
        state_ = seed & mask_;
    }
    std::uint64_t next() {
        do state_ = (state_ * 6364136223846793005ull + increment_) & mask_;
        while (state_ >= n_);
        return state_;
    }

private:
    std::uint64_t n_;
    std::uint64_t mask_ = 0;
    std::uint64_t increment_ = 1;
    std::uint64_t state_ = 0;
};

}  // namespace

std::optional<FioJob::Rw> fio_rw(std::string_view name) {
    using Rw = FioJob::Rw;
    for (const auto& [text, rw] : {std::pair{"read", Rw::Read}, {"write", Rw::Write}, {"randread", Rw::RandRead},
                                  {"randwrite", Rw::RandWrite}, {"readwrite", Rw::ReadWrite}, {"rw", Rw::ReadWrite},
                                  {"randrw", Rw::RandRw}})
        if (name == text) return rw;
    return std::nullopt;
}

FioJob parse_fio_job(std::string_view options) {
    FioJob job;
    for_each_workload_option(kFio, options, [&](std::string_view key, std::string_view value) {
        if (key == "rw" || key == "readwrite") {
            job.rw = parse_rw(value);
        } else if (key == "bs") {
            job.bs = parse_fio_size(key, value);
            if (job.bs == 0 || job.bs % kSectorBytes != 0) bad_option(key, "must be a positive multiple of 512");
        } else if (key == "size") {
            job.size = parse_fio_size(key, value);
            if (*job.size == 0) bad_option(key, "must be positive");
        } else if (key == "offset") {
            job.offset = parse_fio_size(key, value);
            if (job.offset % kSectorBytes != 0) bad_option(key, "must be a multiple of 512");
        } else if (key == "rwmixread") {
            const std::uint64_t mix = parse_number(key, value);
            if (mix > 100) bad_option(key, "must be 0 to 100");
            job.rwmixread = static_cast<unsigned>(mix);
        } else if (key == "number_ios") {
            job.number_ios = parse_number(key, value);
            if (*job.number_ios == 0) bad_option(key, "must be positive");
            if (*job.number_ios > FioJob::kMaxIos)
                bad_option(key, "at most " + std::to_string(FioJob::kMaxIos));
        } else if (key == "randseed") {
            job.randseed = parse_number(key, value);
        } else if (key == "target") {
            if (value == "disk")
                job.target = FioJob::Target::Disk;
            else if (value == "file")
                job.target = FioJob::Target::File;
            else
                bad_option(key, "'" + std::string(value) + "' is not disk or file");
        } else {
            bad_option(key, "unknown (rw, bs, size, offset, rwmixread, number_ios, randseed, target)");
        }
    });
    if (job.target == FioJob::Target::File && !job.size) bad_option("size", "a new file needs a size");
    return job;
}

std::uint64_t check_fio_target(const FioJob& job, std::uint64_t target_bytes) {
    if (job.target == FioJob::Target::File) {
        // The region is the new file; offset counts from its start.
        const std::uint64_t size = *job.size;  // parse_fio_job requires it
        if (size > target_bytes)
            bad_option("size", std::to_string(size) + " bytes do not fit in the volume's free space (" +
                                   std::to_string(target_bytes) + " bytes)");
        if (job.offset >= size || size - job.offset < job.bs)
            bad_option("offset", std::to_string(job.offset) + " leaves less than one bs of the " +
                                     std::to_string(size) + "-byte file");
        if (!job.number_ios && (size - job.offset) / job.bs > FioJob::kMaxIos)
            bad_option("size", "one pass would issue more than " + std::to_string(FioJob::kMaxIos) +
                                   " IOs (set number_ios)");
        return size;
    }
    if (job.offset >= target_bytes)
        bad_option("offset", std::to_string(job.offset) + " is not inside the disk (" + std::to_string(target_bytes) +
                                 " bytes)");
    const std::uint64_t room = target_bytes - job.offset;
    const std::uint64_t region = job.size.value_or(room);
    if (region > room)
        bad_option("size", std::to_string(region) + " bytes do not fit in the disk (" + std::to_string(room) +
                               " bytes from the offset)");
    if (region < job.bs) bad_option("bs", std::to_string(job.bs) + " is larger than the region");
    if (!job.number_ios && region / job.bs > FioJob::kMaxIos)
        bad_option("size", "one pass would issue more than " + std::to_string(FioJob::kMaxIos) +
                               " IOs (set number_ios)");
    return region;
}

std::uint64_t fio_target_bytes(const FioJob& job, std::uint64_t disk_size, const VolumeMap& volume) {
    if (job.target == FioJob::Target::Disk) return disk_size;
    return static_cast<std::uint64_t>(boost::icl::length(volume.free)) * volume.cluster_size;
}

std::vector<Io> fio_ios(const FioJob& job, std::uint64_t disk_size, const VolumeMap& volume) {
    std::vector<Io> out;
    for_each_fio_io(job, disk_size, volume, [&out](const Io& io) { out.push_back(io); });
    return out;
}

void for_each_fio_io(const FioJob& job, std::uint64_t disk_size, const VolumeMap& volume,
                     const std::function<void(const Io&)>& each) {
    const bool file = job.target == FioJob::Target::File;
    const std::uint64_t cs = volume.cluster_size;
    if (file && cs == 0) throw Error(ErrorKind::Unsupported, "cluster size 0");
    const std::uint64_t region = check_fio_target(job, fio_target_bytes(job, disk_size, volume));

    // Where the region starts and how long it is, in the target's bytes.
    const std::uint64_t start = job.offset;
    const std::uint64_t length = file ? region - job.offset : region;
    const std::uint64_t blocks = length / job.bs;
    const std::uint64_t count = job.number_ios.value_or(blocks);

    std::vector<Extent> extents;  // the new file's runs
    if (file) {
        NewFilePlacer placer(volume);
        extents = placer.place(static_cast<std::int64_t>((region + cs - 1) / cs));
        if (extents.empty()) bad_option("size", "the new file does not fit in the free space");
    }

    std::mt19937_64 mix(job.randseed);
    RandomMap order(blocks, job.randseed);
    const bool mixed = job.rw == FioJob::Rw::ReadWrite || job.rw == FioJob::Rw::RandRw;
    const bool writes = job.rw == FioJob::Rw::Write || job.rw == FioJob::Rw::RandWrite;

    std::size_t run = 0;  // file target: the run the previous IO ended in (sequential jobs walk forward)
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t block = job.random() ? order.next() : i % blocks;
        const bool write = mixed ? mix() % 100 >= job.rwmixread : writes;
        const std::uint64_t at = start + block * job.bs;
        if (!file) {
            each(Io{static_cast<std::int64_t>(at / kSectorBytes), job.bs, write});
            continue;
        }
        // Through the file's runs: find the run holding `at` (a binary search for random
        // jobs, a step forward for sequential ones), split where a run ends.
        std::uint64_t pos = at;
        std::uint64_t left = job.bs;
        auto run_end = [&](std::size_t r) {
            return static_cast<std::uint64_t>(extents[r].vcn + extents[r].clusters) * cs;
        };
        if (run >= extents.size() || static_cast<std::uint64_t>(extents[run].vcn) * cs > pos || run_end(run) <= pos) {
            std::size_t lo = 0;
            std::size_t hi = extents.size() - 1;
            while (lo < hi) {
                const std::size_t mid = (lo + hi) / 2;
                if (run_end(mid) <= pos) lo = mid + 1; else hi = mid;
            }
            run = lo;
        }
        while (left > 0 && run < extents.size()) {
            const Extent& e = extents[run];
            const std::uint64_t in_run = pos - static_cast<std::uint64_t>(e.vcn) * cs;
            const std::uint64_t piece = std::min(left, run_end(run) - pos);
            const std::uint64_t disk = volume.partition_offset + static_cast<std::uint64_t>(e.lcn) * cs + in_run;
            each(Io{static_cast<std::int64_t>(disk / kSectorBytes), piece, write});
            pos += piece;
            left -= piece;
            if (pos == run_end(run)) ++run;
        }
    }
}

}  // namespace guestfrag
