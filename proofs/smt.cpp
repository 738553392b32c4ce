#include "proofs/smt.h"

#include <sstream>
#include <stdexcept>

namespace permcheck {

const char* answer_name(SmtAnswer a) {
    switch (a) {
        case SmtAnswer::unsat: return "unsat";
        case SmtAnswer::sat: return "sat";
        case SmtAnswer::unknown: return "unknown";
    }
    return "?";
}

const char* verdict_name(SmtVerdict v) {
    switch (v) {
        case SmtVerdict::proved: return "proved";
        case SmtVerdict::violated: return "violated";
        case SmtVerdict::unknown: return "unknown";
    }
    return "?";
}

namespace {

Property property_of(Output output) { return output == Output::pooled ? Property::invariance : Property::equivariance; }

template <class S> Sides<S> sides(const LayerFn<S>& layer, Property property, const Mat<S>& x, const Permutation& p) {
    Sides<S> s;
    s.lhs = layer(p.apply(x));
    const Mat<S> base = layer(x);
    s.rhs = property == Property::invariance ? base : p.apply(base);
    return s;
}

// "Some entry of the two sides differs". Every entry is kept, structurally equal ones too, so that the
// emitted file states the whole claim; Z3's simplifier drops the trivial disequalities at once.
z3::expr some_entry_differs(const Mat<Symbolic>& lhs, const Mat<Symbolic>& rhs) {
    z3::context& ctx = smt_context();
    if (lhs.rows() != rhs.rows() || lhs.cols() != rhs.cols()) return ctx.bool_val(true);
    z3::expr_vector differs(ctx);
    for (Eigen::Index i = 0; i < lhs.rows(); ++i)
        for (Eigen::Index j = 0; j < lhs.cols(); ++j) differs.push_back(lhs(i, j).expr() != rhs(i, j).expr());
    return differs.empty() ? ctx.bool_val(false) : z3::mk_or(differs);
}

// The exact evaluation of the subject on a concrete input and weights, with the real exp, sqrt and tanh
// (ScalarTraits<Rational>). A counterexample when the two sides differ, nothing when they agree.
std::optional<Counterexample> confirm(const SmtSubject& subject, Property property, const Permutation& perm,
                                      const Mat<double>& x, const std::vector<double>& weights) {
    std::size_t next = 0;
    Draw<Rational> draw = [&]() {
        if (next >= weights.size())
            throw std::logic_error("layer '" + subject.name + "' draws more weights in exact arithmetic (" +
                                   std::to_string(next + 1) + ") than symbolically (" +
                                   std::to_string(weights.size()) + ")");
        return Rational(weights[next++]);
    };
    const LayerFn<Rational> layer = subject.exact(x.cols(), draw);
    const Sides<Rational> s = sides<Rational>(layer, property, from_double<Rational>(x), perm);
    const Comparison c = compare<Rational>(s.lhs, s.rhs, 0.0);
    if (c.holds) return std::nullopt;
    Counterexample ce;
    ce.layer = subject.name;
    ce.property = property;
    ce.dtype = Arithmetic::exact;
    ce.perm = perm;
    ce.x = x;
    ce.lhs = to_double<Rational>(s.lhs);
    ce.rhs = to_double<Rational>(s.rhs);
    ce.comparison = c;
    ce.confirmed_exactly = true;
    return ce;
}

std::string replay_line(const SmtSubject& subject, int n, int d) {
    return "permcheck prove " + subject.name + " --smt --n " + std::to_string(n) + " --d " + std::to_string(d);
}

}  // namespace

SmtSubject smt_subject(const LayerSpec& spec) {
    SmtSubject s;
    s.name = spec.name;
    s.output = spec.output;
    s.expected_symmetric = spec.symmetric;
    s.symbolic = [name = spec.name](Eigen::Index d, Draw<Symbolic>& draw) { return build_layer<Symbolic>(name, d, draw); };
    s.exact = [name = spec.name](Eigen::Index d, Draw<Rational>& draw) { return build_layer<Rational>(name, d, draw); };
    s.witness_search = [spec](int n, int d, const CheckOptions& opts) {
        CheckOptions o = opts;
        o.arithmetic = Arithmetic::exact;
        o.min_len = o.max_len = n;
        o.d = d;
        return check(spec, property_of(spec.output), o);
    };
    return s;
}

SmtResult smt_prove(const SmtSubject& subject, int n, int d, const SmtOptions& opts) {
    if (n < 2) throw std::invalid_argument("a proof over permutations needs n >= 2 positions, got " + std::to_string(n));
    if (d < 1) throw std::invalid_argument("the width d must be at least 1, got " + std::to_string(d));
    if (opts.timeout_seconds <= 0)
        throw std::invalid_argument("the SMT timeout must be positive, got " + std::to_string(opts.timeout_seconds));

    SmtResult r;
    r.layer = subject.name;
    r.property = property_of(subject.output);
    r.n = n;
    r.d = d;
    r.expected_symmetric = subject.expected_symmetric;

    z3::context& ctx = smt_context();
    int drawn = 0;  // the symbolic draw counts the weights, so the model's weights are w0 .. w(drawn-1)
    Draw<Symbolic> draw = [&drawn]() { return symbolic_constant("w" + std::to_string(drawn++)); };
    const LayerFn<Symbolic> layer = subject.symbolic(d, draw);
    const Mat<Symbolic> x = symbolic_matrix("x", n, d);

    std::vector<Symbolic> constants(x.data(), x.data() + x.size());  // column-major, as Mat<double>
    for (int k = 0; k < drawn; ++k) constants.push_back(symbolic_constant("w" + std::to_string(k)));

    bool all_unsat = true;
    for (const Permutation& p : Permutation::generators(n)) {
        const Sides<Symbolic> s = sides<Symbolic>(layer, r.property, x, p);
        z3::solver solver(ctx);
        solver.add(some_entry_differs(s.lhs, s.rhs));

        SmtQuery q;
        q.perm = p;
        if (opts.keep_smtlib) q.smtlib = solver.to_smt2();
        const detail::IsolatedCheck found = detail::check_isolated(solver, constants, opts.timeout_seconds);
        q.answer = found.answer;
        q.reason_unknown = found.reason_unknown;
        q.seconds = found.seconds;
        q.cpu_seconds = found.cpu_seconds;
        all_unsat = all_unsat && q.answer == SmtAnswer::unsat;

        if (q.answer == SmtAnswer::sat && found.model && !r.counterexample) try {
            const Mat<double> xv = Eigen::Map<const Mat<double>>(found.model->data(), n, d);
            std::vector<double> weights(found.model->begin() + n * d, found.model->end());
            if (std::optional<Counterexample> ce = confirm(subject, r.property, p, xv, weights)) {
                ce->replay = replay_line(subject, n, d);
                r.counterexample = std::move(ce);
                r.witness_weights = std::move(weights);
                r.witness_source = "Z3 model";
                q.model_confirmed = true;
            }
        } catch (const std::domain_error&) {
            // The model's values overflow the real exp (computed in double): not a usable witness.
        }
        r.queries.push_back(std::move(q));
    }

    if (all_unsat) {
        r.verdict = SmtVerdict::proved;
        return r;
    }
    if (!r.counterexample) {
        CheckOptions o;
        o.arithmetic = Arithmetic::exact;
        o.cases = opts.witness_cases;
        o.seed = opts.witness_seed;
        o.d = d;
        const CheckResult found = subject.witness_search(n, d, o);
        if (found.counterexample && found.counterexample->confirmed_exactly) {
            r.counterexample = found.counterexample;
            r.witness_source = "exact witness search";
        }
    }
    r.verdict = r.counterexample ? SmtVerdict::violated : SmtVerdict::unknown;
    return r;
}

std::string SmtResult::headline() const {
    const std::string what = property == Property::invariance ? "invariant" : "equivariant";
    if (verdict == SmtVerdict::proved)
        return "proved " + what + " (all real inputs and weights, uninterpreted exp/sqrt/tanh)";
    bool any_sat = false, any_unknown = false;
    std::string reason;
    for (const SmtQuery& q : queries) {
        any_sat = any_sat || q.answer == SmtAnswer::sat;
        if (q.answer == SmtAnswer::unknown) {
            any_unknown = true;
            reason = q.reason_unknown;
        }
    }
    std::string z3 = any_sat ? "Z3 found a model" : "Z3 answered unknown (" + reason + ")";
    if (any_sat && any_unknown) z3 += "; another query was unknown (" + reason + ")";
    if (verdict == SmtVerdict::violated) {
        if (witness_source == "Z3 model")
            return "not " + what + ": Z3 found a model, confirmed in exact arithmetic with the real exp/sqrt/tanh";
        return "not " + what + ": " + z3 +
               (any_sat ? ", which does not violate with the real exp/sqrt/tanh" : "") +
               "; the exact witness search found a witness";
    }
    return "not proved: " + z3 + (any_sat ? ", which does not violate with the real exp/sqrt/tanh" : "") +
           ", and the exact witness search found no witness";
}

std::string describe(const SmtResult& r) {
    std::ostringstream s;
    s << r.layer << " at n = " << r.n << ", d = " << r.d << ": " << r.headline() << "\n";
    for (const SmtQuery& q : r.queries) {
        s << "  " << q.perm.cycles() << ": " << answer_name(q.answer);
        if (!q.reason_unknown.empty()) s << " (" << q.reason_unknown << ")";
        s << ", Z3 " << q.seconds << " s (CPU " << q.cpu_seconds << " s)";
        if (q.answer == SmtAnswer::sat) s << (q.model_confirmed ? ", model confirmed" : ", model not confirmed");
        s << "\n";
    }
    if (r.counterexample) {
        s << "  witness (" << r.witness_source << "):\n" << permcheck::describe(*r.counterexample);
        if (!r.witness_weights.empty()) {
            s << "  weights w0.. (in the layer's draw order):";
            for (double w : r.witness_weights) s << ' ' << w;
            s << "\n";
        }
    }
    return s.str();
}

namespace detail {
CheckResult exact_generator_search(const std::string& name, Output output, const Builder<Rational>& build, int n,
                                   int d, const CheckOptions& opts) {
    CheckResult r;
    r.layer = name;
    const Property property = property_of(output);
    r.property = property;
    r.dtype = Arithmetic::exact;
    for (int k = 0; k < opts.cases; ++k) {
        const std::uint64_t seed = opts.seed + static_cast<std::uint64_t>(k);
        Draw<Rational> draw = dyadic_draw<Rational>(seed);
        const LayerFn<Rational> layer = build(d, draw);
        // Inputs j / 8 in [-2, 2], from a stream independent of the weights'.
        SplitMix64 rng(seed ^ 0x5eedf00dULL);
        Mat<double> xd(n, d);
        for (Eigen::Index i = 0; i < n; ++i)
            for (Eigen::Index j = 0; j < d; ++j) xd(i, j) = (static_cast<double>(rng.below(33)) - 16.0) / 8.0;
        ++r.cases_run;
        for (const Permutation& p : Permutation::generators(n)) {
            ++r.evaluations;
            const Sides<Rational> s = sides<Rational>(layer, property, from_double<Rational>(xd), p);
            const Comparison c = compare<Rational>(s.lhs, s.rhs, 0.0);
            if (c.holds) continue;
            r.holds = false;
            Counterexample ce;
            ce.layer = name;
            ce.property = r.property;
            ce.dtype = Arithmetic::exact;
            ce.perm = p;
            ce.x = xd;
            ce.lhs = to_double<Rational>(s.lhs);
            ce.rhs = to_double<Rational>(s.rhs);
            ce.comparison = c;
            ce.seed = opts.seed;
            ce.weight_seed = seed;
            ce.case_index = k;
            ce.confirmed_exactly = true;
            r.counterexample = std::move(ce);
            return r;
        }
    }
    return r;
}
}  // namespace detail

}  // namespace permcheck
