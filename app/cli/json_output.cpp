// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/json_output.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace guestfrag::cli {
namespace {

/// `value` pretty-printed as it would be at `indent` spaces inside a dump(2).
void write_nested(std::ostream& out, const nlohmann::ordered_json& value, std::size_t indent) {
    const std::string text = value.dump(2);
    std::size_t from = 0;
    for (std::size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
        out.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from));
        out << std::string(indent, ' ');
    }
    out.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

}  // namespace

void write_json(std::ostream& out, nlohmann::ordered_json& doc, const std::vector<StreamedArray>& arrays) {
    if (arrays.empty()) {
        out << doc.dump(2) << '\n';
        return;
    }
    // Each slot holds a marker string while the rest is dumped; the text is cut where the
    // markers are. A string of the document that equals a marker would be cut too: then
    // the markers change until each occurs once.
    struct Cut {
        std::size_t at = 0;
        std::size_t length = 0;
        std::size_t array = 0;
        bool operator<(const Cut& other) const { return at < other.at; }
    };
    std::string text;
    std::vector<Cut> cuts;
    for (unsigned nonce = 0; cuts.size() < arrays.size(); ++nonce) {
        if (nonce == 64) throw Error(ErrorKind::Internal, "cannot place the streamed arrays of a JSON document");
        std::vector<std::string> markers;  // as dumped: quoted, \u0001 escaped
        for (std::size_t i = 0; i < arrays.size(); ++i) {
            *arrays[i].slot = "\x01streamed " + std::to_string(nonce) + "/" + std::to_string(i);
            markers.push_back(arrays[i].slot->dump());
        }
        text = doc.dump(2);
        cuts.clear();
        for (std::size_t i = 0; i < arrays.size(); ++i) {
            const std::size_t at = text.find(markers[i]);
            if (at == std::string::npos || text.find(markers[i], at + 1) != std::string::npos) {
                cuts.clear();
                break;
            }
            cuts.push_back({at, markers[i].size(), i});
        }
    }
    std::sort(cuts.begin(), cuts.end());
    std::size_t from = 0;
    for (const Cut& cut : cuts) {
        out.write(text.data() + from, static_cast<std::streamsize>(cut.at - from));
        // The array's key starts its line: its elements go two spaces further in.
        const std::size_t line = text.rfind('\n', cut.at) + 1;
        const std::size_t indent = text.find_first_not_of(' ', line) - line;
        const StreamedArray& array = arrays[cut.array];
        if (array.size == 0) {
            out << "[]";
        } else {
            out << "[\n";
            for (std::size_t k = 0; k < array.size; ++k) {
                out << std::string(indent + 2, ' ');
                write_nested(out, array.element(k), indent + 2);
                out << (k + 1 < array.size ? ",\n" : "\n");
            }
            out << std::string(indent, ' ') << ']';
        }
        from = cut.at + cut.length;
    }
    out.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
    out << '\n';
}

}  // namespace guestfrag::cli
