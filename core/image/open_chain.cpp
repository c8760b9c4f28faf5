// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/open_chain.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "core/error.hpp"
#include "core/image/chain_image.hpp"
#include "core/image/host_file.hpp"
#include "core/image/layer_file.hpp"
#include "core/image/nbd_uri.hpp"
#include "core/image/open_image.hpp"
#include "core/image/source_opener.hpp"

namespace guestfrag {

std::string recorded_file_name(const std::string& recorded) {
    if (is_nbd_uri(recorded)) return recorded_file_name(nbd_export_name(recorded));
    const auto cut = recorded.find_last_of("\\/");
    return cut == std::string::npos ? recorded : recorded.substr(cut + 1);
}

std::string ParentOverride::text() const {
    if (depth != 0) return std::to_string(depth) + "=" + path;
    return name + "=" + path;
}

std::optional<ParentOverride> parse_parent_override(std::string_view text) {
    // An NBD URI's query holds '=' ("nbd+unix:///x?socket=/s"): a key comes before it.
    const auto eq = is_nbd_uri(text) ? std::string_view::npos : text.find('=');
    if (eq == std::string_view::npos) {
        if (text.empty()) return std::nullopt;
        return ParentOverride{1, {}, std::string(text)};
    }
    const std::string_view key = text.substr(0, eq);
    const std::string_view path = text.substr(eq + 1);
    if (key.empty() || path.empty()) return std::nullopt;
    ParentOverride out;
    out.path = std::string(path);
    if (std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), out.depth);
        if (ec != std::errc() || end != key.data() + key.size() || out.depth == 0) return std::nullopt;
    } else {
        out.name = std::string(key);
    }
    return out;
}

namespace {

bool names_link(const ParentOverride& given, const ParentLink& link) {
    return !given.name.empty() && (given.name == link.recorded || given.name == recorded_file_name(link.recorded));
}

/// The overrides of one open_chain call, each to be used exactly once: one left over
/// would mean a layer the user meant is not in the chain, which must not pass silently.
class Overrides {
public:
    explicit Overrides(const std::vector<ParentOverride>& given) : given_(given), used_(given.size(), false) {}

    /// The override for the parent at `depth` that `link` records, if one is given; at most one may be.
    [[nodiscard]] const ParentOverride* take(std::size_t depth, const ParentLink& link) {
        const ParentOverride* found = nullptr;
        for (std::size_t i = 0; i < given_.size(); ++i) {
            const ParentOverride& o = given_[i];
            const bool by_depth = o.depth == depth;
            // An override that names a depth is that depth's, whatever name it carries.
            const bool by_name = o.depth == 0 && !used_[i] && names_link(o, link);
            if (!by_depth && !by_name) continue;
            if (found != nullptr)
                throw Error(ErrorKind::Unsupported, "--parent " + found->text() + " and --parent " + o.text() +
                                                        " both give the parent at depth " + std::to_string(depth));
            found = &o;
            used_[i] = true;
        }
        return found;
    }

    /// Throws for the first override no layer took.
    void require_all_used(const LayerFile& deepest, std::size_t deepest_depth) const {
        for (std::size_t i = 0; i < given_.size(); ++i) {
            if (used_[i]) continue;
            const ParentOverride& o = given_[i];
            const std::string chain_end = "the chain ends at " + deepest.path() + " (depth " +
                                          std::to_string(deepest_depth) + "), which has no parent";
            if (o.depth != 0)
                throw Error(ErrorKind::Unsupported, "--parent " + o.text() + " gives a parent at depth " +
                                                        std::to_string(o.depth) + ", but " + chain_end);
            throw Error(ErrorKind::Unsupported, "--parent " + o.text() + ": no layer of the chain records a parent named " +
                                                    o.name + "; " + chain_end);
        }
    }

private:
    const std::vector<ParentOverride>& given_;
    std::vector<bool> used_;
};

/// Where the hypervisor would find the parent `link` names, or MissingParentError
/// naming the child, its depth and the override that would supply the parent.
std::string find_recorded_parent(const ParentLink& link, const LayerFile& child, std::size_t depth,
                                 const SourceOpener& opener) {
    for (const std::string& candidate : link.candidates)
        if (opener.is_readable(candidate)) return candidate;
    std::string tried;
    for (const std::string& candidate : link.candidates) tried += (tried.empty() ? "" : ", ") + candidate;
    throw MissingParentError(depth, link.recorded,
                             "parent not found: " + child.path() + " (depth " + std::to_string(depth - 1) +
                                 ") records parent " + link.recorded +
                                 (tried.empty() ? "" : " (looked for " + tried + ")") + "; give it with --parent " +
                                 std::to_string(depth) + "=PATH");
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

/// Checks that `parent` (at `depth`, opened from `given` when the user gave it) is the
/// layer `child` records: by identity when both sides have one, else — for a given file,
/// since a found one is where the hypervisor itself would take it — by name and size.
void check_parent(const LayerFile& parent, const std::string& path, const ParentOverride* given,
                  const ParentLink& link, const LayerFile& child, std::size_t depth) {
    const auto& ids = link.expected_identities;
    const auto id = parent.identity();
    if (id && !ids.empty()) {
        if (std::find(ids.begin(), ids.end(), *id) == ids.end())
            throw Error(ErrorKind::Corrupt, (given != nullptr ? "--parent " + given->text() : "parent " + path) +
                                                " (depth " + std::to_string(depth) + ") is not the one " +
                                                child.path() + " was made from (expected id " + join_ids(ids) +
                                                ", found " + *id + ")");
        return;
    }
    if (given == nullptr) return;
    const std::string recorded_name = recorded_file_name(link.recorded);
    if (!names_link(*given, link) && recorded_file_name(path) != recorded_name)
        throw Error(ErrorKind::Corrupt,
                    "--parent " + given->text() + " is not the parent " + child.path() + " (depth " +
                        std::to_string(depth - 1) + ") records, " + link.recorded +
                        "; give each parent for its own depth, and a renamed one by the name its child records (--parent " +
                        recorded_name + "=PATH)");
    if (parent.virtual_size() != child.virtual_size())
        throw Error(ErrorKind::Corrupt, "--parent " + given->text() + " is a disk of " +
                                            std::to_string(parent.virtual_size()) + " bytes, but its child " +
                                            child.path() + " is " + std::to_string(child.virtual_size()) +
                                            " bytes; it is not the parent the child was made from");
}

}  // namespace

std::unique_ptr<DiskImage> open_chain(const std::string& path, const std::vector<ParentOverride>& parents) {
    return open_chain(file_opener().open(path), file_opener(), parents);
}

std::unique_ptr<DiskImage> open_chain(std::shared_ptr<const ByteSource> top, const SourceOpener& opener,
                                      const std::vector<ParentOverride>& parents) {
    if (!top) throw Error(ErrorKind::Internal, "open_chain without a top layer");
    return open_chain(open_layer(std::move(top), opener), opener, parents);
}

std::unique_ptr<DiskImage> open_chain(std::unique_ptr<LayerFile> top, const SourceOpener& opener,
                                      const std::vector<ParentOverride>& parents) {
    if (!top) throw Error(ErrorKind::Internal, "open_chain without a top layer");
    Overrides overrides(parents);
    std::vector<std::unique_ptr<LayerFile>> chain;
    std::set<std::string> seen{opener.identity(top->path())};
    chain.push_back(std::move(top));
    while (const auto link = chain.back()->parent()) {
        const std::size_t depth = chain.size();  // of the parent
        const LayerFile& child = *chain.back();
        if (depth > kMaxChainDepth)
            throw Error(ErrorKind::Corrupt, "parent chain deeper than " + std::to_string(kMaxChainDepth) + " layers");
        // Checked before looking for the file: no file would make the chain readable.
        if (!link->format && !link->recorded_format.empty())
            throw Error(ErrorKind::Unsupported, child.path() + " records its parent as a " +
                                                    link->recorded_format +
                                                    " image, which guestfrag does not read");
        const ParentOverride* given = overrides.take(depth, *link);
        if (given != nullptr && !opener.exists(given->path))
            throw Error(ErrorKind::NotFound, "parent given with --parent " + given->text() + " does not exist");
        const std::string parent_path =
            given != nullptr ? given->path : find_recorded_parent(*link, child, depth, opener);
        if (!seen.insert(opener.identity(parent_path)).second)
            throw Error(ErrorKind::Corrupt, "loop in the parent chain: " + parent_path + " is its own ancestor");
        auto parent = open_parent(*link, parent_path, child, opener);
        check_parent(*parent, parent_path, given, *link, child, depth);
        chain.push_back(std::move(parent));
    }
    overrides.require_all_used(*chain.back(), chain.size() - 1);
    return std::make_unique<ChainImage>(std::move(chain));
}

}  // namespace guestfrag
