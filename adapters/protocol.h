// The line protocol of `permcheck audit --exec` (docs/protocol.md), as pure functions: the request
// lines permcheck writes and the answer lines it reads, for one tensor, for a signature's named inputs, for batches
// of cases and for taps. Each parser throws std::invalid_argument saying what is wrong and what was expected, and
// never crashes, whatever the bytes (the fuzzers in fuzz/ hold them to it). Defined in adapters/protocol.cpp and
// (batched and stacked requests) adapters/batches.cpp. The process that speaks it is
// adapters/exec_adapter.h.
//   one tensor:  {"id":7,"x":[[...],...]} in; {"id":7,"y":[[...],...]} (sequence), {"id":7,"y":[...]} (pooled)
//                or {"id":7,"error":"text"} out.
//   signature:   {"id":7,"inputs":{"q":[[...]],"pad":[true,false]},"shapes":{"q":[2,8],"pad":[2]},
//                "kinds":{"q":"float","pad":"mask"},"outputs":["y"]} in; {"id":7,"outputs":{"y":[[...]]}} or
//                {"id":7,"error":"text"} out.
#pragma once

#include "audit/blackbox.h"
#include "audit/taps.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace permcheck::adapters {

// The request line for x (without the newline), numbers in shortest round-trip form.
std::string format_request(std::int64_t id, const Mat<double>& x);

// A signature's request line (without the newline): every input of `s` as a nested array in the order of its
// dims (a dim of length 0 an empty array, a scalar a bare number), masks as JSON booleans, indices as JSON
// integers, reals in shortest round-trip form always with a fraction or an exponent (2.0, not 2); "shapes" holds
// every input's shape, "kinds" every input's kind (float | mask | index) and "outputs" the names of s.outputs. Throws std::invalid_argument when an input is missing, has another shape than its values, or holds
// a non-finite number (or, for an index, a non-integer).
std::string format_named_request(std::int64_t id, const Signature& s, const Tensors& inputs);

// What every parsed answer holds: the id of the request it answers, the adapter's error instead of an answer, and
// whether it says "taps_offered": true (audit/taps.h).
struct AnswerHead {
    std::int64_t id = 0;
    bool is_error = false;
    std::string error;
    bool taps_offered = false;
    std::string error_type = {}, error_where = {};  // an error answer's optional "type" and "where" (LayerRaised)
};

// One answer line of a signature audit, parsed: every output `expected` names, with the shape it was asked for.
struct NamedResponse : AnswerHead {
    Tensors outputs;  // by name; only the names of `expected`, each with its expected shape
    bool raised = false;  // an error answer marked "raised": true: the layer raised (LayerRaised), not the adapter
};

// Parses one answer line of the one-tensor form (without its newline): its y as the output "y", rows (n x W) or
// one flat array (the vector W: a pooled layer's answer). Accepts NaN, Infinity and -Infinity outside strings, as
// Python's json module writes them.
NamedResponse parse_response(std::string_view line);

// The shape each output must have, by name, with the text that names each dim in a message ("axis n").
struct ExpectedOutput {
    std::string name;
    std::vector<int> shape;
    std::vector<std::string> dim_names;  // "axis n" or "fixed size 8", one per dim
};
std::vector<ExpectedOutput> expected_outputs(const Signature& s, const Lengths& lengths);

// The axes' lengths that a set of inputs shows (each input's shape read through its dims). Throws
// std::invalid_argument when two inputs disagree on an axis or an input is missing.
Lengths lengths_of(const Signature& s, const Tensors& inputs);
// The request field of the free axes' lengths the inputs carry (kLengthInput entries, cases/signature.h),
// ",\"lengths\":{\"graphs\":3}", or empty when they carry none.
std::string lengths_field(const Tensors& inputs);

// Parses one answer line of a signature audit, non-finite numbers as parse_response does; outputs not in `expected`
// are ignored. An output that is a well-formed tensor of another shape is read in its own shape, for the audit to
// judge in the layer's terms; a ragged or mistyped one is an error naming the output, the dim and what was expected
// ("output 'y', dim 1 (fixed size 2) at [2]: 1 entries, expected 2").
NamedResponse parse_named_response(std::string_view line, const std::vector<ExpectedOutput>& expected);

// Batched requests (docs/protocol.md, "Batched requests"). An adapter announces that it takes several cases per request by
// adding "batch": K (an integer >= 1, the most items one request may hold) to any answer; permcheck then may send
// {"id":7,"batch":[ITEM,...]} with an optional "batch_dims":{"x":0,...}, each ITEM an ordinary request object
// without its id, all of equal lengths, and expects {"id":7,"batch":[ANSWER,...]}: one ordinary answer object
// (without id, or {"error":"text"} for that item alone) per item, in order.
//
// The announcement of an answer line: K, or 0 when the line has no "batch". Throws std::invalid_argument when
// "batch" is not an integer in [1, 2^31).
int parse_batch_announcement(std::string_view line);
// A signature's "batch_dims": for every input and output, its first fixed dim of size 1 (the dim a module stacks
// cases on, e.g. 0 for x:1,n,8 and 1 for x:n,1,8); empty when some input or output has none.
std::map<std::string, int> batch_dims_of(const Signature& s);
// The batched request line (without the newline) for ordinary request objects `items` (each "{...}" without id).
std::string format_batch_request(std::int64_t id, const std::vector<std::string>& items,
                                 const std::map<std::string, int>& batch_dims);
// A batched answer line, parsed: its id, and either a whole-request error or its items, each as an ordinary answer
// line with the batch's id (for parse_response or parse_named_response). Throws std::invalid_argument when the
// line is not such an answer or holds another number of items than `count`.
std::vector<std::string> batch_items(std::string_view line, std::size_t count, std::int64_t& id,
                                     std::optional<std::string>& error);
// Stacked batches (docs/protocol.md, "Batched requests"): an adapter that adds "stacked": true to an answer (beside its
// "batch": K) takes a batch of a signature with batch dims as one request, each input stacked on its batch dim
// (the items in order there) and sent as the base64 of its values as little-endian IEEE-754 binary64, row-major
// (masks as 0 and 1, indices as integers):
//   {"id":7,"stacked":K,"batch_dims":{"x":0,"y":0},"inputs":{"x":"AAAA..."},"shapes":{"x":[K,n,8]},
//    "kinds":{"x":"float"},"outputs":["y"]}
// answered by {"id":7,"outputs":{"y":"AAAA..."}} (each output stacked on its batch dim the same way; an optional
// "shapes" is checked), or item by item as a batched request is ({"id":7,"batch":[ANSWER,...]}), or with one
// {"id":7,"error":"text"} for the whole request.
//
// "stacked": true in an answer line; false when it has none. Throws std::invalid_argument when it is not a boolean.
bool parse_stacked_announcement(std::string_view line);
// The stacked request line (without the newline) for `items` (at least one, of equal shapes), every input and
// output of `s` named in `batch_dims` at a dim of size 1. Throws std::invalid_argument as format_named_request
// does, and when items differ in shape or a batch dim is missing.
std::string format_stacked_request(std::int64_t id, const Signature& s, const std::vector<Tensors>& items,
                                   const std::map<std::string, int>& batch_dims);
// The answer to a stacked request of `count` items, parsed: the whole request's error, or every item's outputs
// (`expected`: one item's), or each item's ordinary answer line (with the request's id) when the adapter answered
// item by item. Throws std::invalid_argument naming the output and what was expected; never crashes.
struct StackedResponse : AnswerHead {
    std::vector<Tensors> items;            // stacked: one item's outputs each
    std::vector<std::string> item_lines;   // item by item: one answer line each
};
StackedResponse parse_stacked_response(std::string_view line, const std::vector<ExpectedOutput>& expected,
                                       std::size_t count, const std::map<std::string, int>& batch_dims);
// A tensor's values as base64 of little-endian binary64, and back (exactly `count` values; throws
// std::invalid_argument saying what `what` is and what was wrong).
std::string float64_base64(const std::vector<double>& values);
std::vector<double> float64_values(std::string_view base64, std::size_t count, const std::string& what);

// Taps (audit/taps.h, docs/reports.md, "Where symmetry first breaks: taps"). An adapter offers them with "taps_offered": true in
// any answer; only then permcheck sends a request (either form) with "taps": true, answered with
// {"id":7, ..., "taps":[{"name":"blocks.1","shape":[2,8],"values":[[...],...],"dims":["n",null]}, ...]}: the
// submodules' outputs in the order they finished; "dims" (the axis each dim follows, null for none) is optional.
struct TapResponse : AnswerHead {
    std::vector<Tap> taps;
    std::string none_because;  // "taps_none": why "taps" is empty ("the module has no submodules"), when said
};
// Parses a tap request's answer line (an error names the tap); its outputs are not read.
TapResponse parse_tap_response(std::string_view line);
// The request line with "taps": true added.
std::string with_taps(std::string request_line);

// ---- a call's lines, in the signature's dialect or (`one_tensor`) the one-tensor form's (one_tensor_signature,
// audit/blackbox.h: {"id","x"} in, {"id","y"} out, never stacked)
// The request line (without its newline) of request `id` that asks the adapter for these inputs: the one-tensor
// form's {"id","x"}, or named inputs, with a chunked request's "chunks" and a free axis's "lengths" (kLengthInput).
std::string request_line(std::int64_t id, const Signature& s, const Tensors& inputs, bool one_tensor);
// The batched request line (without its newline) of request `id` for `items` (each as request_line takes it, of
// equal lengths): stacked, as an adapter that announced "stacked" is sent it when the signature has batch dims (the
// one-tensor form has none), else item by item. Throws std::invalid_argument when the items differ in lengths.
std::string batch_request_line(std::int64_t id, const Signature& s, const std::vector<Tensors>& items, bool stacked,
                               bool one_tensor);
// The answer to a batched request (batch_request_line's, of `count` items whose answers are due `expected` at these
// lengths), each item read in its dialect as read_answer reads it: stacked when `stacked` and the signature has batch
// dims, else item by item. Its error, or its items in order; a protocol error names its item.
struct BatchResponse : AnswerHead {  // taps_offered: some item offered taps
    std::vector<NamedResponse> items;
    bool unstacked = false;  // a stacked request answered item by item: the layer refused it as one batch
};
BatchResponse read_batch_answer(std::string_view line, const Signature& s, const std::vector<ExpectedOutput>& expected,
                                const Lengths& lengths, std::size_t count, bool stacked, bool one_tensor);
// The chunking of a chunked request (kChunksInput, layers/expectation.h) as its "chunks" field: the axis, the ends of
// the chunks and the dim of every input and output along the axis; empty for an ordinary request.
std::string chunks_field(const Signature& s, const Tensors& inputs);
// Whether an answer line says its request was decoded in chunks ("chunked": true).
bool answered_in_chunks(const std::string& line);
// What an answer to these inputs must hold (expected_outputs); the one-tensor form's: nothing the line parser checks.
std::vector<ExpectedOutput> expected_answer(const Signature& s, const Tensors& inputs, bool one_tensor);
// An ordinary answer line to a request of these lengths, read in its dialect: parse_named_response, or the
// one-tensor form's y as the output y, its rows checked in that form's words (one_tensor_answer).
NamedResponse read_answer(std::string_view line, const Signature& s, const std::vector<ExpectedOutput>& expected,
                          const Lengths& lengths, bool one_tensor);

// The most items one batched request holds, whatever K the adapter announced.
inline constexpr int kMaxBatchItems = 1024;
// The start of a line (80 characters, control characters blanked), quoted, for a message.
std::string excerpt(std::string_view line);

}  // namespace permcheck::adapters
