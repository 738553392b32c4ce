// The evaluator judges (audit/evaluator.h): a case's answers compared with the property's tolerance, two answers
// that should be alike compared, non-finite entries found, undecidable comparisons noted.
#include "audit/evaluator.h"

#include "cases/signature_case.h"


#include <algorithm>
#include <cmath>
#include <limits>

namespace permcheck::engine {

Observation Evaluator::judge(const Case& c, const Answers& a, const ToleranceModel& t, bool keep) const {
    if (!a.again.empty())
        if (auto nd = differ(c.lengths, c.inputs, a.y, a.again, x_side(), t, a.positions)) return *nd;
    // P x == x (ties): L(P x) answers the very request L(x) answered, so any difference is nondeterminism (of one
    // black box: against a reference it is what is judged). The layer's answer as the property compares it (a
    // window's output at i alone), as L(P x)'s is.
    if (!reference_ && same_values(a.px, c.inputs))
        if (auto nd = differ(c.lengths, c.inputs, a.reshaped.empty() ? compared_answer(c, a.y) : a.y, a.lhs,
                             "x and as P x", t, a.positions))
            return *nd;
    if (!a.reshaped.empty()) return reshaped_observation(c, a, t);
    Observation ob;
    if (!a.raised.empty() || !a.reference_raised.empty()) {  // one side raised, the other answered: what it raised
        static_cast<Case&>(ob) = c;
        const bool theirs = !a.reference_raised.empty();
        ob.fail(found::Raised{theirs ? a.reference_raised : a.raised, theirs});
        ob.y = theirs ? a.lhs : a.y;
        return ob;
    }
    std::vector<Tensor> rhs;
    const Lengths lengths = rules_.transformed_lengths(c);  // the tolerance is the padded case's
    for (const TensorSpec& spec : s_->outputs) {
        const Tensor& lhs = a.lhs.at(spec.name);
        rhs.push_back(rules_.expected(spec, c, a.y.at(spec.name)));
        ob.outputs.push_back(compare_sides(spec.name, lhs, rhs.back(), t, lengths, widest_, a.inputs_magnitude,
                                           a.positions, ignored(c, a.px, spec, lhs.shape)));
        if (has_positions_) note_undecided(ob.outputs.back(), lhs, rhs.back(), t);
    }
    std::optional<found::NonFinite> where;  // a non-finite entry, when that is a finding of its own
    if (rules_.plan().non_finite_is_finding) where = non_finite(a.y, x_side(), c.inputs);
    if (!where && rules_.plan().non_finite_is_finding) where = non_finite(a.lhs, side_name(), rules_.compared_layout(c, a.px));
    const bool holds = std::all_of(ob.outputs.begin(), ob.outputs.end(), [](const OutputComparison& o) { return o.holds; });
    if (holds && !where && !keep) return ob;  // pass: nothing kept
    if (where) ob.fail(*where);
    else if (!holds) ob.fail(found::Violated{});
    static_cast<Case&>(ob) = c;
    ob.y = a.y;
    for (std::size_t k = 0; k < ob.outputs.size(); ++k) {
        ob.outputs[k].layer_of_permuted = a.lhs.at(ob.outputs[k].name);
        ob.outputs[k].permuted_layer = std::move(rhs[k]);
    }
    return ob;
}

// A case whose transformed side answered an output of another shape than the signature says (x's had it): violated,
// that output's two sides of different shapes, the others compared as ever.
Observation Evaluator::reshaped_observation(const Case& c, const Answers& a, const ToleranceModel& t) const {
    Observation ob;
    static_cast<Case&>(ob) = c;
    ob.fail(found::Violated{});
    ob.y = a.y;
    const Lengths lengths = rules_.transformed_lengths(c);
    for (const TensorSpec& spec : s_->outputs) {
        Tensor rhs = rules_.expected(spec, c, a.y.at(spec.name));
        const Tensor& got = a.lhs.at(spec.name);
        if (!a.reshaped_outputs.count(spec.name)) {
            const Tensor lhs = rules_.compared(spec, c, got);
            ob.outputs.push_back(compare_sides(spec.name, lhs, rhs, t, lengths, widest_, a.inputs_magnitude, a.positions,
                                               ignored(c, a.px, spec, lhs.shape)));
            ob.outputs.back().layer_of_permuted = lhs;
        } else {
            OutputComparison o;
            o.name = spec.name;
            o.layer_of_permuted = got;
            o.max_abs_diff = std::numeric_limits<double>::infinity();
            o.holds = false;
            o.shape_mismatch = true;
            ob.outputs.push_back(std::move(o));
        }
        ob.outputs.back().permuted_layer = std::move(rhs);
    }
    return ob;
}

// The entries of a compared output left out: the property's, and with skip_padded the slots the masks pad.
std::vector<bool> Evaluator::ignored(const Case& c, const Tensors& px, const TensorSpec& spec,
                                     const std::vector<int>& shape) const {
    std::vector<bool> out = rules_.ignored(*s_, c, spec, shape);
    if (!o_.skip_padded) return out;
    const std::vector<bool> padded = entries_at_padded_slots(*s_, rules_.compared_layout(c, px), spec, shape);
    if (out.empty()) return padded;
    for (std::size_t e = 0; e < out.size() && e < padded.size(); ++e) out[e] = out[e] || padded[e];
    return out;
}

// A comparison whose tolerance is as large as the outputs it compares decides nothing (rotary angles at large
// position ids in a low precision): remembered per precision, so that such an audit is undecided, never holds.
void Evaluator::note_undecided(const OutputComparison& o, const Tensor& a, const Tensor& b, const ToleranceModel& t) const {
    const double outputs = finite_max_abs(b.values, finite_max_abs(a.values));
    if (o.holds && outputs > 0.0 && o.tolerance >= outputs) undecided_.insert(t.unit_roundoff);
}

std::optional<Observation> Evaluator::differ(const Lengths& lengths, const Tensors& inputs, const Tensors& a,
                                             const Tensors& b, const char* what, const ToleranceModel& t,
                                             double positions) const {
    Observation ob;
    const double magnitude = real_inputs_magnitude(*s_, inputs);
    for (const TensorSpec& spec : s_->outputs)
        ob.outputs.push_back(
            compare_sides(spec.name, a.at(spec.name), b.at(spec.name), t, lengths, widest_, magnitude, positions));
    if (std::all_of(ob.outputs.begin(), ob.outputs.end(), [](const OutputComparison& c) { return c.holds; }))
        return std::nullopt;
    ob.fail(found::Nondeterministic{what, "", false, false, ""});
    for (OutputComparison& c : ob.outputs) {
        c.layer_of_permuted = a.at(c.name);
        c.permuted_layer = b.at(c.name);
    }
    ob.lengths = lengths;
    ob.perms = identities(lengths);
    ob.inputs = inputs;
    ob.y = a;
    return ob;
}

// Where the first non-finite entry of an answer to `inputs` is, or empty. An entry at a slot the inputs' masks pad
// is not counted (a padded query that sees no key is NaN in common model code; it is still compared).
std::optional<found::NonFinite> Evaluator::non_finite(const Tensors& answer, const char* side, const Tensors& inputs) const {
    std::optional<std::map<std::string, std::vector<bool>>> padded;  // found at the first non-finite entry
    for (const TensorSpec& spec : s_->outputs) {
        const Tensor& t = answer.at(spec.name);
        for (std::size_t e = 0; e < t.values.size(); ++e) {
            if (std::isfinite(t.values[e])) continue;
            if (!padded) padded = padded_slots(*s_, inputs);
            if (at_padded_slot(spec, position_of(e, t.shape), *padded)) continue;
            return found::NonFinite{side, spec.name, position_of(e, t.shape), t.values[e]};
        }
    }
    return std::nullopt;
}

}  // namespace permcheck::engine
