// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/guest_option.hpp"

#include <vector>

#include "app/cli/failure.hpp"
#include "app/cli/size_option.hpp"
#include "core/error.hpp"

namespace guestfrag::cli {

void add_guest_options(CLI::App& cmd, GuestOptions& options) {
    std::vector<std::string> names;
    for (const GuestProfile& p : guest_profiles()) names.emplace_back(p.name);
    cmd.add_option("--guest", options.name, "How the guest reads files (see Guests below)")
        ->check(CLI::IsMember(names))
        ->capture_default_str();
    cmd.add_option("--read-ahead", options.read_ahead,
                   "The guest's read-ahead window (Linux: read_ahead_kb); default: the profile's")
        ->check(size_check());
    std::vector<std::string> readers;
    for (const FileReader& r : file_readers()) readers.emplace_back(r.name);
    cmd.add_option("--reader", options.reader,
                   "What reads each file in a Linux guest (see Readers below); default: cat")
        ->check(CLI::IsMember(readers));
}

GuestProfile guest_option(const GuestOptions& options) {
    GuestProfile profile = *find_guest_profile(options.name);  // --guest's check accepted it
    try {
        if (const std::optional<std::uint64_t> window = size_option(options.read_ahead))
            profile = with_read_ahead(profile, *window);
    } catch (const Error& e) {
        throw Failure("--read-ahead", e.what(), kUsage);
    }
    try {
        if (!options.reader.empty()) profile = with_reader(profile, options.reader);
    } catch (const Error& e) {
        throw Failure("--reader", e.what(), kUsage);
    }
    return profile;
}

}  // namespace guestfrag::cli
