// SPDX-License-Identifier: GPL-2.0-or-later
// JSON documents whose large arrays are written as they are made: a document tree of every
// stream of a million-file volume took gigabytes to print.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace guestfrag::cli {

/// An array of a document written one element at a time.
struct StreamedArray {
    /// Where the array goes in the document (taken once the document has all its members:
    /// adding one may move its neighbours).
    nlohmann::ordered_json* slot = nullptr;
    std::size_t size = 0;
    /// Appends element `index` to `text` as dump(2) would write it `indent` spaces deep: its
    /// first line from where the text ends, the next ones indented.
    std::function<void(std::string& text, std::size_t index, std::size_t indent)> append;
};

/// Writes `doc` and a newline, byte for byte as `doc.dump(2)` would with each of `arrays`
/// in its slot. The elements are written one at a time, so memory is the rest of the
/// document and one element. Each slot is overwritten.
void write_json(std::ostream& out, nlohmann::ordered_json& doc, const std::vector<StreamedArray>& arrays);

/// Appends `value` as a JSON string, as dump() writes it (quoted and escaped; invalid UTF-8
/// throws nlohmann's type_error as dump() does).
void append_json_string(std::string& text, std::string_view value);

}  // namespace guestfrag::cli
