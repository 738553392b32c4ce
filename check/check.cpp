// The white-box check of a reference family (check/check.h).
#include "check/check.h"

#include "cases/compare.h"
#include "cases/search.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>

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
    Tensor out{t.shape, std::vector<double>(t.values.size())};
    for (std::size_t k = 0; k < t.values.size(); ++k) out.values[k] = sc::to_double(t.values[k]);
    return out;
}

// The check's comparison of one output in scalar S, both sides kept: compare_tensors, the difference of each entry taken in S and
// rounded once (exact for an exact scalar, where a nonzero difference below the doubles' range counts as the
// smallest one).
// `lhs_doubles`, `rhs_doubles`: the two sides as doubles, moved into the comparison.
template <class S>
OutputComparison compare_output(const TensorSpec& spec, const NamedTensor<S>& lhs, const NamedTensor<S>& rhs,
                                double tolerance, const std::vector<bool>& ignored, Tensor lhs_doubles,
                                Tensor rhs_doubles) {
    if (lhs.shape != rhs.shape || lhs.values.size() != rhs.values.size())
        throw std::logic_error("reference layer: output '" + spec.name + "' changed its shape under the property");
    std::vector<double> diff(lhs.values.size());
    for (std::size_t e = 0; e < lhs.values.size(); ++e) {
        const double d = std::abs(sc::to_double(S(lhs.values[e] - rhs.values[e])));
        const bool nan = d != d;  // a float evaluation's NaN: a difference that no tolerance covers
        diff[e] = nan ? std::numeric_limits<double>::infinity()
                      : d == 0.0 && !(lhs.values[e] == rhs.values[e]) ? std::numeric_limits<double>::denorm_min() : d;
    }
    OutputComparison c = compare_tensors(spec.name, lhs_doubles, rhs_doubles, tolerance, ignored, diff);
    c.layer_of_permuted = std::move(lhs_doubles);
    c.permuted_layer = std::move(rhs_doubles);
    return c;
}
template <class S>
OutputComparison compare_output(const TensorSpec& spec, const NamedTensor<S>& lhs, const NamedTensor<S>& rhs,
                                double tolerance, const std::vector<bool>& ignored) {
    return compare_output(spec, lhs, rhs, tolerance, ignored, as_doubles(lhs), as_doubles(rhs));
}

template <class S>
void expect_shape(const Family& f, const TensorSpec& spec, const NamedTensor<S>& y, const Lengths& lengths) {
    if (y.shape != shape_of(spec, lengths))
        throw std::logic_error("reference layer " + f.name + ": output '" + spec.name + "' has shape " + index_text(y.shape));
}

// Both sides of every output of case c in scalar S, as the property compares them.
template <class S> struct Sides {
    std::vector<NamedTensor<S>> lhs, rhs;
};
template <class S>
Sides<S> sides_of(const Family& family, const Signature& s, const PropertyRules& p, const PropertyArgs& args,
                  const Case& c, int d) {
    if (!family.factory<S>())
        throw std::invalid_argument("the reference layer " + family.name + " is not built in this arithmetic");
    const LayerFn<S> layer = seeded_layer<S>(family, d, c.weight_seed, 0, c.weights);
    const long offset = p.offset(c);
    const LayerFn<S> transformed_layer = offset == 0 ? layer : seeded_layer<S>(family, d, c.weight_seed, offset, c.weights);
    const Lengths lengths = p.transformed_lengths(c);
    NamedTensors<S> y = layer(in_scalar<S>(c.inputs));
    NamedTensors<S> answer = transformed_layer(in_scalar<S>(p.transformed(s, args, c)));
    Sides<S> out;
    for (const TensorSpec& spec : s.outputs) {
        expect_shape(family, spec, y.at(spec.name), c.lengths);
        expect_shape(family, spec, answer.at(spec.name), lengths);
        const Tensor compared = p.compared(spec, c, index_tensor(answer.at(spec.name)));
        const Tensor expected = p.expected(spec, c, index_tensor(y.at(spec.name)));
        out.lhs.push_back(gathered(std::move(answer.at(spec.name)), compared));
        out.rhs.push_back(gathered(std::move(y.at(spec.name)), expected));
    }
    return out;
}

// The wider type that measures the rounding error of a floating evaluation.
template <class S> struct Wider;
template <> struct Wider<float> { using type = double; };
template <> struct Wider<double> { using type = long double; };

// The largest |a - b| of two tensors of one shape, as doubles.
template <class S, class W> double distance(const NamedTensor<S>& a, const NamedTensor<W>& b) {
    double m = 0.0;
    for (std::size_t e = 0; e < a.values.size() && e < b.values.size(); ++e)
        m = std::max(m, std::abs(sc::to_double(a.values[e]) - sc::to_double(b.values[e])));
    return m;
}

bool all_hold(const std::vector<OutputComparison>& outputs) {
    return std::all_of(outputs.begin(), outputs.end(), [](const OutputComparison& o) { return o.holds; });
}

}  // namespace

template <class S>
std::vector<OutputComparison> compare_case(const Family& family, const Signature& s, const PropertyRules& p,
                                           const PropertyArgs& args, const Case& c, int d) {
    const Sides<S> sides = sides_of<S>(family, s, p, args, c, d);
    const double magnitude = real_inputs_magnitude(s, c.inputs);
    const double positions = largest_position(s, c.inputs) + static_cast<double>(p.offset(c));
    const ToleranceModel model = tolerance_model_of<S>(family.amplification);
    std::vector<OutputComparison> out;
    for (std::size_t k = 0; k < s.outputs.size(); ++k) {
        const TensorSpec& spec = s.outputs[k];
        Tensor lhs = as_doubles(sides.lhs[k]), rhs = as_doubles(sides.rhs[k]);
        const double m = finite_max_abs(lhs.values, finite_max_abs(rhs.values, magnitude));
        const double tolerance = signature_tolerance(model, p.transformed_lengths(c), widest_fixed_size(s), m, positions);
        out.push_back(compare_output(spec, sides.lhs[k], sides.rhs[k], tolerance, p.ignored(s, c, spec, sides.lhs[k].shape),
                                     std::move(lhs), std::move(rhs)));
    }
    if constexpr (!ScalarTraits<S>::exact) {
        // The a-priori tolerance covers reordered sums. Where a layer amplifies rounding further (large scores, RoPE
        // powers, LayerNorm of a near-constant row), measure each side's rounding error against the same evaluation
        // in a wider type, and allow their sum (proofs-notes/float-tolerance.md).
        using W = typename Wider<S>::type;
        if (all_hold(out) || !family.factory<W>()) return out;
        const Sides<W> wide = sides_of<W>(family, s, p, args, c, d);
        for (std::size_t k = 0; k < out.size(); ++k) {
            if (out[k].holds) continue;
            const double measured = distance(sides.lhs[k], wide.lhs[k]) + distance(sides.rhs[k], wide.rhs[k]);
            const double tolerance = std::max(out[k].tolerance, ToleranceModel{}.safety * measured);
            out[k] = compare_output(s.outputs[k], sides.lhs[k], sides.rhs[k], tolerance,
                                    p.ignored(s, c, s.outputs[k], sides.lhs[k].shape));
        }
    }
    return out;
}

template std::vector<OutputComparison> compare_case<double>(const Family&, const Signature&, const PropertyRules&,
                                                            const PropertyArgs&, const Case&, int);
template std::vector<OutputComparison> compare_case<Rational>(const Family&, const Signature&, const PropertyRules&,
                                                              const PropertyArgs&, const Case&, int);

Signature signature_of(const Family& family, int d, std::optional<int> min_len, std::optional<int> max_len) {
    const auto at_width = [&](std::string text) {
        for (std::size_t k = text.find("{d}"); k != std::string::npos; k = text.find("{d}"))
            text.replace(k, 3, std::to_string(d));
        return text;
    };
    Signature s;
    for (const std::string& a : family.axes) {
        Axis axis = parse_axis(a);
        if (min_len) axis.min_len = *min_len;
        if (max_len) axis.max_len = *max_len;
        if (axis.min_len > axis.max_len)
            throw std::invalid_argument(
                min_len && max_len ? "--min-len (" + std::to_string(*min_len) + ") must not exceed --max-len (" + std::to_string(*max_len) + ")"
                : min_len ? "--min-len " + std::to_string(*min_len) + " is above the longest " + axis.name + " of " + family.name +
                                " (" + std::to_string(axis.max_len) + "); give --max-len too"
                          : "--max-len " + std::to_string(*max_len) + " is below the shortest " + axis.name + " of " +
                                family.name + " (" + std::to_string(axis.min_len) + "); give --min-len too");
        s.axes.push_back(axis);
    }
    for (const std::string& t : family.inputs) s.inputs.push_back(parse_input(at_width(t)));
    for (const std::string& t : family.outputs) s.outputs.push_back(parse_output(at_width(t)));
    validate(s);
    return s;
}

const Expectation& row_of(const Family& family, Property p, const std::string& axis) {
    for (const Expectation& e : family.expectations)
        if (e.property == p && (axis.empty() || e.axis == axis)) return e;
    std::string rows;
    for (const Expectation& e : family.expectations)
        rows += (rows.empty() ? "" : ", ") + std::string(property_name(e.property)) + " along " + e.axis;
    throw std::invalid_argument("property '" + std::string(property_name(p)) + "'" + (axis.empty() ? "" : " along " + axis) +
                                " does not apply to layer '" + family.name + "'; rows that apply: " + rows);
}

namespace {

// f(S{}) with S the scalar of the arithmetic.
template <class F> auto in_arithmetic(Arithmetic arithmetic, F&& f) {
    switch (arithmetic) {
        case Arithmetic::float32: return f(float{});
        case Arithmetic::float64: return f(double{});
        case Arithmetic::exact: return f(Rational{});
        case Arithmetic::float16:
        case Arithmetic::bfloat16:
        case Arithmetic::tf32: break;
    }
    throw std::invalid_argument(std::string("the reference layers compute in float32, float64 or exact, not ") +
                                arithmetic_name(arithmetic) + " (half precision is for audits of black boxes)");
}

// What one check asks: the family at its signature, the row's property and arguments, the options.
struct Question {
    const Family& family;
    std::shared_ptr<const Signature> signature;
    const PropertyRules& property;
    PropertyArgs args;
    const CheckOptions& options;

    Question(const Family& f, const Expectation& row, const CheckOptions& o)
        : family(f), signature(std::make_shared<const Signature>(signature_of(f, o))), property(rules_of(row.property)),
          args(property.completed_args(*signature, PropertyArgs{row.axis, PadPlacement::any, false, true})),
          options(o) {}

    std::vector<OutputComparison> compared(const Case& c, Arithmetic a) const {
        return in_arithmetic(a, [&](auto s) {
            return compare_case<decltype(s)>(family, *signature, property, args, c, options.d);
        });
    }
    // A case of a permuting property that permutes nothing tests nothing.
    bool moves_nothing(const Case& c) const {
        return property.permutes() &&
               std::all_of(c.perms.begin(), c.perms.end(), [](const auto& q) { return q.second.is_identity(); });
    }
    bool fails(const Case& c) const { return !moves_nothing(c) && !all_hold(compared(c, options.arithmetic)); }

    Case drawn(const LengthSchedule& lengths, int i, const rc::Random& random) const {
        const auto at = static_cast<std::size_t>(i);
        Case c = draw_case(property, *signature, args, lengths[at], random, i, options.cases, lengths.at_longest(at));
        c.weight_seed = options.seed + static_cast<std::uint64_t>(i);
        return c;
    }
    // The property's shrinks, then the weights' seed toward 0.
    rc::Shrinkable<Case> shrinkable(const Case& start) const {
        return rc::shrinkable::shrinkRecur(start, [this](const Case& k) {
            auto own = rc::seq::map(shrinkable_case(property, signature, args, k).shrinks(),
                                    [](const rc::Shrinkable<Case>& s) { return s.value(); });
            Case unseeded = k;
            unseeded.weight_seed = 0;
            return rc::seq::concat(std::move(own),
                                   k.weight_seed != 0 ? rc::seq::just(std::move(unseeded)) : rc::Seq<Case>());
        });
    }
};

std::string replay_line(const Question& q, const Expectation& row) {
    const CheckOptions& o = q.options;
    std::ostringstream s;
    s << "permcheck check " << q.family.name << " --property " << property_name(row.property);
    const auto rows_of_property = std::count_if(q.family.expectations.begin(), q.family.expectations.end(),
                                                [&row](const Expectation& e) { return e.property == row.property; });
    if (rows_of_property > 1) s << " --along " << row.axis;  // the property has a row along another axis too
    s << " --dtype " << arithmetic_name(o.arithmetic) << " --seed " << o.seed << " --cases " << o.cases;
    if (o.min_len) s << " --min-len " << *o.min_len;
    if (o.max_len) s << " --max-len " << *o.max_len;
    if (q.family.takes_width()) s << " --dim " << o.d;
    return s.str();
}

Counterexample recorded(const Question& q, const Expectation& row, const Case& c, int case_index, int shrink_steps) {
    Counterexample ce;
    static_cast<Case&>(ce) = c;
    ce.outputs = q.compared(c, q.options.arithmetic);
    if (q.property.permutes()) ce.axis_at_fault = q.args.axis;
    ce.case_index = case_index;
    ce.shrink_steps = shrink_steps;
    ce.confirmed_exactly = q.options.arithmetic == Arithmetic::exact || !all_hold(q.compared(c, Arithmetic::exact));
    ce.replay = replay_line(q, row);
    return ce;
}

}  // namespace

CheckResult labelled(const Family& family, const Expectation& row, const CheckOptions& o) {
    const Question q(family, row, o);
    CheckResult r;
    r.layer = family.name;
    r.property = q.property.recorded_as(*q.signature, q.args);
    r.axis = row.axis;
    r.dtype = o.arithmetic;
    r.expected_holds = row.holds;
    r.signature = *q.signature;
    r.replay = replay_line(q, row);
    return r;
}

CheckResult check(const Family& family, const Expectation& row, const CheckOptions& o) {
    const Question q(family, row, o);
    CheckResult r = labelled(family, row, o);
    const LengthSchedule lengths = q.property.lengths(*q.signature, q.args, o.cases, o.seed);
    const auto progress = [&](bool shrinking) {
        if (o.on_progress) o.on_progress(CheckProgress{r.cases_run, o.cases, r.evaluations, shrinking});
    };
    rc::Random random(o.seed);
    for (int i = 0; i < o.cases; ++i) {
        if (o.stop_requested && o.stop_requested()) return r.interrupted = true, r;
        const Case c = q.drawn(lengths, i, random.split());
        if (q.moves_nothing(c)) continue;
        ++r.cases_run;
        ++r.evaluations;
        const bool failed = q.fails(c);
        progress(false);
        if (!failed) continue;
        const std::function<bool(const Case&)> fails = [&](const Case& k) {
            ++r.evaluations;
            progress(true);
            return q.fails(k);
        };
        const ShrinkResult<Case> shrunk = shrink(q.shrinkable(c), fails, o.max_shrink_evaluations, o.stop_requested);
        r.holds = false;
        r.interrupted = shrunk.interrupted;
        r.counterexample = recorded(q, row, shrunk.minimal.value(), i, shrunk.steps);
        return r;
    }
    return r;
}

std::vector<Case> drawn_cases(const Family& family, const Expectation& row, const CheckOptions& o) {
    const Question q(family, row, o);
    const LengthSchedule lengths = q.property.lengths(*q.signature, q.args, o.cases, o.seed);
    rc::Random random(o.seed);
    std::vector<Case> out;
    for (int i = 0; i < o.cases; ++i) out.push_back(q.drawn(lengths, i, random.split()));
    return out;
}

Counterexample counterexample_at(const Family& family, const Expectation& row, const Case& c, const CheckOptions& opts,
                                 int case_index, int shrink_steps) {
    return recorded(Question(family, row, opts), row, c, case_index, shrink_steps);
}

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest; below it, freed blocks stay in the heap
#endif
}

}  // namespace permcheck
