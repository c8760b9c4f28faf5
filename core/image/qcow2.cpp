// SPDX-License-Identifier: GPL-2.0-or-later
// The qcow2 LayerFile: L1 → L2 lookups, run coalescing for map(), reads of stored,
// compressed and zero granules. Header parsing lives in qcow2_header.cpp, entry decoding
// in qcow2_l2.cpp, decompression in qcow2_inflate.cpp.
#include "core/image/qcow2.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "core/error.hpp"
#include "core/image/inflate.hpp"
#include "core/image/nbd_uri.hpp"
#include "core/image/qcow2_inflate.hpp"
#include "core/image/qcow2_layer.hpp"

namespace guestfrag {
namespace {

/// Memory the L2 cache may hold; sequential reads touch one table at a time, and a table
/// covers cluster_size² / 8 bytes of disk (512 MiB with 64 KiB clusters).
constexpr std::uint64_t kL2CacheBytes = std::uint64_t{32} << 20;
/// Decompressed clusters kept, so small sequential reads inflate each cluster once.
constexpr std::size_t kInflatedClusters = 4;
/// L2 entries one map() call examines at most, bounding its cost for random access.
constexpr std::uint64_t kScanClusters = 4096;
/// Threads one read() uses at most to inflate compressed clusters.
constexpr std::size_t kInflateThreads = 8;

/// Collects reads of file-contiguous stored data into one pread.
class PendingRead {
public:
    explicit PendingRead(const HostFile& file) : file_(file) {}
    PendingRead(const PendingRead&) = delete;
    PendingRead& operator=(const PendingRead&) = delete;

    void add(std::uint64_t host, std::span<std::byte> out) {
        if (!dest_.empty() && host_ + dest_.size() == host && dest_.data() + dest_.size() == out.data()) {
            dest_ = std::span<std::byte>(dest_.data(), dest_.size() + out.size());
            return;
        }
        flush();
        host_ = host;
        dest_ = out;
    }
    void flush() {
        // Bytes past the end of the file read as zero: qemu leaves the zero tail of the last
        // cluster unwritten (decoding checked that every stored granule starts in the file).
        if (!dest_.empty()) file_.read_padded(host_, dest_);
        dest_ = {};
    }

private:
    const HostFile& file_;
    std::uint64_t host_ = 0;
    std::span<std::byte> dest_;
};

}  // namespace

Qcow2Layer::Qcow2Layer(HostFile file) : file_(std::move(file)), header_(read_qcow2_header(file_)) {
    // Only the entries the virtual size needs: any beyond them are unused (or VM state).
    // Read in slices, so that an L1 of zeros costs neither a copy of itself nor its entries.
    constexpr std::uint64_t kSlice = 8192;  // entries: 64 KiB
    std::vector<std::byte> raw;
    for (std::uint64_t first = 0; first < header_.l1_entries; first += kSlice) {
        const std::uint64_t n = std::min(kSlice, header_.l1_entries - first);
        raw.resize(static_cast<std::size_t>(n * 8));
        file_.read_exact(header_.l1_table_offset + first * 8, raw, "qcow2 L1 table");
        for (std::uint64_t i = 0; i < n; ++i) {
            const std::uint64_t entry = qcow2_load_be(raw.data() + i * 8, 8);
            if (entry == 0) continue;  // no table, nothing to check
            if (const std::uint64_t table = decode_qcow2_l1(header_, entry, first + i, file_.size()))
                l2_tables_.emplace_back(first + i, table);
        }
    }
    l2_tables_.shrink_to_fit();
    refuse_shared_l2_tables();
}

std::uint64_t Qcow2Layer::l2_offset(std::uint64_t l1_index) const {
    const auto it = first_l2_table_from(l1_index);
    return it != l2_tables_.end() && it->first == l1_index ? it->second : 0;
}

std::uint64_t Qcow2Layer::next_l2_table(std::uint64_t l1_index) const {
    const auto it = first_l2_table_from(l1_index);
    return it != l2_tables_.end() ? it->first : header_.l1_entries;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>>::const_iterator Qcow2Layer::first_l2_table_from(
    std::uint64_t l1_index) const {
    return std::lower_bound(l2_tables_.begin(), l2_tables_.end(), l1_index,
                            [](const auto& table, std::uint64_t index) { return table.first < index; });
}

void Qcow2Layer::refuse_shared_l2_tables() const {
    // An L2 table belongs to one L1 entry of the active table (qemu-img check counts a
    // second reference as a refcount error). A file whose entries share one table would
    // describe a disk far larger than the entries it holds, and every guest range the
    // shared table covers again costs memory when the layer is mapped: refused here, in
    // O(L1 entries), before anything is mapped.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> tables;  // (file offset, L1 index)
    tables.reserve(l2_tables_.size());
    for (const auto& [index, offset] : l2_tables_) tables.emplace_back(offset, index);
    std::sort(tables.begin(), tables.end());
    for (std::size_t i = 1; i < tables.size(); ++i)
        if (tables[i].first == tables[i - 1].first)
            throw Error(ErrorKind::Corrupt, "qcow2: L1 entries " + std::to_string(tables[i - 1].second) + " and " +
                                                std::to_string(tables[i].second) + " both point at the L2 table at offset " +
                                                std::to_string(tables[i].first));
}

void Qcow2Layer::release_caches() const {
    const std::lock_guard lock(mutex_);
    l2_index_.clear();
    l2_lru_.clear();
    inflated_.clear();
}

std::shared_ptr<const Qcow2Layer::L2Table> Qcow2Layer::l2_table(std::uint64_t l1_index) const {
    {
        const std::lock_guard lock(mutex_);
        if (const auto it = l2_index_.find(l1_index); it != l2_index_.end()) {
            l2_lru_.splice(l2_lru_.begin(), l2_lru_, it->second);
            return it->second->second;
        }
    }
    // Read without the lock; two threads may load the same table, which is harmless.
    std::vector<std::byte> raw(static_cast<std::size_t>(header_.cluster_size()));
    file_.read_exact(l2_offset(l1_index), raw, "qcow2 L2 table");
    auto table = std::make_shared<L2Table>(raw.size() / 8);
    for (std::size_t i = 0; i < table->size(); ++i) (*table)[i] = qcow2_load_be(raw.data() + i * 8, 8);

    const std::lock_guard lock(mutex_);
    if (const auto it = l2_index_.find(l1_index); it != l2_index_.end()) return it->second->second;
    l2_lru_.emplace_front(l1_index, table);
    l2_index_[l1_index] = l2_lru_.begin();
    const std::uint64_t capacity = std::max<std::uint64_t>(4, kL2CacheBytes / header_.cluster_size());
    if (l2_lru_.size() > capacity) {
        l2_index_.erase(l2_lru_.back().first);
        l2_lru_.pop_back();
    }
    return table;
}

Qcow2Cluster Qcow2Layer::cluster_at(const L2Table* table, std::uint64_t cluster_index) const {
    if (table == nullptr) return {};
    const std::uint64_t index = cluster_index % header_.l2_entries();
    const std::size_t word = static_cast<std::size_t>(index * (header_.l2_entry_bytes() / 8));
    const std::uint64_t bitmap = header_.extended_l2 ? (*table)[word + 1] : 0;
    return decode_qcow2_l2(header_, (*table)[word], bitmap, cluster_index << header_.cluster_bits,
                           file_.size());
}

Qcow2Layer::Run Qcow2Layer::compute_run(std::uint64_t granule) const {
    const std::uint32_t bits = header_.granule_bits();
    const std::uint64_t granule_bytes = std::uint64_t{1} << bits;
    const std::uint64_t per_cluster = header_.granules_per_cluster();
    const std::uint64_t per_table = header_.l2_entries() * per_cluster;
    const std::uint64_t total = (header_.virtual_size + granule_bytes - 1) >> bits;

    Run run;
    run.start = granule << bits;
    bool first = true;
    std::uint64_t next_host = 0;
    // Whether granule state `s` (stored at `host` unless compressed) continues the run.
    const auto extend = [&](Allocation s, bool compressed, std::uint64_t host) {
        if (first) {
            first = false;
            run.state = s;
            run.compressed = compressed;
            run.host = host;
        } else if (s != run.state || compressed != run.compressed ||
                   (s == Allocation::Data && !compressed && host != next_host)) {
            return false;
        }
        next_host = host + granule_bytes;
        return true;
    };

    std::uint64_t pos = granule;
    std::uint64_t budget = kScanClusters;
    bool done = false;
    while (!done && pos < total) {
        const std::uint64_t l1_index = pos / per_table;
        if (const std::uint64_t next = next_l2_table(l1_index); next != l1_index) {
            // No L2 table up to the next one: all the range is unallocated, in one step.
            if (!extend(Allocation::Unallocated, false, 0)) break;
            pos = next * per_table;
            continue;
        }
        const auto table = l2_table(l1_index);
        while (!done && pos < total && pos / per_table == l1_index) {
            const Qcow2Cluster cluster = cluster_at(table.get(), pos / per_cluster);
            for (std::uint64_t sub = pos % per_cluster; sub < per_cluster && pos < total; ++sub, ++pos) {
                const Allocation s = cluster.state(static_cast<unsigned>(sub));
                const bool compressed = s == Allocation::Data && cluster.compressed();
                const std::uint64_t host =
                    s == Allocation::Data && !compressed ? cluster.host_offset + (sub << bits) : 0;
                if (!extend(s, compressed, host)) {
                    done = true;
                    break;
                }
            }
            if (--budget == 0) done = true;
        }
    }
    run.end = std::min(pos << bits, header_.virtual_size);
    return run;
}

Mapping Qcow2Layer::map(std::uint64_t offset) const {
    if (offset >= header_.virtual_size)
        throw Error(ErrorKind::Internal,
                    "qcow2: map at offset " + std::to_string(offset) + " past the end of the disk");
    const auto answer = [offset](const Run& run) {
        Mapping m{run.state, run.end - offset, std::nullopt};
        if (run.state == Allocation::Data && !run.compressed) m.file_offset = run.host + (offset - run.start);
        return m;
    };
    {
        const std::lock_guard lock(mutex_);
        if (last_run_ && last_run_->start <= offset && offset < last_run_->end) return answer(*last_run_);
    }
    const Run run = compute_run(offset >> header_.granule_bits());
    {
        const std::lock_guard lock(mutex_);
        last_run_ = run;
    }
    return answer(run);
}

void Qcow2Layer::inflate_into(const Qcow2Cluster& cluster, std::uint64_t guest_offset,
                              std::span<std::byte> out) const {
    // At most two clusters' worth (the range of the sector count field).
    std::vector<std::byte> packed(static_cast<std::size_t>(cluster.compressed_bytes));
    // The last compressed cluster may end before its final counted sector: pad with zeros.
    file_.read_padded(cluster.host_offset, packed);
    if (!qcow2_inflate(packed, out))
        throw Error(ErrorKind::Corrupt, "qcow2: compressed cluster for virtual offset " +
                                            std::to_string(guest_offset) + " (file offset " +
                                            std::to_string(cluster.host_offset) + ") does not decompress");
}

std::shared_ptr<const Qcow2Layer::Cluster> Qcow2Layer::inflated(const Qcow2Cluster& cluster,
                                                                std::uint64_t guest_offset) const {
    {
        const std::lock_guard lock(mutex_);
        for (const auto& [host, data] : inflated_)
            if (host == cluster.host_offset) return data;
    }
    auto data = std::make_shared<Cluster>(static_cast<std::size_t>(header_.cluster_size()));
    inflate_into(cluster, guest_offset, *data);
    const std::lock_guard lock(mutex_);
    inflated_.emplace_front(cluster.host_offset, data);
    if (inflated_.size() > kInflatedClusters) inflated_.pop_back();
    return data;
}

void Qcow2Layer::run_inflate_jobs(std::span<const InflateJob> jobs) const {
    const auto run = [&](const InflateJob& job) {
        if (job.out.size() == header_.cluster_size()) {
            inflate_into(job.cluster, job.guest_offset, job.out);  // whole cluster: no copy, no cache
        } else {
            // Partial clusters are where the next sequential read continues: cache them.
            const auto data = inflated(job.cluster, job.guest_offset);
            std::memcpy(job.out.data(), data->data() + job.in_cluster, job.out.size());
        }
    };
    run_inflate_jobs_in_parallel(jobs.size(), kInflateThreads, [&](std::size_t i) { run(jobs[i]); });
}

void Qcow2Layer::read(std::uint64_t offset, std::span<std::byte> out) const {
    if (offset > header_.virtual_size || out.size() > header_.virtual_size - offset)
        throw Error(ErrorKind::Corrupt, "qcow2: read past the end of the disk (offset " +
                                            std::to_string(offset) + ", " + std::to_string(out.size()) +
                                            " bytes)");
    const std::uint64_t cluster_mask = header_.cluster_size() - 1;
    const std::uint64_t granule_mask = granule_size() - 1;
    PendingRead pending(file_);
    std::vector<InflateJob> jobs;  // compressed clusters, inflated after the walk (in parallel)
    std::shared_ptr<const L2Table> table;
    std::uint64_t table_index = ~std::uint64_t{0};
    while (!out.empty()) {
        const std::uint64_t cluster_index = offset >> header_.cluster_bits;
        const std::uint64_t l1_index = cluster_index / header_.l2_entries();
        if (l1_index != table_index) {
            table = l2_offset(l1_index) != 0 ? l2_table(l1_index) : nullptr;
            table_index = l1_index;
        }
        const Qcow2Cluster cluster = cluster_at(table.get(), cluster_index);
        const std::uint64_t in_cluster = offset & cluster_mask;
        if (cluster.compressed()) {
            const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), cluster_mask + 1 - in_cluster));
            jobs.push_back({cluster, offset - in_cluster, in_cluster, out.first(n)});
            offset += n;
            out = out.subspan(n);
            continue;
        }
        // Granule by granule within the cluster (one step without subclusters).
        do {
            const std::uint64_t at = offset & cluster_mask;
            const std::size_t n = static_cast<std::size_t>(
                std::min<std::uint64_t>(out.size(), granule_mask + 1 - (at & granule_mask)));
            const auto part = out.first(n);
            if (cluster.state(static_cast<unsigned>(at >> header_.granule_bits())) == Allocation::Data)
                pending.add(cluster.host_offset + at, part);
            else
                std::memset(part.data(), 0, n);  // zero, or not in this layer
            offset += n;
            out = out.subspan(n);
        } while (!out.empty() && (offset & cluster_mask) != 0);
    }
    pending.flush();
    if (!jobs.empty()) run_inflate_jobs(jobs);
}

std::optional<ParentLink> Qcow2Layer::parent() const {
    if (!header_.backing_file) return std::nullopt;
    namespace fs = std::filesystem;
    ParentLink link;
    link.recorded = *header_.backing_file;
    if (header_.backing_format) {
        link.recorded_format = *header_.backing_format;
        link.format = format_from_qemu_name(*header_.backing_format);
    }
    std::string name = link.recorded;
    // "file:" is qemu's explicit local-file protocol prefix; other protocols than NBD
    // (json:{...}, http://) name nothing we could open.
    if (name.starts_with("file:")) {
        name.erase(0, 5);
    } else if (is_nbd_uri(name)) {
        // An NBD export, as qemu opens it too.
        link.candidates.push_back(name);
        return link;
    } else if (name.starts_with("json:") || name.find("://") != std::string::npos) {
        return link;
    }
    const fs::path recorded(name);
    if (recorded.is_absolute())
        link.candidates.push_back(name);
    else
        link.candidates.push_back(sibling_path(file_.path(), name));
    return link;
}

std::unique_ptr<LayerFile> open_qcow2(HostFile file) { return std::make_unique<Qcow2Layer>(std::move(file)); }

std::unique_ptr<LayerFile> open_qcow2(const std::string& path) { return open_qcow2(HostFile(path)); }

LayerProvisioning Qcow2Layer::provisioning(bool fully_allocated) const {
    const std::uint64_t cluster = header_.cluster_size();
    if (!fully_allocated)
        return {Provisioning::Thin, cluster, false, "qcow2 with unallocated clusters: allocated on first write"};
    // Every cluster is mapped. preallocation=metadata leaves the host file sparse
    // (ftruncate): it holds less than the disk's data. falloc and full give the data
    // clusters host blocks (only metadata areas may stay holes).
    if (file_.source().held_bytes() < header_.virtual_size)
        return {Provisioning::Lazy, cluster, false,
                "qcow2 with every cluster mapped over a sparse host file (preallocation=metadata): the host "
                "allocates each on its first write"};
    return {Provisioning::Eager, cluster, true,
            "qcow2 with every cluster allocated in a host file without holes; preallocation=falloc (lazy) and "
            "full (eager) look alike: eager assumed"};
}

}  // namespace guestfrag
