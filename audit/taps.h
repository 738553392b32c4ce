// Where symmetry first breaks: the outputs of a layer's submodules ("taps", e.g. a torch module's forward hooks,
// in the order the submodules finished) at a counterexample's x and P x (x_c for shift, pad x for padding), each
// judged as an output is. A tap is expected equivariant along every axis its dims follow and invariant to every
// axis it lacks; a dim that follows an axis is found from the tap's own declaration ("dims") or from probes: the
// same case with one axis one element longer, where a dim follows axis a when its size is a's length at x and
// changes exactly when a's length does (proofs-notes/taps.md). The first tap that breaks the property names the
// most specific submodule at fault, since a child finishes before its parent.
//
// Part of the public API's result (AuditResult::taps), so RapidCheck-free (tests/public_headers.sh).
#pragma once

#include "cases/finding.h"
#include "cases/signature.h"

#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

// One tap as an adapter answers it: a name (a submodule's, "blocks.1", or "name[k]" for the k-th tensor of a
// tuple), its value, and optionally which axis each dim follows ("" for none), when the adapter declares it.
// `unusable`: why the adapter could not send this tap's values (a nested tensor, a value it cannot convert);
// such a tap is listed as not comparable with that reason, and its value is empty.
struct Tap {
    std::string name;
    Tensor value;
    std::optional<std::vector<std::string>> dims;
    std::string unusable = "";
};

// The taps of one evaluation, in the order the submodules finished. A TapSource answers them for a set of inputs
// (throws AdapterError or any std::exception when it cannot).
using TapSource = std::function<std::vector<Tap>(const Tensors& inputs)>;

enum class TapVerdict { holds, violated, not_comparable, non_finite };
const char* tap_verdict_name(TapVerdict v);  // holds | violated | not comparable | non-finite

// One tap judged: T(P x) against P T(x) along the tap's axes (T(x) itself for a tap with none).
struct TapComparison {
    std::string name;
    std::vector<int> shape;          // at x
    std::vector<std::string> axes;   // per dim: the axis it follows, "" for none
    TapVerdict verdict = TapVerdict::holds;
    double max_abs_diff = 0.0;       // infinite when the shapes differ or a non-finite entry differs
    double tolerance = 0.0;
    std::string note;                // why a tap is not comparable or non-finite; empty otherwise
};

// The taps of one counterexample. first_breaking: the index of the first tap that is violated or non-finite (-1
// when none is; a tap that is not comparable is no break, only said); note: why there is no table (its tap request
// failed), or a remark on it (a probe failed).
struct TapTrace {
    std::vector<TapComparison> taps;
    int first_breaking = -1;
    std::string note;
    bool offered = true;  // false: the layer offers no taps (the source threw NoTapsOffered)
};

// What a TapSource throws when the layer offers no taps (an adapter that never said "taps_offered").
struct NoTapsOffered : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// What a TapSource throws when the layer answered no taps and said why ("the module has no submodules"): the note.
struct NoTapsAnswered : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The trace as text for the terminal and the C++ API: one line per tap (its number, name, shape, the axis of each
// dim, verdict, largest difference and tolerance), the first breaking tap marked with '>', then
// first_break_sentence and the note. Past `most_rows` taps (at least 8) the table is cut to the first five, a
// window around the first breaking tap and the last five, each cut said with the verdicts of the rows it hides
// (what the terminal shows: kTerminalTapRows; the reports keep every row).
inline constexpr std::size_t kTerminalTapRows = 40;
std::string describe(const TapTrace& t, std::size_t most_rows = std::numeric_limits<std::size_t>::max());

// A tap's name with its control characters written as escapes (\n, \t, \xNN): what the terminal and the reports'
// text show, since an adapter chooses its tap names.
std::string printable_tap_name(const std::string& name);

// "symmetry first breaks at blocks.1 (tap 2 of 4); every tap before it holds" (with " but 1 that could not be
// compared" when some could not), or "no tap breaks (4 taps, every one holds): the symmetry breaks in the layer's
// own code, outside its submodules", or, when some tap could not be compared, that the break is in the layer's
// own code or in one of those; "no tap could be compared (4 taps): where the symmetry breaks could not be
// located" when none could; or "no taps: NOTE".
std::string first_break_sentence(const TapTrace& t);

// The axis each dim of a tap follows, from its shape at x and its shapes at the probes (axis -> the tap's shape
// when that axis alone is one element longer; an axis without a probe is absent). Returns the axes, or throws
// std::invalid_argument saying why they cannot be told (a dim that follows two axes, or whose size is not the
// axis's length, or an axis that could not be probed while a dim has its length).
std::vector<std::string> tap_axes(const std::vector<int>& shape, const Lengths& lengths,
                                  const std::map<std::string, std::optional<std::vector<int>>>& probe_shapes);

// Judges one tap: T(P x) (`at_px`) against T(x) moved along `axes` by `perms`, with the tolerance an output of the
// signature would get (cases/compare.h's float_tolerance over every axis's length plus the widest fixed size,
// the tap's included; the magnitude of both sides and `inputs_magnitude`), its model tolerance_model(dtype,
// amplification): the audit's dtype, half precisions included (exact: zero tolerance). `positions`: the largest
// |position id| of the case, whose rounding in rotary angles the tolerance allows for (as an output's); `ignored`:
// entries left out (a padding case's entries at slots x's own masks pad, as for an output).
TapComparison judge_tap(const std::string& name, const Tensor& at_x, const Tensor& at_px,
                        const std::vector<std::string>& axes, const Permutations& perms, const Lengths& lengths,
                        int widest_fixed, double inputs_magnitude, Arithmetic dtype, double amplification,
                        double positions = 0.0, const std::vector<bool>& ignored = {});

// The whole trace of a counterexample (lengths, perms, inputs x of signature s): the taps at x and at P x, then
// one probe per axis that some tap's undeclared dims need, every tap judged in the order of x's answer. Failures
// of the source become the trace's note (no table), never an exception; a source that throws NoTapsOffered makes a
// trace with `offered` false. A probe makes an axis one element longer by repeating its last element along every
// dim that axis names (a zero element for an empty axis); it may pass the axis's max_len (with n=4..4 it asks for
// n = 5), since only the taps' shapes are read from it. A failed probe is said in the note, and a dim with that
// axis's length then cannot be told (the tap is not comparable) unless the tap declares its dims.
TapTrace trace_taps(const TapSource& source, const Signature& s, const Lengths& lengths, const Permutations& perms,
                    const Tensors& inputs, Arithmetic dtype, double amplification);
// The trace of a counterexample of property p (properties/): for shift, the taps at x against those at x_c,
// elementwise; for padding, against those at pad x taken at the real positions along every dim that follows the
// padded axis (a tap without that axis whole); for equivariance, as above. `settings`: the property's options, as
// the audit had them (AuditOptions::settings: with keep_positions, the position inputs left in place).
TapTrace trace_taps(const TapSource& source, const Signature& s, const Counterexample& c, Property p,
                    Arithmetic dtype, double amplification, const std::map<std::string, std::string>& settings = {});

}  // namespace permcheck
