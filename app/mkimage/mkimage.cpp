// SPDX-License-Identifier: GPL-2.0-or-later
// make_image: checks, then builds the disk beside the output and renames it into place.
//   1. plan_layout / plan_population: every option check, before any file is touched;
//   2. mkntfs formats a temporary sparse file the size of the volume (it cannot write at
//      an offset inside a disk file);
//   3. libparted writes the table into the staged disk file, the formatted volume's data
//      extents are copied to the partition offset;
//   4. libntfs-3g mounts the volume in place (the core's device over a window of the disk
//      file) and populates it.
#include "app/mkimage/mkimage.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "app/mkimage/layout.hpp"
#include "app/mkimage/mkntfs_runner.hpp"
#include "app/mkimage/ntfs_writer.hpp"
#include "app/mkimage/partition_writer.hpp"
#include "app/mkimage/populate.hpp"
#include "app/mkimage/population.hpp"
#include "app/mkimage/sparse_copy.hpp"
#include "core/error.hpp"
#include "core/image/unique_fd.hpp"
#include "core/image/writable_raw_file.hpp"

namespace guestfrag {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void io_error(const std::string& what) {
    throw Error(ErrorKind::Io, what + ": " + std::strerror(errno));
}

/// A file created next to `target` with a unique name, removed on destruction unless
/// renamed onto `target` with commit().
class StagedFile {
public:
    StagedFile(const fs::path& target, const char* purpose) {
        const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
        std::string pattern = (dir / ("." + target.filename().string() + "." + purpose + ".XXXXXX")).string();
        const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
        if (fd < 0) io_error("cannot create a file in " + dir.string());
        fd_.reset(fd);
        path_ = pattern;
        ::fchmod(fd, 0644);  // mkstemp's 0600 would make an image only its maker can read
    }
    ~StagedFile() {
        if (!path_.empty()) ::unlink(path_.c_str());
    }
    StagedFile(const StagedFile&) = delete;
    StagedFile& operator=(const StagedFile&) = delete;

    [[nodiscard]] int fd() const noexcept { return fd_.get(); }
    [[nodiscard]] const fs::path& path() const noexcept { return path_; }

    void resize(std::uint64_t bytes) const {
        if (::ftruncate(fd_.get(), static_cast<off_t>(bytes)) != 0) io_error("cannot size " + path_.string());
    }
    void commit(const fs::path& target) {
        if (::rename(path_.c_str(), target.c_str()) != 0) io_error("cannot rename onto " + target.string());
        path_.clear();
    }

private:
    UniqueFd fd_;
    fs::path path_;
};

}  // namespace

MkImageSummary make_image(const MkImageOptions& options, const Progress& progress) {
    using namespace mkimage;
    const DiskLayout layout = plan_layout(options);
    const PopulationPlan plan = plan_population(options, layout.volume_length);
    progress.update(0, plan.files.size());

    MkImageSummary summary;
    summary.partition_offset = layout.volume_offset;
    summary.partition_length = layout.volume_length;

    StagedFile disk(options.output, "part");
    {
        StagedFile volume(options.output, "mkntfs");
        volume.resize(layout.volume_length);
        run_mkntfs(volume.path(), {options.cluster_size, layout.volume_offset / kSectorSize, options.label});
        disk.resize(options.disk_size);
        if (layout.partitioned) write_partition_table(disk.path(), options.table, layout);
        copy_data_extents(volume.fd(), disk.fd(), layout.volume_offset);
    }

    WritableRawFile disk_file(disk.fd(), disk.path().string());
    NtfsWriter ntfs(disk_file, layout.volume_offset, layout.volume_length);
    populate(ntfs, plan, options.seed, progress, summary);
    ntfs.unmount();
    disk.commit(options.output);
    return summary;
}

}  // namespace guestfrag
