// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstddef>
#include <ostream>

#include "analyzers/analysis.hpp"

namespace guestfrag::cli {

/// The analysis for people: aligned tables, binary sizes, the `top` most fragmented files
/// per volume (all fragmented streams with `all_files`).
void print_analysis(std::ostream& out, const ImageAnalysis& analysis, std::size_t top, bool all_files);

}  // namespace guestfrag::cli
