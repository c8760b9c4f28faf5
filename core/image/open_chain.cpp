// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/open_chain.hpp"

#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "core/image/chain_image.hpp"
#include "core/image/layer_file.hpp"

namespace guestfrag {
namespace {

namespace fs = std::filesystem;

std::string canonical_or_same(const std::string& path) {
    std::error_code ec;
    const auto canon = fs::canonical(path, ec);
    return ec ? path : canon.string();
}

std::string choose_parent(const ParentLink& link, const std::vector<std::string>& parents, std::size_t depth) {
    if (depth - 1 < parents.size() && !parents[depth - 1].empty()) {
        if (!fs::exists(parents[depth - 1]))
            throw Error(ErrorKind::NotFound, "parent given with --parent does not exist: " + parents[depth - 1]);
        return parents[depth - 1];
    }
    for (const std::string& candidate : link.candidates)
        if (fs::is_regular_file(candidate) || fs::is_block_file(candidate)) return candidate;
    std::string tried;
    for (const std::string& candidate : link.candidates) tried += (tried.empty() ? "" : ", ") + candidate;
    throw Error(ErrorKind::NotFound, "parent not found: " + link.recorded +
                                         (tried.empty() ? "" : " (looked for " + tried + ")") +
                                         "; give it with --parent");
}

}  // namespace

std::unique_ptr<DiskImage> open_chain(const std::string& path, const std::vector<std::string>& parents) {
    std::vector<std::unique_ptr<LayerFile>> chain;
    std::set<std::string> seen{canonical_or_same(path)};
    chain.push_back(open_layer(path));
    while (const auto link = chain.back()->parent()) {
        const std::size_t depth = chain.size();
        if (depth > kMaxChainDepth)
            throw Error(ErrorKind::Corrupt, "parent chain deeper than " + std::to_string(kMaxChainDepth) + " layers");
        const std::string parent_path = choose_parent(*link, parents, depth);
        if (!seen.insert(canonical_or_same(parent_path)).second)
            throw Error(ErrorKind::Corrupt, "loop in the parent chain: " + parent_path + " is its own ancestor");
        auto parent = open_layer(parent_path);
        if (link->expected_identity && parent->identity() && *link->expected_identity != *parent->identity())
            throw Error(ErrorKind::Corrupt, "parent " + parent_path + " is not the one " + chain.back()->path() +
                                                " was made from (expected id " + *link->expected_identity +
                                                ", found " + *parent->identity() + ")");
        chain.push_back(std::move(parent));
    }
    return std::make_unique<ChainImage>(std::move(chain));
}

}  // namespace guestfrag
