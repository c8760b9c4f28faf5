// SPDX-License-Identifier: GPL-2.0-or-later
// Opening a VMDK: which file was named (text descriptor, hosted sparse file with an
// embedded descriptor, bare COWD or seSparse extent), which extent files it lists, and
// which parent it names.
#include "core/image/vmdk.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <map>

#include "core/error.hpp"
#include "core/image/host_file.hpp"
#include "core/image/nbd_uri.hpp"
#include "core/image/source_opener.hpp"
#include "core/image/vmdk_cowd_extent.hpp"
#include "core/image/vmdk_descriptor.hpp"
#include "core/image/vmdk_flat_extent.hpp"
#include "core/image/vmdk_layer.hpp"
#include "core/image/vmdk_sesparse_extent.hpp"
#include "core/image/vmdk_sparse_extent.hpp"

namespace guestfrag {
namespace {

namespace fs = std::filesystem;

enum class Magic { Sparse, Cowd, SeSparse, Other };

Magic magic_of(const HostFile& file) {
    std::array<std::byte, 8> head{};
    if (file.size() < head.size()) return Magic::Other;
    file.read_exact(0, head, "header");
    if (vmdk_le(head, 0, 4) == 0x564d444b) return Magic::Sparse;
    if (vmdk_le(head, 0, 4) == 0x44574f43) return Magic::Cowd;
    if (vmdk_le(head, 0, 8) == VmdkSeSparseHeader::kConstMagic) return Magic::SeSparse;
    return Magic::Other;
}


bool is_windows_absolute(const std::string& name) {
    const bool drive = name.size() >= 3 && std::isalpha(static_cast<unsigned char>(name[0])) && name[1] == ':' &&
                       (name[2] == '\\' || name[2] == '/');
    return drive || name.starts_with("\\\\");
}

/// Paths to try for a parentFileNameHint (or an extent name), in order: a relative name
/// beside the child (sibling_path: its directory, or its NBD server's); an absolute name as
/// written (a datastore or Windows path that rarely exists on this host), then its last
/// component beside the child, where copied disks usually sit side by side. Windows
/// separators become '/' for the lookups beside the child.
std::vector<std::string> candidates_for(const std::string& name, const std::string& child) {
    std::vector<std::string> out;
    const auto add = [&](const std::string& candidate) {
        if (std::find(out.begin(), out.end(), candidate) == out.end()) out.push_back(candidate);
    };
    std::string portable = name;
    std::replace(portable.begin(), portable.end(), '\\', '/');
    if (is_windows_absolute(name) || name.starts_with('/')) {
        add(name);
        const std::string base = fs::path(portable).filename().string();
        if (!base.empty()) add(sibling_path(child, base));
    } else {
        add(sibling_path(child, portable));
        if (portable != name) add(sibling_path(child, fs::path(portable).filename().string()));
    }
    return out;
}

/// `link` with the format VMware records implicitly: a VMDK's parent is a VMDK.
ParentLink vmdk_parent(ParentLink link) {
    link.format = ImageFormat::Vmdk;
    link.recorded_format = format_name(ImageFormat::Vmdk);
    return link;
}

std::optional<ParentLink> parent_from_descriptor(const VmdkDescriptor& d, const std::string& child) {
    const bool has_parent_cid = d.parent_cid != VmdkDescriptor::kNoParent;
    if (!d.parent_hint && !has_parent_cid) return std::nullopt;
    ParentLink link;
    if (d.parent_hint) {
        // A hint with parentCID ffffffff is inconsistent; like qemu, follow the hint (there
        // is then no identity to check the parent by).
        link.recorded = *d.parent_hint;
        link.candidates = candidates_for(*d.parent_hint, child);
    } else {
        link.recorded = "parent with CID " + vmdk_cid_text(d.parent_cid) + " (no parentFileNameHint)";
    }
    if (has_parent_cid) link.expected_identities = {vmdk_cid_text(d.parent_cid)};
    return vmdk_parent(std::move(link));
}

/// The path of an extent file named in a descriptor; throws Error(NotFound) naming the
/// extent when it is missing.
std::string find_extent_file(const VmdkExtentLine& line, std::size_t index, const std::string& child,
                             const SourceOpener& opener) {
    const std::vector<std::string> paths = candidates_for(line.file, child);
    for (const std::string& path : paths)
        if (opener.exists(path)) return path;
    std::string tried;
    for (const std::string& path : paths) tried += (tried.empty() ? "" : ", ") + path;
    throw Error(ErrorKind::NotFound,
                "extent " + std::to_string(index + 1) + " file not found: " + line.file + " (looked for " + tried + ")");
}

HostFile open_extent_file(const VmdkExtentLine& line, std::size_t index, const std::string& child,
                          const SourceOpener& opener) {
    return HostFile(opener.open(find_extent_file(line, index, child, opener)));
}

bool is_sparse(VmdkExtentType type) {
    return type == VmdkExtentType::Sparse || type == VmdkExtentType::VmfsSparse || type == VmdkExtentType::SeSparse;
}

/// A sparse extent file describes one extent from its own start: two lines naming the
/// same one would show its grains twice, and thousands of such lines would turn one small
/// file into as many extents, each with its own tables and caches. VMware never writes
/// that; refused (by the files' identities, so "x.vmdk" and "./x.vmdk" are one file)
/// before any extent is opened.
void refuse_repeated_sparse_files(const VmdkDescriptor& d, const std::string& child, const SourceOpener& opener) {
    std::map<std::string, std::size_t> first_line;  // file identity → extent index
    for (std::size_t i = 0; i < d.extents.size(); ++i) {
        const VmdkExtentLine& line = d.extents[i];
        if (!is_sparse(line.type) || line.access == VmdkAccess::NoAccess) continue;
        const std::string identity = opener.identity(find_extent_file(line, i, child, opener));
        const auto [it, added] = first_line.emplace(identity, i);
        if (!added)
            throw Error(ErrorKind::Corrupt, "vmdk: extents " + std::to_string(it->second + 1) + " and " +
                                                std::to_string(i + 1) + " both name the sparse extent file " +
                                                line.file + " (a sparse extent file holds one extent)");
    }
}

std::unique_ptr<VmdkExtent> open_sparse(HostFile file) {
    switch (magic_of(file)) {
        case Magic::Sparse: {
            const VmdkSparseHeader header = read_vmdk_sparse_header(file);
            return std::make_unique<VmdkSparseExtent>(std::move(file), header);
        }
        case Magic::Cowd: {
            const VmdkCowdHeader header = read_vmdk_cowd_header(file);
            return std::make_unique<VmdkCowdExtent>(std::move(file), header);
        }
        case Magic::SeSparse: {
            const VmdkSeSparseHeader header = read_vmdk_sesparse_header(file);
            return std::make_unique<VmdkSeSparseExtent>(std::move(file), header);
        }
        case Magic::Other: break;
    }
    throw Error(ErrorKind::Corrupt, "not a sparse extent file (unknown magic)");
}

std::unique_ptr<VmdkExtent> open_extent(const VmdkExtentLine& line, std::size_t index, const std::string& child,
                                        bool has_parent, const SourceOpener& opener) {
    const std::uint64_t bytes = line.sectors * kVmdkSectorSize;
    if (line.access == VmdkAccess::NoAccess)
        throw Error(ErrorKind::Unsupported, "vmdk: NOACCESS extents are not supported");
    switch (line.type) {
        case VmdkExtentType::Zero: return std::make_unique<VmdkZeroExtent>(bytes);
        case VmdkExtentType::VmfsRdm:
        case VmdkExtentType::VmfsRaw:
            throw Error(ErrorKind::Unsupported, "vmdk: raw device mapping extents (" +
                                                    std::string(vmdk_extent_type_name(line.type)) +
                                                    ") are not supported");
        case VmdkExtentType::Flat:
        case VmdkExtentType::Vmfs: {
            if (line.offset > kVmdkMaxDiskBytes / kVmdkSectorSize)
                throw Error(ErrorKind::Corrupt, "flat extent offset of " + std::to_string(line.offset) +
                                                    " sectors is absurd");
            return std::make_unique<VmdkFlatExtent>(open_extent_file(line, index, child, opener),
                                                    line.offset * kVmdkSectorSize, bytes, has_parent);
        }
        case VmdkExtentType::Sparse:
        case VmdkExtentType::VmfsSparse:
        case VmdkExtentType::SeSparse: {
            // Go by the file's magic, as qemu does for SPARSE and VMFSSPARSE lines: the
            // line's type is a hint, the header is what the file is.
            auto extent = open_sparse(open_extent_file(line, index, child, opener));
            if (extent->size() != bytes)
                throw Error(ErrorKind::Corrupt, "the descriptor gives it " + std::to_string(line.sectors) +
                                                    " sectors, its header " +
                                                    std::to_string(extent->size() / kVmdkSectorSize));
            return extent;
        }
    }
    throw Error(ErrorKind::Internal, "unhandled vmdk extent type");
}

/// Create types whose extents are host devices: reading them would read this host's disks.
void check_create_type(const std::string& type) {
    for (const char* device : {"fullDevice", "partitionedDevice", "vmfsRaw", "vmfsRawDeviceMap",
                               "vmfsPassthroughRawDeviceMap"})
        if (type == device)
            throw Error(ErrorKind::Unsupported, "vmdk: " + type + " disks (host device extents) are not supported");
}

std::unique_ptr<LayerFile> open_descriptor_file(const std::string& path, const HostFile& file,
                                                const SourceOpener& opener) {
    if (file.size() > kMaxVmdkDescriptorBytes)
        throw Error(ErrorKind::Unsupported, "vmdk: descriptor files larger than " +
                                                std::to_string(kMaxVmdkDescriptorBytes >> 20) +
                                                " MiB are not supported");
    std::string text(static_cast<std::size_t>(file.size()), '\0');
    file.read_exact(0, std::as_writable_bytes(std::span(text)), "descriptor");
    VmdkDescriptor d = parse_vmdk_descriptor(text);
    check_create_type(d.create_type);
    if (d.extents.empty()) throw Error(ErrorKind::Corrupt, "vmdk descriptor lists no extents");
    if (d.total_sectors() > kVmdkMaxDiskBytes / kVmdkSectorSize)
        throw Error(ErrorKind::Unsupported, "vmdk: extents of " + std::to_string(d.total_sectors()) +
                                                " sectors in all exceed the 64 TiB limit");

    refuse_repeated_sparse_files(d, path, opener);
    auto parent = parent_from_descriptor(d, path);
    std::vector<VmdkLayer::Placed> extents;
    std::uint64_t start = 0;
    for (std::size_t i = 0; i < d.extents.size(); ++i) {
        const VmdkExtentLine& line = d.extents[i];
        try {
            extents.push_back({start, open_extent(line, i, path, parent.has_value(), opener), line.file});
        } catch (const Error& e) {
            // Missing files are already named; "not supported" stands on its own.
            if (e.kind() == ErrorKind::NotFound || e.kind() == ErrorKind::Unsupported) throw;
            throw Error(e.kind(), "extent " + std::to_string(i + 1) + " (" +
                                      (line.file.empty() ? std::string("ZERO") : line.file) + "): " + e.what());
        }
        start += line.sectors * kVmdkSectorSize;
    }
    return std::make_unique<VmdkLayer>(path, std::move(d), std::move(extents), std::move(parent));
}

/// A hosted sparse file named directly: monolithicSparse or streamOptimized (descriptor
/// embedded), or one extent of a split disk (no descriptor of its own).
std::unique_ptr<LayerFile> open_sparse_file(const std::string& path, HostFile file) {
    const VmdkSparseHeader header = read_vmdk_sparse_header(file);
    std::optional<VmdkDescriptor> d;
    std::optional<ParentLink> parent;
    if (const std::string text = read_vmdk_embedded_descriptor(file, header); !text.empty()) {
        d = parse_vmdk_descriptor(text);
        // The embedded extent lines describe this very file; they must agree with it.
        if (!d->extents.empty() && d->total_sectors() != header.capacity)
            throw Error(ErrorKind::Corrupt, "embedded descriptor extents sum to " + std::to_string(d->total_sectors()) +
                                                " sectors, the header capacity is " + std::to_string(header.capacity));
        parent = parent_from_descriptor(*d, path);
    }
    std::vector<VmdkLayer::Placed> extents;
    extents.push_back({0, std::make_unique<VmdkSparseExtent>(std::move(file), header), fs::path(path).filename().string()});
    return std::make_unique<VmdkLayer>(path, std::move(d), std::move(extents), std::move(parent));
}

/// A COWD extent named directly. Legacy redo logs without the root flag name their parent
/// in the header (no content id to check it by).
std::unique_ptr<LayerFile> open_cowd_file(const std::string& path, HostFile file) {
    const VmdkCowdHeader header = read_vmdk_cowd_header(file);
    std::optional<ParentLink> parent;
    if (!header.parent_file_name.empty()) {
        ParentLink link;
        link.recorded = header.parent_file_name;
        link.candidates = candidates_for(header.parent_file_name, path);
        parent = vmdk_parent(std::move(link));
    }
    std::vector<VmdkLayer::Placed> extents;
    extents.push_back({0, std::make_unique<VmdkCowdExtent>(std::move(file), header), fs::path(path).filename().string()});
    return std::make_unique<VmdkLayer>(path, std::nullopt, std::move(extents), std::move(parent));
}

std::unique_ptr<LayerFile> open_sesparse_file(const std::string& path, HostFile file) {
    const VmdkSeSparseHeader header = read_vmdk_sesparse_header(file);
    std::vector<VmdkLayer::Placed> extents;
    extents.push_back({0, std::make_unique<VmdkSeSparseExtent>(std::move(file), header), fs::path(path).filename().string()});
    return std::make_unique<VmdkLayer>(path, std::nullopt, std::move(extents), std::nullopt);
}

}  // namespace

std::unique_ptr<LayerFile> open_vmdk(HostFile file, const SourceOpener& opener) {
    const std::string path = file.path();
    switch (magic_of(file)) {
        case Magic::Sparse: return open_sparse_file(path, std::move(file));
        case Magic::Cowd: return open_cowd_file(path, std::move(file));
        case Magic::SeSparse: return open_sesparse_file(path, std::move(file));
        case Magic::Other: break;
    }
    return open_descriptor_file(path, file, opener);
}

std::unique_ptr<LayerFile> open_vmdk(const std::string& path) { return open_vmdk(HostFile(path), file_opener()); }

}  // namespace guestfrag
