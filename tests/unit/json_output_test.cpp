// SPDX-License-Identifier: GPL-2.0-or-later
// The streamed JSON writer against nlohmann's own dump of the whole document.
#include <catch2/catch.hpp>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/json_output.hpp"

using namespace guestfrag;
using Json = nlohmann::ordered_json;

namespace {

/// `value` as dump(2) writes it nested `indent` spaces deep, each line after the first indented.
void append_nested(std::string& text, const Json& value, std::size_t indent) {
    const std::string dumped = value.dump(2);
    for (const char c : dumped) {
        text += c;
        if (c == '\n') text.append(indent, ' ');
    }
}

Json element(std::size_t k) {
    return {{"index", k}, {"name", "é \"q\" \n" + std::to_string(k)}, {"runs", Json::array({k, Json::array({1, 2})})}};
}

}  // namespace

TEST_CASE("streamed arrays are written as dump(2) writes the whole document", "[cli][json]") {
    // Arrays at three depths, an empty one, one of scalars, and a string that reads as the
    // first marker the writer tries.
    Json doc = {{"schema", "x"},
                {"top", nullptr},
                {"nested", {{"a", 1}, {"deep", {{"list", nullptr}, {"after", "\x01streamed 0/2"}}}}},
                {"empty", nullptr},
                {"numbers", nullptr},
                {"last", Json::array()}};
    const std::vector<std::size_t> sizes{3, 1, 0, 4};
    const auto number = [](std::size_t k) { return Json(k * 1000); };
    const std::vector<std::function<Json(std::size_t)>> makers{element, element, element, number};
    const auto writer = [](const std::function<Json(std::size_t)>& make) {
        return [make](std::string& text, std::size_t k, std::size_t indent) {
            append_nested(text, make(k), indent);
        };
    };
    std::vector<cli::StreamedArray> arrays{
        {&doc["top"], sizes[0], writer(makers[0])},
        {&doc["nested"]["deep"]["list"], sizes[1], writer(makers[1])},
        {&doc["empty"], sizes[2], writer(makers[2])},
        {&doc["numbers"], sizes[3], writer(makers[3])},
    };
    Json whole = doc;
    const std::vector<Json*> slots{&whole["top"], &whole["nested"]["deep"]["list"], &whole["empty"], &whole["numbers"]};
    for (std::size_t i = 0; i < slots.size(); ++i) {
        *slots[i] = Json::array();
        for (std::size_t k = 0; k < sizes[i]; ++k) slots[i]->push_back(makers[i](k));
    }
    std::ostringstream out;
    cli::write_json(out, doc, arrays);
    CHECK(out.str() == whole.dump(2) + "\n");

    std::ostringstream plain;
    Json small = {{"a", 1}};
    cli::write_json(plain, small, {});
    CHECK(plain.str() == small.dump(2) + "\n");
}

TEST_CASE("JSON strings are written as dump() writes them", "[cli][json]") {
    for (const std::string text : {"plain name.txt", "", "quote \" and \\ back", "tab\tnew\nline\x01\x1f\x7f",
                                   "UTF-8 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}) {
        std::string out = "x";
        cli::append_json_string(out, text);
        CHECK(out == "x" + Json(text).dump());
    }
    // Invalid UTF-8 is refused as dump() refuses it.
    std::string out;
    CHECK_THROWS_AS(cli::append_json_string(out, "\xff name"), nlohmann::json::type_error);
}
