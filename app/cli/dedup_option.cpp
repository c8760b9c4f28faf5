// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/dedup_option.hpp"

#include "app/cli/failure.hpp"
#include "app/cli/size_option.hpp"
#include "core/error.hpp"
#include "core/impact/impact.hpp"

namespace guestfrag::cli {

void add_dedup_chunk_option(CLI::App& cmd, std::string& text) {
    cmd.add_option("--dedup-chunk", text,
                   "The storage deduplicates after the fact in chunks of SIZE: a plan's cost adds its "
                   "re-scan of the chunks the plan writes (default: it does not)")
        ->check(size_check());
}

std::optional<std::uint64_t> dedup_chunk_option(const std::string& text) {
    const std::optional<std::uint64_t> chunk = size_option(text);
    if (!chunk) return chunk;
    try {
        check_dedup_chunk(*chunk);
    } catch (const Error& e) {
        throw Failure("--dedup-chunk", e.what(), kUsage);
    }
    return chunk;
}

}  // namespace guestfrag::cli
