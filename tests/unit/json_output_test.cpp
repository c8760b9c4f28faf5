// SPDX-License-Identifier: GPL-2.0-or-later
// The streamed JSON writer against nlohmann's own dump of the whole document.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/json_output.hpp"

using namespace guestfrag;
using Json = nlohmann::ordered_json;

namespace {

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
    std::vector<cli::StreamedArray> arrays{
        {&doc["top"], sizes[0], element},
        {&doc["nested"]["deep"]["list"], sizes[1], element},
        {&doc["empty"], sizes[2], element},
        {&doc["numbers"], sizes[3], [](std::size_t k) { return Json(k * 1000); }},
    };
    Json whole = doc;
    for (std::size_t i = 0; i < arrays.size(); ++i) {
        Json& slot = i == 0 ? whole["top"] : i == 1 ? whole["nested"]["deep"]["list"] : i == 2 ? whole["empty"] : whole["numbers"];
        slot = Json::array();
        for (std::size_t k = 0; k < sizes[i]; ++k) slot.push_back(arrays[i].element(k));
    }
    std::ostringstream out;
    cli::write_json(out, doc, arrays);
    CHECK(out.str() == whole.dump(2) + "\n");

    std::ostringstream plain;
    Json small = {{"a", 1}};
    cli::write_json(plain, small, {});
    CHECK(plain.str() == small.dump(2) + "\n");
}
