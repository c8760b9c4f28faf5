// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/estimate/workload.hpp"

#include <charconv>

#include "core/error.hpp"

namespace guestfrag {

std::string Workload::text() const {
    switch (kind) {
        case Kind::Scan:
            return "scan";
        case Kind::Trace:
            return "trace:" + trace_source;
        case Kind::Write:
            return "write:" + std::to_string(files);
        case Kind::Fio:
            return "fio:" + fio_options;
    }
    return {};
}

Workload parse_workload(std::string_view text) {
    Workload w;
    if (text == "scan") return w;
    if (text.starts_with("trace:")) {
        w.kind = Workload::Kind::Trace;
        w.trace_source = std::string(text.substr(6));
        if (w.trace_source.empty())
            throw Error(ErrorKind::Unsupported, "trace workload needs a source: trace:FILE");
        return w;
    }
    if (text.starts_with("write:")) {
        w.kind = Workload::Kind::Write;
        const std::string_view digits = text.substr(6);
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), w.files);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || w.files == 0 ||
            w.files > Workload::kMaxWriteFiles)
            throw Error(ErrorKind::Unsupported, "write workload needs a file count from 1 to " +
                                                    std::to_string(Workload::kMaxWriteFiles) + ": write:N");
        return w;
    }
    if (text.starts_with("fio:")) {
        w.kind = Workload::Kind::Fio;
        w.fio_options = std::string(text.substr(4));
        w.fio = parse_fio_job(w.fio_options);
        return w;
    }
    throw Error(ErrorKind::Unsupported, "unknown workload '" + std::string(text) +
                                            "' (expected scan, trace:SOURCE, write:N or fio:OPTIONS)");
}

}  // namespace guestfrag
