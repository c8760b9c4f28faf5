// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "app/mkimage/mkimage.hpp"

namespace guestfrag::test {

/// Per-build scratch directory for generated and decompressed images (created on demand).
std::filesystem::path scratch_dir();

/// A fresh directory `scratch_dir()/NAME.PID` for one test case (ctest runs cases as
/// parallel processes), removed with everything in it when the case ends: split and large
/// disks would leave gigabytes otherwise.
class WorkDir {
public:
    explicit WorkDir(const std::string& name);
    ~WorkDir();
    WorkDir(const WorkDir&) = delete;
    WorkDir& operator=(const WorkDir&) = delete;

    [[nodiscard]] const std::filesystem::path& path() const { return path_; }
    [[nodiscard]] std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
    operator const std::filesystem::path&() const { return path_; }  // NOLINT: used like a path

private:
    std::filesystem::path path_;
};

/// Path of a real sample image in tests/data (provenance in tests/data/README.md). A `.xz`
/// or `.gz` file is decompressed once into the scratch directory and that copy's path
/// returned. Throws std::runtime_error when the file is absent: a test whose data is missing
/// fails, it never passes.
std::filesystem::path testdata(const std::string& name);

struct CommandResult {
    int status = -1;  ///< exit status, or 128 + signal
    std::string out;
    std::string err;
    /// The command's peak resident set size in KiB; run_cli_measured only.
    long peak_rss_kib = 0;
    /// Of it, what the input added: peak_rss_kib less the CLI's own footprint (its peak on an
    /// empty file, which grows with the binary and under ASan its runtime); run_cli_measured only.
    long input_rss_kib = 0;
};

/// Runs argv[0] (looked up in PATH) with the given arguments, no shell, capturing output.
CommandResult run(const std::vector<std::string>& argv);

/// Whether an executable is on PATH.
bool have_tool(const std::string& name);

/// Throws std::runtime_error naming the first of `tools` that is not on PATH. Oracles are
/// build dependencies (packaging/debian-build-deps.txt): a test without its oracle fails.
void require_tools(std::initializer_list<std::string_view> tools);

/// Runs the guestfrag CLI built with this tree.
CommandResult run_cli(const std::vector<std::string>& args);

/// Starts the guestfrag CLI with `args` (standard output to /dev/null, standard error into
/// `err`) and returns its pid once a temporary output of `out` (".OUT.…") exists beside
/// `out`: the work has begun and a test may signal it. No timing is asserted; the poll only
/// waits for that moment. Throws std::runtime_error when it ends before.
int start_cli_until_begun(const std::vector<std::string>& args, const std::filesystem::path& out,
                          const std::filesystem::path& err);
/// The same, returning once `begun()` says so (polled while the CLI runs).
int start_cli_until(const std::vector<std::string>& args, const std::filesystem::path& err,
                    const std::function<bool()>& begun);

/// run_cli, also measuring the guestfrag process's own peak resident set size (through GNU
/// time, a build dependency: a child spawned straight from this process would start its
/// ru_maxrss from this process's size, which under ASan is hundreds of MB).
CommandResult run_cli_measured(const std::vector<std::string>& args);

/// A generated image cached in the scratch directory under `key` (made once per build).
std::filesystem::path generated_image(const std::string& key, MkImageOptions options);

/// A volume drawn from `seed` for the property tests (apply_property_test.cpp,
/// plan_property_test.cpp): every choice comes from the seed, so a failing case is made
/// again by its seed alone. Cluster size 512 B to 64 KiB; the attribute-list pair up to
/// `max_runs` runs each (mkimage's population: lists of a few entries to, at 60,000 runs,
/// about two hundred, resident or not); 150 to 500 files grown 1 to 24 at a time; 10 to 50 %
/// deleted; file data filling 5 to 95 % of the free space (nearly empty to nearly full);
/// named streams, compressed logs (up to 4 KiB clusters), the sparse file; a bare volume
/// or an MBR partition; under 512 MiB.
MkImageOptions drawn_volume(std::uint32_t seed, std::uint64_t max_runs);

/// The `guestfrag mkimage` arguments that make `options`' volume, for a failing case's message.
std::string mkimage_line(const MkImageOptions& options);

/// Runs `check` on the volumes of a property test (bench/property.sh runs the long variant):
/// GUESTFRAG_PROPERTY_CASES (default `cases`) volumes drawn from seeds
/// GUESTFRAG_PROPERTY_SEED (default 1), +1, ..., with pair files of up to
/// GUESTFRAG_PROPERTY_RUNS (default 6000) runs; each made in a fresh WorkDir `name`
/// (options.output) and handed over with how it was drawn, for the test's messages
/// (mkimage_line).
void for_each_drawn_volume(
    const std::string& name, std::uint64_t cases,
    const std::function<void(const MkImageOptions& volume, const WorkDir& dir)>& check);

/// The 32 MiB disk the CLI tests of estimate and provisioning share (300 files, interleave 8,
/// seed 23), a generated_image.
std::filesystem::path small_cli_image();

/// The 256 MiB disk of 3,000 files (30 % deleted, interleave 8, seed 7) the optimize, order
/// and report tests share, a generated_image.
std::filesystem::path fragmented_256_image();

/// The whole file at `path`, or an empty string when it cannot be opened. Read here, in the
/// support library, which keeps the build's optimization where a test file's own code is
/// compiled at -Og (tests/CMakeLists.txt).
std::string file_contents(const std::filesystem::path& path);

/// file_contents as bytes, for comparing images.
std::vector<std::byte> file_bytes(const std::filesystem::path& path);

/// SHA-256-free but strong enough content fingerprint (FNV-1a 64 over all bytes) used to
/// prove images are not modified.
std::uint64_t file_fingerprint(const std::filesystem::path& path);

}  // namespace guestfrag::test
