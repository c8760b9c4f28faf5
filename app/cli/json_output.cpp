// SPDX-License-Identifier: GPL-2.0-or-later
#include "app/cli/json_output.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace guestfrag::cli {
namespace {

constexpr std::size_t kFlushBytes = std::size_t{1} << 20;

}  // namespace

void append_json_string(std::string& text, std::string_view value) {
    // Most names are printable ASCII, which dump() writes as it is; the rest goes through it.
    const bool plain = std::all_of(value.begin(), value.end(), [](char c) {
        return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
    });
    if (plain) {
        text += '"';
        text += value;
        text += '"';
    } else {
        text += nlohmann::ordered_json(std::string(value)).dump();
    }
}

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
            // Elements are gathered in a buffer written out a megabyte at a time: a stream
            // insertion per field cost more than making the fields.
            std::string buffer = "[\n";
            for (std::size_t k = 0; k < array.size; ++k) {
                buffer.append(indent + 2, ' ');
                array.append(buffer, k, indent + 2);
                buffer += k + 1 < array.size ? ",\n" : "\n";
                if (buffer.size() >= kFlushBytes) {
                    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
                    buffer.clear();
                }
            }
            buffer.append(indent, ' ');
            buffer += ']';
            out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        }
        from = cut.at + cut.length;
    }
    out.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
    out << '\n';
}

}  // namespace guestfrag::cli
