// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vmdk_descriptor.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include "core/error.hpp"

namespace guestfrag {
namespace {

constexpr std::string_view kBlanks = " \t\r\f\v";

std::string_view trim(std::string_view s) {
    const auto first = s.find_first_not_of(kBlanks);
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(kBlanks);
    return s.substr(first, last - first + 1);
}

bool is_blank(char c) { return kBlanks.find(c) != std::string_view::npos; }

/// Splits off the next blank-separated token of `rest`.
std::string_view next_token(std::string_view& rest) {
    rest = trim(rest);
    std::size_t end = 0;
    while (end < rest.size() && !is_blank(rest[end])) ++end;
    const std::string_view token = rest.substr(0, end);
    rest.remove_prefix(end);
    return token;
}

std::string_view unquote(std::string_view value) {
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') return value.substr(1, value.size() - 2);
    return value;
}

/// A short printable excerpt of a line for messages.
std::string excerpt(std::string_view line) {
    std::string out;
    for (const char c : line.substr(0, 60)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    return line.size() > 60 ? out + "..." : out;
}

[[noreturn]] void corrupt_line(std::size_t number, const std::string& what) {
    throw Error(ErrorKind::Corrupt, "descriptor line " + std::to_string(number) + ": " + what);
}

std::optional<std::uint64_t> parse_decimal(std::string_view text) {
    std::uint64_t value = 0;
    if (text.empty()) return std::nullopt;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 10);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::uint32_t parse_cid(std::string_view key, std::string_view text, std::size_t line) {
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    if (text.empty() || text.size() > 8 || ec != std::errc() || end != text.data() + text.size())
        corrupt_line(line, std::string(key) + " \"" + excerpt(text) + "\" is not a 32-bit hex number");
    return value;
}

constexpr std::array<std::pair<std::string_view, VmdkExtentType>, 8> kTypes = {{
    {"FLAT", VmdkExtentType::Flat},
    {"SPARSE", VmdkExtentType::Sparse},
    {"ZERO", VmdkExtentType::Zero},
    {"VMFS", VmdkExtentType::Vmfs},
    {"VMFSSPARSE", VmdkExtentType::VmfsSparse},
    {"VMFSRDM", VmdkExtentType::VmfsRdm},
    {"VMFSRAW", VmdkExtentType::VmfsRaw},
    {"SESPARSE", VmdkExtentType::SeSparse},
}};

std::optional<VmdkAccess> parse_access(std::string_view token) {
    if (token == "RW") return VmdkAccess::ReadWrite;
    if (token == "RDONLY") return VmdkAccess::ReadOnly;
    if (token == "NOACCESS") return VmdkAccess::NoAccess;
    return std::nullopt;
}

VmdkExtentLine parse_extent(VmdkAccess access, std::string_view rest, std::size_t line) {
    VmdkExtentLine extent;
    extent.access = access;
    const std::string_view sectors = next_token(rest);
    const auto count = parse_decimal(sectors);
    if (!count) corrupt_line(line, "extent size \"" + excerpt(sectors) + "\" is not a number of sectors");
    if (*count == 0) corrupt_line(line, "extent of 0 sectors");
    extent.sectors = *count;

    const std::string_view type = next_token(rest);
    const auto known = std::find_if(kTypes.begin(), kTypes.end(), [&](const auto& t) { return t.first == type; });
    if (known == kTypes.end())
        throw Error(ErrorKind::Unsupported, "vmdk: extent type \"" + excerpt(type) + "\" is not supported");
    extent.type = known->second;

    rest = trim(rest);
    if (!rest.empty() && rest.front() == '"') {
        const auto close = rest.find('"', 1);
        if (close == std::string_view::npos) corrupt_line(line, "extent file name has no closing quote");
        extent.file = std::string(rest.substr(1, close - 1));
        rest.remove_prefix(close + 1);
    } else if (!rest.empty()) {
        extent.file = std::string(next_token(rest));  // old descriptors may leave the name unquoted
    }
    if (extent.file.empty() && extent.type != VmdkExtentType::Zero)
        corrupt_line(line, std::string(vmdk_extent_type_name(extent.type)) + " extent without a file name");

    // The start sector in the file; device extents may add a partition UUID and device
    // id after it, which say nothing about the data and are ignored.
    const std::string_view offset = next_token(rest);
    if (!offset.empty()) {
        const auto value = parse_decimal(offset);
        if (!value) corrupt_line(line, "extent offset \"" + excerpt(offset) + "\" is not a number of sectors");
        extent.offset = *value;
    }
    return extent;
}

}  // namespace

std::string_view vmdk_extent_type_name(VmdkExtentType type) noexcept {
    for (const auto& [name, value] : kTypes)
        if (value == type) return name;
    return "?";
}

std::uint64_t VmdkDescriptor::total_sectors() const {
    std::uint64_t total = 0;
    for (const VmdkExtentLine& e : extents) total += e.sectors;
    return total;
}

VmdkDescriptor parse_vmdk_descriptor(std::string_view text) {
    if (const auto nul = text.find('\0'); nul != std::string_view::npos) text = text.substr(0, nul);
    if (text.size() > kMaxVmdkDescriptorBytes)
        throw Error(ErrorKind::Unsupported, "vmdk: descriptors larger than " +
                                                std::to_string(kMaxVmdkDescriptorBytes >> 20) + " MiB are not supported");
    VmdkDescriptor d;
    std::uint64_t total = 0;
    std::size_t number = 0;
    while (!text.empty()) {
        const auto eol = text.find('\n');
        const std::string_view raw = text.substr(0, eol);
        text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
        ++number;
        const std::string_view line = trim(raw);
        if (line.empty() || line.front() == '#') continue;

        std::string_view rest = line;
        if (const auto access = parse_access(next_token(rest))) {
            if (d.extents.size() == kMaxVmdkExtents)
                throw Error(ErrorKind::Unsupported, "vmdk: descriptors with more than " +
                                                        std::to_string(kMaxVmdkExtents) + " extents are not supported");
            VmdkExtentLine extent = parse_extent(*access, rest, number);
            if (extent.sectors > ~std::uint64_t{0} - total) corrupt_line(number, "extent sizes overflow");
            total += extent.sectors;
            d.extents.push_back(std::move(extent));
            continue;
        }
        const auto equals = line.find('=');
        if (equals == std::string_view::npos) continue;
        const std::string_view key = trim(line.substr(0, equals));
        const std::string_view value = unquote(trim(line.substr(equals + 1)));
        if (key.empty()) continue;
        if (key == "CID") d.cid = parse_cid(key, value, number);
        else if (key == "parentCID") d.parent_cid = parse_cid(key, value, number);
        else if (key == "createType") d.create_type = std::string(value);
        else if (key == "parentFileNameHint") d.parent_hint = std::string(value);
        d.values.insert_or_assign(std::string(key), std::string(value));
    }
    return d;
}

}  // namespace guestfrag
