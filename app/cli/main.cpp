// SPDX-License-Identifier: GPL-2.0-or-later
// guestfrag: offline fragmentation analyzer and planner for Windows guest disk images.
#include <sys/resource.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "app/cli/commands.hpp"
#include "app/cli/failure.hpp"
#include "app/cli/help_format.hpp"
#include "app/cli/progress_meter.hpp"
#include "core/image/byte_source.hpp"

namespace {

// A split VMDK keeps one descriptor per extent file: a 2 TiB twoGbMaxExtentSparse disk has
// over 1,000, past the usual soft limit of 1,024 open files. Use the hard limit.
void raise_open_file_limit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
}

/// Prints the process's read counters on stderr when asked, however main returns.
class PrintReadStats {
public:
    explicit PrintReadStats(const bool& enabled) : enabled_(enabled) {}
    PrintReadStats(const PrintReadStats&) = delete;
    PrintReadStats& operator=(const PrintReadStats&) = delete;
    ~PrintReadStats() {
        if (!enabled_) return;
        const guestfrag::ReadCounters& c = guestfrag::read_counters();
        std::fprintf(stderr,
                     "guestfrag: read %llu bytes in %llu requests from files, %llu bytes in %llu requests over NBD\n",
                     static_cast<unsigned long long>(c.file_bytes.load()),
                     static_cast<unsigned long long>(c.file_requests.load()),
                     static_cast<unsigned long long>(c.nbd_bytes.load()),
                     static_cast<unsigned long long>(c.nbd_requests.load()));
    }

private:
    const bool& enabled_;
};

}  // namespace

int main(int argc, char** argv) {
    using namespace guestfrag::cli;
    raise_open_file_limit();
    // Named, so that usage lines say "guestfrag", not the path it was started by (the man
    // page is made from them).
    CLI::App app{"guestfrag: fragmentation analysis and planning for Windows guest disk images", "guestfrag"};
    // Subcommands take the formatter the app has when they are added.
    app.formatter(std::make_shared<HelpFormatter>(help_width()));
    app.set_version_flag("--version", std::string("guestfrag ") + GUESTFRAG_VERSION);
    app.require_subcommand(1);
    // Accepted after the subcommand too ("guestfrag analyze IMG --stats").
    app.fallthrough();
    bool stats = false;
    app.add_flag("--stats", stats, "On exit, print to stderr the bytes and requests read from images, by transport");
    const PrintReadStats print_stats(stats);
    // Set as they are parsed, before any command's callback runs.
    app.add_flag_callback(
        "--progress", [] { set_progress_display(true); },
        "Show progress on stderr even when it is not a terminal");
    app.add_flag_callback(
        "--no-progress", [] { set_progress_display(false); },
        "Never show progress (by default it shows on a terminal)");
    add_commands(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // CLI11 prints help/version (exit 0) and usage errors; usage errors exit 1 (contract).
        const int status = app.exit(e);
        if (status == 0) return kOk;
        if (const std::string hint = did_you_mean(app, {argv + 1, argv + argc}); !hint.empty())
            std::fprintf(stderr, "guestfrag: %s\n", hint.c_str());
        return kUsage;
    } catch (const Finding& found) {
        return found.status;
    } catch (const Failure& f) {
        std::fprintf(stderr, "guestfrag: error: %s: %s\n", f.subject().c_str(), f.what());
        return f.status();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "guestfrag: internal error: %s\n", e.what());
        return kInternal;
    }
    return kOk;
}
