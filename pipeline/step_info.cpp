// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline/step_info.hpp"

#include <algorithm>
#include <cmath>

namespace guestfrag {

StepInfo step_info(ApplyStep step) noexcept {
    switch (step) {
        case ApplyStep::Analyse:
            return {"analysing the input", StepUnit::Records};
        case ApplyStep::Copy:
            return {"copying the disk", StepUnit::DiskOffset};
        case ApplyStep::Move:
            return {"moving clusters", StepUnit::Moves};
        case ApplyStep::AnalyseOutput:
            return {"verifying: analysing the output", StepUnit::Records};
        case ApplyStep::HashInput:
            return {"verifying: hashing the input's streams", StepUnit::Streams};
        case ApplyStep::HashOutput:
            return {"verifying: hashing the output's streams", StepUnit::Streams};
    }
    return {};
}

StepInfo step_info(CompactStep step) noexcept {
    switch (step) {
        case CompactStep::Analyse:
            return {"analysing the input", StepUnit::Records};
        case CompactStep::Plan:
            return {"planning the packing", StepUnit::Streams};
        case CompactStep::Copy:
            return {"copying the data NTFS uses", StepUnit::DiskOffset};
        case CompactStep::Move:
            return {"packing: moving clusters", StepUnit::Moves};
        case CompactStep::AnalyseOutput:
            return {"verifying: analysing the output", StepUnit::Records};
        case CompactStep::Sparsify:
            return {"sparsifying: leaving out free clusters and zero blocks", StepUnit::DiskOffset};
        case CompactStep::HashInput:
            return {"verifying: hashing the input's streams", StepUnit::Streams};
        case CompactStep::HashOutput:
            return {"verifying: hashing the output's streams", StepUnit::Streams};
        case CompactStep::Convert:
            return {"converting with qemu-img and checking the image", StepUnit::None};
    }
    return {};
}

std::string duration_text(double seconds) {
    const auto s = static_cast<long long>(std::ceil(std::max(0.0, seconds)));
    if (s < 60) return std::to_string(s) + " s";
    if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
    return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

std::optional<double> seconds_left(double seconds, std::uint64_t done, std::uint64_t total) {
    if (done == 0 || done >= total || seconds < kEstimateAfterSeconds) return std::nullopt;
    return seconds * static_cast<double>(total - done) / static_cast<double>(done);
}

}  // namespace guestfrag
