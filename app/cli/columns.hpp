// SPDX-License-Identifier: GPL-2.0-or-later
// Number and column helpers of the CLI's text reports (sizes: pipeline/sizes.hpp).
#pragma once

#include <cstddef>
#include <string>

namespace guestfrag::cli {

/// `value` with `decimals` digits after the point ("12.35").
[[nodiscard]] std::string fixed(double value, int decimals);

/// A duration in seconds, two decimals below 10 s and one above ("0.37 s", "45.9 s").
[[nodiscard]] std::string seconds_text(double seconds);

/// `s` padded with spaces to `width` columns, on the left when `right` aligns it right.
[[nodiscard]] std::string pad(const std::string& s, std::size_t width, bool right = false);

/// `left` then `text`, wrapped at the report's width (the terminal's, 80 when not a terminal,
/// at most 100) with the lines after the first indented under the text; ends in a newline.
[[nodiscard]] std::string hanging(const std::string& left, const std::string& text);

}  // namespace guestfrag::cli
