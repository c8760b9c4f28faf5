// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/image/vmdk_grain_extent.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/image/inflate.hpp"

namespace guestfrag {
namespace {

/// Threads one read() uses at most to inflate compressed grains (fewer on smaller hosts).
constexpr std::size_t kInflateThreads = 8;

Allocation state_of(VmdkGrain::Kind kind) {
    switch (kind) {
        case VmdkGrain::Kind::Unallocated: return Allocation::Unallocated;
        case VmdkGrain::Kind::Zero: return Allocation::Zero;
        case VmdkGrain::Kind::Data:
        case VmdkGrain::Kind::Compressed: return Allocation::Data;
    }
    return Allocation::Unallocated;
}

}  // namespace

VmdkGrainExtent::VmdkGrainExtent(HostFile file, std::uint64_t size, std::uint64_t grain_bytes,
                                 std::uint64_t grains_per_table)
    : file_(std::move(file)),
      size_(size),
      grain_bytes_(grain_bytes),
      grains_per_table_(grains_per_table),
      grain_count_((size + grain_bytes - 1) / grain_bytes),
      table_count_((grain_count_ + grains_per_table - 1) / grains_per_table) {}

std::uint64_t VmdkGrainExtent::grains_in_table(std::uint64_t table) const noexcept {
    const std::uint64_t first = table * grains_per_table_;
    return std::min(grains_per_table_, grain_count_ - first);
}

std::uint64_t VmdkGrainExtent::grain_length(std::uint64_t grain) const noexcept {
    return std::min(grain_bytes_, size_ - grain * grain_bytes_);
}

void VmdkGrainExtent::inflate_grain(std::uint64_t, std::uint64_t, std::span<std::byte>) const {
    throw Error(ErrorKind::Internal, "compressed grain in an extent without compression");
}

void VmdkGrainExtent::refuse_shared_tables(const std::vector<std::uint64_t>& tables) {
    std::vector<std::uint64_t> order(tables.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::erase_if(order, [&](std::uint64_t i) { return tables[i] == 0; });
    std::sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) {
        return tables[a] != tables[b] ? tables[a] < tables[b] : a < b;
    });
    for (std::size_t k = 1; k < order.size(); ++k)
        if (tables[order[k]] == tables[order[k - 1]])
            throw Error(ErrorKind::Corrupt, "grain directory entries " + std::to_string(order[k - 1]) + " and " +
                                                std::to_string(order[k]) + " both refer to the grain table " +
                                                std::to_string(tables[order[k]]));
}

void VmdkGrainExtent::check_stored_grain(std::uint64_t table, std::uint64_t entry, std::uint64_t grain,
                                         std::uint64_t offset, std::uint64_t metadata_end) const {
    const auto where = [&] {
        return "grain table " + std::to_string(table) + " entry " + std::to_string(entry) + ": grain at offset " +
               std::to_string(offset);
    };
    if (offset < metadata_end) throw Error(ErrorKind::Corrupt, where() + " overlaps the extent header");
    const std::uint64_t length = grain_length(grain);
    if (offset > file_.size() || length > file_.size() - offset)
        throw Error(ErrorKind::Corrupt,
                    where() + " lies past the end of the file (" + std::to_string(file_.size()) + " bytes)");
}

std::shared_ptr<const VmdkGrainTable> VmdkGrainExtent::table(std::uint64_t index) const {
    {
        const std::lock_guard lock(tables_mutex_);
        if (const auto it = tables_.find(index); it != tables_.end()) return it->second;
    }
    // Decoded outside the lock: two threads may both load a table, which is harmless.
    auto loaded = load_table(index);
    const std::lock_guard lock(tables_mutex_);
    const std::size_t entries = loaded ? loaded->size() : 1;
    if (cached_entries_ + entries > kMaxCachedEntries) {
        tables_.clear();
        cached_entries_ = 0;
    }
    if (tables_.emplace(index, loaded).second) cached_entries_ += entries;
    return loaded;
}

VmdkGrain VmdkGrainExtent::grain(std::uint64_t grain) const {
    const auto t = table(grain / grains_per_table_);
    return t ? (*t)[grain % grains_per_table_] : VmdkGrain{};
}

Mapping VmdkGrainExtent::map(std::uint64_t offset) const {
    if (offset >= size_) throw Error(ErrorKind::Internal, "vmdk extent mapped past its end");
    {
        const std::lock_guard lock(runs_mutex_);
        for (const Run& run : runs_)
            if (run.begin <= offset && offset < run.end) {
                Mapping m = run.mapping;
                m.length = run.end - offset;
                if (m.file_offset) *m.file_offset += offset - run.begin;
                return m;
            }
    }
    const Mapping m = scan(offset);
    const std::lock_guard lock(runs_mutex_);
    runs_[next_run_] = {offset, offset + m.length, m};
    next_run_ = (next_run_ + 1) % kRunSlots;
    return m;
}

Mapping VmdkGrainExtent::scan(std::uint64_t offset) const {
    std::uint64_t g = offset / grain_bytes_;
    std::uint64_t table_index = g / grains_per_table_;
    auto t = table(table_index);
    const VmdkGrain first = t ? (*t)[g % grains_per_table_] : VmdkGrain{};
    const Allocation state = state_of(first.kind);

    Mapping m;
    m.state = state;
    if (first.kind == VmdkGrain::Kind::Data) m.file_offset = first.offset + (offset - g * grain_bytes_);
    std::uint64_t next_offset = first.offset + grain_bytes_;  // where a contiguous next grain would be
    std::uint64_t end_grain = g + 1;
    std::uint64_t budget = kMapBudget;
    for (std::uint64_t next = g + 1; next < grain_count_ && budget > 0;) {
        const std::uint64_t next_table = next / grains_per_table_;
        if (next_table != table_index) {
            table_index = next_table;
            t = table(table_index);
            --budget;
        }
        if (!t) {  // no table: every grain of it is unallocated
            if (state != Allocation::Unallocated) break;
            next = std::min(grain_count_, (table_index + 1) * grains_per_table_);
            end_grain = next;
            continue;
        }
        const VmdkGrain& e = (*t)[next % grains_per_table_];
        --budget;
        if (state_of(e.kind) != state) break;
        if (first.kind == VmdkGrain::Kind::Data) {
            // A run with a file offset must be contiguous in the file for its whole length.
            if (e.kind != VmdkGrain::Kind::Data || e.offset != next_offset) break;
            next_offset += grain_bytes_;
        } else if (first.kind == VmdkGrain::Kind::Compressed && e.kind == VmdkGrain::Kind::Data) {
            // Keep runs homogeneous: a plain grain after compressed ones starts its own run,
            // where its file offset can be reported.
            break;
        }
        ++next;
        end_grain = next;
    }
    m.length = std::min(size_, end_grain * grain_bytes_) - offset;
    return m;
}

std::shared_ptr<const VmdkGrainExtent::Inflated> VmdkGrainExtent::inflated(std::uint64_t grain,
                                                                           std::uint64_t offset) const {
    {
        const std::lock_guard lock(inflated_mutex_);
        for (const auto& [key, data] : inflated_)
            if (data && key == grain) return data;
    }
    auto data = std::make_shared<Inflated>(grain_bytes_);
    inflate_grain(grain, offset, *data);
    const std::lock_guard lock(inflated_mutex_);
    inflated_[next_slot_] = {grain, data};
    next_slot_ = (next_slot_ + 1) % kInflatedSlots;
    return data;
}

void VmdkGrainExtent::read(std::uint64_t offset, std::span<std::byte> out) const {
    if (offset > size_ || out.size() > size_ - offset) throw Error(ErrorKind::Internal, "vmdk extent read past its end");
    // Compressed grains met on the way, inflated after the walk (on several threads when
    // there are several, as qemu does).
    struct Compressed {
        std::uint64_t grain;
        std::uint64_t file_offset;
        std::uint64_t within;
        std::span<std::byte> out;
    };
    std::vector<Compressed> compressed;
    while (!out.empty()) {
        const std::uint64_t g = offset / grain_bytes_;
        const std::uint64_t within = offset - g * grain_bytes_;
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), grain_bytes_ - within));
        const VmdkGrain e = grain(g);
        switch (e.kind) {
            case VmdkGrain::Kind::Unallocated:
            case VmdkGrain::Kind::Zero: std::memset(out.data(), 0, n); break;
            case VmdkGrain::Kind::Data: {
                // Gather the following grains while they continue this one in the file.
                for (std::uint64_t next = g + 1; n < out.size(); ++next) {
                    const VmdkGrain f = grain(next);
                    if (f.kind != VmdkGrain::Kind::Data || f.offset != e.offset + (next - g) * grain_bytes_) break;
                    n += static_cast<std::size_t>(std::min<std::uint64_t>(out.size() - n, grain_bytes_));
                }
                file_.read_exact(e.offset + within, out.first(n), "grain data");
                break;
            }
            case VmdkGrain::Kind::Compressed: compressed.push_back({g, e.offset, within, out.first(n)}); break;
        }
        offset += n;
        out = out.subspan(n);
    }
    run_inflate_jobs_in_parallel(compressed.size(), kInflateThreads, [&](std::size_t i) {
        const Compressed& c = compressed[i];
        if (c.out.size() == grain_bytes_) {
            inflate_grain(c.grain, c.file_offset, c.out);  // a whole grain: straight into place
        } else {
            // Part of a grain: where the next sequential read continues, so cache it.
            const auto data = inflated(c.grain, c.file_offset);
            std::memcpy(c.out.data(), data->data() + c.within, c.out.size());
        }
    });
}

}  // namespace guestfrag
