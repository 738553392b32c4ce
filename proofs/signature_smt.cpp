#include "proofs/signature_smt.h"

#include "check/signature_case.h"
#include "check/signature_check.h"
#include "proofs/identity.h"
#include "proofs/signature_certificate.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace permcheck {
namespace {
using identity::NamedMove;
using identity::NamedSubject;

// The family on symbolic weights w0, w1, ... and real inputs <name>_0, <name>_1, ... (row-major); the masks are
// set per assignment (identity::with_masks).
struct SymbolicSignatureLayer {
    SignatureLayerFn<Symbolic> layer;
    NamedTensors<Symbolic> reals;
    std::vector<Symbolic> constants;  // the real inputs in the order of the signature, then the weights
};

SymbolicSignatureLayer symbolic_layer(const SignatureFamily& f, const Signature& s, const Lengths& lengths) {
    std::size_t drawn = 0;
    Draw<Symbolic> draw = [&drawn] { return symbolic_constant(detail::constant_name("w", drawn++)); };
    SymbolicSignatureLayer l{f.symbolic(draw), {}, {}};
    l.reals = identity::real_inputs<Symbolic>(s, lengths, [&l](const TensorSpec& t, std::size_t k) {
        return l.constants.emplace_back(symbolic_constant(detail::constant_name(t.name + "_", k)));
    });
    for (std::size_t k = 0; k < drawn; ++k) l.constants.push_back(symbolic_constant(detail::constant_name("w", k)));
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
std::vector<QueryPoint> query_points(const SignatureFamily& f, const Signature& s, const Lengths& lengths,
                                     const std::vector<Tensors>& masks, const std::string& axis) {
    std::vector<Permutation> generators = Permutation::generators(lengths.at(axis));
    if (generators.size() == 2 && generators[0] == generators[1]) generators.pop_back();  // length 2: (0 1) twice
    std::vector<QueryPoint> points;
    for (const Permutation& g : generators)
        for (const Tensors& m : masks) points.push_back({identity::move_along(lengths, axis, g), {f, s, lengths, m}});
    return points;
}

// The first entry where the exact sides differ, into w; false when they agree.
bool first_difference(SignatureWitness& w, const NamedSubject& subject, const NamedTensors<Rational>& lhs,
                      const NamedTensors<Rational>& rhs) {
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

// A sat model (the real inputs in the order of the signature, then the weights, each rounded to a double)
// evaluated in exact rational arithmetic, exp the exact value of std::exp of the double (ScalarTraits<Rational>):
// the witness when the two sides differ there.
std::optional<SignatureWitness> confirm_model(const QueryPoint& at, const std::vector<double>& model) {
    const NamedSubject& subject = at.subject;
    std::size_t next = 0;
    Draw<Rational> draw = detail::replay_draw(model, next, subject.family.name);
    const NamedTensors<Rational> x = subject.input<Rational>(draw);
    SignatureWitness w{WitnessSource::z3_model, at.move.axis, at.move.g, assignment_label(subject.masks)};
    for (std::size_t from = 0; const TensorSpec& t : subject.s.inputs) {
        if (t.kind == TensorKind::mask) continue;
        const std::size_t to = from + x.at(t.name).values.size();
        w.inputs.emplace_back(t.name, std::vector<double>(model.begin() + static_cast<long>(from),
                                                          model.begin() + static_cast<long>(to)));
        from = to;
    }
    try {
        w.weights.assign(model.begin() + static_cast<long>(next), model.end());
        const auto [lhs, rhs] = identity::sides(subject, subject.family.exact(draw), at.move, x);
        return first_difference(w, subject, lhs, rhs) ? std::optional(w) : std::nullopt;
    } catch (const std::domain_error&) {
        return std::nullopt;  // the model's values overflow the real exp: not a usable witness
    }
}

// The axis's queries in turn (detail::ask_in_turn), none asked when a witness already refuted the axis; a sat
// answer's model, confirmed, refutes it.
void prove_axis(AxisProof& a, const SymbolicSignatureLayer& l, const std::vector<QueryPoint>& points,
                const SmtOptions& opts) {
    const auto ask = [&](const QueryPoint& at, bool asked) {
        const NamedTensors<Symbolic> x = identity::with_masks(l.reals, at.subject.masks);
        // L(x) before L(g x), not identity::sides: Z3 numbers the terms in the order they are made, and the emitted
        // files show the numbers.
        const NamedTensors<Symbolic> lx = l.layer(x);
        const NamedTensors<Symbolic> lhs = l.layer(at.subject.moved(at.move, x));
        const NamedTensors<Symbolic> rhs = at.subject.expected(at.move, lx);
        std::optional<std::vector<double>> model;
        SmtQuery q = detail::run_query(at.subject, lhs, rhs, l.constants, at.move.g, asked, opts, model);
        q.assignment = assignment_label(at.subject.masks);
        if (q.answer != SmtAnswer::sat || !model) return q;
        std::optional<SignatureWitness> w = confirm_model(at, *model);
        q.model_confirmed = w.has_value();
        if (w) {
            a.witness = std::move(w);
            a.verdict = SmtVerdict::violated;
        }
        return q;
    };
    if (detail::ask_in_turn(points, a.witness.has_value(), opts, a.queries, ask)) a.verdict = SmtVerdict::proved;
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
        std::string head = "  " + a.axis + " " + q.perm.cycles();
        if (!q.assignment.empty()) head += " masks " + q.assignment;
        detail::describe_answer(s, head, q);
    }
}

}  // namespace

SignatureSmtResult smt_prove_signature(const SignatureFamily& family, int length, const SmtOptions& opts) {
    if (!family.rational())
        throw std::invalid_argument("'" + family.name + "' has an index input or max aggregation: no symbolic proof "
                                    "(its rows of the verdict table check it, in float64 and exact)");
    if (length < 2 || length > kMaxProofLength)
        throw std::invalid_argument("a proof needs every axis of length 2 to " + std::to_string(kMaxProofLength) +
                                    ", got " + std::to_string(length));
    const auto t0 = std::chrono::steady_clock::now();
    const Signature s = signature_of(family);
    SignatureSmtResult r;
    r.layer = family.name;
    for (const Axis& a : s.axes) r.lengths[a.name] = length;
    const std::vector<Tensors> masks = mask_assignments(s, r.lengths);
    r.mask_assignments = masks.size() > 1 || !masks.front().empty() ? static_cast<int>(masks.size()) : 0;
    std::map<std::string, SignatureWitness> witnesses;
    if (opts.witness_cases > 0) witnesses = signature_witnesses(family, s, r.lengths, opts.witness_seed);
    std::optional<SymbolicSignatureLayer> l;
    for (const AxisExpectation& e : family.expectations) {
        AxisProof a{e.axis, property_along(s, e.axis), e.holds, SmtVerdict::unknown, {}, std::nullopt};
        if (const auto w = witnesses.find(e.axis); w != witnesses.end()) {
            a.verdict = SmtVerdict::violated;
            a.witness = w->second;
        }
        if (!a.witness || opts.keep_smtlib) {
            if (!l) l = symbolic_layer(family, s, r.lengths);
            prove_axis(a, *l, query_points(family, s, r.lengths, masks, e.axis), opts);
        }
        r.axes.push_back(std::move(a));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

std::string describe(const SignatureSmtResult& r) {
    std::ostringstream s;
    s << r.layer << " at";
    for (const auto& [axis, len] : r.lengths) s << " " << axis << " = " << len;
    if (r.mask_assignments > 0) s << ", " << r.mask_assignments << " mask assignments (none padding a whole line)";
    s << " (" << r.seconds << " s)\n";
    const std::string masks = r.mask_assignments > 0 ? ", every mask assignment" : "";
    for (const AxisProof& a : r.axes) {
        const std::string what = identity::symmetric_word(a.property);
        std::vector<Permutation> generators;
        for (const SmtQuery& q : a.queries)
            if (std::ranges::find(generators, q.perm) == generators.end()) generators.push_back(q.perm);
        for (const Permutation& g : generators) describe_generator(s, a, g);
        if (a.witness) {
            const bool model = a.witness->source == WitnessSource::z3_model;
            s << "  " << a.axis << " witness (" << witness_source_name(a.witness->source)
              << (model ? "" : ", Z3 not asked") << "): " << describe(*a.witness) << "\n";
        }
        s << "  " << a.axis << ": "
          << (a.verdict == SmtVerdict::proved     ? "proved " + what + " (all real inputs and weights" + masks +
                                                        ", uninterpreted exp)"
              : a.verdict == SmtVerdict::violated ? "not " + what
                                                  : std::string("not proved"))
          << (a.as_expected() ? "" : "   <-- NOT what the verdict matrix expects") << "\n";
    }
    return s.str();
}

}  // namespace permcheck
