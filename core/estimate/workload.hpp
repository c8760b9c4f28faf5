// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/estimate/fio_workload.hpp"
#include "core/estimate/install_workload.hpp"

namespace guestfrag {

/// A workload `estimate` replays on a volume (docs/design.md §4), as named on the command line.
struct Workload {
    enum class Kind {
        Scan,     ///< "scan", "scan:mft", "scan:path": read every non-resident $DATA stream
        Trace,    ///< "trace:SOURCE": read the files a trace names, in order, or replay a block IO trace
        Write,    ///< "write:N": create N files sized like the volume's files
        Fio,      ///< "fio:OPTIONS": a synthetic job in fio's vocabulary (FioJob)
        Install,  ///< "install:N[,OPTIONS]": N files appended in chunks by several writers at once
    };
    /// Most files a write or install workload may create (it is a model, not a benchmark).
    static constexpr std::uint64_t kMaxWriteFiles = 10'000'000;

    /// The order a scan reads in (scan_reads): MFT record order ("scan", "scan:mft") or a
    /// depth-first walk of the tree ("scan:path").
    enum class ScanOrder : std::uint8_t { Mft, Path };

    Kind kind = Kind::Scan;
    ScanOrder scan_order = ScanOrder::Mft;  ///< Scan only
    bool scan_order_named = false;          ///< Scan only: spelled "scan:ORDER", not "scan"
    std::string trace_source;  ///< Trace only: host file, "@prefetch" or "@layout" (load_trace)
    std::uint64_t files = 0;   ///< Write and Install: N, 1 … kMaxWriteFiles
    FioJob fio;                ///< Fio only
    std::string fio_options;   ///< Fio only: the options as given, for text()
    InstallJob install;        ///< Install only
    std::string install_options;  ///< Install only: the options as given (may be empty), for text()

    /// The command-line spelling: "scan", "scan:mft", "scan:path", "trace:SOURCE", "write:N", "fio:OPTIONS",
    /// "install:N" or "install:N,OPTIONS".
    [[nodiscard]] std::string text() const;
};

/// Parses "scan", "scan:mft", "scan:path", "trace:SOURCE" (SOURCE non-empty), "write:N" (decimal N in
/// 1 … Workload::kMaxWriteFiles), "fio:OPTIONS" (parse_fio_job) or "install:N[,OPTIONS]"
/// (N as write:N, OPTIONS parse_install_job). Throws Error(Unsupported, reason) for
/// anything else.
[[nodiscard]] Workload parse_workload(std::string_view text);

}  // namespace guestfrag
