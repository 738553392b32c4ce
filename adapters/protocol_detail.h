// The pieces of the line protocol that its two sources share (adapters/protocol.cpp: one tensor, named inputs,
// taps; adapters/batches.cpp: batched and stacked requests). Internal to those files: not part of
// adapters/protocol.h, which is the protocol's interface.
#pragma once

#include "adapters/protocol.h"

#include <nlohmann/json.hpp>

#include <functional>

namespace permcheck::adapters::detail {

// The answer line as a JSON object, or std::invalid_argument saying what the line was and what was `expected`; a
// trailing '\r' is taken off `line` first.
nlohmann::json answer_object(std::string_view& line, const char* expected = "{\"id\": N, \"y\": [...]}");
// The head every answer shares, read into r: its id (-1 for one beyond int64, which matches no request) and its
// offer of taps; true, with r.is_error and r.error set, when the answer is the adapter's error (the rest of the line
// is then not read). With `raised`, an error answer's "raised": true is read into it.
bool read_head(AnswerHead& r, const nlohmann::json& j, std::string_view line, const char* expected,
               bool* raised = nullptr);

// Throws unless v can be sent as a value of input t: finite, and an integer for an index input.
void check_value(const TensorSpec& t, double v);
// Input t of a request, checked against its spec's number of dims and its shape's size.
const Tensor& input_of(const Tensors& inputs, const TensorSpec& t);
// The rest of a signature's request after its head ({"id":7 or more): its "inputs", each written by value(t, line),
// which returns its shape; its "shapes", "kinds" and "outputs"; the closing brace.
std::string request_body(const Signature& s, const std::function<std::vector<int>(const TensorSpec&, std::string&)>& value);

}  // namespace permcheck::adapters::detail
