#include "proofs/smt.h"

#include "cases/signature_case.h"
#include "proofs/certificate.h"
#include "proofs/identity.h"

#include <algorithm>
#include <chrono>
#include <map>
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

namespace {
using identity::NamedMove;
using identity::NamedSubject;

// "w3": the name of symbolic constant k with this prefix. Appended, not prefix + ...: GCC 12 at -O3 warns falsely
// (-Wrestrict) on a literal + std::string.
std::string constant_name(const std::string& prefix, std::size_t k) {
    std::string name = prefix;
    name += std::to_string(k);
    return name;
}

// Exact values replaying a model's `values` in order from `next` on; throws std::logic_error when `layer` draws
// more values exactly than it did symbolically.
Draw<Rational> replay_draw(const std::vector<double>& values, std::size_t& next, const std::string& layer) {
    return [&values, &next, layer] {
        if (next >= values.size())
            throw std::logic_error("layer '" + layer + "' draws more values in exact arithmetic (" +
                                   std::to_string(next + 1) + ") than symbolically (" + std::to_string(values.size()) +
                                   ")");
        return Rational(values[next++]);
    };
}

// The family on symbolic weights w0, w1, ... and real inputs <name>_0, <name>_1, ... (row-major); the masks are
// set per assignment (identity::with_masks).
struct SymbolicLayer {
    LayerFn<Symbolic> layer;
    NamedTensors<Symbolic> reals;
    std::vector<Symbolic> constants;  // the real inputs in the order of the signature, then the weights
};

SymbolicLayer symbolic_layer(const Family& f, const Signature& s, const Lengths& lengths, int d) {
    std::size_t drawn = 0;
    Draw<Symbolic> draw = [&drawn] { return symbolic_constant(constant_name("w", drawn++)); };
    SymbolicLayer l{f.symbolic(draw, d, 0), {}, {}};
    l.reals = identity::real_inputs<Symbolic>(s, lengths, [&l](const TensorSpec& t, std::size_t k) {
        return l.constants.emplace_back(symbolic_constant(constant_name(t.name + "_", k)));
    });
    for (std::size_t k = 0; k < drawn; ++k) l.constants.push_back(symbolic_constant(constant_name("w", k)));
    return l;
}

// "pad=0100": each mask as name=bits, row-major, 1 = padding; empty without masks.
std::string assignment_label(const Tensors& masks) {
    std::string label;
    for (const auto& [name, m] : masks) {
        if (!label.empty()) label += ",";
        label += name + "=";
        for (double v : m.values) label += v != 0 ? '1' : '0';
    }
    return label;
}

// What one query asks: a generator of one axis (the identity on the others) at one mask assignment.
struct QueryPoint {
    NamedMove move;
    NamedSubject subject;
};

// Every generator of the axis (one at length 2, where (0 1) is both) at every mask assignment.
std::vector<QueryPoint> query_points(const Family& f, const Signature& s, const Lengths& lengths,
                                     const std::vector<Tensors>& masks, const std::string& axis, int d) {
    std::vector<Permutation> generators = Permutation::generators(lengths.at(axis));
    if (generators.size() == 2 && generators[0] == generators[1]) generators.pop_back();  // length 2: (0 1) twice
    std::vector<QueryPoint> points;
    for (const Permutation& g : generators)
        for (const Tensors& m : masks) points.push_back({identity::move_along(lengths, axis, g), {f, s, lengths, m, d}});
    return points;
}

// The exact evaluation of the subject at an input and weights, with the real exp, sqrt and tanh (ScalarTraits<Rational>):
// the first entry where the two sides differ into w; false when they agree, or the values overflow the real exp.
bool violates(Witness& w, const QueryPoint& at, const NamedTensors<Rational>& x, const std::vector<double>& weights) {
    const NamedSubject& subject = at.subject;
    std::size_t next = 0;
    Draw<Rational> draw = replay_draw(weights, next, subject.family.name);
    NamedTensors<Rational> lhs, rhs;
    try {
        const LayerFn<Rational> layer = subject.family.exact(draw, subject.d, 0);
        lhs = layer(subject.moved(at.move, x));
        rhs = subject.expected(at.move, layer(x));
    } catch (const std::domain_error&) {
        return false;  // the model's values overflow the real exp (computed in double): not a usable witness
    }
    bool found = false;
    subject.each_pair(lhs, rhs, [&](const NamedSubject::Entry& e, const Rational& l, const Rational& r) {
        if (found || l == r) return;
        found = true;
        w.output = e.output;
        w.where = position_of(e.k, rhs.at(e.output).shape);
        w.lhs = sc::to_double(l);
        w.rhs = sc::to_double(r);
    });
    return found;
}

// A sat model (the real inputs in the order of the signature, then the weights, each rounded to a double) evaluated
// in exact rational arithmetic, exp the exact value of std::exp of the double: the witness when the two sides differ
// there, each weight then zeroed in turn and kept zero when the violation survives (one exact evaluation per weight),
// so that the witness shows only the weights it needs.
std::optional<Witness> confirm_model(const QueryPoint& at, const std::vector<double>& model) {
    const NamedSubject& subject = at.subject;
    std::size_t next = 0;
    Draw<Rational> draw = replay_draw(model, next, subject.family.name);
    const NamedTensors<Rational> x = subject.input<Rational>(draw);
    Witness w{WitnessSource::z3_model, at.move.axis, at.move.g, assignment_label(subject.masks)};
    for (std::size_t from = 0; const TensorSpec& t : subject.s.inputs) {
        if (t.kind == TensorKind::mask) continue;
        const std::size_t to = from + x.at(t.name).values.size();
        w.inputs.emplace_back(t.name, Tensor{x.at(t.name).shape, std::vector<double>(model.begin() + static_cast<long>(from),
                                                                                     model.begin() + static_cast<long>(to))});
        from = to;
    }
    w.weights.assign(model.begin() + static_cast<long>(next), model.end());
    if (!violates(w, at, x, w.weights)) return std::nullopt;
    for (double& v : w.weights) {
        if (v == 0) continue;
        const double kept = v;
        v = 0;
        if (!violates(w, at, x, w.weights)) v = kept;
    }
    violates(w, at, x, w.weights);  // the entry and both sides at the weights kept
    return w;
}

// The axis's queries (its generators at every mask assignment) in turn, until one is not unsat: no proof is possible
// then, and the rest's timeouts would buy nothing; with keep_smtlib the rest are built for their SMT-LIB text but not
// asked, and so is every query when a witness already refuted the axis. A query asks whether some entry of the two
// sides differs, every entry kept, equal ones too, so that its SMT-LIB text states the whole claim. A sat answer's
// model, confirmed, refutes the axis; every query asked and unsat proves it.
void prove_axis(AxisProof& a, const SymbolicLayer& l, const std::vector<QueryPoint>& points, const SmtOptions& opts) {
    bool settled = a.witness.has_value();
    bool open = !settled;  // every query so far unsat
    for (const QueryPoint& at : points) {
        if (!open && !opts.keep_smtlib) break;
        const NamedTensors<Symbolic> x = identity::with_masks(l.reals, at.subject.masks);
        // L(x) before L(g x): Z3 numbers the terms in the order they are made, and the emitted files show the numbers.
        const NamedTensors<Symbolic> lx = l.layer(x);
        const NamedTensors<Symbolic> lhs = l.layer(at.subject.moved(at.move, x));
        const NamedTensors<Symbolic> rhs = at.subject.expected(at.move, lx);
        z3::expr_vector differs(smt_context());
        at.subject.each_pair(lhs, rhs, [&](const auto&, const Symbolic& left, const Symbolic& right) {
            differs.push_back(left.expr() != right.expr());
        });
        z3::solver solver(smt_context());
        solver.add(differs.empty() ? smt_context().bool_val(false) : z3::mk_or(differs));
        SmtQuery q{at.move.g, open};
        if (opts.keep_smtlib) q.smtlib = solver.to_smt2();
        std::optional<std::vector<double>> model;
        if (open) model = detail::check_isolated(solver, l.constants, opts.timeout_seconds, opts.stop_requested, q);
        else q.reason_unknown = settled ? "a witness settled it" : "an earlier query was not unsat";
        q.assignment = assignment_label(at.subject.masks);
        if (q.answer == SmtAnswer::sat && model) {
            std::optional<Witness> w = confirm_model(at, *model);
            q.model_confirmed = w.has_value();
            if (w) {
                a.witness = std::move(w);
                a.verdict = SmtVerdict::violated;
            }
        }
        settled = settled || q.model_confirmed;
        open = open && q.answer == SmtAnswer::unsat;
        a.queries.push_back(std::move(q));
    }
    if (open && !points.empty()) a.verdict = SmtVerdict::proved;
}

// One generator's queries: one line each without masks; with masks one line for the assignments answered unsat,
// then one for each other query (its assignment named).
void describe_generator(std::ostream& s, const AxisProof& a, const Permutation& g) {
    const auto summarized = [&g](const SmtQuery& q) {
        return q.perm == g && !q.assignment.empty() && q.asked && q.answer == SmtAnswer::unsat;
    };
    int unsat = 0;
    double seconds = 0, cpu = 0;
    for (const SmtQuery& q : a.queries)
        if (summarized(q)) {
            ++unsat;
            seconds += q.seconds;
            cpu += q.cpu_seconds;
        }
    if (unsat > 0)
        s << "  " << a.axis << " " << g.cycles() << ": unsat for " << unsat << " mask assignment"
          << (unsat == 1 ? "" : "s") << ", Z3 " << seconds << " s (CPU " << cpu << " s) in all\n";
    for (const SmtQuery& q : a.queries) {
        if (!(q.perm == g) || summarized(q)) continue;
        s << "  " << a.axis << " " << q.perm.cycles();
        if (!q.assignment.empty()) s << " masks " << q.assignment;
        s << ": " << (q.asked ? answer_name(q.answer) : "not asked");
        if (!q.reason_unknown.empty()) s << " (" << q.reason_unknown << ")";
        if (q.answer == SmtAnswer::sat) s << (q.model_confirmed ? ", model confirmed" : ", model not confirmed");
        if (q.asked) s << ", Z3 " << q.seconds << " s (CPU " << q.cpu_seconds << " s)";
        s << "\n";
    }
}

}  // namespace

SmtResult smt_prove(const Family& family, int length, int d, const SmtOptions& opts) {
    if (!family.rational())
        throw std::invalid_argument("'" + family.name + "' has an index input or max aggregation: no symbolic proof "
                                    "(its rows of the verdict table check it, in float64 and exact)");
    const int most = family.takes_width() ? kMaxProofLength : kMaxNamedProofLength;
    if (length < 2 || length > most)
        throw std::invalid_argument("a proof needs every axis of length 2 to " + std::to_string(most) + ", got " +
                                    std::to_string(length));
    if (opts.timeout_seconds <= 0)
        throw std::invalid_argument("the SMT timeout must be positive, got " + std::to_string(opts.timeout_seconds));
    const auto t0 = std::chrono::steady_clock::now();
    const Signature s = signature_of(family, d);
    SmtResult r;
    r.layer = family.name;
    r.d = family.takes_width() ? d : 0;
    for (const Axis& a : s.axes) r.lengths[a.name] = length;
    const std::vector<Tensors> masks = mask_assignments(s, r.lengths);
    r.mask_assignments = masks.size() > 1 || !masks.front().empty() ? static_cast<int>(masks.size()) : 0;
    std::map<std::string, Witness> witnesses;
    if (opts.witness_search) witnesses = exact_witnesses(family, s, r.lengths, opts.witness_seed, d);
    std::optional<SymbolicLayer> l;
    for (const Expectation& e : family.expectations) {
        const PropertyRules& rules = rules_of(e.property);
        if (!rules.decided_by_generators()) continue;
        const PropertyArgs args = rules.completed_args(s, {e.axis, PadPlacement::any, false, true});
        AxisProof a{e.axis, rules.recorded_as(s, args), e.holds};
        if (const auto w = witnesses.find(e.axis); w != witnesses.end()) {
            a.verdict = SmtVerdict::violated;
            a.witness = w->second;
        }
        if (!a.witness || opts.keep_smtlib) {
            if (!l) l = symbolic_layer(family, s, r.lengths, d);
            prove_axis(a, *l, query_points(family, s, r.lengths, masks, e.axis, d), opts);
        }
        r.axes.push_back(std::move(a));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

std::string describe(const SmtResult& r) {
    std::ostringstream s;
    s << r.layer << " at";
    for (const auto& [axis, len] : r.lengths) s << " " << axis << " = " << len;
    if (r.d > 0) s << ", d = " << r.d;
    if (r.mask_assignments > 0) s << ", " << r.mask_assignments << " mask assignments (none padding a whole line)";
    s << " (" << r.seconds << " s)\n";
    const std::string masks = r.mask_assignments > 0 ? ", every mask assignment" : "";
    for (const AxisProof& a : r.axes) {
        const std::string what = property_adjective(a.property);
        std::vector<Permutation> generators;
        for (const SmtQuery& q : a.queries)
            if (std::ranges::find(generators, q.perm) == generators.end()) generators.push_back(q.perm);
        for (const Permutation& g : generators) describe_generator(s, a, g);
        if (a.witness) {
            const bool model = a.witness->source == WitnessSource::z3_model;
            s << "  " << a.axis << " witness (" << witness_source_name(a.witness->source)
              << (model ? "" : ", Z3 not asked") << "): " << describe(*a.witness, "  ") << "\n";
        }
        s << "  " << a.axis << ": "
          << (a.verdict == SmtVerdict::proved     ? "proved " + what + " (all real inputs and weights" + masks +
                                                        ", uninterpreted exp/sqrt/tanh)"
              : a.verdict == SmtVerdict::violated ? "not " + what
                                                  : std::string("not proved"))
          << (a.as_expected() ? "" : "   <-- NOT what the verdict matrix expects") << "\n";
    }
    return s.str();
}

}  // namespace permcheck
