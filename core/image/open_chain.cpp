// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/open_chain.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "core/image/chain_image.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/open_image.hpp"

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
    throw MissingParentError(depth, link.recorded,
                             "parent not found: " + link.recorded +
                                 (tried.empty() ? "" : " (looked for " + tried + ")") +
                                 "; give it with --parent");
}

/// The family a sniffed format belongs to, as a child records its parent's format.
std::optional<ParentLink::Format> family_of(ImageFormat format) {
    switch (format) {
        case ImageFormat::Raw:
            return ParentLink::Format::Raw;
        case ImageFormat::Qcow2:
            return ParentLink::Format::Qcow2;
        case ImageFormat::VmdkSparse:
        case ImageFormat::VmdkDescriptor:
        case ImageFormat::VmdkCowd:
        case ImageFormat::VmdkSeSparse:
            return ParentLink::Format::Vmdk;
        case ImageFormat::Vhd:
            return ParentLink::Format::Vhd;
        case ImageFormat::Vhdx:
            return ParentLink::Format::Vhdx;
        default:
            return std::nullopt;
    }
}

/// Opens the parent at `path` of `child` as the child's link records it.
std::unique_ptr<LayerFile> open_parent(const ParentLink& link, const std::string& path,
                                       const LayerFile& child) {
    if (!link.format) return open_layer(path);
    // A parent recorded as raw is raw whatever its first bytes look like (qemu does not
    // probe a backing file with backing_fmt=raw): a guest disk may start with a qcow2 or
    // vhdx magic, and reading it as that container would show other bytes.
    if (*link.format == ParentLink::Format::Raw) return open_layer(path, ImageFormat::Raw);
    const ImageFormat found = sniff_format(path);
    if (family_of(found) != link.format)
        throw Error(ErrorKind::Corrupt, "parent " + path + " of " + child.path() + " is recorded as " +
                                            link.recorded_format + " but its content is " +
                                            std::string(format_name(found)));
    return open_layer(path, found);
}

std::string join_ids(const std::vector<std::string>& ids) {
    std::string out;
    for (const std::string& id : ids) out += (out.empty() ? "" : " or ") + id;
    return out;
}

}  // namespace

std::unique_ptr<DiskImage> open_chain(const std::string& path, const std::vector<std::string>& parents) {
    std::vector<std::unique_ptr<LayerFile>> chain;
    std::set<std::string> seen{canonical_or_same(path)};
    chain.push_back(open_layer(path));
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
        const std::string parent_path = choose_parent(*link, parents, depth);
        if (!seen.insert(canonical_or_same(parent_path)).second)
            throw Error(ErrorKind::Corrupt, "loop in the parent chain: " + parent_path + " is its own ancestor");
        auto parent = open_parent(*link, parent_path, child);
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
