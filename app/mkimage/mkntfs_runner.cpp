// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/mkimage/mkntfs_runner.hpp"

#include <string>
#include <vector>

#include "core/io/child_process.hpp"

namespace guestfrag::mkimage {

void run_mkntfs(const std::filesystem::path& volume, const MkntfsParams& params) {
    // -Q: no zeroing pass; -F: the target is a regular file; -H/-S/-p: the boot sector's
    // geometry and hidden sectors, which mkntfs cannot query from a file and Windows needs
    // to boot from the partition. 255/63 is what BIOSes and libparted report for big disks.
    std::vector<std::string> args{find_program("mkntfs", "ntfs-3g"),
                                  "-Q",
                                  "-F",
                                  "-c",
                                  std::to_string(params.cluster_size),
                                  "-s",
                                  "512",
                                  "-p",
                                  std::to_string(params.hidden_sectors),
                                  "-H",
                                  "255",
                                  "-S",
                                  "63"};
    if (!params.label.empty()) args.insert(args.end(), {"-L", params.label});
    args.push_back(volume.string());
    (void)run_program(args);
}

}  // namespace guestfrag::mkimage
