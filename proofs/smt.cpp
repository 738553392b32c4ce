#include "proofs/smt.h"

#include "proofs/identity.h"

#include <iomanip>
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

namespace detail {
void describe_answer(std::ostream& s, const std::string& head, const SmtQuery& q) {
    s << head << ": " << (q.asked ? answer_name(q.answer) : "not asked");
    if (!q.reason_unknown.empty()) s << " (" << q.reason_unknown << ")";
    if (q.answer == SmtAnswer::sat) s << (q.model_confirmed ? ", model confirmed" : ", model not confirmed");
    if (q.asked) s << ", Z3 " << q.seconds << " s (CPU " << q.cpu_seconds << " s)";
    s << "\n";
}

// Appended, not prefix + ...: GCC 12 at -O3 warns falsely (-Wrestrict) on a literal + std::string.
std::string constant_name(const std::string& prefix, std::size_t k) {
    std::string name = prefix;
    name += std::to_string(k);
    return name;
}

Draw<Rational> replay_draw(const std::vector<double>& values, std::size_t& next, const std::string& layer) {
    return [&values, &next, layer] {
        if (next >= values.size())
            throw std::logic_error("layer '" + layer + "' draws more values in exact arithmetic (" +
                                   std::to_string(next + 1) + ") than symbolically (" + std::to_string(values.size()) +
                                   ")");
        return Rational(values[next++]);
    };
}
}  // namespace detail

namespace {
using identity::SequenceSubject;

// The exact evaluation of the family on a concrete input and weights, with the real exp, sqrt and tanh
// (ScalarTraits<Rational>). A counterexample, with its replay line, when the two sides differ; nothing when they
// agree.
std::optional<Counterexample> confirm(const LayerFamily& family, const Permutation& perm, const Mat<double>& x,
                                      const std::vector<double>& weights) {
    std::size_t next = 0;
    Draw<Rational> draw = detail::replay_draw(weights, next, family.name);
    const LayerFn<Rational> layer = family.exact(x.cols(), draw, 0);
    const SequenceSubject subject{family, static_cast<int>(x.rows()), static_cast<int>(x.cols())};
    const auto [lhs, rhs] = identity::sides(subject, layer, perm, from_double<Rational>(x));
    const Comparison c = compare<Rational>(lhs, rhs, 0.0);
    if (c.holds) return std::nullopt;
    const std::string replay = "permcheck prove " + family.name + " --smt --n " + std::to_string(x.rows()) +
                               " --d " + std::to_string(x.cols());
    return Counterexample{.layer = family.name, .property = family.symmetry(), .dtype = Arithmetic::exact,
                          .perm = perm, .x = x, .lhs = to_double<Rational>(lhs), .rhs = to_double<Rational>(rhs),
                          .comparison = c, .confirmed_exactly = true, .replay = replay};
}

// A sat model's input and weights, as r's witness if they violate in exact arithmetic with the real functions;
// then each weight zeroed in turn and kept zero when the violation survives (one exact evaluation per weight), so
// that the witness shows only the weights it needs.
bool adopt_model(const LayerFamily& family, const std::vector<double>& model, const Permutation& p, SmtResult& r) {
    const Mat<double> x = Eigen::Map<const Mat<double>>(model.data(), r.n, r.d);
    std::vector<double> weights(model.begin() + r.n * r.d, model.end());
    const auto violates = [&] {
        try {
            std::optional<Counterexample> ce = confirm(family, p, x, weights);
            if (!ce) return false;
            r.counterexample = std::move(ce);
            return true;
        } catch (const std::domain_error&) {
            return false;  // the values overflow the real exp (computed in double): not a usable witness
        }
    };
    if (!violates()) return false;
    for (double& w : weights) {
        if (w == 0) continue;
        const double kept = w;
        w = 0;
        if (!violates()) w = kept;
    }
    r.witness_weights = std::move(weights);
    r.witness_source = WitnessSource::z3_model;
    return true;
}

// Z3 on the generators in turn (detail::ask_in_turn), a confirmed model becoming r's witness; true when both are
// unsat. The family is built on symbolic weights w0, w1, ... (counted as they are drawn) and applied to a symbolic
// x: a model's values come back for x column-major (as Mat<double>), then for the weights.
bool ask_z3(const LayerFamily& family, const SmtOptions& opts, SmtResult& r) {
    const bool settled = r.counterexample.has_value();
    if (settled && !opts.keep_smtlib) return false;
    std::size_t drawn = 0;
    Draw<Symbolic> draw = [&drawn]() { return symbolic_constant(detail::constant_name("w", drawn++)); };
    const LayerFn<Symbolic> layer = family.symbolic(r.d, draw, 0);
    const Mat<Symbolic> x = symbolic_matrix("x", r.n, r.d);
    std::vector<Symbolic> constants(x.data(), x.data() + x.size());
    for (std::size_t k = 0; k < drawn; ++k) constants.push_back(symbolic_constant(detail::constant_name("w", k)));
    const SequenceSubject subject{family, r.n, r.d};
    const auto ask = [&](const Permutation& p, bool asked) {
        const auto [lhs, rhs] = identity::sides(subject, layer, p, x);
        std::optional<std::vector<double>> model;
        SmtQuery q = detail::run_query(subject, lhs, rhs, constants, p, asked, opts, model);
        if (q.answer == SmtAnswer::sat && model && !r.counterexample)
            q.model_confirmed = adopt_model(family, *model, p, r);
        return q;
    };
    return detail::ask_in_turn(Permutation::generators(r.n), settled, opts, r.queries, ask);
}

}  // namespace

SmtResult smt_prove(const LayerFamily& family, int n, int d, const SmtOptions& opts) {
    if (n < 2)
        throw std::invalid_argument("a proof over permutations needs n >= 2 positions, got " + std::to_string(n));
    if (d < 1) throw std::invalid_argument("the width d must be at least 1, got " + std::to_string(d));
    if (opts.timeout_seconds <= 0)
        throw std::invalid_argument("the SMT timeout must be positive, got " + std::to_string(opts.timeout_seconds));
    SmtResult r{.layer = family.name, .property = family.symmetry(), .n = n, .d = d,
                .expected_symmetric = family.expected_symmetric()};

    if (opts.witness_cases > 0) {  // the witness search of every family: the engine's exact check at n positions
        const CheckOptions o{.arithmetic = Arithmetic::exact, .cases = opts.witness_cases, .seed = opts.witness_seed,
                             .min_len = n, .max_len = n, .d = d, .stop_requested = opts.stop_requested};
        const CheckResult found = check(family, r.property, o);
        if (found.counterexample && found.counterexample->confirmed_exactly) {
            r.counterexample = found.counterexample;
            r.witness_source = WitnessSource::exact_search;
        }
    }
    if (ask_z3(family, opts, r)) r.verdict = SmtVerdict::proved;
    else r.verdict = r.counterexample ? SmtVerdict::violated : SmtVerdict::unknown;
    return r;
}

std::string SmtResult::headline() const {
    const std::string what = identity::symmetric_word(property);
    if (verdict == SmtVerdict::proved)
        return "proved " + what + " (all real inputs and weights, uninterpreted exp/sqrt/tanh)";
    if (verdict == SmtVerdict::violated && witness_source == WitnessSource::exact_search)
        return "not " + what + ": the exact witness search found a witness (Z3 not asked)";
    if (verdict == SmtVerdict::violated)
        return "not " + what + ": Z3 found a model, confirmed in exact arithmetic with the real exp/sqrt/tanh";
    std::string z3 = "Z3 was not asked";
    for (const SmtQuery& q : queries) {
        if (!q.asked) continue;
        if (q.answer == SmtAnswer::sat) z3 = "Z3 found a model, which does not violate with the real exp/sqrt/tanh";
        if (q.answer == SmtAnswer::unknown) z3 = "Z3 answered unknown (" + q.reason_unknown + ")";
    }
    return "not proved: the exact witness search found no witness, and " + z3;
}

std::string describe_witness(const SmtResult& r, const std::string& indent) {
    const Counterexample& c = r.counterexample.value();
    const SideNames names = side_names(c.property);
    std::ostringstream s;
    s << "witness (" << witness_source_name(r.witness_source) << "): n = " << c.n() << ", d = " << c.d()
      << ", permutation " << c.perm.cycles() << " (rows: (P x)[i] = x[p[i]])\n";
    s << "  x =\n" << format_matrix(c.x);
    s << std::setprecision(17) << "  at position " << c.comparison.row << ", feature " << c.comparison.col << ": "
      << names.lhs << " = " << c.lhs(c.comparison.row, c.comparison.col) << ", " << names.rhs << " = "
      << c.rhs(c.comparison.row, c.comparison.col) << std::setprecision(6) << " (|difference| "
      << c.comparison.max_abs_diff << "), confirmed in exact rational arithmetic\n";
    if (r.witness_source == WitnessSource::z3_model) {
        std::size_t zero = 0;
        std::ostringstream listed;
        listed << std::setprecision(17);
        for (std::size_t k = 0; k < r.witness_weights.size(); ++k) {
            if (r.witness_weights[k] == 0) ++zero;
            else listed << " w" << k << " = " << r.witness_weights[k] << ";";
        }
        s << "  weights in draw order, the " << zero << " of " << r.witness_weights.size()
          << " not listed are 0:" << listed.str() << "\n";
    } else {
        s << "  weights: dyadic, weight seed " << c.weight_seed << "; the same case: " << c.replay << "\n";
    }
    std::istringstream lines(s.str());
    std::string text;
    for (std::string line; std::getline(lines, line);) text += indent + line + "\n";
    return text;
}

std::string describe(const SmtResult& r) {
    std::ostringstream s;
    s << r.layer << " at n = " << r.n << ", d = " << r.d << ": " << r.headline() << "\n";
    for (const SmtQuery& q : r.queries) detail::describe_answer(s, "  " + q.perm.cycles(), q);
    if (r.counterexample) s << describe_witness(r, "  ");
    return s.str();
}

}  // namespace permcheck
