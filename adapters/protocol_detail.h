// The pieces of the line protocol that its two sources share (adapters/protocol.cpp: one tensor, named inputs,
// taps; adapters/batches.cpp: batched and stacked requests). Internal to those files: not part of
// adapters/protocol.h, which is the protocol's interface.
#pragma once

#include "cases/signature.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace permcheck::adapters::detail {

// The answer line as a JSON object, or std::invalid_argument saying what the line was and what was `expected`; a
// trailing '\r' is taken off `line` first.
nlohmann::json answer_object(std::string_view& line, const char* expected = "{\"id\": N, \"y\": [...]}");
// The id of an answer, -1 for one beyond int64 (it then matches no request).
std::int64_t answer_id(const nlohmann::json& j, std::string_view line, const char* expected);
// The adapter's own error message, if the answer is one.
std::optional<std::string> answer_error(const nlohmann::json& j);

// The head every answer shares, read into r: its id and its offer of taps; true, with r.is_error and r.error set,
// when the answer is the adapter's error (the rest of the line is then not read).
template <class R> bool read_head(R& r, const nlohmann::json& j, std::string_view line, const char* expected) {
    r.id = answer_id(j, line, expected);
    const auto taps = j.find("taps_offered");  // true (audit/taps.h); anything else, or nothing, offers none
    r.taps_offered = taps != j.end() && taps->is_boolean() && taps->template get<bool>();
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
// Input t of a request, checked against its spec's number of dims and its shape's size.
const Tensor& input_of(const Tensors& inputs, const TensorSpec& t);
// The rest of a signature's request after its head ({"id":7 or more): its "inputs", each written by value(t, line),
// which returns its shape; its "shapes", "kinds" and "outputs"; the closing brace.
std::string request_body(const Signature& s, const std::function<std::vector<int>(const TensorSpec&, std::string&)>& value);

}  // namespace permcheck::adapters::detail
