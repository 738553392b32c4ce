// The signature of a real layer: several named inputs and outputs laid over named axes (token positions, a
// cross-attention memory, graph nodes, graph edges). `permcheck audit --axis/--input/--output` and the C++ API
// (<permcheck/audit.h>, audit_signature) describe a layer with it; the audit draws every axis's length and an
// independent permutation per axis, moves every input along the dims that axis names (a pairwise input gets
// P B P^T, an index input's values are renumbered), and judges every output:
//   - equivariant along each axis the output has: L(P x) = P L(x) along that axis;
//   - invariant to each axis it lacks: the permutation of that axis leaves the output alone.
//
// Part of the public API, so RapidCheck-free (tests/public_headers.sh). The one-tensor form (`--dim D`) is converted
// into a signature where it enters (one_tensor_signature, audit/blackbox.h): nothing here knows it.
#pragma once

#include "cases/permutation.h"
#include "cases/vocabulary.h"
#include "scalars/weights_version.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace permcheck {

// The longest axis (and audit length): longer is possible, but a request of 1024 positions is already a long wait
// through a subprocess.
inline constexpr int kMaxAxisLen = 1024;
// The largest fixed size of a dim, and the largest V of token=V and P of position=P (an id fits an int32).
inline constexpr int kMaxFixedSize = 1 << 20;
inline constexpr long long kMaxKindLimit = (1LL << 31) - 1;

// A set of positions whose order the layer must not care about. Each case draws a length in
// [min_len, max_len] (min_len may be 0, e.g. for edges) and a permutation of that length.
struct Axis {
    std::string name;
    int min_len = 1, max_len = 8;
    // Above max_len: one case in ten a long one, lengths rising up to long_len (cases/lengths.h), so that a layer
    // that mixes only inside windows or blocks is seen (the --dim shorthand's axis n); 0: max_len is a hard cap.
    // Not a flag: --axis writes hard caps.
    int long_len = 0;
};

// One dim of a tensor, outermost first: an axis (its length varies from case to case) or a fixed size.
struct Dim {
    std::string axis;  // empty: a fixed size
    int size = 0;      // the fixed size (ignored for an axis); 0 in an output: open (the one-tensor form's width)
    bool is_axis() const { return !axis.empty(); }
    bool is_open() const { return axis.empty() && size == 0; }  // a size learned from the layer's first answer
};

struct TensorSpec {
    std::string name;
    std::vector<Dim> dims;
    TensorKind kind = TensorKind::real;
    std::string index_axis;  // kind index: the axis whose positions the values name
    int limit = 0;           // token: V, the vocabulary's size; position: P, the model's number of positions
    // kind index, `index=AXIS,sorted[=ROW]`: the input is kept in ascending order of row ROW (-1: not sorted) along
    // its one axis dim, as library code requires of an edge list or a batch vector (PyG's aggregations, pooling).
    // The rows are the input's entries at one position of that axis, in row-major order of its other dims
    // (edge_index:2,edges: row 0 the sources, row 1 the targets). Every case is put in that order, and a
    // permutation's sort moves every input along the axis with it (settle_case, cases/signature_case.h).
    int sorted_row = -1;
    // kind index, `index=AXIS,within=INPUT`: the entries at one position of its axis (an edge's two ends) name
    // positions that INPUT puts in one group. INPUT is an index input along AXIS alone (a batch vector naming each
    // node's graph), so the edges stay inside their graph; every case, shrink and probe keeps it so (settle_case).
    std::string within{};
};

// The version of the draw of an audit's cases from its seed, which a report names (as it names the version of the
// weight draw): 1, the one-tensor shorthand's own draw (before 2026-12-06) and the signature draw of the same
// version; 2, every audit's cases drawn by the signature draw (cases/signature_case.h), the shorthand's too; 3, the
// cases a schedule takes at every axis's longest (agreement's cases 1 and 2) drawn generic (draw_signature_case),
// every other case as in 2.
inline constexpr int kCaseDrawVersion = 3;

// The number of positions a position input takes when --input does not say (position, not position=P).
inline constexpr int kDefaultPositions = 4096;

struct Signature {
    std::vector<Axis> axes;
    std::vector<TensorSpec> inputs;
    std::vector<TensorSpec> outputs;
};

// The flags' grammar (docs/signatures.md). Each throws std::invalid_argument naming the flag, the text and what was
// expected.
Axis parse_axis(const std::string& text);          // NAME=MIN..MAX
TensorSpec parse_input(const std::string& text);   // NAME:DIMS[:KIND], KIND float | mask | mask=keep | index=AXIS |
                                                   // index=AXIS,sorted[=ROW] | token=V | position[=P] | segment
TensorSpec parse_output(const std::string& text);  // NAME:DIMS (real)
// The same texts back, for replay lines: parse_axis(format(a)) == a.
std::string format(const Axis& a);
std::string format_input(const TensorSpec& t);
std::string format_output(const TensorSpec& t);
// Throws std::invalid_argument unless: names are unique (axes, inputs and outputs each), every axis a dim or
// an index names is declared, every axis appears in some input, an index input is integer-valued over a
// declared axis (a sorted one runs along exactly one axis, not the one it names, its ROW is one of its rows, no two
// sorted inputs run along one axis and none name each other's axes in a cycle), a mask has at least one axis dim, there is at least one input and one output,
// 0 <= min_len <= max_len, every fixed size is in [1, 2^20] (or open, in an output), a
// token's V is in [1, 2^31), a position input has one axis dim (its others of size 1) and a P of at least that
// axis's max_len, and no tensor holds more than 2^22 values at the longest lengths (every axis at its max_len).
void validate(const Signature& s);
// True when some dim of t is an axis: t moves with that axis (an output: equivariant along it).
bool has_axis(const TensorSpec& t);
// The one property an audit of s records: equivariance when some output has an axis, invariance otherwise.
Property property_of(const Signature& s);

// A dense tensor: its shape and its values in row-major order (the order of DIMS, the last dim fastest). A
// mask holds 0 and 1, an index input integers; everything travels as double inside permcheck.
struct Tensor {
    std::vector<int> shape;
    std::vector<double> values;
    std::size_t size() const;  // the product of shape (1 for a scalar, 0 when a dim is 0)
};
using Tensors = std::map<std::string, Tensor>;  // by name
using Lengths = std::map<std::string, int>;      // axis name -> length
using Permutations = std::map<std::string, Permutation>;  // axis name -> permutation of that length

// A shape or a position, e.g. "(3, 4)": the one spelling of describe() and the audit's text.
std::string index_text(const std::vector<int>& where);
// "m=2, n=3" and "m (0 1), n ()": a case's lengths and permutations as the audit's messages name them.
std::string format_lengths(const Lengths& lengths);
std::string format_permutations(const Permutations& perms);
// A row of values as the terminal shows it (a position's features, a row of an output, a vector), the one
// function every terminal view of values uses: "[0.25 -1.5 3]", each value at `precision` significant digits
// (6, the views'; the reports keep every digit) right-aligned in `width` characters; past kTerminalRowValues
// values, the first and last three and the count, "[0.1 0.2 0.3 ... 0.8 0.9 1] (50 values)", so that a line
// stays within about 110 columns. `keep`: an index shown with its value when the cut would hide it (the feature
// of the largest difference), "[0.1 0.2 0.3 ... 44: 4.5 ... 0.8 0.9 1] (50 values)".
inline constexpr std::size_t kTerminalRowValues = 8;
inline constexpr std::size_t kNoColumn = static_cast<std::size_t>(-1);
std::string format_row(const double* values, std::size_t count, int width = 0, int precision = 6,
                       std::size_t keep = kNoColumn);
// A tensor as rows of its last dim, one a line after `indent`, its values in columns (format_row); `keep`: a column
// each elided row shows; `width`: each value's (0: the tensor's own column_width). A scalar is one value.
std::string format_tensor(const Tensor& t, const std::string& indent, std::size_t keep = kNoColumn, int width = 0);
// The width that lines up values in columns, one a row or rows of a matrix: the longest of `values` as format_row
// writes it at `precision`, and at least kTerminalValueWidth ("-0.123456").
inline constexpr int kTerminalValueWidth = 9;
int column_width(const double* values, std::size_t count, int precision = 6);

// A matrix as a tensor of its shape (row-major), and a tensor of one or two dims as a matrix (one dim: one row). In
// a namespace of their own, so that argument-dependent lookup never finds them for a user's functions of the same
// names over permcheck::Tensor.
// A matrix as a tensor of two dims (rows x cols, row-major) and back: a tensor of one dim is a 1 x n row, of none
// a 1 x 1 matrix; more dims: std::invalid_argument. A mask (or mask=keep) input's 0/1 values as bools, row-major.
namespace tensor_matrix {
Tensor as_tensor(const Mat<double>& m);
Mat<double> as_matrix(const Tensor& t);
std::vector<bool> as_mask(const Tensor& t);
}  // namespace tensor_matrix

// The axis a position input lies along (its one axis dim).
const std::string& position_axis(const TensorSpec& t);
// Whether some input of s is a position input.
bool has_position_input(const Signature& s);
// The number of values of a tensor of this shape in the dims before dim k (their product) and in those after it.
std::pair<std::size_t, std::size_t> outer_inner(const std::vector<int>& shape, std::size_t k);

// The shape a spec has at the given lengths.
std::vector<int> shape_of(const TensorSpec& t, const Lengths& lengths);

// The identity on every axis of these lengths.
Permutations identities(const Lengths& lengths);

// The inputs after permuting every axis: along every dim named by axis a, (P t)[.., i, ..] = t[.., p_a[i], ..]
// (the convention of cases/permutation.h); every value v of an index input over axis a becomes the new
// position of v, p_a^-1[v].
Tensors permute_inputs(const Signature& s, const Permutations& perms, const Tensors& inputs);
// One output moved the same way along every axis it has; the axes it lacks do not move it (invariance).
Tensor permute_output(const TensorSpec& t, const Permutations& perms, const Tensor& y);

// What a black box throws when it cannot answer (process died, timed out, broke the protocol, ...). The
// message names the cause and the last request; an audit turns it into the verdict `error`.
struct AdapterError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// What a black box throws when the layer itself raised while decoding a chunked request (the incremental
// property), the box still able to answer: an adapter's error answer marked "raised": true, or a ChunkStep that
// threw. Where the one-pass request was answered, the incremental property calls it a violation, the message its
// finding; anywhere else it is an AdapterError like any other.
struct LayerRaised : AdapterError {
    explicit LayerRaised(const std::string& what, std::string type = "", std::string where = "")
        : AdapterError(what), type(std::move(type)), where(std::move(where)) {}
    // The exception's type ("ValueError") and the place that raised it ("model.py:12 in forward"), where the
    // adapter says them (the protocol's "type" and "where"; empty otherwise).
    std::string type, where;
};

// The layer under audit: named inputs in, named outputs out (every output the signature names; others are
// ignored). Throws AdapterError or any std::exception when it cannot answer.
using NamedBlackBox = std::function<Tensors(const Tensors& inputs)>;

// One output of a counterexample: both sides, their largest difference and where it is (one index per dim).
struct OutputComparison {
    std::string name;
    Tensor layer_of_permuted;  // L(P x), this output
    Tensor permuted_layer;     // P L(x) along the output's axes (L(x) itself for an output with none)
    double max_abs_diff = 0.0;
    double tolerance = 0.0;
    std::vector<int> where;    // empty when the two shapes differ
    bool holds = true;
    bool shape_mismatch = false;
    // How a reproduction without permcheck compares it (repro.py): the flat index, in the transformed side's
    // answer, of each entry of layer_of_permuted; in L(x)'s answer, of each entry of permuted_layer; the flat indices
    // of layer_of_permuted left out; the two sides' names ("L(P x)", "P L(x)"). Recorded for a finding's compared
    // outputs only (`sides` empty otherwise).
    std::vector<int> compared_from{}, expected_from{}, ignored_at{};
    std::vector<std::string> sides{};
};

// A property's own part of a case (the shift, the pads, the cuts, the window), as plain data by the names the
// property gives them: numbers, axis names, lists of positions and sets of tensors (each named by the input it
// stands for, as the padding property's filler). Only the property draws, shrinks, reads and describes it
// (properties/); the engine carries it, same_case compares it, and report.json writes and reads it entry by entry
// (counterexample.part) without knowing what it means. A name is used in one of the four maps only.
struct CasePart {
    std::map<std::string, long> numbers = {};
    std::map<std::string, std::string> names = {};
    std::map<std::string, std::vector<int>> lists = {};
    std::map<std::string, Tensors> tensors = {};
    bool empty() const { return numbers.empty() && names.empty() && lists.empty() && tensors.empty(); }
    // numbers[key], or `fallback` when it has none.
    long number(const std::string& key, long fallback = 0) const {
        const auto it = numbers.find(key);
        return it == numbers.end() ? fallback : it->second;
    }
};

// A chunked request (the incremental property) carries kChunksInput + AXIS, and a layer that decoded it in chunks
// answers kChunkedAnswer besides its outputs (layers/expectation.h, where the reference layers read them).

// A free axis is one that no input has as a dim, named only by the values of index inputs (PyG's `batch` vector,
// batch:nodes:index=graphs, over the graphs of a batch). Nothing in the inputs' shapes says its length, so the
// inputs a layer is asked carry it as an entry kLengthInput + AXIS, a tensor of one value (an adapter's request:
// "lengths", docs/protocol.md). An index input over a free axis names every one of its positions (each graph has a
// node): its draw and its shrinks keep it so, as a batch of graphs is.
inline const std::string kLengthInput = "#length:";
std::vector<std::string> free_axes(const Signature& s);
// inputs with the entry kLengthInput + AXIS of each free axis of s, at its length in `lengths`.
Tensors with_free_lengths(const Signature& s, Tensors inputs, const Lengths& lengths);
// Whether every index input over a free axis names each of its positions.
bool covers_free_axes(const Signature& s, const Tensors& inputs, const Lengths& lengths);

// The sorted index inputs (TensorSpec::sorted_row) in the order they are put in order: one whose values name the
// axis another runs along after that other (edge_index, whose values name nodes, after a batch vector along nodes).
std::vector<const TensorSpec*> sorted_inputs(const Signature& s);
// The one axis a sorted input runs along.
const std::string& sorted_axis(const TensorSpec& t);
// The stable order of t's positions along its axis by row t.sorted_row: position i of the sorted input is position
// order[i] of t (ties in t's order), a permutation in the convention of cases/permutation.h.
Permutation sorting_permutation(const TensorSpec& spec, const Tensor& t);

// One case of a check or an audit: a length and a permutation per axis, the inputs x, the property's part (the
// shift property's c, the padding property's pads, the causal property's cut: their permutations are identities),
// and a reference layer's weight seed and the version of its weight draw (a black box has neither: 0 and the
// current version).
struct Case {
    Lengths lengths;
    Permutations perms;          // every axis, of its length; the identity for an axis left alone
    Tensors inputs;              // x, before the permutation
    std::uint64_t weight_seed = 0;
    int weights = kWeightsVersion;  // how weight_seed draws the weights (scalars/weights_version.h); a report's own
    CasePart part = {};          // the property's own part (the shift, the pads, the cuts, the window)
};

namespace test_only {  // not "testing": users write using namespace permcheck beside GoogleTest's ::testing
// Test-only switch: plants a known bug in permute_inputs so that the harness self-test can show the reference
// layers that hold failing (proofs-notes: the harness checks itself). Never set outside tests.
enum class HarnessBug {
    none,
    index_with_p,               // renumber index values with p instead of p^-1 (invisible for involutions)
    pairwise_without_transpose, // move a pairwise input's rows only (P B instead of P B P^T)
    mask_wrong_axis,            // leave a mask where it was: moved with no axis instead of its own
    positions_kept,             // leave position ids where they were (renumbered to 0..n-1 again) instead of moving them
    shift_tokens,               // the shift property adds c to the token ids too
    pads_unmasked,              // padding inserts pads without padding their masks
    pads_move_positions,        // padding gives the real tokens new position ids (their slots) instead of their own
    cut_keeps_later,            // causal's prefix [0, k) holds position k, a later token, in place of k - 1
    packing_without_restart,    // packing numbers the packed row's positions 0 .. n-1 instead of from 0 in each sequence
    chunks_repeat_a_position,   // a ChunkStep's chunks after the first start one position early (its first output dropped)
};
HarnessBug planted_harness_bug();
void plant_harness_bug(HarnessBug bug);
}  // namespace test_only

}  // namespace permcheck
