// SPDX-License-Identifier: GPL-2.0-or-later
// qcow2 header parsing and validation (qcow2 specification, versions 2 and 3):
//
//   0 magic "QFI\xfb"   4 version   8 backing_file_offset   16 backing_file_size
//  20 cluster_bits     24 size     32 crypt_method          36 l1_size   40 l1_table_offset
//  48 refcount table   56 refcount clusters  60 nb_snapshots  64 snapshots_offset
//  v3: 72 incompatible_features  80 compatible  88 autoclear  96 refcount_order
//      100 header_length  104 compression_type (when header_length > 104)
//
// All fields are big-endian. Header extensions follow the header inside the first cluster.
#include "core/image/qcow2_header.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "core/error.hpp"
#include "core/image/host_file.hpp"

namespace guestfrag {
namespace {

constexpr std::uint32_t kVersion2HeaderBytes = 72;
constexpr std::uint32_t kVersion3HeaderBytes = 104;
constexpr std::uint32_t kMinClusterBits = 9;
constexpr std::uint32_t kMaxClusterBits = 21;
// qemu's limit: the name must fit its 1024-byte buffer with the terminating NUL.
constexpr std::uint64_t kMaxBackingNameBytes = 1023;
// qemu keeps the backing format in a 16-byte buffer; longer ones make it refuse the image.
constexpr std::uint64_t kMaxBackingFormatBytes = 15;

constexpr std::uint32_t kExtEnd = 0;
constexpr std::uint32_t kExtBackingFormat = 0xe2792aca;
constexpr std::uint32_t kExtFeatureNames = 0x6803f857;

constexpr std::uint64_t kIncompatDirty = 1u << 0;
constexpr std::uint64_t kIncompatCorrupt = 1u << 1;
constexpr std::uint64_t kIncompatDataFile = 1u << 2;
constexpr std::uint64_t kIncompatCompression = 1u << 3;
constexpr std::uint64_t kIncompatExtendedL2 = 1u << 4;
constexpr std::uint64_t kIncompatKnown =
    kIncompatDirty | kIncompatCorrupt | kIncompatDataFile | kIncompatCompression | kIncompatExtendedL2;

constexpr std::uint8_t kCompressionZlib = 0;
constexpr std::uint8_t kCompressionZstd = 1;

[[noreturn]] void corrupt(const std::string& what) { throw Error(ErrorKind::Corrupt, "qcow2: " + what); }
/// `what` names the feature and carries its verb ("zstd compression is").
[[noreturn]] void unsupported(const std::string& what) {
    throw Error(ErrorKind::Unsupported, "qcow2: " + what + " not supported");
}

std::string hex(std::uint64_t value) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    do {
        text.insert(text.begin(), digits[value & 0xf]);
        value >>= 4;
    } while (value != 0);
    return "0x" + text;
}

/// The header cluster as far as the file holds it. Bytes past the file read as zero, which
/// is what qemu sees there too (it ends the header-extension list).
class HeaderBytes {
public:
    explicit HeaderBytes(std::span<const std::byte> head) : head_(head) {}

    [[nodiscard]] std::size_t size() const { return head_.size(); }
    [[nodiscard]] std::uint64_t be(std::uint64_t offset, unsigned bytes) const {
        std::uint64_t value = 0;
        for (unsigned i = 0; i < bytes; ++i) value = (value << 8) | byte(offset + i);
        return value;
    }
    [[nodiscard]] std::uint8_t byte(std::uint64_t offset) const {
        return offset < head_.size() ? std::to_integer<std::uint8_t>(head_[static_cast<std::size_t>(offset)])
                                     : 0;
    }
    /// Bytes [offset, offset + length) as text, cut at the first NUL as C readers do.
    [[nodiscard]] std::string text(std::uint64_t offset, std::uint64_t length) const {
        std::string s;
        for (std::uint64_t i = 0; i < length; ++i) {
            const char c = static_cast<char>(byte(offset + i));
            if (c == '\0') break;
            s.push_back(c);
        }
        return s;
    }

private:
    std::span<const std::byte> head_;
};

struct Extensions {
    std::optional<std::string> backing_format;
    std::array<std::string, 64> incompatible_names;  ///< from the feature name table, may be empty
};

/// Walks the header extensions between `start` and `end` (both inside the first cluster).
Extensions parse_extensions(const HeaderBytes& h, std::uint64_t start, std::uint64_t end) {
    Extensions ext;
    std::uint64_t offset = start;
    while (offset < end) {
        if (end - offset < 8)
            corrupt("header extension at offset " + std::to_string(offset) + " is truncated");
        const auto type = static_cast<std::uint32_t>(h.be(offset, 4));
        const std::uint64_t length = h.be(offset + 4, 4);
        offset += 8;
        if (length > end - offset)
            corrupt("header extension " + hex(type) + " (" + std::to_string(length) +
                    " bytes) runs past the header area");
        if (type == kExtEnd) break;
        if (type == kExtBackingFormat) {
            if (length > kMaxBackingFormatBytes)
                corrupt("backing format name too long (" + std::to_string(length) + " bytes)");
            ext.backing_format = h.text(offset, length);
        } else if (type == kExtFeatureNames) {
            // Entries of 48 bytes: type (0 = incompatible), bit number, 46-byte name.
            for (std::uint64_t e = offset; e + 48 <= offset + length; e += 48) {
                if (h.byte(e) == 0 && h.byte(e + 1) < 64)
                    ext.incompatible_names[h.byte(e + 1)] = h.text(e + 2, 46);
            }
        }
        // Everything else (bitmaps, encryption header, data file name) does not affect reads
        // or is refused through its incompatible-feature bit.
        offset += (length + 7) & ~std::uint64_t{7};
    }
    return ext;
}

void check_features(std::uint64_t incompat, std::uint8_t compression_type, const Extensions& ext) {
    if (const std::uint64_t unknown = incompat & ~kIncompatKnown) {
        unsigned bit = 0;
        while (((unknown >> bit) & 1) == 0) ++bit;
        const std::string& name = ext.incompatible_names[bit];
        unsupported(name.empty()
                        ? "incompatible feature bit " + std::to_string(bit) + " is"
                        : "incompatible feature '" + name + "' (bit " + std::to_string(bit) + ") is");
    }
    if (incompat & kIncompatCorrupt) throw Error(ErrorKind::Corrupt, "qcow2 image is marked corrupt");
    if (incompat & kIncompatDataFile) unsupported("external data files are");
    if (compression_type == kCompressionZlib) {
        if (incompat & kIncompatCompression) corrupt("compression type bit set for zlib compression");
    } else {
        if (!(incompat & kIncompatCompression))
            corrupt("compression type " + std::to_string(compression_type) + " without its feature bit");
        if (compression_type == kCompressionZstd) unsupported("zstd compression is");
        unsupported("compression type " + std::to_string(compression_type) + " is");
    }
}

/// Validates the L1 table position and size against the recorded virtual size (`size`,
/// before rounding to sectors, as qemu checks it) and the file.
void check_l1(const HeaderBytes& h, Qcow2Header& header, std::uint64_t size, std::uint64_t file_size) {
    const std::uint64_t l1_size = h.be(36, 4);
    header.l1_table_offset = h.be(40, 8);
    // One L1 entry covers a whole L2 table: l2_entries clusters.
    const std::uint32_t bytes_per_l1_bits =
        header.cluster_bits + (header.cluster_bits - (header.extended_l2 ? 4 : 3));
    header.l1_entries = (size + (std::uint64_t{1} << bytes_per_l1_bits) - 1) >> bytes_per_l1_bits;
    if (l1_size < header.l1_entries)
        corrupt("L1 table has " + std::to_string(l1_size) + " entries, the virtual size needs " +
                std::to_string(header.l1_entries));
    if (l1_size > kQcow2MaxL1Entries) corrupt("L1 table too large (" + std::to_string(l1_size) + " entries)");
    if (header.l1_entries == 0) return;
    if (header.l1_table_offset % header.cluster_size() != 0)
        corrupt("L1 table offset " + std::to_string(header.l1_table_offset) + " is not cluster aligned");
    if (header.l1_table_offset == 0) corrupt("L1 table overlaps the header");
    if (header.l1_table_offset > file_size || header.l1_entries * 8 > file_size - header.l1_table_offset)
        corrupt("L1 table (offset " + std::to_string(header.l1_table_offset) + ", " +
                std::to_string(header.l1_entries) + " entries) lies past the end of the file (" +
                std::to_string(file_size) + " bytes)");
}

void read_backing_name(const HeaderBytes& h, Qcow2Header& header, std::uint64_t file_size) {
    const std::uint64_t offset = h.be(8, 8);
    const std::uint64_t length = h.be(16, 4);
    if (offset == 0) return;  // no backing file, whatever the size field says
    if (length > kMaxBackingNameBytes)
        corrupt("backing file name too long (" + std::to_string(length) + " bytes)");
    if (offset >= header.cluster_size() || length > header.cluster_size() - offset)
        corrupt("backing file name at offset " + std::to_string(offset) + " lies outside the header cluster");
    if (offset + length > file_size)
        corrupt("backing file name at offset " + std::to_string(offset) + " lies past the end of the file (" +
                std::to_string(file_size) + " bytes)");
    std::string name = h.text(offset, length);
    if (!name.empty()) header.backing_file = std::move(name);
}

}  // namespace

std::uint64_t qcow2_header_bytes(std::span<const std::byte> head, std::uint64_t file_size) {
    const HeaderBytes h(head);
    const std::uint64_t cluster_bits = h.size() >= 24 ? h.be(20, 4) : 0;
    if (cluster_bits < kMinClusterBits || cluster_bits > kMaxClusterBits)
        return std::min<std::uint64_t>(file_size, head.size());
    return std::min(file_size, std::uint64_t{1} << cluster_bits);
}

Qcow2Header parse_qcow2_header(std::span<const std::byte> head, std::uint64_t file_size) {
    const HeaderBytes h(head);
    if (h.size() < 4 || h.be(0, 4) != 0x514649fb) corrupt("bad magic");
    if (h.size() < 8) corrupt("file too short for a header (" + std::to_string(h.size()) + " bytes)");
    Qcow2Header header;
    header.version = static_cast<std::uint32_t>(h.be(4, 4));
    if (header.version == 1) throw Error(ErrorKind::Unsupported, "qcow (version 1) images are not supported");
    if (header.version != 2 && header.version != 3)
        unsupported("version " + std::to_string(header.version) + " is");
    const std::uint32_t fixed_bytes = header.version == 2 ? kVersion2HeaderBytes : kVersion3HeaderBytes;
    if (h.size() < fixed_bytes)
        corrupt("file too short for a version " + std::to_string(header.version) + " header (" +
                std::to_string(h.size()) + " bytes)");

    const std::uint64_t cluster_bits = h.be(20, 4);
    if (cluster_bits < kMinClusterBits || cluster_bits > kMaxClusterBits)
        corrupt("cluster_bits " + std::to_string(cluster_bits) + " out of range (9..21)");
    header.cluster_bits = static_cast<std::uint32_t>(cluster_bits);

    std::uint64_t header_length = kVersion2HeaderBytes;
    std::uint8_t compression_type = kCompressionZlib;
    if (header.version == 3) {
        header_length = h.be(100, 4);
        if (header_length < kVersion3HeaderBytes || header_length > header.cluster_size())
            corrupt("header length " + std::to_string(header_length) + " out of range");
        if (header_length > h.size())
            corrupt("file too short for its header (" + std::to_string(h.size()) + " bytes, header is " +
                    std::to_string(header_length) + ")");
        header.incompatible_features = h.be(72, 8);
        if (header_length > kVersion3HeaderBytes) compression_type = h.byte(104);
    }

    if (h.be(32, 4) != 0) unsupported("encrypted images are");

    read_backing_name(h, header, file_size);
    // The extensions end where the backing file name starts, or with the cluster.
    const std::uint64_t backing_offset = h.be(8, 8);
    const std::uint64_t ext_end = backing_offset != 0 ? backing_offset : header.cluster_size();
    const Extensions ext = parse_extensions(h, header_length, ext_end);
    header.backing_format = ext.backing_format;

    check_features(header.incompatible_features, compression_type, ext);
    header.dirty = (header.incompatible_features & kIncompatDirty) != 0;
    header.extended_l2 = (header.incompatible_features & kIncompatExtendedL2) != 0;
    // Subclusters must be at least a sector (qemu refuses smaller ones too).
    if (header.extended_l2 && header.cluster_bits < kMinClusterBits + 5)
        corrupt("extended L2 entries with " + std::to_string(header.cluster_size()) + "-byte clusters");

    const std::uint64_t size = h.be(24, 8);
    if (size > kQcow2MaxVirtualSize)
        throw Error(ErrorKind::Unsupported,
                    "qcow2: virtual size " + std::to_string(size) + " bytes exceeds the 64 TiB limit");
    // qemu exposes whole 512-byte sectors only: a tail fragment of a sector is not part of
    // the disk it shows, so it is not part of ours either.
    header.virtual_size = size & ~std::uint64_t{511};
    check_l1(h, header, size, file_size);
    return header;
}

Qcow2Header read_qcow2_header(const HostFile& file) {
    std::vector<std::byte> head(
        static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), kVersion3HeaderBytes)));
    file.read_exact(0, head, "qcow2 header");
    head.resize(static_cast<std::size_t>(qcow2_header_bytes(head, file.size())));
    file.read_exact(0, head, "qcow2 header cluster");
    return parse_qcow2_header(head, file.size());
}

}  // namespace guestfrag
