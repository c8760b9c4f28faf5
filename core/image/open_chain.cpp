// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/open_chain.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "core/image/chain_image.hpp"
#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/open_image.hpp"
#include "core/image/source_opener.hpp"

namespace guestfrag {
namespace {

std::string choose_parent(const ParentLink& link, const std::vector<std::string>& parents, std::size_t depth,
                          const SourceOpener& opener) {
    if (depth - 1 < parents.size() && !parents[depth - 1].empty()) {
        if (!opener.exists(parents[depth - 1]))
            throw Error(ErrorKind::NotFound, "parent given with --parent does not exist: " + parents[depth - 1]);
        return parents[depth - 1];
    }
    for (const std::string& candidate : link.candidates)
        if (opener.is_readable(candidate)) return candidate;
    std::string tried;
    for (const std::string& candidate : link.candidates) tried += (tried.empty() ? "" : ", ") + candidate;
    throw MissingParentError(depth, link.recorded,
                             "parent not found: " + link.recorded +
                                 (tried.empty() ? "" : " (looked for " + tried + ")") +
                                 "; give it with --parent");
}

/// Opens the parent at `path` of `child` as the child's link records it.
std::unique_ptr<LayerFile> open_parent(const ParentLink& link, const std::string& path,
                                       const LayerFile& child, const SourceOpener& opener) {
    std::shared_ptr<const ByteSource> source = opener.open(path);
    if (!link.format) return open_layer(std::move(source), opener);
    // A parent recorded as raw is raw whatever its first bytes look like (qemu does not
    // probe a backing file with backing_fmt=raw): a guest disk may start with a qcow2 or
    // vhdx magic, and reading it as that container would show other bytes.
    if (*link.format == ImageFormat::Raw) return open_layer(std::move(source), ImageFormat::Raw, opener);
    const ImageFormat found = sniff_format(HostFile(source));
    if (format_family(found) != *link.format)
        throw Error(ErrorKind::Corrupt, "parent " + path + " of " + child.path() + " is recorded as " +
                                            link.recorded_format + " but its content is " +
                                            std::string(format_name(found)));
    return open_layer(std::move(source), found, opener);
}

std::string join_ids(const std::vector<std::string>& ids) {
    std::string out;
    for (const std::string& id : ids) out += (out.empty() ? "" : " or ") + id;
    return out;
}

}  // namespace

std::unique_ptr<DiskImage> open_chain(const std::string& path, const std::vector<std::string>& parents) {
    return open_chain(file_opener().open(path), file_opener(), parents);
}

std::unique_ptr<DiskImage> open_chain(std::shared_ptr<const ByteSource> top, const SourceOpener& opener,
                                      const std::vector<std::string>& parents) {
    if (!top) throw Error(ErrorKind::Internal, "open_chain without a top layer");
    std::vector<std::unique_ptr<LayerFile>> chain;
    std::set<std::string> seen{opener.identity(top->name())};
    chain.push_back(open_layer(std::move(top), opener));
    while (const auto link = chain.back()->parent()) {
        const std::size_t depth = chain.size();
        const LayerFile& child = *chain.back();
        if (depth > kMaxChainDepth)
            throw Error(ErrorKind::Corrupt, "parent chain deeper than " + std::to_string(kMaxChainDepth) + " layers");
        // Checked before looking for the file: no file would make the chain readable.
        if (!link->format && !link->recorded_format.empty())
            throw Error(ErrorKind::Unsupported, child.path() + " records its parent as a " +
                                                    link->recorded_format +
                                                    " image, which guestfrag does not read");
        const std::string parent_path = choose_parent(*link, parents, depth, opener);
        if (!seen.insert(opener.identity(parent_path)).second)
            throw Error(ErrorKind::Corrupt, "loop in the parent chain: " + parent_path + " is its own ancestor");
        auto parent = open_parent(*link, parent_path, child, opener);
        const auto& ids = link->expected_identities;
        if (const auto id = parent->identity();
            id && !ids.empty() && std::find(ids.begin(), ids.end(), *id) == ids.end())
            throw Error(ErrorKind::Corrupt, "parent " + parent_path + " is not the one " + child.path() +
                                                " was made from (expected id " + join_ids(ids) + ", found " +
                                                *id + ")");
        chain.push_back(std::move(parent));
    }
    return std::make_unique<ChainImage>(std::move(chain));
}

}  // namespace guestfrag
