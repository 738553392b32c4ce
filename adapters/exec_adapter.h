// The subprocess adapter of `permcheck audit --exec`: a program that speaks the line protocol (README,
// "Auditing your own layer") becomes a BlackBox. One request line {"id":7,"x":[[...],...]} per call, one
// answer line {"id":7,"y":[[...],...]} (sequence), {"id":7,"y":[...]} (pooled) or {"id":7,"error":"text"}.
// With a signature (check/signature.h, README "Auditing a layer with several inputs") it becomes a
// NamedBlackBox: {"id":7,"inputs":{"q":[[...]],"pad":[true,false]},"shapes":{"q":[2,8],"pad":[2]},
// "kinds":{"q":"float","pad":"mask"},"outputs":["y"]} in, {"id":7,"outputs":{"y":[[...]]}} or {"id":7,"error":"text"} out.
#pragma once

#include "check/blackbox.h"

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace permcheck::adapters {

// One answer line, parsed. `vector` is true when y was one flat array (a pooled layer's answer): y is then
// one row.
struct Response {
    std::int64_t id = 0;
    bool is_error = false;
    std::string error;  // the adapter's own message when is_error
    Mat<double> y;
    bool vector = false;
    bool taps_offered = false;  // the answer says "taps_offered": true (check/taps.h)
};

// Parses one answer line (without its newline). Accepts NaN, Infinity and -Infinity outside strings, as
// Python's json module writes them. A pure function: throws std::invalid_argument saying what is wrong and
// what was expected; never crashes, whatever the bytes.
Response parse_response(std::string_view line);

// The request line for x (without the newline), numbers in shortest round-trip form.
std::string format_request(std::int64_t id, const Mat<double>& x);

// A signature's request line (without the newline): every input of `s` as a nested array in the order of its
// dims (a dim of length 0 an empty array, a scalar a bare number), masks as JSON booleans, indices as JSON
// integers, reals in shortest round-trip form always with a fraction or an exponent (2.0, not 2); "shapes" holds
// every input's shape, "kinds" every input's kind (float | mask | index) and "outputs" the names of s.outputs. Throws std::invalid_argument when an input is missing, has another shape than its values, or holds
// a non-finite number (or, for an index, a non-integer).
std::string format_named_request(std::int64_t id, const Signature& s, const Tensors& inputs);

// One answer line of a signature audit, parsed: every output `expected` names, with the shape it was asked for.
struct NamedResponse {
    std::int64_t id = 0;
    bool is_error = false;
    std::string error;
    Tensors outputs;  // by name; only the names of `expected`, each with its expected shape
    bool taps_offered = false;
};

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

// Parses one answer line of a signature audit. Accepts NaN, Infinity and -Infinity outside strings, as
// Python's json module writes them; outputs not in `expected` are ignored. A pure function: throws
// std::invalid_argument naming the output, the dim and what was expected (e.g. "output 'y', dim 0 (axis n):
// 3 entries, expected 4"); never crashes, whatever the bytes.
NamedResponse parse_named_response(std::string_view line, const std::vector<ExpectedOutput>& expected);

// Batched requests (README "Batched requests"). An adapter announces that it takes several cases per request by
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
// Taps (check/taps.h, README "Where symmetry first breaks"). An adapter offers them with "taps_offered": true in
// any answer; only then permcheck sends a request (either form) with "taps": true, answered with
// {"id":7, ..., "taps":[{"name":"blocks.1","shape":[2,8],"values":[[...],...],"dims":["n",null]}, ...]}: the
// submodules' outputs in the order they finished; "dims" (the axis each dim follows, null for none) is optional.
struct TapResponse {
    std::int64_t id = 0;
    bool is_error = false;
    std::string error;
    std::vector<Tap> taps;
    bool taps_offered = false;
};
// Parses a tap request's answer line; its outputs are not read. A pure function: throws std::invalid_argument naming
// the tap and what was expected; never crashes, whatever the bytes.
TapResponse parse_tap_response(std::string_view line);
// The request line with "taps": true added.
std::string with_taps(std::string request_line);

struct ExecOptions {
    std::string command;                         // run as /bin/sh -c COMMAND
    double timeout_seconds = 30;                 // per request: writing it and reading the answer
    // The first request of the process instead: start-up (e.g. `import torch`) can take far longer than an answer.
    double startup_timeout_seconds = 120;
    std::size_t max_line_bytes = 64u << 20;      // a longer answer line is refused without being read whole
    // Set (from any thread) when an answer offers taps ("taps_offered": true), if given: so that a caller learns
    // from the audit's own answers whether asking for taps is worth a process of its own.
    std::shared_ptr<std::atomic<bool>> taps_offered;
};

// One running adapter process, in its own process group; its stderr is the caller's stderr. Not thread-safe:
// one adapter per worker. Every failure throws AdapterError naming the cause and the last request; after a
// failure the process is gone and every further call throws the same error.
class ExecAdapter {
public:
    explicit ExecAdapter(ExecOptions opts);  // starts the process; throws AdapterError if it cannot
    ~ExecAdapter();                          // closes stdin, waits a moment, then kills the group and reaps
    ExecAdapter(const ExecAdapter&) = delete;
    ExecAdapter& operator=(const ExecAdapter&) = delete;

    Mat<double> operator()(const Mat<double>& x);
    // A signature audit's call: every input of `s` in, every output of `s` back, each of the shape the inputs'
    // lengths give it.
    Tensors operator()(const Signature& s, const Tensors& inputs);
    // The batched calls: several inputs of equal lengths in one request (after the adapter announced K: at most
    // K). An item the adapter answered with an error gets that error; a failure of the request throws.
    std::vector<BatchAnswer<Mat<double>>> operator()(const std::vector<Mat<double>>& xs);
    std::vector<BatchAnswer<Tensors>> operator()(const Signature& s, const std::vector<Tensors>& inputs);
    int batch_capacity() const { return batch_; }  // the K the adapter announced, 0 before
    // The taps of one evaluation (`s` null: the one-tensor form, inputs {"x": an n x d tensor}).
    std::vector<Tap> taps(const Tensors& inputs, const Signature* s);
    bool taps_offered() const { return taps_offered_; }  // some answer offered taps
    int requests() const { return requests_; }
    pid_t pid() const { return pid_; }

private:
    [[noreturn]] void fail(const std::string& cause);
    std::string exit_description();  // "exited with status 3", after the process ended (reaps it)
    void stop();                     // kill the group and reap, idempotent
    void write_all(const std::string& data, double deadline);
    std::string read_line(double deadline);
    std::string limit_text() const;  // "30 s (--timeout)": the limit of the request under way
    // Sends one request line (its id is requests_ + 1, described for messages as `what`) and returns the answer
    // line. `parse` reads it (throwing std::invalid_argument for a protocol error); the id and an error answer
    // are checked here.
    template <class Parse> auto exchange(const std::string& request, const std::string& what, Parse parse);
    void note_announcement(const std::string& line);  // learns K from an ordinary answer line
    // One batched request of `items` and its answer, each item parsed by parse_item (an answer line).
    template <class Out, class ParseItem>
    std::vector<BatchAnswer<Out>> exchange_batch(const std::vector<std::string>& items, const std::string& what,
                                                 const std::map<std::string, int>& dims, ParseItem parse_item);


    ExecOptions opts_;
    pid_t pid_ = -1;
    int to_child_ = -1, from_child_ = -1;
    std::string buffer_;
    int requests_ = 0, answered_ = 0;
    std::string last_request_, failure_;
    bool reaped_ = false;
    int batch_ = 0;
    bool taps_offered_ = false;
    int status_ = 0;
};

// A BlackBox that owns an adapter process (shared between copies of the function).
BlackBox exec_black_box(const ExecOptions& opts);
// The same for a signature audit: a NamedBlackBox speaking the signature's request and answer lines.
NamedBlackBox exec_named_black_box(const ExecOptions& opts, const Signature& s);
// The same with their batched sides, which take requests of at most min(K, 1024) items once the adapter announced K.
BatchedBlackBox exec_batched_black_box(const ExecOptions& opts);
BatchedNamedBlackBox exec_batched_named_black_box(const ExecOptions& opts, const Signature& s);
// The taps of a counterexample, from an adapter process of their own, started on the first call; `s` null for the
// one-tensor form. Its first call sends a plain request first and throws NoTapsOffered (check/taps.h)
// when that answer does not offer them, so no adapter is ever sent a tap request it did not ask for.
TapSource exec_tap_source(const ExecOptions& opts, const Signature* s);

}  // namespace permcheck::adapters
