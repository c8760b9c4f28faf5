// SPDX-License-Identifier: GPL-2.0-or-later
// Executes a PopulationPlan through NtfsWriter. The order of libntfs-3g calls is a function
// of the plan alone, and libntfs-3g's allocators are deterministic, so extents repeat
// exactly from run to run.
#include "app/mkimage/populate.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/mkimage/file_content.hpp"
#include "app/mkimage/layout_ini.hpp"

namespace guestfrag::mkimage {

namespace {

constexpr std::size_t kMaxSampleRecords = 16;

/// What became of one planned file.
struct FileState {
    std::uint64_t record = 0;
    std::uint64_t bytes = 0;      ///< stream bytes written (all streams)
    std::uint64_t fragments = 0;  ///< most fragments of any stream
    bool created = false;
    bool attribute_list = false;
    bool named_stream = false;
};

class Populator {
public:
    Populator(NtfsWriter& ntfs, const PopulationPlan& plan, std::uint32_t seed, const Progress& progress,
              MkImageSummary& summary)
        : ntfs_(ntfs),
          plan_(plan),
          seed_(seed),
          content_(seed),
          progress_(progress),
          summary_(summary),
          state_(plan.files.size()) {}

    void run() {
        try {
            make_directories();
            write_specials();
            write_first_pass();
        } catch (const ntfs::VolumeFull&) {
            summary_.volume_full = true;
        }
        delete_files();
        try {
            write_refills();
        } catch (const ntfs::VolumeFull&) {
            summary_.volume_full = true;
        }
        summarise();
        write_layout_ini();
    }

private:
    /// An open file and how far its planned size has been written.
    struct Growing {
        std::size_t index;
        NtfsFile file;
    };

    void make_directories() {
        dir_records_.assign(plan_.dirs.size(), NtfsWriter::root());
        for (std::size_t d = 1; d < plan_.dirs.size(); ++d) {
            dir_records_[d] = ntfs_.make_directory(dir_records_[plan_.dirs[d].parent], plan_.dirs[d].name,
                                                   plan_.dirs[d].compressed);
            summary_.directories++;
            if (d % 256 == 0) progress_.update(0, plan_.files.size());
        }
    }

    NtfsFile create(std::size_t index) {
        const FilePlan& f = plan_.files[index];
        NtfsFile file = ntfs_.create_file(dir_records_[f.dir], f.name);
        state_[index].record = file.record();
        state_[index].created = true;
        return file;
    }

    /// Appends up to `n` bytes of the file's planned contents at `pos`.
    void write(std::size_t index, NtfsFile& file, std::uint64_t pos, std::uint64_t n) {
        while (n > 0) {
            const auto piece = content_.bytes(
                index, pos, static_cast<std::size_t>(std::min<std::uint64_t>(n, FileContent::kMaxSpan)));
            file.write(pos, piece.data(), piece.size());
            state_[index].bytes += piece.size();
            pos += piece.size();
            n -= piece.size();
        }
    }

    void finish(std::size_t index, NtfsFile& file) {
        const FilePlan& f = plan_.files[index];
        if (f.named_stream_size == kZoneIdentifier.size()) {
            file.add_stream(kSmallStreamName, kZoneIdentifier.data(), kZoneIdentifier.size());
        } else if (f.named_stream_size != 0) {
            std::vector<unsigned char> data;
            for (std::uint64_t pos = 0; pos < f.named_stream_size;) {
                const auto piece = content_.bytes(index + (1ull << 40), pos,
                                                  static_cast<std::size_t>(f.named_stream_size - pos));
                data.insert(data.end(), piece.begin(), piece.end());
                pos += piece.size();
            }
            file.add_stream(kLargeStreamName, data.data(), data.size());
        }
        if (f.named_stream_size != 0) {
            state_[index].named_stream = true;
            state_[index].bytes += f.named_stream_size;
        }
        state_[index].fragments = file.fragments();
        state_[index].attribute_list = file.has_attribute_list();
        file.close();
        ++created_;
        progress_.update(created_, plan_.files.size());
    }

    /// The files of `role` grown against each other `step` bytes at a time each in turn, so
    /// that every step is its own run.
    void write_pair(FileRole role, std::uint64_t step) {
        std::vector<Growing> twins;
        for (std::size_t i = 0; i < plan_.refill_begin; ++i)
            if (plan_.files[i].role == role) twins.push_back({i, create(i)});
        if (twins.empty()) return;
        const bool text = role == FileRole::CompressedPair;
        for (std::uint64_t pos = 0; pos < plan_.files[twins[0].index].size; pos += step) {
            for (auto& g : twins) {
                if (text) {
                    const auto piece = content_.log_text(g.index, pos, static_cast<std::size_t>(step));
                    g.file.write(pos, piece.data(), piece.size());
                    state_[g.index].bytes += piece.size();
                } else {
                    write(g.index, g.file, pos, step);
                }
            }
            if ((pos / step) % 64 == 0) progress_.update(created_, plan_.files.size());
        }
        for (auto& g : twins) finish(g.index, g.file);
    }

    /// The attribute-list pair, one cluster at a time, so every cluster is its own run; the
    /// compressed pair, one compression unit at a time; then the sparse file: data, a hole,
    /// data.
    void write_specials() {
        write_pair(FileRole::AttrListPair, plan_.cluster_size);
        write_pair(FileRole::CompressedPair, kCompressionUnitClusters * plan_.cluster_size);
        for (std::size_t i = 0; i < plan_.refill_begin; ++i) {
            const FilePlan& f = plan_.files[i];
            if (f.role != FileRole::Sparse) continue;
            NtfsFile file = create(i);
            const std::uint64_t piece = sparse_piece(plan_.cluster_size);
            write(i, file, 0, piece);
            // Writing beyond the end of an NTFS 3.x $DATA makes libntfs-3g insert a sparse
            // run instead of allocating the gap.
            write(i, file, f.size - piece, piece);
            finish(i, file);
        }
    }

    /// Groups of `interleave` files in [first, last) grow together, each appending
    /// chunk_clusters per round, so each append finds the cluster after its last one taken
    /// by a neighbour.
    void write_interleaved(std::size_t first, std::size_t last) {
        const std::uint64_t cluster = plan_.cluster_size;
        std::size_t next = first;
        while (next < last) {
            std::vector<Growing> group;
            for (; next < last && group.size() < plan_.interleave; ++next)
                group.push_back({next, create(next)});
            std::vector<std::uint64_t> written(group.size(), 0);
            std::vector<bool> done(group.size(), false);
            for (std::size_t active = group.size(); active > 0;) {
                active = 0;
                for (std::size_t g = 0; g < group.size(); ++g) {
                    if (done[g]) continue;
                    const FilePlan& f = plan_.files[group[g].index];
                    const std::uint64_t step =
                        std::min<std::uint64_t>(f.size - written[g], f.chunk_clusters * cluster);
                    write(group[g].index, group[g].file, written[g], step);
                    written[g] += step;
                    if (written[g] == f.size) {
                        finish(group[g].index, group[g].file);
                        done[g] = true;
                    } else {
                        ++active;
                    }
                }
            }
        }
    }

    void write_first_pass() {
        std::size_t first = 0;
        while (first < plan_.refill_begin && plan_.files[first].role != FileRole::Normal) ++first;
        write_interleaved(first, plan_.refill_begin);
    }

    void delete_files() {
        std::uint64_t done = 0;
        for (const std::uint32_t index : plan_.deletions) {
            FileState& s = state_[index];
            if (!s.created) continue;
            const FilePlan& f = plan_.files[index];
            for (const ClusterRun& run : ntfs_.clusters_of(s.record)) freed_.push_back(run);
            ntfs_.remove(dir_records_[f.dir], s.record, f.name);
            s.created = false;
            summary_.files_deleted++;
            if (++done % 256 == 0) progress_.update(created_, plan_.files.size());
        }
    }

    /// New files after the deletions may only use the holes those left (and the MFT zone
    /// once the holes run out): grown side by side like the first pass, and cut again
    /// wherever a hole ends.
    void write_refills() {
        if (plan_.refill_begin == plan_.files.size()) return;
        std::sort(freed_.begin(), freed_.end(),
                  [](const ClusterRun& a, const ClusterRun& b) { return a.lcn < b.lcn; });
        ClusterFence fence = ntfs_.fence_free_space(freed_);
        write_interleaved(plan_.refill_begin, plan_.files.size());
        fence.release();
    }

    void summarise() {
        for (std::size_t i = 0; i < state_.size(); ++i) {
            const FileState& s = state_[i];
            if (!s.record) continue;  // never created
            summary_.files_created++;
            if (!s.created) continue;  // deleted
            summary_.files_kept++;
            summary_.data_bytes += s.bytes;
            if (s.named_stream) {
                summary_.named_streams++;
                if (summary_.named_stream_record == 0) summary_.named_stream_record = s.record;
            }
            if (s.fragments > 1) {
                summary_.fragmented_files++;
                if (summary_.fragmented_records.size() < kMaxSampleRecords)
                    summary_.fragmented_records.push_back(s.record);
            }
            if (s.attribute_list) {
                summary_.attribute_list_files++;
                if (summary_.attribute_list_records.size() < kMaxSampleRecords)
                    summary_.attribute_list_records.push_back(s.record);
            }
            if (plan_.files[i].role == FileRole::Sparse) summary_.sparse_record = s.record;
            if (plan_.files[i].role == FileRole::CompressedPair)
                summary_.compressed_records.push_back(s.record);
        }
    }

    /// "C:\\dir\\sub\\name.ext": file `index` as Layout.ini names it.
    std::string windows_path(std::size_t index) const {
        std::vector<std::uint32_t> chain;
        for (std::uint32_t d = plan_.files[index].dir; d != 0; d = plan_.dirs[d].parent) chain.push_back(d);
        std::string path = "C:";
        for (auto d = chain.rbegin(); d != chain.rend(); ++d) path += "\\" + plan_.dirs[*d].name;
        return path + "\\" + plan_.files[index].name;
    }

    /// \\Windows\\Prefetch\\Layout.ini listing plan_.layout_ini_files of the kept files, drawn
    /// in boot order from a stream of the seed of its own. Last of all, so that neither the
    /// list nor its directories take a record or a cluster the population would have taken:
    /// the listed files lie where they lie without the list.
    void write_layout_ini() {
        if (plan_.layout_ini_files == 0) return;
        std::vector<std::size_t> kept;
        for (std::size_t i = 0; i < state_.size(); ++i)
            if (state_[i].created) kept.push_back(i);
        const auto count =
            static_cast<std::size_t>(std::min<std::uint64_t>(plan_.layout_ini_files, kept.size()));
        if (count == 0) return;
        std::vector<std::string> paths;
        for (const std::size_t k : draw_boot_order(kept.size(), count, seed_))
            paths.push_back(windows_path(kept[k]));
        const std::vector<unsigned char> bytes = layout_ini_bytes(paths);

        std::uint64_t dir = NtfsWriter::root();
        std::uint64_t record = 0;
        try {
            // The population's directory names never collide, but an existing one is used.
            for (const std::string_view name : kLayoutIniDirs) {
                if (const auto found = ntfs_.find_directory(dir, name)) {
                    dir = *found;
                } else {
                    dir = ntfs_.make_directory(dir, name);
                    summary_.directories++;
                }
            }
            NtfsFile file = ntfs_.create_file(dir, kLayoutIniName);
            record = file.record();
            file.write(0, bytes.data(), bytes.size());
            file.close();
        } catch (const ntfs::VolumeFull&) {
            // A list cut short would trace another boot; better none.
            if (record != 0) ntfs_.remove(dir, record, kLayoutIniName);
            summary_.volume_full = true;
            return;
        }
        summary_.layout_ini_files = count;
        summary_.layout_ini_record = record;
    }

    NtfsWriter& ntfs_;
    const PopulationPlan& plan_;
    std::uint32_t seed_;
    FileContent content_;
    const Progress& progress_;
    MkImageSummary& summary_;
    std::vector<FileState> state_;
    std::vector<std::uint64_t> dir_records_;
    std::vector<ClusterRun> freed_;
    std::uint64_t created_ = 0;
};

}  // namespace

void populate(NtfsWriter& ntfs, const PopulationPlan& plan, std::uint32_t seed, const Progress& progress,
              MkImageSummary& summary) {
    Populator(ntfs, plan, seed, progress, summary).run();
}

}  // namespace guestfrag::mkimage
