// SPDX-License-Identifier: GPL-2.0-or-later
// The guestfrag.plan.v1 document (docs/planner.md §9).
#include "core/plan/plan_io.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <exception>
#include <istream>
#include <iterator>
#include <span>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/io/heap.hpp"
#include "core/io/hex.hpp"
#include "core/io/json_input.hpp"
#include "core/plan/planner.hpp"

namespace guestfrag {

namespace {

using Json = nlohmann::json;
/// Written documents keep their keys in the documented order.
using OrderedJson = nlohmann::ordered_json;
constexpr std::string_view kSchema = "guestfrag.plan.v1";
constexpr std::int64_t kMaxPartition = 1'000'000;

[[noreturn]] void corrupt(const std::string& what) { throw Error(ErrorKind::Corrupt, what); }

/// Reads fields of one JSON object, naming the object ("move 3", "identity") in errors.
class Fields {
public:
    Fields(const Json& object, std::string where) : object_(&object), where_(std::move(where)) {
        if (!object_->is_object()) corrupt(where_ + ": must be an object");
    }
    /// Fields gathered one by one, not as an object: `values[i]` is the value of `keys[i]`,
    /// null when the object had no such member.
    Fields(std::span<const char* const> keys, std::span<const Json* const> values, std::string where)
        : keys_(keys), values_(values), where_(std::move(where)) {}

    [[nodiscard]] const Json& at(const char* key) const {
        const Json* value = find(key);
        if (value == nullptr) corrupt(where_ + ": missing field \"" + key + "\"");
        return *value;
    }
    [[nodiscard]] bool has(const char* key) const { return find(key) != nullptr; }

    /// An integer in [min, 2^62].
    [[nodiscard]] std::int64_t number(const char* key, std::int64_t min = 0) const {
        const Json& v = at(key);
        bool ok = false;
        std::int64_t value = 0;
        if (v.is_number_unsigned()) {
            const auto u = v.get<std::uint64_t>();
            ok = u <= static_cast<std::uint64_t>(kMaxPlanNumber);
            value = ok ? static_cast<std::int64_t>(u) : 0;
        } else if (v.is_number_integer()) {
            value = v.get<std::int64_t>();
            ok = value <= kMaxPlanNumber;
        }
        if (!ok || value < min)
            corrupt(where_ + ": \"" + key + "\" must be an integer from " + std::to_string(min) + " to 2^62");
        return value;
    }
    [[nodiscard]] std::uint64_t unsigned_number(const char* key) const {
        return static_cast<std::uint64_t>(number(key));
    }
    [[nodiscard]] std::string text(const char* key, bool allow_empty = true) const {
        const Json& v = at(key);
        if (!v.is_string() || (!allow_empty && v.get_ref<const std::string&>().empty()))
            corrupt(where_ + ": \"" + key + "\" must be a" + (allow_empty ? "" : " non-empty") + " string");
        return v.get<std::string>();
    }
    /// 1 to 16 hexadecimal digits (how 64-bit identities are written: JSON numbers above
    /// 2^53 lose precision in many readers).
    [[nodiscard]] std::uint64_t hex(const char* key) const {
        const std::string s = text(key);
        std::uint64_t value = 0;
        if (s.empty() || s.size() > 16) corrupt(where_ + ": \"" + key + "\" must be 1 to 16 hexadecimal digits");
        for (const char c : s) {
            int digit = -1;
            if (c >= '0' && c <= '9') digit = c - '0';
            if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
            if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
            if (digit < 0) corrupt(where_ + ": \"" + key + "\" must be 1 to 16 hexadecimal digits");
            value = value << 4 | static_cast<std::uint64_t>(digit);
        }
        return value;
    }
    [[nodiscard]] std::optional<double> optional_percent(const char* key) const {
        if (!has(key)) return std::nullopt;
        const Json& v = at(key);
        if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 100)
            corrupt(where_ + ": \"" + key + "\" must be a number from 0 to 100");
        return v.get<double>();
    }

private:
    [[nodiscard]] const Json* find(const char* key) const {
        if (object_ != nullptr) {
            const auto it = object_->find(key);
            return it == object_->end() ? nullptr : &*it;
        }
        for (std::size_t i = 0; i < keys_.size(); ++i)
            if (std::strcmp(keys_[i], key) == 0) return values_[i];
        return nullptr;
    }

    const Json* object_ = nullptr;
    std::span<const char* const> keys_;
    std::span<const Json* const> values_;
    std::string where_;
};

const Json& array_field(const Fields& fields, const char* key, const std::string& where) {
    const Json& v = fields.at(key);
    if (!v.is_array()) corrupt(where + ": \"" + key + "\" must be an array");
    return v;
}

OrderedJson summary_json(const PlanSummary& s) {
    OrderedJson j = {
        {"moves", s.moves},
        {"moved_clusters", s.moved_clusters},
        {"moved_bytes", s.moved_bytes},
        {"fragments_before", s.fragments_before},
        {"fragments_after", s.fragments_after},
        {"fragmented_streams_before", s.fragmented_streams_before},
        {"fragmented_streams_after", s.fragmented_streams_after},
        {"free_extents_before", s.free_extents_before},
        {"free_extents_after", s.free_extents_after},
        {"largest_free_extent_clusters_before", s.largest_free_extent_clusters_before},
        {"largest_free_extent_clusters_after", s.largest_free_extent_clusters_after},
        {"granule_size", s.granule_size},
        {"thin_growth_bytes", s.thin_growth_bytes},
        {"clone_delta_growth_bytes", s.clone_delta_growth_bytes},
        {"reclaimable_bytes", s.reclaimable_bytes_after},
        {"reclaimable_bytes_before", s.reclaimable_bytes_before},
        {"reclaimable_bytes_after", s.reclaimable_bytes_after},
    };
    if (s.free_space_fragmentation_percent_before)
        j["free_space_fragmentation_percent_before"] = *s.free_space_fragmentation_percent_before;
    if (s.free_space_fragmentation_percent_after)
        j["free_space_fragmentation_percent_after"] = *s.free_space_fragmentation_percent_after;
    return j;
}

PlanSummary read_summary(const Json& object) {
    const Fields f(object, "summary");
    PlanSummary s;
    s.moves = f.unsigned_number("moves");
    s.moved_clusters = f.unsigned_number("moved_clusters");
    s.moved_bytes = f.unsigned_number("moved_bytes");
    s.fragments_before = f.unsigned_number("fragments_before");
    s.fragments_after = f.unsigned_number("fragments_after");
    s.fragmented_streams_before = f.unsigned_number("fragmented_streams_before");
    s.fragmented_streams_after = f.unsigned_number("fragmented_streams_after");
    s.free_extents_before = f.unsigned_number("free_extents_before");
    s.free_extents_after = f.unsigned_number("free_extents_after");
    s.largest_free_extent_clusters_before = f.unsigned_number("largest_free_extent_clusters_before");
    s.largest_free_extent_clusters_after = f.unsigned_number("largest_free_extent_clusters_after");
    s.granule_size = f.unsigned_number("granule_size");
    s.thin_growth_bytes = f.unsigned_number("thin_growth_bytes");
    s.clone_delta_growth_bytes = f.unsigned_number("clone_delta_growth_bytes");
    s.reclaimable_bytes_before = f.unsigned_number("reclaimable_bytes_before");
    s.reclaimable_bytes_after = f.unsigned_number("reclaimable_bytes_after");
    s.free_space_fragmentation_percent_before = f.optional_percent("free_space_fragmentation_percent_before");
    s.free_space_fragmentation_percent_after = f.optional_percent("free_space_fragmentation_percent_after");
    return s;
}

/// `value` on one line; invalid UTF-8 (never expected from the reader) becomes U+FFFD.
std::string compact(const OrderedJson& value) {
    return value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

/// `value` pretty-printed, its inner lines indented by `indent` more spaces.
std::string nested(const OrderedJson& value, int indent) {
    const std::string text = value.dump(2, ' ', false, OrderedJson::error_handler_t::replace);
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        out += c;
        if (c == '\n') out.append(static_cast<std::size_t>(indent), ' ');
    }
    return out;
}

/// `text` as a JSON string, as compact() writes it.
void append_string(std::string& out, const std::string& text) {
    // Printable ASCII but the quote and the backslash stands as it is: every label NTFS
    // streams have but the rare named one.
    if (std::ranges::all_of(text, [](char c) { return c >= 0x20 && c != '"' && c != '\\'; })) {
        out += '"';
        out += text;
        out += '"';
    } else {
        out += compact(OrderedJson(text));
    }
}

template <class Integer>
void append_number(std::string& out, Integer value) {
    char digits[24];
    out.append(digits, std::to_chars(std::begin(digits), std::end(digits), value).ptr);
}

/// The move's line of the plan document, as compact() writes the object {mft_record,
/// stream, vcn, from_lcn, to_lcn, clusters}: a plan holds millions, and building a JSON
/// object a move to print it cost up to a tenth of optimize's time.
void append_move(std::string& out, const Move& m) {
    out += "{\"mft_record\":";
    append_number(out, m.mft_record);
    out += ",\"stream\":";
    append_string(out, m.stream);
    for (const auto& [key, value] : {std::pair{",\"vcn\":", m.vcn},
                                     {",\"from_lcn\":", m.from_lcn},
                                     {",\"to_lcn\":", m.to_lcn},
                                     {",\"clusters\":", m.clusters}}) {
        out += key;
        append_number(out, value);
    }
    out += '}';
}

/// A move of the plan document.
Move read_move(const Fields& m) {
    Move move;
    move.mft_record = m.unsigned_number("mft_record");
    move.stream = m.text("stream", false);
    move.vcn = m.number("vcn");
    move.from_lcn = m.number("from_lcn");
    move.to_lcn = m.number("to_lcn");
    move.clusters = m.number("clusters", 1);
    return move;
}

/// Parses a plan document as nlohmann's json::parse would, except for its bulk: a move never
/// becomes a tree of its own (a std::map and a string a field: 0.6 µs a move). Its members
/// are kept as they arrive and the move is checked and stored when its object closes, so a
/// plan of a million moves costs what its Move values do. The entries of "skipped" are built
/// as small trees and taken out of the document as each closes. What the document keeps of
/// "moves" and "skipped" are the empty arrays they were.
class PlanReader final : public Json::json_sax_t {
public:
    Json root;
    std::vector<Move> moves;
    std::vector<Plan::Skipped> skipped;
    std::function<void(int)> partition_read;  ///< read_plan's

    bool null() override { return value(Json(nullptr)); }
    bool boolean(bool b) override { return value(Json(b)); }
    bool number_integer(Json::number_integer_t n) override { return value(Json(n)); }
    bool number_unsigned(Json::number_unsigned_t n) override { return value(Json(n)); }
    bool number_float(Json::number_float_t n, const Json::string_t&) override { return value(Json(n)); }
    bool string(Json::string_t& s) override { return value(Json(std::move(s))); }
    bool binary(Json::binary_t& b) override { return value(Json::binary(std::move(b))); }

    bool start_object(std::size_t) override {
        if (in_move_) return nest(Json::object());
        if (bulk_ == Bulk::Moves && stack_.size() == 2) {
            in_move_ = true;
            field_ = kNoField;
            values_.fill(nullptr);
            return true;
        }
        open(Json::object());
        return true;
    }
    bool key(Json::string_t& k) override {
        if (in_move_) {
            if (nesting_ == 0) {
                const auto it = std::find(kMoveKeys.begin(), kMoveKeys.end(), std::string_view(k));
                field_ = static_cast<std::size_t>(it - kMoveKeys.begin());
            }
            return true;
        }
        if (stack_.size() == 1) member_ = k;
        slot_ = &(*stack_.back())[k];
        return true;
    }
    bool end_object() override {
        if (in_move_) {
            if (nesting_ > 0) {
                --nesting_;
                return true;
            }
            in_move_ = false;
            make_room_huge(moves);  // 42 MB for the 1M-file volume's optimize plan
            moves.push_back(read_move(Fields(kMoveKeys, values_, "move " + std::to_string(moves.size()))));
            return true;
        }
        stack_.pop_back();
        if (bulk_ == Bulk::Skipped && stack_.size() == 2) {
            Json::array_t& entries = stack_.back()->get_ref<Json::array_t&>();
            const Fields f(entries.back(), element());
            skipped.push_back({f.unsigned_number("mft_record"), f.text("stream"), f.text("reason")});
            entries.pop_back();
        }
        return true;
    }
    bool start_array(std::size_t) override {
        if (in_move_) return nest(Json::array());
        in_element();
        open(Json::array());
        if (stack_.size() == 2 && stack_.front()->is_object()) {
            if (member_ == "moves") bulk_ = Bulk::Moves;
            if (member_ == "skipped") bulk_ = Bulk::Skipped;
        }
        return true;
    }
    bool end_array() override {
        if (in_move_) {
            --nesting_;
            return true;
        }
        if (stack_.size() == 2) bulk_ = Bulk::None;
        stack_.pop_back();
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
        throw e;
    }

private:
    enum class Bulk { None, Moves, Skipped };
    static constexpr std::array<const char*, 6> kMoveKeys = {"mft_record", "stream",  "vcn",
                                                            "from_lcn",   "to_lcn", "clusters"};
    static constexpr std::size_t kNoField = kMoveKeys.size();

    /// A scalar: a member of the move being read, or a value of the document.
    bool value(Json v) {
        if (in_move_) {
            if (nesting_ == 0) keep(std::move(v));
            return true;
        }
        in_element();
        if (partition_read && stack_.size() == 1 && member_ == "partition" && v.is_number_unsigned() &&
            v.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxPartition))
            partition_read(v.get<int>());
        put(std::move(v));
        return true;
    }
    /// An object or array inside a move: kept (to be refused) when it is a known member's
    /// value, skipped otherwise.
    bool nest(Json kind) {
        if (nesting_++ == 0) keep(std::move(kind));
        return true;
    }
    void keep(Json v) {
        if (field_ == kNoField) return;
        fields_[field_] = std::move(v);
        values_[field_] = &fields_[field_];
    }

    /// Refuses anything but an object as an element of "moves" or "skipped".
    void in_element() const {
        if (bulk_ != Bulk::None && stack_.size() == 2) corrupt(element() + ": must be an object");
    }
    [[nodiscard]] std::string element() const {
        return bulk_ == Bulk::Moves ? "move " + std::to_string(moves.size())
                                    : "skipped " + std::to_string(skipped.size());
    }

    /// Places `v` where the document is at: the root, the next element of an array, or the
    /// member whose key came last.
    Json* put(Json v) {
        if (stack_.empty()) {
            root = std::move(v);
            return &root;
        }
        if (stack_.back()->is_array()) {
            Json::array_t& array = stack_.back()->get_ref<Json::array_t&>();
            array.push_back(std::move(v));
            return &array.back();
        }
        *slot_ = std::move(v);
        return slot_;
    }
    /// An open container's address stays valid: its parent takes no other element until
    /// it closes, and object members are map nodes.
    void open(Json container) { stack_.push_back(put(std::move(container))); }

    std::vector<Json*> stack_;  ///< the open containers of the document, root first
    Json* slot_ = nullptr;      ///< the member the next value is for
    std::string member_;        ///< the root member being parsed
    Bulk bulk_ = Bulk::None;    ///< inside the root's "moves" or "skipped" array

    bool in_move_ = false;
    std::size_t nesting_ = 0;          ///< containers open inside the move's object
    std::size_t field_ = kNoField;     ///< the move member being read (kNoField: unknown)
    std::array<Json, kMoveKeys.size()> fields_;
    std::array<const Json*, kMoveKeys.size()> values_{};
};

}  // namespace

Plan read_plan(const std::string& path, std::chrono::milliseconds pipe_timeout,
               const std::function<void(int)>& partition_read) {
    JsonInput source(path, "plan", pipe_timeout);
    std::istream in(&source);
    PlanReader reader;
    reader.partition_read = partition_read;
    try {
        // The parser pulls bytes as it goes and stops at the first that is not JSON, so a
        // device that never ends (/dev/zero) costs one buffer.
        (void)Json::sax_parse(in, &reader);
    } catch (const Json::exception& e) {
        // A syntax error, or a number no double holds (1e611: out_of_range.406).
        if (source.empty_pipe())
            throw Error(ErrorKind::Corrupt, "the plan is a pipe or FIFO that nothing wrote to");
        corrupt(std::string("plan is not valid JSON: ") + e.what());
    }

    const Json& doc = reader.root;
    const Fields root(doc, "plan");
    if (root.text("schema") != kSchema) corrupt("plan: schema is not " + std::string(kSchema));
    Plan plan;
    const Fields image(root.at("image"), "image");
    plan.identity.image_path = image.text("path");
    plan.identity.virtual_size = image.unsigned_number("virtual_size");
    const std::int64_t partition = root.number("partition");
    if (partition > kMaxPartition) corrupt("plan: \"partition\" must be a partition number");
    plan.identity.partition = static_cast<int>(partition);
    const Fields id(root.at("identity"), "identity");
    plan.identity.volume_serial = id.hex("volume_serial");
    const std::int64_t cluster_size = id.number("cluster_size", 1);
    if (cluster_size > (std::int64_t{1} << 31)) corrupt("identity: \"cluster_size\" is too large");
    plan.identity.cluster_size = static_cast<std::uint32_t>(cluster_size);
    plan.identity.total_clusters = id.number("total_clusters");
    plan.identity.allocation_digest = id.hex("allocation_digest");
    plan.strategy = root.text("strategy");
    const std::optional<Strategy> strategy = parse_strategy(plan.strategy);
    if (!strategy) corrupt("plan: unknown strategy \"" + plan.strategy + "\"");
    if (root.has("order")) {
        plan.order = root.text("order");
        try {
            (void)parse_order(plan.order);
        } catch (const Error& e) {
            corrupt(std::string("plan: \"order\": ") + e.what());
        }
        if (!takes_order(*strategy)) corrupt("plan: strategy " + plan.strategy + " takes no \"order\"");
    }

    // What the parser left of "moves" and "skipped" must be the (now empty) arrays they were
    // taken from.
    (void)array_field(root, "moves", "plan");
    plan.moves = std::move(reader.moves);
    if (root.has("summary")) plan.summary = read_summary(root.at("summary"));
    if (root.has("skipped")) (void)array_field(root, "skipped", "plan");
    plan.skipped = std::move(reader.skipped);
    if (root.has("notes")) {
        const Json& notes = array_field(root, "notes", "plan");
        for (const Json& note : notes) {
            if (!note.is_string()) corrupt("plan: \"notes\" must hold strings");
            plan.notes.push_back(note.get<std::string>());
        }
    }
    return plan;
}

PendingPlan::PendingPlan(Plan plan) : partition_(partition_read_.get_future()) {
    partition_read_.set_value(plan.identity.partition);
    std::promise<Plan> ready;
    ready.set_value(std::move(plan));
    plan_ = ready.get_future();
}

PendingPlan::PendingPlan(Reader read) : partition_(partition_read_.get_future()) {
    plan_ = std::async(std::launch::async, [this, read = std::move(read)] {
        bool told = false;
        try {
            Plan plan = read([&](int partition) {
                if (!told) partition_read_.set_value(partition);
                told = true;
            });
            if (!told) partition_read_.set_value(plan.identity.partition);
            return plan;
        } catch (...) {
            if (!told) partition_read_.set_exception(std::current_exception());
            throw;
        }
    });
}

int PendingPlan::partition() { return partition_.get(); }

Plan PendingPlan::take() {
    Plan plan = plan_.get();
    if (plan.identity.partition != partition_.get())
        corrupt("plan: \"partition\" is given more than once, as " + std::to_string(partition_.get()) +
                " and " + std::to_string(plan.identity.partition));
    return plan;
}

void write_plan_json(std::ostream& out, const Plan& plan, const VolumeMap& before, const Frontier* frontier) {
    const OrderedJson image = {{"path", plan.identity.image_path}, {"virtual_size", plan.identity.virtual_size}};
    const OrderedJson identity = {
        {"volume_serial", hex16(plan.identity.volume_serial)},
        {"cluster_size", plan.identity.cluster_size},
        {"total_clusters", plan.identity.total_clusters},
        {"allocation_digest", hex16(plan.identity.allocation_digest)},
    };
    // Moves and skipped streams one per line, each written as it is made: plans run to
    // millions of moves, and their text (~100 bytes a move) is not held.
    out << "{\n  \"schema\": " << compact(OrderedJson(kSchema)) << ",\n  \"image\": " << nested(image, 2)
        << ",\n  \"partition\": " << plan.identity.partition << ",\n  \"identity\": " << nested(identity, 2)
        << ",\n  \"strategy\": " << compact(OrderedJson(plan.strategy));
    if (!plan.order.empty()) out << ",\n  \"order\": " << compact(OrderedJson(plan.order));
    out << ",\n  \"moves\": [";
    std::string line;
    for (std::size_t i = 0; i < plan.moves.size(); ++i) {
        const Move& m = plan.moves[i];
        line.assign(i == 0 ? "\n    " : ",\n    ");
        append_move(line, m);
        out << line;
    }
    out << (plan.moves.empty() ? "]" : "\n  ]") << ",\n  \"summary\": " << nested(summary_json(plan.summary), 2)
        << ",\n  \"skipped\": [";
    for (std::size_t i = 0; i < plan.skipped.size(); ++i) {
        const Plan::Skipped& s = plan.skipped[i];
        const OrderedJson entry = {{"mft_record", s.mft_record},
                            {"path", before.path_of(s.mft_record)},
                            {"stream", s.stream},
                            {"reason", s.reason}};
        out << (i == 0 ? "\n    " : ",\n    ") << compact(entry);
    }
    out << (plan.skipped.empty() ? "]" : "\n  ]") << ",\n  \"notes\": " << nested(OrderedJson(plan.notes), 2);
    if (frontier) {
        OrderedJson points = OrderedJson::array();
        for (const FrontierPoint& p : frontier->points)
            points.push_back({{"budget_bytes", p.budget_bytes},
                              {"moves", p.moves},
                              {"moved_bytes", p.moved_bytes},
                              {"free_space_fragmentation_percent", p.free_space_fragmentation_percent},
                              {"free_extents", p.free_extents},
                              {"largest_free_extent_clusters", p.largest_free_extent_clusters},
                              {"fragmented_streams", p.fragmented_streams}});
        const OrderedJson doc = {{"points", points},
                                 {"knee", frontier->knee ? OrderedJson(*frontier->knee) : OrderedJson(nullptr)}};
        out << ",\n  \"frontier\": " << nested(doc, 2);
    }
    out << "\n}\n";
}

std::string plan_to_json(const Plan& plan, const VolumeMap& before, const Frontier* frontier) {
    std::ostringstream out;
    write_plan_json(out, plan, before, frontier);
    return std::move(out).str();
}

}  // namespace guestfrag
