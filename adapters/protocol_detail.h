// The pieces of the line protocol that its two sources share (adapters/protocol.cpp: one tensor, named inputs,
// taps; adapters/batches.cpp: batched and stacked requests). Internal to those files: not part of
// adapters/protocol.h, which is the protocol's interface.
#pragma once

#include "cases/signature.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace permcheck::adapters::detail {

// The answer line as a JSON object, or std::invalid_argument saying what the line was and what was `expected`.
nlohmann::json answer_object(std::string_view line, const char* expected = "{\"id\": N, \"y\": [...]}");
// The id of an answer, -1 for one beyond int64 (it then matches no request).
std::int64_t answer_id(const nlohmann::json& j, std::string_view line, const char* expected);
// The adapter's own error message, if the answer is one.
std::optional<std::string> answer_error(const nlohmann::json& j);
// "taps_offered": true (audit/taps.h); anything else, or nothing, offers none.
bool offers_taps(const nlohmann::json& j);

// The head every answer shares, read into r: its id and its offer of taps; true, with r.is_error and r.error set,
// when the answer is the adapter's error (the rest of the line is then not read).
template <class R> bool read_head(R& r, const nlohmann::json& j, std::string_view line, const char* expected) {
    r.id = answer_id(j, line, expected);
    r.taps_offered = offers_taps(j);
    const std::optional<std::string> error = answer_error(j);
    if (!error) return false;
    r.is_error = true;
    r.error = *error;
    if constexpr (requires { r.raised; }) {
        const auto raised = j.find("raised");
        r.raised = raised != j.end() && raised->is_boolean() && raised->template get<bool>();
    }
    return true;
}

// Throws unless v can be sent as a value of input t: finite, and an integer for an index input.
void check_value(const TensorSpec& t, double v);
// "[2,8]"
void append_shape(std::string& s, const std::vector<int>& shape);
// Input t of a request, checked against its spec's number of dims and its shape's size.
const Tensor& input_of(const Tensors& inputs, const TensorSpec& t);
// A JSON string literal of `text`, quotes and escapes included.
std::string json_string(const std::string& text);
// open, the texts item(e) of `list` comma-separated, and close: joined("[", shape, to_text, "]") is "[2,8]".
template <class List, class Item> std::string joined(const char* open, const List& list, Item item, const char* close) {
    std::string out = open;
    bool first = true;
    for (const auto& e : list) {
        if (!first) out += ',';
        first = false;
        out += item(e);
    }
    out += close;
    return out;
}
// The end of a signature's request, after its inputs: `shapes` ("\"shapes\":{..." unclosed), the kinds and the
// outputs' names.
std::string request_tail(const Signature& s, const std::string& shapes);

}  // namespace permcheck::adapters::detail
