// The white-box check of a signature family along one axis (check/signature_check.h).
#include "check/signature_check.h"

#include "check/compare.h"
#include "check/search.h"
#include "check/signature_case.h"
#include "properties/property.h"

#include <cmath>
#include <memory>
#include <stdexcept>

namespace permcheck {

namespace {

template <class S> NamedTensors<S> in_scalar(const Tensors& tensors) {
    NamedTensors<S> out;
    for (const auto& [name, t] : tensors) {
        NamedTensor<S>& u = out[name];
        u.shape = t.shape;
        u.values.reserve(t.values.size());
        for (double v : t.values) u.values.push_back(sc::from_double<S>(v));
    }
    return out;
}

template <class S> Tensor as_doubles(const NamedTensor<S>& t) {
    Tensor out{t.shape, {}};
    for (const S& v : t.values) out.values.push_back(sc::to_double(v));
    return out;
}

template <class S>
OutputComparison compare_output(const TensorSpec& spec, const NamedTensor<S>& lhs, const NamedTensor<S>& rhs,
                                double tolerance, const std::vector<bool>& ignored = {}) {
    OutputComparison c{spec.name, as_doubles(lhs), as_doubles(rhs), 0.0, tolerance, {}, true, false};
    if (lhs.shape != rhs.shape || lhs.values.size() != rhs.values.size())
        throw std::logic_error("reference layer: output '" + spec.name + "' changed its shape under a permutation");
    std::size_t worst = 0;
    for (std::size_t e = 0; e < lhs.values.size(); ++e) {
        if (e < ignored.size() && ignored[e]) continue;
        const double diff = sc::to_double(S(lhs.values[e] - rhs.values[e]));
        const bool differs = tolerance == 0.0 ? !(lhs.values[e] == rhs.values[e]) : !(std::abs(diff) <= tolerance);
        if (differs) c.holds = false;
        if (std::abs(diff) > c.max_abs_diff || (differs && c.max_abs_diff == 0.0)) {
            c.max_abs_diff = std::abs(diff);
            worst = e;
        }
    }
    c.where = lhs.values.empty() ? std::vector<int>(lhs.shape.size(), 0) : position_of(worst, lhs.shape);
    return c;
}

// The entries of t that `pick` selects from an index tensor of t's shape, in the order it gives them: the selections
// and moves of properties/ (P y, the real positions of a padded answer), in any scalar.
template <class S, class Pick> NamedTensor<S> selected(const NamedTensor<S>& t, const Pick& pick) {
    Tensor where{t.shape, {}};
    for (std::size_t k = 0; k < t.values.size(); ++k) where.values.push_back(static_cast<double>(k));
    const Tensor chosen = pick(where);
    NamedTensor<S> out{chosen.shape, {}};
    for (double k : chosen.values) out.values.push_back(t.values[static_cast<std::size_t>(k)]);
    return out;
}

template <class S>
void expect_shape(const SignatureFamily& f, const TensorSpec& spec, const NamedTensor<S>& y, const Lengths& lengths) {
    if (y.shape != shape_of(spec, lengths))
        throw std::logic_error("reference layer " + f.name + ": output '" + spec.name + "' has shape " +
                               index_text(y.shape));
}

// Case c of property p in scalar S: L of the transformed inputs (P x, x_c or pad x), as compared, against what it
// must equal (P L(x), L(x)), every output, both sides as doubles. Exact for Rational.
template <class S>
std::vector<OutputComparison> compare_case(const SignatureFamily& family, const Signature& s, const PropertyRules& p,
                                           const PropertyArgs& args, const Case& c, std::uint64_t weight_seed) {
    Draw<S> draw = dyadic_draw<S>(weight_seed);
    const SignatureLayerFn<S> layer = family.factory<S>()(draw);
    const Tensors px = p.transformed(s, args, c);
    const Lengths lengths = p.transformed_lengths(c);  // the tolerance is the padded case's
    const NamedTensors<S> y = layer(in_scalar<S>(c.inputs));
    const NamedTensors<S> answer = layer(in_scalar<S>(px));
    const double magnitude = real_inputs_magnitude(s, c.inputs);
    const double positions = std::max(largest_position(s, c.inputs), largest_position(s, px));
    const ToleranceModel model = tolerance_model_of<S>(family.amplification);
    std::vector<OutputComparison> out;
    for (const TensorSpec& spec : s.outputs) {
        expect_shape(family, spec, y.at(spec.name), c.lengths);
        expect_shape(family, spec, answer.at(spec.name), lengths);
        const NamedTensor<S> lhs =
            selected(answer.at(spec.name), [&](const Tensor& w) { return p.compared(spec, c, w); });
        const NamedTensor<S> rhs = selected(y.at(spec.name), [&](const Tensor& w) { return p.expected(spec, c, w); });
        const Tensor l = as_doubles(lhs), r = as_doubles(rhs);
        const double m = finite_max_abs(l.values, finite_max_abs(r.values, magnitude));
        // The signature audit's tolerance: 0 in exact arithmetic (the model's, check/compare.h).
        out.push_back(compare_output(spec, lhs, rhs, signature_tolerance(model, lengths, widest_fixed_size(s), m, positions),
                                     p.ignored(s, c, spec, lhs.shape)));
    }
    return out;
}

}  // namespace

template <class S>
std::vector<OutputComparison> compare_signature_case(const SignatureFamily& family, const Signature& s,
                                                     const Lengths& lengths, const Permutations& perms,
                                                     const Tensors& inputs, std::uint64_t weight_seed) {
    return compare_case<S>(family, s, equivariance_rules(), {}, Case{lengths, perms, inputs, 0, std::nullopt},
                           weight_seed);
}

template std::vector<OutputComparison> compare_signature_case<double>(const SignatureFamily&, const Signature&,
                                                                      const Lengths&, const Permutations&,
                                                                      const Tensors&, std::uint64_t);
template std::vector<OutputComparison> compare_signature_case<Rational>(const SignatureFamily&, const Signature&,
                                                                        const Lengths&, const Permutations&,
                                                                        const Tensors&, std::uint64_t);

Signature signature_of(const SignatureFamily& family) {
    Signature s;
    for (const std::string& a : family.axes) s.axes.push_back(parse_axis(a));
    for (const std::string& t : family.inputs) s.inputs.push_back(parse_input(t));
    for (const std::string& t : family.outputs) s.outputs.push_back(parse_output(t));
    validate(s);
    return s;
}

Property property_along(const Signature& s, const std::string& axis) {
    int with = 0;
    for (const TensorSpec& t : s.outputs)
        with += std::any_of(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.axis == axis; });
    if (with != 0 && with != static_cast<int>(s.outputs.size()))
        throw std::invalid_argument("some outputs have axis '" + axis + "' and some lack it: no one property");
    return with ? Property::equivariance : Property::invariance;
}

namespace {

std::vector<OutputComparison> compared(const SignatureFamily& f, const Signature& s, const PropertyRules& p,
                                       const PropertyArgs& args, const Case& c, std::uint64_t weight_seed, Arithmetic a) {
    if (a == Arithmetic::exact) return compare_case<Rational>(f, s, p, args, c, weight_seed);
    if (a != Arithmetic::float64) throw std::invalid_argument("a signature family is checked in float64 or exact");
    return compare_case<double>(f, s, p, args, c, weight_seed);
}

bool all_hold(const std::vector<OutputComparison>& outputs) {
    return std::all_of(outputs.begin(), outputs.end(), [](const OutputComparison& o) { return o.holds; });
}

// A case that permutes nothing, of a permuting property, tests nothing.
bool moves_nothing(const PropertyRules& p, const Case& c) {
    return p.permutes() && std::all_of(c.perms.begin(), c.perms.end(), [](const auto& q) { return q.second.is_identity(); });
}

}  // namespace

SignatureCheckResult check_signature(const SignatureFamily& family, const AxisExpectation& row,
                                     const SignatureCheckOptions& o) {
    const auto s = std::make_shared<const Signature>(signature_of(family));
    const PropertyRules& p = rules_of(row.property);
    const PropertyArgs args = p.checked(*s, PropertyArgs{row.axis, PadPlacement::any, false, true});
    SignatureCheckResult r;
    r.layer = family.name;
    r.axis = row.axis;
    r.property = p.recorded_as(*s, args);
    r.dtype = o.arithmetic;
    r.expected_holds = row.holds;
    const std::vector<Lengths> lengths = p.lengths(*s, args, o.cases, o.seed);
    rc::Random random(o.seed);
    for (int i = 0; i < o.cases; ++i) {
        if (o.stop_requested && o.stop_requested()) return r.interrupted = true, r;
        const rc::Random own = random.split();
        Case c = draw_signature_case(*s, lengths[static_cast<std::size_t>(i)], own, size_for_case(i, o.cases));
        p.draw(*s, args, c, own, i, o.cases);
        if (moves_nothing(p, c)) continue;
        ++r.cases_run;
        const std::uint64_t weights = o.seed + static_cast<std::uint64_t>(i);
        if (all_hold(compared(family, *s, p, args, c, weights, o.arithmetic))) continue;
        const std::function<bool(const Case&)> fails = [&](const Case& candidate) {
            return !moves_nothing(p, candidate) && !all_hold(compared(family, *s, p, args, candidate, weights, o.arithmetic));
        };
        const ShrinkResult<Case> shrunk = shrink(p.shrinkable(s, args, c), fails, o.max_shrink_evaluations, o.stop_requested);
        const Case m = shrunk.minimal.value();
        r.holds = false;
        r.interrupted = shrunk.interrupted;
        r.counterexample = SignatureCounterexample{m.lengths, m.perms, m.inputs, compared(family, *s, p, args, m, weights, o.arithmetic),
                                                   p.permutes() ? row.axis : "", i, shrunk.steps, "", m.shift, m.pads};
        return r;
    }
    return r;
}

SignatureCheckResult check_signature(const SignatureFamily& family, const std::string& axis,
                                     const SignatureCheckOptions& opts) {
    const auto s = signature_of(family);
    return check_signature(family, {axis, property_along(s, axis), family.expected_to_hold(axis)}, opts);
}

}  // namespace permcheck
