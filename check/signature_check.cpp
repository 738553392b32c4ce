// The white-box check of a signature family along one axis (check/signature_check.h).
#include "check/signature_check.h"

#include "check/compare.h"
#include "check/position_case.h"
#include "check/search.h"
#include "check/signature_case.h"

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
// and moves of check/position_case.h (P y, the real positions of a padded answer), in any scalar.
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
std::vector<OutputComparison> compare_case(const SignatureFamily& family, const Signature& s, Property p,
                                           const SignatureCase& c, std::uint64_t weight_seed) {
    Draw<S> draw = dyadic_draw<S>(weight_seed);
    const SignatureLayerFn<S> layer = family.factory<S>()(draw);
    const Tensors px = transformed_inputs(s, p, c);
    const Lengths lengths = transformed_lengths(p, c);  // the tolerance is the padded case's
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
            selected(answer.at(spec.name), [&](const Tensor& w) { return compared_output(spec, p, c, w); });
        const NamedTensor<S> rhs = selected(y.at(spec.name), [&](const Tensor& w) { return expected_output(spec, p, c, w); });
        const Tensor l = as_doubles(lhs), r = as_doubles(rhs);
        const double m = finite_max_abs(l.values, finite_max_abs(r.values, magnitude));
        // The signature audit's tolerance: 0 in exact arithmetic (the model's, check/compare.h).
        out.push_back(compare_output(spec, lhs, rhs, signature_tolerance(model, lengths, widest_fixed_size(s), m, positions),
                                     ignored_entries(s, p, c, spec, lhs.shape)));
    }
    return out;
}

}  // namespace

template <class S>
std::vector<OutputComparison> compare_signature_case(const SignatureFamily& family, const Signature& s,
                                                     const Lengths& lengths, const Permutations& perms,
                                                     const Tensors& inputs, std::uint64_t weight_seed) {
    return compare_case<S>(family, s, Property::equivariance, SignatureCase{lengths, perms, inputs, 0, std::nullopt},
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

// The case with every axis but `axis` left alone.
SignatureCase only_along(SignatureCase c, const std::string& axis) {
    for (auto& [name, p] : c.perms)
        if (name != axis) p = Permutation::identity(p.size());
    return c;
}

std::vector<OutputComparison> compared(const SignatureFamily& f, const Signature& s, Property p, const SignatureCase& c,
                                       std::uint64_t weight_seed, Arithmetic a) {
    if (a == Arithmetic::exact) return compare_case<Rational>(f, s, p, c, weight_seed);
    if (a != Arithmetic::float64) throw std::invalid_argument("a signature family is checked in float64 or exact");
    return compare_case<double>(f, s, p, c, weight_seed);
}

bool all_hold(const std::vector<OutputComparison>& outputs) {
    return std::all_of(outputs.begin(), outputs.end(), [](const OutputComparison& o) { return o.holds; });
}

bool positional(Property p) { return p == Property::shift || p == Property::padding; }

// A case of the row: permuting `axis` alone (a case that moves nothing is none), or a shift or padding case.
std::optional<SignatureCase> row_case(Property p, const std::string& axis, SignatureCase c) {
    if (positional(p)) return c;
    c = only_along(std::move(c), axis);
    if (c.perms.at(axis).is_identity()) return std::nullopt;
    return c;
}

}  // namespace

SignatureCheckResult check_signature(const SignatureFamily& family, const AxisExpectation& row,
                                     const SignatureCheckOptions& o) {
    const auto s = std::make_shared<const Signature>(signature_of(family));
    SignatureCheckResult r;
    r.layer = family.name;
    r.axis = row.axis;
    r.property = positional(row.property) ? row.property : property_along(*s, row.axis);
    r.dtype = o.arithmetic;
    r.expected_holds = row.holds;
    const Property p = r.property;
    const std::string pads = p == Property::padding ? row.axis : "";
    if (positional(p)) validate_property(*s, p, pads);
    const std::vector<Lengths> lengths = property_lengths(*s, p, pads, o.cases, o.seed);
    rc::Random random(o.seed);
    for (int i = 0; i < o.cases; ++i) {
        if (o.stop_requested && o.stop_requested()) return r.interrupted = true, r;
        const rc::Random own = random.split();
        SignatureCase drawn = draw_signature_case(*s, lengths[static_cast<std::size_t>(i)], own, size_for_case(i, o.cases));
        draw_property_part(*s, drawn, p, pads, PadPlacement::any, own, i, o.cases);
        const std::optional<SignatureCase> c = row_case(p, row.axis, std::move(drawn));
        if (!c) continue;
        ++r.cases_run;
        const std::uint64_t weights = o.seed + static_cast<std::uint64_t>(i);
        if (all_hold(compared(family, *s, p, *c, weights, o.arithmetic))) continue;
        const std::function<bool(const SignatureCase&)> fails = [&](const SignatureCase& candidate) {
            const std::optional<SignatureCase> k = row_case(p, row.axis, candidate);
            return k && !all_hold(compared(family, *s, p, *k, weights, o.arithmetic));
        };
        const rc::Shrinkable<SignatureCase> start =
            positional(p) ? shrinkable_position_case(s, p, *c) : shrinkable_signature_case(s, *c);
        const ShrinkResult<SignatureCase> shrunk = shrink(start, fails, o.max_shrink_evaluations, o.stop_requested);
        const SignatureCase m = *row_case(p, row.axis, shrunk.minimal.value());
        r.holds = false;
        r.interrupted = shrunk.interrupted;
        r.counterexample = SignatureCounterexample{m.lengths, m.perms, m.inputs, compared(family, *s, p, m, weights, o.arithmetic),
                                                   positional(p) ? "" : row.axis, i, shrunk.steps, "", m.shift, m.pads};
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
