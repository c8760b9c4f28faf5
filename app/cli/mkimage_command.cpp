// SPDX-License-Identifier: GPL-2.0-or-later
// `guestfrag mkimage OUT`: generates a fragmented NTFS disk image for demos and tests.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/progress_meter.hpp"
#include "app/cli/size_option.hpp"
#include "app/mkimage/mkimage.hpp"
#include "pipeline/apply.hpp"
#include "pipeline/copy_output.hpp"
#include "pipeline/sizes.hpp"

namespace guestfrag::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int) { g_interrupted = 1; }

/// Turns SIGINT/SIGTERM into Error(Cancelled) at the next progress report, so an
/// interrupted run still removes its multi-gigabyte staging files. Restores the previous
/// handlers when destroyed.
class InterruptGuard {
public:
    InterruptGuard() {
        g_interrupted = 0;
        struct sigaction action {};
        action.sa_handler = on_interrupt;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, &old_int_);
        sigaction(SIGTERM, &action, &old_term_);
    }
    ~InterruptGuard() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
    }
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

    /// `inner` plus the interrupt check.
    static Progress wrap(Progress inner) {
        Progress p = inner;
        p.report = [inner](std::uint64_t done, std::uint64_t total) {
            if (g_interrupted) throw Error(ErrorKind::Cancelled, "interrupted");
            if (inner.report) inner.report(done, total);
        };
        return p;
    }

private:
    struct sigaction old_int_ {};
    struct sigaction old_term_ {};
};

/// A decimal count, for transform(). CLI11 reads unsigned options with strtoull, which takes
/// "-3" for 2^64 - 3 and "010" for 8; this refuses signs and strips leading zeros first.
CLI::Validator whole_number() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
                return "'" + text + "' is not a whole number";
            text.erase(0, std::min(text.find_first_not_of('0'), text.size() - 1));
            return {};
        },
        "");
}

/// What became of --layout-ini, when it was given.
std::string layout_ini_line(std::uint64_t asked, const MkImageSummary& s) {
    if (s.layout_ini_record == 0)
        return s.files_kept == 0 ? "no Layout.ini: the volume keeps no files"
                                 : "no Layout.ini: the volume filled up";
    std::string line = "Layout.ini lists " + std::to_string(s.layout_ini_files) +
                       (s.layout_ini_files == 1 ? " file" : " files");
    if (s.layout_ini_files < asked)
        line += " (asked for " + std::to_string(asked) + "; the volume keeps " +
                std::to_string(s.files_kept) + ")";
    return line;
}

}  // namespace

void add_mkimage_command(CLI::App& app) {
    struct Options {
        MkImageOptions image;
        std::string size = "256MiB";
        std::string cluster_size = "4K";
        std::string partition_start = "1MiB";
        std::string output;
        bool force = false;
    };
    auto opts = std::make_shared<Options>();
    MkImageOptions& o = opts->image;
    CLI::App* cmd = app.add_subcommand(
        "mkimage", "Generate a sparse raw disk with a fragmented NTFS volume (deterministic per --seed)");
    cmd->add_option("OUT", opts->output, "Disk image to write: a new file, or with --force a file to replace")
        ->required();
    cmd->add_flag("--force", opts->force, "Replace OUT if it exists (a regular file only)");
    cmd->add_option("--size", opts->size, "Virtual disk size")
        ->check(size_check())
        ->capture_default_str();
    cmd->add_option("--table", o.table, "Partition table: msdos, gpt, or none (bare NTFS volume)")
        ->check(CLI::IsMember({"msdos", "gpt", "none"}))
        ->capture_default_str();
    cmd->add_option("--partition-start", opts->partition_start, "Offset of the NTFS partition")
        ->check(size_check())
        ->capture_default_str();
    cmd->add_option("--cluster-size", opts->cluster_size, "NTFS cluster size (power of two, 512 to 2M)")
        ->check(size_check())
        ->capture_default_str();
    cmd->add_option("--files", o.files, "Files to create, deleted ones included")->capture_default_str();
    cmd->add_option("--dirs", o.directories, "Directories to spread them over (0: about one per 500 files)")
        ->capture_default_str();
    cmd->add_option("--interleave", o.interleave, "Files grown at the same time (more = more fragments)")
        ->capture_default_str();
    cmd->add_option("--delete-fraction", o.delete_fraction,
                    "Share of the files deleted to punch free-space holes")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    cmd->add_option("--list-runs", o.list_runs,
                    "Runs of each file of the attribute-list pair (8000: a non-resident list)")
        ->capture_default_str();
    cmd->add_option("--named-stream-every", o.named_stream_every,
                    "One file in N gets a named stream (0: none)")
        ->capture_default_str();
    cmd->add_option("--fill", o.fill,
                    "Most of the volume's free space the file data may take (sizes scale down)")
        ->capture_default_str();
    cmd->add_option("--seed", o.seed, "Seed of the file population")->capture_default_str();
    cmd->add_option("--label", o.label, "Volume label")->type_name("LABEL")->capture_default_str();
    cmd->add_flag("--compressed", o.compressed,
                  "Add two NTFS-compressed logs grown against each other (clusters up to 4K)");
    cmd->add_option("--layout-ini", o.layout_ini,
                    "Write \\Windows\\Prefetch\\Layout.ini listing this many kept files in a random boot "
                    "order (0: none)")
        ->transform(whole_number())
        ->capture_default_str();

    cmd->footer("Example:\n  guestfrag mkimage demo.img --size 2GiB --files 20000 --seed 42\n");
    cmd->callback([opts] {
        on_behalf_of(opts->output, [&] {
            // OUT may be a VM's disk mistyped: only --force replaces a file.
            std::error_code ec;
            if (!opts->force && std::filesystem::exists(opts->output, ec))
                throw Error(ErrorKind::Unsupported, already_exists(opts->output) + "; --force replaces it");
            check_output_path(opts->output);
            MkImageOptions options = opts->image;
            options.output = opts->output;
            // The validators above accepted these texts.
            options.disk_size = *parse_size(opts->size);
            options.partition_start = *parse_size(opts->partition_start);
            const std::uint64_t cluster = *parse_size(opts->cluster_size);
            options.cluster_size = cluster > 0xFFFFFFFFull ? 0 : static_cast<std::uint32_t>(cluster);
            MkImageSummary s;
            {
                InterruptGuard guard;
                ProgressMeter meter("mkimage: files");
                s = make_image(options, InterruptGuard::wrap(meter.progress()));
            }
            std::cout << opts->output << ": " << s.files_created << " files, " << s.files_deleted
                      << " deleted, " << s.files_kept << " kept (" << s.fragmented_files << " fragmented), "
                      << s.directories << (s.directories == 1 ? " directory, " : " directories, ")
                      << format_size(options.disk_size) << " disk"
                      << (options.table == "none" ? std::string(", bare NTFS volume")
                                                  : ", " + options.table + " NTFS partition at " +
                                                        format_size(s.partition_offset))
                      << (s.volume_full ? "; the volume filled up early" : "") << '\n';
            if (options.layout_ini != 0)
                std::cout << opts->output << ": " << layout_ini_line(options.layout_ini, s) << '\n';
        });
    });
}

}  // namespace guestfrag::cli
