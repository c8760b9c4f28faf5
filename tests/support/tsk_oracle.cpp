// SPDX-License-Identifier: GPL-2.0-or-later
#include "support/tsk_oracle.hpp"

#include <atomic>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include "support/fixtures.hpp"

namespace guestfrag::test {
namespace {

void append(Fragments& out, std::int64_t lcn, std::int64_t clusters) {
    if (!out.empty() && out.back().first + out.back().second == lcn) out.back().second += clusters;
    else out.emplace_back(lcn, clusters);
}

}  // namespace

Fragments fragments_of(const Stream& stream, std::uint32_t cluster_size) {
    // istat lists runs only up to the data size; clusters NTFS preallocated beyond it
    // (common for $MFT) belong to the stream for us but are not shown by TSK.
    const auto shown = static_cast<std::int64_t>((stream.size + cluster_size - 1) / cluster_size);
    Fragments out;
    for (const Extent& e : stream.extents) {
        if (e.vcn >= shown) break;
        if (e.lcn != Extent::kSparse) append(out, e.lcn, std::min(e.clusters, shown - e.vcn));
    }
    return out;
}

std::map<std::string, std::string> tsk_files(const std::filesystem::path& image, std::uint64_t sector) {
    const auto r = run({"fls", "-r", "-p", "-o", std::to_string(sector), image.string()});
    if (r.status != 0) throw std::runtime_error("fls failed on " + image.string() + ": " + r.err);
    std::map<std::string, std::string> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("r/r ", 0) != 0 || line.find('*') != std::string::npos) continue;
        const auto colon = line.find(":\t");
        if (colon == std::string::npos) throw std::runtime_error("fls printed an unexpected line: " + line);
        out[line.substr(colon + 2)] = line.substr(4, colon - 4);
    }
    return out;
}

std::string tsk_icat(const std::filesystem::path& image, std::uint64_t sector, const std::string& address) {
    const auto r = run({"icat", "-o", std::to_string(sector), image.string(), address});
    if (r.status != 0) throw std::runtime_error("icat failed on " + image.string() + " " + address + ": " + r.err);
    return r.out;
}

std::map<std::string, std::string> tsk_contents(const std::filesystem::path& image, std::uint64_t sector,
                                                const std::map<std::string, std::string>& files) {
    namespace fs = std::filesystem;
    require_tools({"tsk_recover", "icat"});
    static std::atomic<unsigned> counter{0};
    const fs::path dir =
        scratch_dir() / ("recover." + std::to_string(::getpid()) + "." + std::to_string(counter++));
    fs::remove_all(dir);
    const auto r = run({"tsk_recover", "-a", "-o", std::to_string(sector), image.string(), dir.string()});
    if (r.status != 0) throw std::runtime_error("tsk_recover failed on " + image.string() + ": " + r.err);
    std::map<std::string, std::string> out;
    for (const auto& [path, address] : files) {
        const fs::path recovered = dir / path;
        if (path.find(':') == std::string::npos && fs::is_regular_file(recovered)) {
            out[path] = file_contents(recovered);
        } else {
            out[path] = tsk_icat(image, sector, address);
        }
    }
    fs::remove_all(dir);
    return out;
}

std::map<std::string, Fragments> tsk_data_fragments(const std::filesystem::path& image, std::uint64_t sector,
                                                    std::uint64_t record) {
    const auto r = run({"istat", "-f", "ntfs", "-r", "-o", std::to_string(sector), image.string(), std::to_string(record)});
    if (r.status != 0) throw std::runtime_error("istat failed for record " + std::to_string(record) + ": " + r.err);
    static const std::regex attr_re(R"(^Type: (\S+) \(\d+-\d+\)\s+Name: (.*?)\s+(Non-Resident|Resident))");
    static const std::regex run_re(R"(^\s+Starting address: (\d+), length: (\d+)\s*(Sparse)?)");
    std::map<std::string, Fragments> result;
    Fragments* current = nullptr;
    std::istringstream in(r.out);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, attr_re)) {
            current = nullptr;
            if (m[1] == "$DATA" && m[3] == "Non-Resident") current = &result[m[2] == "N/A" ? "" : m[2].str()];
        } else if (current != nullptr && std::regex_search(line, m, run_re) && !m[3].matched) {
            append(*current, std::stoll(m[1]), std::stoll(m[2]));
        }
    }
    return result;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> mmls_partitions(const std::filesystem::path& image) {
    const auto r = run({"mmls", image.string()});
    if (r.status != 0) throw std::runtime_error("mmls failed: " + r.err);
    // "002:  000:000   0000000063   0000096389   0000096327   NTFS / exFAT (0x07)"
    static const std::regex slot_re(R"(^\d+:\s+(\d+|-+):\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+(.*)$)");
    std::vector<std::pair<std::uint64_t, std::uint64_t>> slots;
    std::istringstream in(r.out);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
        if (!std::regex_search(line, m, slot_re)) continue;
        const std::string desc = m[5];
        if (m[1].str().find('-') != std::string::npos) continue;  // meta or unallocated
        if (desc.find("Extended") != std::string::npos) continue;
        slots.emplace_back(std::stoull(m[2]), std::stoull(m[4]));
    }
    return slots;
}

}  // namespace guestfrag::test
