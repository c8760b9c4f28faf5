// SPDX-License-Identifier: GPL-2.0-or-later
// The qcow2 layout written here follows qemu's docs/interop/qcow2.txt (version 3).
#include "core/apply/qcow2_writer.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/error.hpp"
#include "core/image/qcow2_header.hpp"

namespace guestfrag {
namespace {

constexpr std::uint64_t kCluster = Qcow2OverlayWriter::kClusterSize;
constexpr std::uint64_t kL2Entries = kCluster / 8;         // 8-byte L2 entries
constexpr std::uint64_t kRefcountsPerBlock = kCluster / 2;  // refcount_order 4: 16 bits each
constexpr std::uint64_t kCopied = std::uint64_t{1} << 63;   // refcount exactly 1: writable in place
constexpr std::uint32_t kHeaderLength = 104;                // version 3 without optional fields
constexpr std::uint32_t kBackingFormatExtension = 0xe2792aca;
constexpr std::size_t kMaxBackingName = 1023;               // qemu refuses longer names

std::uint64_t clusters_for(std::uint64_t bytes) { return (bytes + kCluster - 1) / kCluster; }

void put_be(std::vector<std::byte>& buffer, std::size_t at, std::uint64_t value, int width) {
    for (int i = 0; i < width; ++i)
        buffer[at + static_cast<std::size_t>(i)] = static_cast<std::byte>(value >> (8 * (width - 1 - i)));
}

}  // namespace

Qcow2OverlayWriter::Qcow2OverlayWriter(int fd, std::string path, std::uint64_t virtual_size,
                                       std::optional<Qcow2Backing> backing)
    : file_(fd, std::move(path)), virtual_size_(virtual_size), backing_(std::move(backing)) {
    check_possible(virtual_size_, backing_);
}

void Qcow2OverlayWriter::check_possible(std::uint64_t virtual_size, const std::optional<Qcow2Backing>& backing) {
    if (virtual_size > kQcow2MaxVirtualSize)
        throw Error(ErrorKind::Unsupported, "a qcow2 overlay of " + std::to_string(virtual_size) +
                                                " bytes is larger than guestfrag reads back");
    if (backing && (backing->file.empty() || backing->file.size() > kMaxBackingName))
        throw Error(ErrorKind::Unsupported, "the backing file name \"" + backing->file +
                                                "\" cannot be recorded in a qcow2 header (1 to 1023 bytes)");
}

std::optional<std::uint64_t> Qcow2OverlayWriter::stored_at(std::uint64_t index) const {
    const auto it = host_of_.find(index);
    if (it == host_of_.end()) return std::nullopt;
    return it->second * kCluster;
}

std::uint64_t Qcow2OverlayWriter::allocate(std::uint64_t index) {
    if (finished_ || index >= clusters_for(virtual_size_) || host_of_.contains(index))
        throw Error(ErrorKind::Internal, "qcow2 overlay cluster " + std::to_string(index) + " allocated twice");
    const std::uint64_t host = 1 + guest_clusters_.size();
    host_of_.emplace(index, host);
    guest_clusters_.push_back(index);
    return host * kCluster;
}

void Qcow2OverlayWriter::release(std::uint64_t index) {
    const auto it = host_of_.find(index);
    if (finished_ || it == host_of_.end())
        throw Error(ErrorKind::Internal,
                    "qcow2 overlay cluster " + std::to_string(index) + " released but not stored");
    const std::uint64_t host = it->second;
    guest_clusters_[host - 1] = kReleased;
    host_of_.erase(it);
    // Only space is at stake: a file system that cannot punch keeps the bytes, unreferenced.
    (void)::fallocate(file_.fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(host * kCluster), static_cast<off_t>(kCluster));
}

std::vector<std::uint64_t> Qcow2OverlayWriter::stored_clusters() const {
    std::vector<std::uint64_t> out;
    out.reserve(host_of_.size());
    for (const std::uint64_t g : guest_clusters_)
        if (g != kReleased) out.push_back(g);
    return out;
}

void Qcow2OverlayWriter::write_cluster(std::uint64_t index, std::span<const std::byte> data) {
    if (data.size() != kCluster)
        throw Error(ErrorKind::Internal, "qcow2 overlay cluster of " + std::to_string(data.size()) + " bytes");
    file_.write(allocate(index), data);
}

std::uint64_t Qcow2OverlayWriter::finish() {
    if (finished_) throw Error(ErrorKind::Internal, "qcow2 overlay finished twice");
    finished_ = true;
    const std::uint64_t l1_entries = (clusters_for(virtual_size_) + kL2Entries - 1) / kL2Entries;
    // The stored clusters in guest order, for the L2 tables.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> mapping(host_of_.begin(), host_of_.end());
    std::sort(mapping.begin(), mapping.end());
    std::vector<std::uint64_t> l2_tables;  // L1 index of each L2 table, ascending
    for (const auto& [g, host] : mapping)
        if (l2_tables.empty() || l2_tables.back() != g / kL2Entries) l2_tables.push_back(g / kL2Entries);

    // Host clusters: 0 header, data, L2 tables, L1 table, refcount blocks, refcount table.
    // The refcount structures count themselves: grow them until they cover the file.
    const std::uint64_t l2_start = 1 + guest_clusters_.size();
    const std::uint64_t l1_start = l2_start + l2_tables.size();
    const std::uint64_t l1_clusters = std::max<std::uint64_t>(1, clusters_for(l1_entries * 8));
    const std::uint64_t blocks_start = l1_start + l1_clusters;
    std::uint64_t blocks = 1;
    std::uint64_t table_clusters = 1;
    for (;;) {
        const std::uint64_t total = blocks_start + blocks + table_clusters;
        const std::uint64_t need_blocks = (total + kRefcountsPerBlock - 1) / kRefcountsPerBlock;
        const std::uint64_t need_table = clusters_for(need_blocks * 8);
        if (need_blocks <= blocks && need_table <= table_clusters) break;
        blocks = std::max(blocks, need_blocks);
        table_clusters = std::max(table_clusters, need_table);
    }
    const std::uint64_t table_start = blocks_start + blocks;
    const std::uint64_t total = table_start + table_clusters;

    std::vector<std::byte> cluster(kCluster);
    const auto clear = [&cluster] { std::fill(cluster.begin(), cluster.end(), std::byte{0}); };
    // L2 tables.
    std::size_t next = 0;
    for (std::size_t t = 0; t < l2_tables.size(); ++t) {
        clear();
        for (; next < mapping.size() && mapping[next].first / kL2Entries == l2_tables[t]; ++next)
            put_be(cluster, (mapping[next].first % kL2Entries) * 8, (mapping[next].second * kCluster) | kCopied, 8);
        file_.write((l2_start + t) * kCluster, cluster);
    }
    // L1 table.
    std::vector<std::byte> l1(l1_clusters * kCluster);
    for (std::size_t t = 0; t < l2_tables.size(); ++t)
        put_be(l1, l2_tables[t] * 8, ((l2_start + t) * kCluster) | kCopied, 8);
    file_.write(l1_start * kCluster, l1);
    // Refcount blocks: every cluster of the file once, but released data clusters.
    const auto released = [this](std::uint64_t c) {
        return c >= 1 && c < 1 + guest_clusters_.size() && guest_clusters_[c - 1] == kReleased;
    };
    for (std::uint64_t b = 0; b < blocks; ++b) {
        clear();
        for (std::uint64_t c = b * kRefcountsPerBlock; c < std::min(total, (b + 1) * kRefcountsPerBlock); ++c)
            if (!released(c)) put_be(cluster, (c % kRefcountsPerBlock) * 2, 1, 2);
        file_.write((blocks_start + b) * kCluster, cluster);
    }
    // Refcount table.
    std::vector<std::byte> table(table_clusters * kCluster);
    for (std::uint64_t b = 0; b < blocks; ++b) put_be(table, b * 8, (blocks_start + b) * kCluster, 8);
    file_.write(table_start * kCluster, table);

    // The header, last: an interrupted write leaves no file that looks like an image.
    clear();
    put_be(cluster, 0, 0x514649fb, 4);  // "QFI\xfb"
    put_be(cluster, 4, 3, 4);
    put_be(cluster, 20, kClusterBits, 4);
    put_be(cluster, 24, virtual_size_, 8);
    put_be(cluster, 36, l1_entries, 4);
    put_be(cluster, 40, l1_start * kCluster, 8);
    put_be(cluster, 48, table_start * kCluster, 8);
    put_be(cluster, 56, table_clusters, 4);
    put_be(cluster, 96, 4, 4);  // refcount_order: 16-bit refcounts
    put_be(cluster, 100, kHeaderLength, 4);
    std::size_t at = kHeaderLength;
    if (backing_) {
        put_be(cluster, at, kBackingFormatExtension, 4);
        put_be(cluster, at + 4, backing_->format.size(), 4);
        std::memcpy(cluster.data() + at + 8, backing_->format.data(), backing_->format.size());
        at += 8 + ((backing_->format.size() + 7) & ~std::size_t{7});
    }
    at += 8;  // the end-of-extensions marker: type 0, length 0
    if (backing_) {
        put_be(cluster, 8, at, 8);
        put_be(cluster, 16, backing_->file.size(), 4);
        std::memcpy(cluster.data() + at, backing_->file.data(), backing_->file.size());
    }
    file_.write(0, cluster);
    return total * kCluster;
}

}  // namespace guestfrag
