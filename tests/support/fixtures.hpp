// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "app/mkimage/mkimage.hpp"

namespace guestfrag::test {

/// Per-build scratch directory for generated and decompressed images (created on demand).
std::filesystem::path scratch_dir();

/// Path of an external test image in ../shared/testdata. A `.xz` or `.gz` file is
/// decompressed once into the scratch directory and that copy's path returned.
/// Returns an empty path when the file is absent (callers SKIP-equivalent: WARN + return).
std::filesystem::path testdata(const std::string& name);

struct CommandResult {
    int status = -1;  ///< exit status, or 128 + signal
    std::string out;
    std::string err;
};

/// Runs argv[0] (looked up in PATH) with the given arguments, no shell, capturing output.
CommandResult run(const std::vector<std::string>& argv);

/// Whether an executable is on PATH.
bool have_tool(const std::string& name);

/// Runs the guestfrag CLI built with this tree.
CommandResult run_cli(const std::vector<std::string>& args);

/// A generated image cached in the scratch directory under `key` (made once per build).
std::filesystem::path generated_image(const std::string& key, MkImageOptions options);

/// SHA-256-free but strong enough content fingerprint (FNV-1a 64 over all bytes) used to
/// prove images are not modified.
std::uint64_t file_fingerprint(const std::filesystem::path& path);

}  // namespace guestfrag::test
