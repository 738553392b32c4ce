// A property as an object: what it does to a case (the inputs the layer is asked besides x), which part of each
// answer it compares with what, the names of the two sides, what a signature must have for it (and the sentence a
// user reads otherwise), how the property's part of a case is drawn and how a failing case shrinks. One file per
// property in this folder; the audit engine, the white-box check, the taps, replay and the reports ask the object
// (rules_of) and never switch on a property's name. Adding a property: docs/ARCHITECTURE.md ("A new property").
#pragma once

#include "cases/signature.h"
#include "cases/search.h"
#include "cases/signature_case.h"

#include <rapidcheck.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace permcheck {

// What a run asks of a property besides the case: `settings`, the values of the options the property declares
// (options(), below), by keyword, as given; and what the property's completed_args() makes of them and of the
// signature: the axis it acts along (padding: the padded axis; causal, packing, incremental, window: the sequence
// axis; equivariance: the one axis it permutes, or empty for all; a reference layer's row: its axis), where pads
// go, whether the position inputs stay where they are while the rest moves (equivariance), and whether the layer is
// a reference family (white box), which takes a position offset and may be asked what no black box can be.
struct PropertyArgs {
    std::string axis;
    PadPlacement pads = PadPlacement::any;
    bool positions_stay = false;
    bool white_box = false;
    std::map<std::string, std::string> settings = {};
    // The value of the option `keyword` as given, else `fallback`.
    std::string setting(const std::string& keyword, const std::string& fallback = "") const {
        const auto it = settings.find(keyword);
        return it == settings.end() ? fallback : it->second;
    }
};

// An option a property declares: its flag on the command line ("--window"), its keyword in the Python package, in
// AuditOptions::settings and in report.json ("window"), the name of its value in help ("W"; empty: a flag without
// a value, set to "true"), its help line, and the words its value may be (none: any). The command line, `permcheck
// describe`, the Python package, the replay line and the C++ hint read these; only the property interprets the value
// (completed_args()). Several properties may declare the same option (the sequence axis). `every_row`: the audit
// profile takes it and passes it to every row of a property that declares it (the sequence axis, the pads' id),
// where the other options choose a row's variant and are the row's own.
struct PropertyOption {
    const char* flag;
    const char* keyword;
    const char* value;
    const char* help;
    std::vector<std::string> choices = {};
    bool every_row = false;
};

// A row of the audit profile (`--profile`) that a property adds: its id (its report directory), what it checks in
// words (the transformation, so that a reader knows what its verdict stands on), the options it runs with, its
// rank (the rows of rank 0 run first, then 1, then the rest: a row's words may read the verdicts of rows that ran
// before it), and its words: what its verdict says given the decided verdicts of the rows before it (row id ->
// holds), or empty for the property's own (verdict_meaning). A row says what the rows behind it checked, never
// more: "order by row index, through the causal mask alone" only where the causal and the prefix rows held.
using RowVerdicts = std::map<std::string, bool>;
struct ProfileRowSpec {
    std::string id, title;
    std::map<std::string, std::string> settings = {};
    int rank = 2;
    std::function<std::string(bool holds, const RowVerdicts& before)> words = {};
};

// How the audit asks a case of the property and what it makes of the answers: the plan the engine carries out
// (audit/evaluator.h), declared by the property (plan()). What the layer is asked is the property's transformed();
// the plan says how that request goes and who answers each side.
struct CallPlan {
    // The transformed side is one chunked request (kChunksInput, cases/signature.h), asked alone, never in a batch,
    // and answered only by a layer that decodes in chunks (kChunkedAnswer); otherwise one request as x's is.
    bool chunked = false;
    // x is answered by a second black box, a reference implementation, and the transformed side (x again) by the
    // layer: an audit needs a reference (audit_against, audit/signature_audit.h), and its taps compare nothing.
    bool against_reference = false;
    // One side raising where the other answered is the finding (LayerRaised: a chunked request's, either side's
    // against a reference), not an error of the layer.
    bool raising_is_finding = false;
    // A non-finite entry of an answer is a finding of its own (non-finite); against a reference it is compared
    // instead, NaN equal only to NaN.
    bool non_finite_is_finding = true;
    // Outputs without an axis are judged (those of a property along a sequence are not: they have no position to be
    // causal or windowed at, no sequence of their own).
    bool judges_outputs_without_axes = true;
};

class PropertyRules {
public:
    virtual ~PropertyRules() = default;
    // Its name ("causal-prefix"), which --property, records and reports write, and what a layer is when it holds
    // ("blind to the order of its prefix").
    virtual const char* name() const = 0;
    virtual const char* adjective() const = 0;
    Property id() const { return Property{name()}; }
    // The options it takes (none by default), each with the flag that sets it.
    virtual std::vector<PropertyOption> options() const { return {}; }
    // The rows it adds to the audit profile of signature s (`a`: the profile's own options, its sequence axis),
    // none where it does not apply (the default).
    virtual std::vector<ProfileRowSpec> profile_rows(const Signature&, const PropertyArgs&) const { return {}; }

    // The two sides and their difference as a reader sees them, for an output that has (`moves`) or lacks the axes
    // the property moves: "L(P x)", "P L(x)" (an output without the axis: "L(x)").
    virtual SideNames sides(bool moves) const = 0;
    // The claim in one line: "L(P x) = P L(x): reordering the input reorders the output".
    virtual const char* meaning() const = 0;
    // What the property did to a case, in words: "permutations n (0 1)", "every position id + 3", "2 pads into n at
    // slots 0, 3".
    virtual std::string case_text(const Case& c) const = 0;

    // The property a record names: the property itself, or for equivariance, invariance when no output it compares
    // has an axis it moves.
    virtual Property recorded_as(const Signature&, const PropertyArgs&) const { return id(); }
    // The arguments completed for this signature (the axis found), or std::invalid_argument naming the flag and what
    // the signature lacks.
    virtual PropertyArgs completed_args(const Signature& s, PropertyArgs given) const = 0;

    // Each case's lengths over a whole run (before sharding), and the property's part of case `index`, drawn after
    // its inputs and permutations (cases/signature_case.h).
    virtual LengthSchedule lengths(const Signature& s, const PropertyArgs& a, int cases, std::uint64_t seed) const;
    virtual void draw(const Signature& s, const PropertyArgs& a, Case& c, const rc::Random& random, int index,
                      int cases) const;

    // Whether the property permutes axes (a case whose permutations are all the identity then tests nothing), or
    // leaves every permutation the identity (shift, padding).
    virtual bool permutes() const { return true; }
    // Whether the permutations a case of it takes form a group, so that the generators of every axis's symmetric
    // group decide it for every permutation (proofs-notes/generators.md): what certificates and Z3 proofs decide.
    virtual bool decided_by_generators() const { return false; }
    // The inputs the layer is asked besides x, their lengths, and the position offset a reference family is built
    // with for them (the shift property's c; 0 for a black box, which has none).
    virtual Tensors transformed(const Signature& s, const PropertyArgs& a, const Case& c) const = 0;
    virtual Lengths transformed_lengths(const Case& c) const { return c.lengths; }
    virtual long offset(const Case&) const { return 0; }
    // The lengths of the answer as it is compared (compared(), below): the transformed lengths, or x's where the
    // property compares the transformed answer at x's positions (padding).
    virtual Lengths compared_lengths(const Case& c) const { return transformed_lengths(c); }
    // The answer to the transformed inputs as it is compared, and what it must equal, made of L(x)'s answer y.
    virtual Tensor compared(const TensorSpec&, const Case&, const Tensor& answer) const { return answer; }
    virtual Tensor expected(const TensorSpec& t, const Case& c, const Tensor& y) const = 0;
    // The entries of a compared output (of this shape) left out of the comparison; none when empty.
    virtual std::vector<bool> ignored(const Signature&, const Case&, const TensorSpec&, const std::vector<int>&) const {
        return {};
    }
    // Whose masks say which slots of the compared answer are padding: the transformed inputs', unless the compared
    // answer is laid out as x is (padding's, at the real positions).
    virtual const Tensors& compared_layout(const Case&, const Tensors& transformed) const { return transformed; }

    // A failing case with its shrinks, most radical first.
    virtual rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs& a,
                                            Case c) const;
    // What a property that moves no axis (shift, padding) claims of every output, in a line: "unchanged when every
    // position id moves by the same c"; empty for a permuting property, whose claim is per axis (equivariant along,
    // invariant to).
    virtual const char* output_claim() const { return ""; }
    // What a replay of a saved case compares, in a line: "L(x_c) against L(x)".
    virtual std::string compared_text() const;
    // What a verdict says of a layer that takes position inputs (the audit profile's rows): "relative", "padding
    // leaks".
    virtual const char* verdict_meaning(bool holds) const { return holds ? "holds" : "fails"; }
    // Whether an audit of a black box may ask for it (reversal and causal-prefix are the reference layers').
    virtual bool audits_black_boxes() const { return true; }
    // How a case is asked and judged (CallPlan, above); the default: both sides of the audited layer, in batches.
    virtual CallPlan plan() const { return {}; }
    bool chunks_calls() const { return plan().chunked; }
    bool needs_reference() const { return plan().against_reference; }

    // Throws std::invalid_argument unless a saved case (a report's) carries what the property needs.
    virtual void validate_saved(const Signature&, const Case&) const {}
};

// The object of each property (a static of its own file), registered in properties/registry.cpp; rules_of throws
// std::invalid_argument for a name no property has.
const PropertyRules& rules_of(const Property& p);
// Every property, in the order `permcheck list` and the --property choices show.
const std::vector<const PropertyRules*>& registered_properties();
// The value of declared option `keyword` in `a` as an integer in [low, high], or `fallback` when not given;
// std::invalid_argument naming the option's flag otherwise.
long setting_in(const PropertyArgs& a, const PropertyOption& option, long low, long high, long fallback);

// Case `index` of a run of `cases` at its lengths: its inputs and permutations (draw_signature_case), the property's
// part, and its sorted index inputs put in order (settle_case), the one draw of every run. `generic`: a case the
// schedule takes at its longest (LengthSchedule::at_longest), drawn generic.
Case draw_case(const PropertyRules& rules, const Signature& s, const PropertyArgs& a, const Lengths& lengths,
               const rc::Random& random, int index, int cases, bool generic = false);
// The property's shrinks of a failing case, each with its sorted index inputs in order (settled_shrinkable).
rc::Shrinkable<Case> shrinkable_case(const PropertyRules& rules, const std::shared_ptr<const Signature>& s,
                                     const PropertyArgs& a, Case c);


// What every property shares.
namespace properties {
// The option of the properties that act along a sequence axis (causal, packing, incremental, window): which axis,
// when the signature has several.
const PropertyOption& sequence_axis_option();
// Whether the property takes signature s with arguments a (its completed_args() throws nothing).
bool applies(const PropertyRules& rules, const Signature& s, const PropertyArgs& a);
// a.axis from the sequence axis option, when given, then as one_axis() settles it.
std::string sequence_axis(const Signature& s, const PropertyArgs& a, const std::string& property);
// Whether some dim of t is `axis`.
bool along(const TensorSpec& t, const std::string& axis);
// t without the positions `gone` along every dim of `axis`.
Tensor without_along(const TensorSpec& spec, Tensor t, const std::string& axis, const std::set<int>& gone);
// t at the positions [first, end) along every dim of `axis`.
Tensor span_along(const TensorSpec& spec, const Tensor& t, const std::string& axis, int first, int end);
// Every input at the positions [first, end) of `axis`.
Tensors span_of(const Signature& s, const Tensors& inputs, const std::string& axis, int first, int end);
// What causal and packing refuse: no output along the axis, an index input naming its positions.
void require_sequence_axis(const Signature& s, const std::string& axis, const std::string& property);
// What a property that reorders or inserts along `axis` refuses: a sorted index input along it (its order would not
// survive), named with `property` and why.
void refuse_sorted_along(const Signature& s, const std::string& axis, const std::string& property, const char* why);
// Outputs without `axis` left out whole; along it, the slots the masks of `layout` pad.
std::vector<bool> ignored_off_axis(const Signature& s, const Tensors& layout, const std::string& axis,
                                   const TensorSpec& output, const std::vector<int>& shape);
// The lengths of a property that cuts the sequence `axis` (causal, packing, incremental): every length of each
// axis, 0 and 1 included, but `axis` at 2 or more.
LengthSchedule lengths_with_room_to_cut(const Signature& s, const std::string& axis, int cases, std::uint64_t seed);
// Copies of c with its part's number `key` (v) made smaller: 1, v / 2 and v - 1, each once and below v (a shift, a
// gap), appended to `out`, most radical first.
void smaller_numbers(const Case& c, const std::string& key, std::vector<Case>& out);
// m - 1 distinct ends in (0, n), ascending (a partial Fisher-Yates over 1 .. n-1): where m pieces of a sequence of n
// positions end, the last at n.
std::vector<int> distinct_ends(gen::Sampler& draw, int n, int m);
// The one axis of s that `given` names or, when it is empty, the signature's only axis; `property` is named in
// the message when neither settles it.
std::string one_axis(const Signature& s, const std::string& given, const std::string& property);
}  // namespace properties

}  // namespace permcheck
