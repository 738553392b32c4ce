#include "check/engine.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdexcept>

namespace permcheck {

Permutation acting_permutation(Property p, const Permutation& perm) {
    const int n = perm.size();
    if (p == Property::reversal) return Permutation::reversal(n);
    if (p != Property::causal_prefix || n == 0) return perm;
    // Keep the relative order of the other entries and move n-1 to the end: a permutation fixing the last
    // position, which shrinks toward the identity as perm does.
    std::vector<int> q;
    for (int v : perm.one_line())
        if (v != n - 1) q.push_back(v);
    q.push_back(n - 1);
    return Permutation(std::move(q));
}

rc::Gen<MatrixCase> case_generator(const CheckOptions& opts) {
    return case_generator(CaseSpace{opts.min_len, opts.max_len, opts.d, true});
}

namespace {
template <class S> Sides<S> sides_in(const LayerFamily& family, Property property, const MatrixCase& c) {
    const auto d = c.x.cols();
    const LayerFn<S> layer = seeded_layer<S>(family, d, c.weight_seed, 0, c.weights);
    const LayerFn<S> shifted =
        property == Property::shift ? seeded_layer<S>(family, d, c.weight_seed, c.shift, c.weights) : LayerFn<S>{};
    return evaluate<S>(layer, shifted, property, from_double<S>(c.x), c.perm,
                       tolerance_model_of<S>(family.amplification));
}

// The wider type that measures the rounding error of a floating evaluation.
template <class S> struct Wider;
template <> struct Wider<float> { using type = double; };
template <> struct Wider<double> { using type = long double; };

// The sides of c in S, judged as evaluate_case judges them: by the a-priori tolerance, and, where a floating
// evaluation fails it, by its measured rounding error. `s` is sides_in<S>(family, property, c), computed once.
template <class S> Sides<double> judged(const LayerFamily& family, Property property, const MatrixCase& c, const Sides<S>& s) {
    Sides<double> out{to_double<S>(s.lhs), to_double<S>(s.rhs), s.comparison};
    if constexpr (!ScalarTraits<S>::exact) {
        // The a-priori tolerance covers reordered sums. Where a layer amplifies rounding further (large
        // scores, RoPE powers, LayerNorm of a near-constant row), measure each side's rounding error against
        // the same evaluation in a wider type, and allow their sum (proofs-notes/float-tolerance.md).
        if (!s.comparison.holds && !s.comparison.shape_mismatch) {
            using W = typename Wider<S>::type;
            const Sides<W> w = sides_in<W>(family, property, c);
            const double measured = max_abs<double>(Mat<double>(out.lhs - to_double<W>(w.lhs))) +
                                    max_abs<double>(Mat<double>(out.rhs - to_double<W>(w.rhs)));
            const double tol = std::max(s.comparison.tolerance, ToleranceModel{}.safety * measured);
            out.comparison = compare<double>(out.lhs, out.rhs, tol);
        }
    }
    return out;
}

template <class S> Sides<double> evaluate_in(const LayerFamily& family, Property property, const MatrixCase& c) {
    return judged<S>(family, property, c, sides_in<S>(family, property, c));
}

// Whether c holds, as evaluate_in judges it, without converting the sides to double when the a-priori tolerance
// already decides (the search asks this of every case, and the sides of a case that holds are never read), and
// without evaluating the case in S a second time when it does not.
template <class S> bool holds_in(const LayerFamily& family, Property property, const MatrixCase& c) {
    const Sides<S> s = sides_in<S>(family, property, c);
    if (s.comparison.holds) return true;
    if constexpr (ScalarTraits<S>::exact) return false;
    else return judged<S>(family, property, c, s).comparison.holds;
}

// f(S{}) with S the scalar of the arithmetic.
template <class F> auto in_arithmetic(Arithmetic arithmetic, F&& f) {
    switch (arithmetic) {
        case Arithmetic::float32: return f(float{});
        case Arithmetic::float64: return f(double{});
        case Arithmetic::exact: return f(Rational{});
        case Arithmetic::float16:
        case Arithmetic::bfloat16: break;
    }
    throw std::invalid_argument(std::string("the reference layers compute in float32, float64 or exact, not ") +
                                arithmetic_name(arithmetic) + " (half precision is for audits of black boxes)");
}

bool case_holds(const LayerFamily& family, Property property, const MatrixCase& c, Arithmetic arithmetic) {
    return in_arithmetic(arithmetic, [&](auto s) { return holds_in<decltype(s)>(family, property, c); });
}
}  // namespace

Sides<double> evaluate_case(const LayerFamily& family, Property property, const MatrixCase& c, Arithmetic arithmetic) {
    return in_arithmetic(arithmetic, [&](auto s) { return evaluate_in<decltype(s)>(family, property, c); });
}

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest; below it, freed blocks stay in the heap
#endif
}

CheckResult check(const LayerFamily& family, Property property, const CheckOptions& opts) {
    CheckResult r;
    r.layer = family.name;
    r.property = property;
    r.dtype = opts.arithmetic;
    r.expected_holds = family.expected_to_hold(property);

    const std::function<bool(const MatrixCase&)> fails = [&](const MatrixCase& c) {
        return !case_holds(family, property, c, opts.arithmetic);
    };
    const SearchOptions so{.cases = opts.cases, .seed = opts.seed, .stop_requested = opts.stop_requested,
                           .on_progress = opts.on_progress};
    const SearchResult<MatrixCase> found = search<MatrixCase>(case_generator(opts), fails, so);
    r.cases_run = found.cases_run;
    r.evaluations = found.evaluations;
    r.interrupted = found.interrupted;
    if (!found.minimal) return r;

    r.holds = false;
    r.counterexample = counterexample_of(family, property, *found.minimal, opts, found.first_failure, found.shrink_steps);
    return r;
}

Counterexample counterexample_of(const LayerFamily& family, Property property, const MatrixCase& c, const CheckOptions& opts,
                                 int case_index, int shrink_steps) {
    const Sides<double> sides = evaluate_case(family, property, c, opts.arithmetic);
    Counterexample ce;
    ce.layer = family.name;
    ce.property = property;
    ce.dtype = opts.arithmetic;
    ce.perm = acting_permutation(property, c.perm);
    ce.x = c.x;
    ce.lhs = sides.lhs;
    ce.rhs = sides.rhs;
    ce.comparison = sides.comparison;
    ce.seed = opts.seed;
    ce.weight_seed = c.weight_seed;
    ce.weights = c.weights;
    ce.shift = property == Property::shift ? c.shift : 0;
    ce.case_index = case_index;
    ce.shrink_steps = shrink_steps;
    ce.confirmed_exactly = opts.arithmetic == Arithmetic::exact ||
                           !evaluate_case(family, property, c, Arithmetic::exact).comparison.holds;
    ce.replay = replay_command(family.name, property, opts);
    return ce;
}

}  // namespace permcheck
