// SPDX-License-Identifier: GPL-2.0-or-later
// What `compact` and `schedule --compact` print of a compaction, and the run they share.
#pragma once

#include <functional>
#include <ostream>
#include <stop_token>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/image_options.hpp"
#include "pipeline/compact.hpp"

namespace guestfrag::cli {

/// The guestfrag.compact.v1 document (docs/compact.md §4).
[[nodiscard]] nlohmann::ordered_json compact_json(const CompactResult& result);

/// The text report: per volume the moves and proofs, then granules and host bytes.
void print_compact(std::ostream& out, const std::string& image, const CompactResult& result);

/// What a command that may apply or compact (batch, schedule) takes for the new disk.
struct NewDiskOptions {
    std::string output_format = "raw";
    std::string granule;
    bool pack = true;
    bool no_verify = false;
    bool allow_vss = false;
};

/// Adds --output-format (raw or qcow2 with `apply`, raw, qcow2, vmdk or vhdx with `compact`),
/// --granule and --pack/--no-pack (with `compact` only), --no-verify and --allow-vss.
void add_new_disk_options(CLI::App& cmd, NewDiskOptions& options, CLI::Option* apply, CLI::Option* compact);

/// Throws a usage Failure for options given without the `apply` or `compact` option they
/// belong to, or an --output-format that `apply` cannot write.
void check_new_disk_options(const NewDiskOptions& options, bool apply, bool compact);

/// CompactOptions for OUT as `options` say (never replacing a file), the granule checked
/// against the format (Error(Unsupported)).
[[nodiscard]] CompactOptions compact_options(const std::string& output, const NewDiskOptions& options);

/// Runs compact_to_copy on `image` (opened as `image_options` say) with a progress meter,
/// interrupted by SIGINT/SIGTERM (run_writing). `with_stop`, when given, is called first with
/// the run's stop token, to adjust `options` (schedule --compact hooks its steps).
[[nodiscard]] CompactResult run_compact(
    const std::string& image, const ImageOptions& image_options, CompactOptions options,
    const std::function<void(CompactOptions&, const std::stop_token&)>& with_stop = {});

}  // namespace guestfrag::cli
