#include "check/engine.h"

#include <cmath>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace permcheck {

const char* property_name(Property p) {
    switch (p) {
        case Property::equivariance: return "equivariance";
        case Property::invariance: return "invariance";
        case Property::shift: return "shift";
        case Property::reversal: return "reversal";
        case Property::causal_prefix: return "causal-prefix";
    }
    return "?";
}

std::string property_names() { return "equivariance, invariance, shift, reversal, causal-prefix"; }

Property parse_property(const std::string& name) {
    for (Property p : {Property::equivariance, Property::invariance, Property::shift, Property::reversal,
                       Property::causal_prefix})
        if (name == property_name(p)) return p;
    throw std::invalid_argument("unknown property '" + name + "'; valid properties: " + property_names());
}

const char* arithmetic_name(Arithmetic a) {
    switch (a) {
        case Arithmetic::float32: return "float32";
        case Arithmetic::float64: return "float64";
        case Arithmetic::exact: return "exact";
    }
    return "?";
}

Arithmetic parse_arithmetic(const std::string& name) {
    for (Arithmetic a : {Arithmetic::float32, Arithmetic::float64, Arithmetic::exact})
        if (name == arithmetic_name(a)) return a;
    throw std::invalid_argument("unknown arithmetic '" + name + "'; valid: float32, float64, exact");
}

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

rc::Seq<Case> case_shrinks(const Case& c, int min_len) {
    const int n = static_cast<int>(c.x.rows());
    const auto without_position = [c, n](int k) {
        Case smaller = c;
        smaller.x.resize(n - 1, c.x.cols());
        for (int i = 0, r = 0; i < n; ++i)
            if (i != k) smaller.x.row(r++) = c.x.row(i);
        smaller.perm = c.perm.without(k);
        return smaller;
    };
    const auto with_perm = [c](Permutation p) {
        Case fewer = c;
        fewer.perm = std::move(p);
        return fewer;
    };
    const auto with_input = [c](Mat<double> x) {
        Case simpler = c;
        simpler.x = std::move(x);
        return simpler;
    };
    std::vector<Case> parameters;
    if (c.weight_seed != 0) {
        parameters.push_back(c);
        parameters.back().weight_seed = 0;
    }
    if (c.shift != 1) {
        parameters.push_back(c);
        parameters.back().shift = 1;
    }
    return rc::seq::concat(rc::seq::map(rc::seq::range(0, n > min_len ? n : 0), without_position),
                           rc::seq::map(gen::permutation_shrinks(c.perm), with_perm),
                           rc::seq::map(gen::value_shrinks(c.x), with_input),
                           rc::seq::fromContainer(std::move(parameters)));
}

rc::Gen<Case> case_generator(const CheckOptions& opts) {
    if (opts.min_len < 1 || opts.max_len < opts.min_len)
        throw std::invalid_argument("sequence lengths must satisfy 1 <= min-len <= max-len, got " +
                                    std::to_string(opts.min_len) + " and " + std::to_string(opts.max_len));
    if (opts.d < 1) throw std::invalid_argument("the width d must be at least 1, got " + std::to_string(opts.d));
    const int d = opts.d, min_len = opts.min_len, max_len = opts.max_len;
    return rc::Gen<Case>([d, min_len, max_len](const rc::Random& random, int size) {
        gen::Sampler draw(random, size);
        const int n = draw.in_range(min_len, max_len + 1);
        Case c;
        c.x = draw.sequence(n, d);
        c.perm = draw.permutation(n);
        c.weight_seed = static_cast<std::uint64_t>(draw.uniform(0, 1 << 30));
        c.shift = draw.in_range(1, 65);
        return rc::shrinkable::shrinkRecur(std::move(c), [min_len](const Case& k) { return case_shrinks(k, min_len); });
    });
}

namespace {
template <class S> Sides<S> sides_in(const LayerFamily& family, Property property, const Case& c) {
    const auto d = c.x.cols();
    const LayerFn<S> layer = seeded_layer<S>(family, d, c.weight_seed, 0);
    const LayerFn<S> shifted = property == Property::shift ? seeded_layer<S>(family, d, c.weight_seed, c.shift) : LayerFn<S>{};
    ToleranceModel tol;
    tol.unit_roundoff = ScalarTraits<S>::unit_roundoff;
    tol.amplification = family.amplification;
    return evaluate<S>(layer, shifted, property, from_double<S>(c.x), c.perm, tol);
}

// The wider type that measures the rounding error of a floating evaluation.
template <class S> struct Wider;
template <> struct Wider<float> { using type = double; };
template <> struct Wider<double> { using type = long double; };

template <class S> Sides<double> evaluate_in(const LayerFamily& family, Property property, const Case& c) {
    const Sides<S> s = sides_in<S>(family, property, c);
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
}  // namespace

Sides<double> evaluate_case(const LayerFamily& family, Property property, const Case& c, Arithmetic arithmetic) {
    switch (arithmetic) {
        case Arithmetic::float32: return evaluate_in<float>(family, property, c);
        case Arithmetic::float64: return evaluate_in<double>(family, property, c);
        case Arithmetic::exact: return evaluate_in<Rational>(family, property, c);
    }
    throw std::logic_error("unknown arithmetic");
}

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest; below it, freed blocks stay in the heap
#endif
}

std::string replay_command(const std::string& layer, Property property, const CheckOptions& opts) {
    std::ostringstream s;
    s << "permcheck check " << layer << " --property " << property_name(property) << " --dtype "
      << arithmetic_name(opts.arithmetic) << " --seed " << opts.seed << " --cases " << opts.cases << " --min-len "
      << opts.min_len << " --max-len " << opts.max_len << " --d " << opts.d;
    return s.str();
}

CheckResult check(const LayerFamily& family, Property property, const CheckOptions& opts) {
    CheckResult r;
    r.layer = family.name;
    r.property = property_name(property);
    r.dtype = arithmetic_name(opts.arithmetic);
    r.expected_holds = family.expected_to_hold(property);

    const std::function<bool(const Case&)> fails = [&](const Case& c) {
        return !evaluate_case(family, property, c, opts.arithmetic).comparison.holds;
    };
    SearchOptions so;
    so.cases = opts.cases;
    so.seed = opts.seed;
    const SearchResult<Case> found = search<Case>(case_generator(opts), fails, so);
    r.cases_run = found.cases_run;
    r.evaluations = found.evaluations;
    if (!found.minimal) return r;

    r.holds = false;
    r.counterexample = counterexample_of(family, property, *found.minimal, opts, found.first_failure, found.shrink_steps);
    return r;
}

Counterexample counterexample_of(const LayerFamily& family, Property property, const Case& c, const CheckOptions& opts,
                                 int case_index, int shrink_steps) {
    const Sides<double> sides = evaluate_case(family, property, c, opts.arithmetic);
    Counterexample ce;
    ce.layer = family.name;
    ce.property = property_name(property);
    ce.dtype = arithmetic_name(opts.arithmetic);
    ce.perm = acting_permutation(property, c.perm);
    ce.x = c.x;
    ce.lhs = sides.lhs;
    ce.rhs = sides.rhs;
    ce.comparison = sides.comparison;
    ce.seed = opts.seed;
    ce.weight_seed = c.weight_seed;
    ce.shift = property == Property::shift ? c.shift : 0;
    ce.case_index = case_index;
    ce.shrink_steps = shrink_steps;
    ce.confirmed_exactly = opts.arithmetic == Arithmetic::exact ||
                           !evaluate_case(family, property, c, Arithmetic::exact).comparison.holds;
    ce.replay = replay_command(family.name, property, opts);
    return ce;
}

std::string format_matrix(const Mat<double>& m, const std::string& indent) {
    std::ostringstream s;
    s << std::setprecision(6);
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        s << indent << "[" << i << "]";
        for (Eigen::Index j = 0; j < m.cols(); ++j) s << ' ' << std::setw(11) << m(i, j);
        s << '\n';
    }
    return s.str();
}

std::string describe(const Counterexample& c) {
    std::ostringstream s;
    const char* lhs_name = c.property == "shift" ? "L_shifted(x)" : "L(P x)";
    const char* rhs_name = c.property == "invariance" || c.property == "shift" ? "L(x)" : "P L(x)";
    s << c.property << " violated by " << c.layer << " (" << c.dtype << "), n = " << c.n() << ", d = " << c.d() << "\n";
    if (c.property == "shift")
        s << "  every position index shifted by " << c.shift << "\n";
    else
        s << "  permutation " << c.perm.cycles() << " (rows: (P x)[i] = x[p[i]])\n";
    s << "  x =\n" << format_matrix(c.x);
    s << "  " << lhs_name << " =\n" << format_matrix(c.lhs);
    s << "  " << rhs_name << " =\n" << format_matrix(c.rhs);
    s << std::setprecision(6) << "  largest |difference| = " << c.comparison.max_abs_diff << " at position "
      << c.comparison.row << ", feature " << c.comparison.col;
    if (c.comparison.tolerance > 0) s << " (tolerance " << c.comparison.tolerance << ", margin " << c.comparison.margin() << ")";
    if (!c.black_box)
        s << "\n  " << (c.confirmed_exactly ? "confirmed in exact rational arithmetic" : "NOT confirmed in exact arithmetic")
          << "\n  weight seed " << c.weight_seed << ",";
    else
        s << "\n ";
    s << " case " << c.case_index << ", " << c.shrink_steps << " shrink steps\n";
    if (!c.replay.empty()) s << "  replay: " << c.replay << "\n";
    return s.str();
}

}  // namespace permcheck
