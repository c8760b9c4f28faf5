// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/estimate/io.hpp"
#include "core/model/volume_map.hpp"

namespace guestfrag {

/// A synthetic job in fio's own vocabulary (docs/estimate.md §2, `fio:`), as
/// `fio:rw=randwrite,bs=4k,size=10g,...` names it.
struct FioJob {
    enum class Rw : std::uint8_t { Read, Write, RandRead, RandWrite, ReadWrite, RandRw };
    enum class Target : std::uint8_t {
        Disk,  ///< the whole virtual disk, as IOmeter or fio on a raw device
        File,  ///< a new file on the volume, placed as write:N places files
    };
    /// Most IOs one job may issue (24 bytes each in memory).
    static constexpr std::uint64_t kMaxIos = 10'000'000;

    Rw rw = Rw::Read;
    std::uint64_t bs = 4096;             ///< bytes per IO, a positive multiple of 512
    std::optional<std::uint64_t> size;   ///< bytes of the region; default: the disk from `offset` on
    std::uint64_t offset = 0;            ///< start of the region in the target, a multiple of 512
    unsigned rwmixread = 50;             ///< readwrite/randrw: percent of IOs that read
    std::optional<std::uint64_t> number_ios;  ///< IOs to issue; default: one pass over the region
    std::uint64_t randseed = 0x89;       ///< fio's default seed
    Target target = Target::Disk;

    [[nodiscard]] bool random() const noexcept { return rw == Rw::RandRead || rw == Rw::RandWrite || rw == Rw::RandRw; }
};

/// The direction and order fio's `rw` value `name` names (read, write, randread, randwrite,
/// readwrite or its alias rw, randrw); nullopt for any other (trims, "read:8k", ...).
[[nodiscard]] std::optional<FioJob::Rw> fio_rw(std::string_view name);

/// Parses the options after "fio:" (comma-separated key=value: rw, bs, size, offset,
/// rwmixread, number_ios, randseed, target=disk|file; sizes as fio writes them, 4k, 10g,
/// binary multiples). Throws Error(Unsupported, "fio option 'KEY': ...") naming the
/// option for an unknown one, a malformed value, a zero size or bs not a multiple of 512.
[[nodiscard]] FioJob parse_fio_job(std::string_view options);

/// Checks the job against a target of `target_bytes` (the disk, or the volume's free space
/// for a new file): throws Error(Unsupported, "fio option 'size'|'offset': ...") when the
/// region does not fit or holds less than one IO, or the job would issue more than kMaxIos.
/// Returns the region's size.
std::uint64_t check_fio_target(const FioJob& job, std::uint64_t target_bytes);

/// What the job's region must fit in: `disk_size` for target Disk, the volume's free bytes
/// for a new file.
[[nodiscard]] std::uint64_t fio_target_bytes(const FioJob& job, std::uint64_t disk_size, const VolumeMap& volume);

/// The job's IOs on a disk of `disk_size` bytes (target Disk) or on a new file placed on
/// `volume` (target File). Sequential jobs walk the region in `bs` steps (wrapping after its
/// end); random ones visit every bs-aligned block of the region once per pass in an order
/// drawn from `randseed` (fio's random map). readwrite/randrw read with probability
/// rwmixread %. A file IO that crosses one of the file's runs is split there. Throws as
/// check_fio_target. O(IOs).
[[nodiscard]] std::vector<Io> fio_ios(const FioJob& job, std::uint64_t disk_size, const VolumeMap& volume);

/// fio_ios's IOs handed to `each` in issue order as they are made, none held: a job may
/// issue kMaxIos of them. Memory: the new file's runs (target File).
void for_each_fio_io(const FioJob& job, std::uint64_t disk_size, const VolumeMap& volume,
                     const std::function<void(const Io&)>& each);

}  // namespace guestfrag
