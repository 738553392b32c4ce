// The white-box check of a signature family along one axis (check/signature_check.h).
#include "check/signature_check.h"

#include "check/compare.h"
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
                                double tolerance) {
    OutputComparison c{spec.name, as_doubles(lhs), as_doubles(rhs), 0.0, tolerance, {}, true, false};
    if (lhs.shape != rhs.shape || lhs.values.size() != rhs.values.size())
        throw std::logic_error("reference layer: output '" + spec.name + "' changed its shape under a permutation");
    std::size_t worst = 0;
    for (std::size_t e = 0; e < lhs.values.size(); ++e) {
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

}  // namespace

template <class S>
std::vector<OutputComparison> compare_signature_case(const SignatureFamily& family, const Signature& s,
                                                     const Lengths& lengths, const Permutations& perms,
                                                     const Tensors& inputs, std::uint64_t weight_seed) {
    Draw<S> draw = dyadic_draw<S>(weight_seed);
    const SignatureLayerFn<S> layer = family.factory<S>()(draw);
    const NamedTensors<S> y = layer(in_scalar<S>(inputs));
    const NamedTensors<S> lhs = layer(in_scalar<S>(permute_inputs(s, perms, inputs)));
    const double magnitude = real_inputs_magnitude(s, inputs);
    const ToleranceModel model = tolerance_model_of<S>(family.amplification);
    std::vector<OutputComparison> out;
    for (const TensorSpec& spec : s.outputs) {
        if (y.at(spec.name).shape != shape_of(spec, lengths))
            throw std::logic_error("reference layer " + family.name + ": output '" + spec.name + "' has shape " +
                                   index_text(y.at(spec.name).shape));
        const NamedTensor<S> rhs = permuted_output(spec, perms, y.at(spec.name));
        const Tensor l = as_doubles(lhs.at(spec.name)), r = as_doubles(rhs);
        const double m = finite_max_abs(l.values, finite_max_abs(r.values, magnitude));
        // The signature audit's tolerance: 0 in exact arithmetic (the model's, check/compare.h).
        out.push_back(compare_output(spec, lhs.at(spec.name), rhs, signature_tolerance(model, lengths, widest_fixed_size(s), m)));
    }
    return out;
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

std::vector<OutputComparison> compared(const SignatureFamily& f, const Signature& s, const SignatureCase& c,
                                       std::uint64_t weight_seed, Arithmetic a) {
    if (a == Arithmetic::exact) return compare_signature_case<Rational>(f, s, c.lengths, c.perms, c.inputs, weight_seed);
    if (a != Arithmetic::float64) throw std::invalid_argument("a signature family is checked in float64 or exact");
    return compare_signature_case<double>(f, s, c.lengths, c.perms, c.inputs, weight_seed);
}

bool all_hold(const std::vector<OutputComparison>& outputs) {
    return std::all_of(outputs.begin(), outputs.end(), [](const OutputComparison& o) { return o.holds; });
}

}  // namespace

SignatureCheckResult check_signature(const SignatureFamily& family, const std::string& axis,
                                     const SignatureCheckOptions& o) {
    const auto s = std::make_shared<const Signature>(signature_of(family));
    SignatureCheckResult r;
    r.layer = family.name;
    r.axis = axis;
    r.property = property_along(*s, axis);
    r.dtype = o.arithmetic;
    r.expected_holds = family.expected_to_hold(axis);
    const std::vector<Lengths> lengths = signature_lengths(*s, o.cases, o.seed);
    rc::Random random(o.seed);
    for (int i = 0; i < o.cases; ++i) {
        if (o.stop_requested && o.stop_requested()) return r.interrupted = true, r;
        const SignatureCase c = only_along(
            draw_signature_case(*s, lengths[static_cast<std::size_t>(i)], random.split(), size_for_case(i, o.cases)), axis);
        if (c.perms.at(axis).is_identity()) continue;
        ++r.cases_run;
        const std::uint64_t weights = o.seed + static_cast<std::uint64_t>(i);
        if (all_hold(compared(family, *s, c, weights, o.arithmetic))) continue;
        const std::function<bool(const SignatureCase&)> fails = [&](const SignatureCase& candidate) {
            const SignatureCase k = only_along(candidate, axis);
            return !k.perms.at(axis).is_identity() && !all_hold(compared(family, *s, k, weights, o.arithmetic));
        };
        const ShrinkResult<SignatureCase> shrunk =
            shrink(shrinkable_signature_case(s, c), fails, o.max_shrink_evaluations, o.stop_requested);
        const SignatureCase m = only_along(shrunk.minimal.value(), axis);
        r.holds = false;
        r.interrupted = shrunk.interrupted;
        r.counterexample = SignatureCounterexample{m.lengths, m.perms, m.inputs, compared(family, *s, m, weights, o.arithmetic),
                                                   axis, i, shrunk.steps, ""};
        return r;
    }
    return r;
}

}  // namespace permcheck
