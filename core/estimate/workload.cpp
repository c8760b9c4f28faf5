// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/workload.hpp"

#include <charconv>
#include <optional>

#include "core/error.hpp"

namespace guestfrag {

std::string Workload::text() const {
    switch (kind) {
        case Kind::Scan:
            if (!scan_order_named) return "scan";
            return scan_order == ScanOrder::Path ? "scan:path" : "scan:mft";
        case Kind::Trace:
            return "trace:" + trace_source;
        case Kind::Write:
            return "write:" + std::to_string(files);
        case Kind::Fio:
            return "fio:" + fio_options;
        case Kind::Install:
            return "install:" + std::to_string(files) + (install_options.empty() ? "" : "," + install_options);
    }
    return {};
}

namespace {

/// N of write:N and install:N: a decimal in 1 … kMaxWriteFiles, or nullopt.
std::optional<std::uint64_t> parse_file_count(std::string_view digits) {
    std::uint64_t files = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), files);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || files == 0 ||
        files > Workload::kMaxWriteFiles)
        return std::nullopt;
    return files;
}

}  // namespace

Workload parse_workload(std::string_view text) {
    Workload w;
    if (text == "scan") return w;
    if (text == "scan:mft" || text == "scan:path") {
        w.scan_order = text == "scan:path" ? Workload::ScanOrder::Path : Workload::ScanOrder::Mft;
        w.scan_order_named = true;
        return w;
    }
    if (text.starts_with("trace:")) {
        w.kind = Workload::Kind::Trace;
        w.trace_source = std::string(text.substr(6));
        if (w.trace_source.empty())
            throw Error(ErrorKind::Unsupported, "trace workload needs a source: trace:FILE");
        return w;
    }
    if (text.starts_with("write:")) {
        w.kind = Workload::Kind::Write;
        const std::optional<std::uint64_t> files = parse_file_count(text.substr(6));
        if (!files)
            throw Error(ErrorKind::Unsupported, "write workload needs a file count from 1 to " +
                                                    std::to_string(Workload::kMaxWriteFiles) + ": write:N");
        w.files = *files;
        return w;
    }
    if (text.starts_with("fio:")) {
        w.kind = Workload::Kind::Fio;
        w.fio_options = std::string(text.substr(4));
        w.fio = parse_fio_job(w.fio_options);
        return w;
    }
    if (text.starts_with("install:")) {
        w.kind = Workload::Kind::Install;
        const std::string_view rest = text.substr(8);
        const std::size_t comma = rest.find(',');
        const std::optional<std::uint64_t> files = parse_file_count(rest.substr(0, comma));
        if (!files)
            throw Error(ErrorKind::Unsupported, "install workload needs a file count from 1 to " +
                                                    std::to_string(Workload::kMaxWriteFiles) +
                                                    ": install:N[,OPTIONS]");
        w.files = *files;
        if (comma != std::string_view::npos) w.install_options = std::string(rest.substr(comma + 1));
        w.install = parse_install_job(w.install_options);
        return w;
    }
    throw Error(ErrorKind::Unsupported, "unknown workload '" + std::string(text) +
                                            "' (expected scan, scan:mft, scan:path, trace:SOURCE, write:N, "
                                            "fio:OPTIONS or install:N[,OPTIONS])");
}

}  // namespace guestfrag
