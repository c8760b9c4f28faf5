// SPDX-License-Identifier: GPL-2.0-or-later
// JSON documents whose large arrays are written as they are made: a document tree of every
// stream of a million-file volume took gigabytes to print.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

namespace guestfrag::cli {

/// An array of a document made one element at a time.
struct StreamedArray {
    nlohmann::ordered_json* slot = nullptr;  ///< where the array goes in the document
    std::size_t size = 0;
    std::function<nlohmann::ordered_json(std::size_t index)> element;
};

/// Writes `doc` and a newline, byte for byte as `doc.dump(2)` would with each of `arrays`
/// in its slot. The elements are made, written and dropped one at a time, so memory is the
/// rest of the document and one element. Each slot is overwritten.
void write_json(std::ostream& out, nlohmann::ordered_json& doc, const std::vector<StreamedArray>& arrays);

}  // namespace guestfrag::cli
