#include "proofs/signature_smt.h"

#include "check/signature_check.h"
#include "proofs/signature_certificate.h"

#include "check/signature_case.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace permcheck {

namespace {

// The family on symbolic weights w0, w1, ... and real inputs <name>_0, <name>_1, ... (row-major); the masks are
// set per assignment (with_masks).
struct SymbolicSignatureLayer {
    SignatureLayerFn<Symbolic> layer;
    NamedTensors<Symbolic> reals;
    std::vector<Symbolic> constants;  // the real inputs in the order of the signature, then the weights
};

std::string constant_name(const std::string& prefix, std::size_t k) {
    std::string name = prefix;
    name += std::to_string(k);
    return name;
}

std::size_t element_count(const std::vector<int>& shape) {
    std::size_t size = 1;
    for (int d : shape) size *= static_cast<std::size_t>(d);
    return size;
}

SymbolicSignatureLayer symbolic_layer(const SignatureFamily& f, const Signature& s, const Lengths& lengths) {
    std::size_t drawn = 0;
    Draw<Symbolic> draw = [&drawn] { return symbolic_constant(constant_name("w", drawn++)); };
    SymbolicSignatureLayer l{f.symbolic(draw), {}, {}};
    for (const TensorSpec& t : s.inputs) {
        if (t.kind == TensorKind::mask) continue;
        NamedTensor<Symbolic>& u = l.reals[t.name];
        u.shape = shape_of(t, lengths);
        for (std::size_t k = 0; k < element_count(u.shape); ++k)
            u.values.push_back(symbolic_constant(constant_name(t.name + "_", k)));
        l.constants.insert(l.constants.end(), u.values.begin(), u.values.end());
    }
    for (std::size_t k = 0; k < drawn; ++k) l.constants.push_back(symbolic_constant(constant_name("w", k)));
    return l;
}

// The inputs of one query: the symbolic real inputs and the masks of one assignment as the numerals 0 and 1.
template <class S> NamedTensors<S> with_masks(NamedTensors<S> x, const Tensors& masks) {
    for (const auto& [name, m] : masks) {
        NamedTensor<S>& u = x[name];
        u.shape = m.shape;
        for (double v : m.values) u.values.push_back(S(static_cast<int>(v)));
    }
    return x;
}

// "pad=0100": each mask as name=bits, row-major, 1 = padding; empty without masks.
std::string assignment_label(const Tensors& masks) {
    std::string label;
    for (const auto& [name, m] : masks) {
        if (!label.empty()) label += ",";
        label += name;
        label += "=";
        for (double v : m.values) label += v != 0 ? '1' : '0';
    }
    return label;
}

std::string number_list(const std::vector<double>& values) {
    std::ostringstream s;
    s << std::setprecision(17) << "[";
    for (std::size_t k = 0; k < values.size(); ++k) s << (k ? ", " : "") << values[k];
    s << "]";
    return s.str();
}

// What one query asks: a generator of one axis (the identity on the others) at one mask assignment.
struct QueryPoint {
    std::string axis;
    Permutation g;
    Permutations perms;
    const Tensors* masks = nullptr;
};

// The first entry where the exact sides differ, as the witness's text; nothing when they agree.
std::optional<std::string> exact_difference(const Signature& s, const QueryPoint& at, const NamedTensors<Rational>& lhs,
                                            const NamedTensors<Rational>& lx) {
    for (const TensorSpec& spec : s.outputs) {
        const NamedTensor<Rational> rhs = permuted_output(spec, at.perms, lx.at(spec.name));
        const NamedTensor<Rational>& left = lhs.at(spec.name);
        for (std::size_t k = 0; k < rhs.values.size(); ++k) {
            if (left.values[k] == rhs.values[k]) continue;
            std::vector<int> where(rhs.shape.size());
            for (std::size_t d = rhs.shape.size(), rest = k; d-- > 0; rest /= static_cast<std::size_t>(rhs.shape[d]))
                where[d] = static_cast<int>(rest % static_cast<std::size_t>(rhs.shape[d]));
            std::ostringstream t;
            t << std::setprecision(17) << "output " << spec.name << " at " << index_text(where) << ": "
              << sc::to_double(left.values[k]) << " against " << sc::to_double(rhs.values[k])
              << " (an exact, nonzero difference)";
            return t.str();
        }
    }
    return std::nullopt;
}

// A sat model (the real inputs in the order of the signature, then the weights, each rounded to a double)
// evaluated in exact rational arithmetic, exp the exact value of std::exp of the double (ScalarTraits<Rational>):
// the witness's text when the two sides differ there.
std::optional<std::string> confirm_model(const SignatureFamily& f, const Signature& s, const Lengths& lengths,
                                         const QueryPoint& at, const std::vector<double>& model) {
    std::size_t next = 0;
    Draw<Rational> draw = [&] {
        if (next >= model.size())
            throw std::logic_error("'" + f.name + "' draws more weights exactly than symbolically");
        return Rational(model[next++]);
    };
    NamedTensors<Rational> x;
    std::ostringstream inputs;
    for (const TensorSpec& t : s.inputs) {
        if (t.kind == TensorKind::mask) continue;
        NamedTensor<Rational>& u = x[t.name];
        u.shape = shape_of(t, lengths);
        const std::size_t from = next;
        for (std::size_t k = 0; k < element_count(u.shape); ++k) u.values.push_back(draw());
        const auto begin = model.begin();
        inputs << ", " << t.name << " = "
               << number_list({begin + static_cast<long>(from), begin + static_cast<long>(next)});
    }
    x = with_masks(std::move(x), *at.masks);
    try {
        const std::size_t first_weight = next;
        const SignatureLayerFn<Rational> layer = f.exact(draw);
        const NamedTensors<Rational> lhs = layer(permuted_real_inputs(s, at.perms, x));
        const std::optional<std::string> d = exact_difference(s, at, lhs, layer(x));
        if (!d) return std::nullopt;
        std::string text = "permutation " + at.g.cycles() + " of axis " + at.axis;
        if (!at.masks->empty()) text += ", masks " + assignment_label(*at.masks);
        text += ", " + *d + "; the Z3 model replayed in exact rationals (exp: std::exp of the double, used exactly)";
        text += inputs.str();
        text += ", weights w0.. = " + number_list({model.begin() + static_cast<long>(first_weight), model.end()});
        return text;
    } catch (const std::domain_error&) {
        return std::nullopt;  // the model's values overflow the real exp: not a usable witness
    }
}

// One query: is some entry of the two sides different? Sent to Z3 only when `asked`; a model is kept for
// confirm_model.
SmtQuery ask(const SymbolicSignatureLayer& l, const Signature& s, const QueryPoint& at, const SmtOptions& opts,
             bool asked, std::optional<std::vector<double>>& model) {
    const NamedTensors<Symbolic> x = with_masks(l.reals, *at.masks);
    const NamedTensors<Symbolic> lx = l.layer(x);
    const NamedTensors<Symbolic> lhs = l.layer(permuted_real_inputs(s, at.perms, x));
    z3::context& ctx = smt_context();
    z3::expr_vector differs(ctx);
    for (const TensorSpec& spec : s.outputs) {
        const NamedTensor<Symbolic> rhs = permuted_output(spec, at.perms, lx.at(spec.name));
        for (std::size_t k = 0; k < rhs.values.size(); ++k)
            differs.push_back(lhs.at(spec.name).values[k].expr() != rhs.values[k].expr());
    }
    z3::solver solver(ctx);
    solver.add(differs.empty() ? ctx.bool_val(false) : z3::mk_or(differs));
    SmtQuery q;
    q.perm = at.g;
    q.asked = asked;
    q.assignment = assignment_label(*at.masks);
    if (opts.keep_smtlib) q.smtlib = solver.to_smt2();
    if (!asked) return q;
    detail::IsolatedCheck found = detail::check_isolated(solver, l.constants, opts.timeout_seconds, opts.stop_requested);
    q.answer = found.answer;
    q.reason_unknown = found.reason_unknown;
    q.seconds = found.seconds;
    q.cpu_seconds = found.cpu_seconds;
    model = std::move(found.model);
    return q;
}

struct ProofContext {
    const SignatureFamily& family;
    const Signature& s;
    const Lengths& lengths;
    const std::vector<Tensors>& masks;
    const SmtOptions& opts;
};

// Every generator of the axis (one at length 2, where (0 1) is both) at every mask assignment, until a query is
// not unsat (the rest only built, not asked, when their SMT-LIB text is wanted). None is asked when a witness
// already refuted the axis.
void prove_axis(AxisProof& a, const SymbolicSignatureLayer& l, const ProofContext& c) {
    bool open = a.witness.empty();  // every query so far unsat
    std::vector<Permutation> generators = Permutation::generators(c.lengths.at(a.axis));
    if (generators.size() == 2 && generators[0] == generators[1]) generators.pop_back();  // length 2: (0 1) twice
    for (const Permutation& g : generators) {
        QueryPoint at{a.axis, g, {}, nullptr};
        for (const auto& [axis, len] : c.lengths) at.perms[axis] = axis == a.axis ? g : Permutation::identity(len);
        for (const Tensors& m : c.masks) {
            if (!open && !c.opts.keep_smtlib) return;
            at.masks = &m;
            std::optional<std::vector<double>> model;
            a.queries.push_back(ask(l, c.s, at, c.opts, open, model));
            SmtQuery& q = a.queries.back();
            if (!q.asked) {
                q.reason_unknown = a.witness.empty() ? "an earlier query was not unsat" : "a witness settled it";
                continue;
            }
            open = q.answer == SmtAnswer::unsat;
            if (q.answer != SmtAnswer::sat) continue;
            const std::optional<std::string> w = model ? confirm_model(c.family, c.s, c.lengths, at, *model) : std::nullopt;
            q.model_confirmed = w.has_value();
            if (!w) continue;
            a.witness = *w;
            a.witness_from_model = true;
            a.verdict = SmtVerdict::violated;
        }
    }
    if (open) a.verdict = SmtVerdict::proved;
}

}  // namespace

bool SignatureSmtResult::as_expected() const {
    return !axes.empty() && std::all_of(axes.begin(), axes.end(), [](const AxisProof& a) { return a.as_expected(); });
}

SignatureSmtResult smt_prove_signature(const SignatureFamily& family, int length, const SmtOptions& opts) {
    if (!family.rational())
        throw std::invalid_argument("'" + family.name + "' has an index input or max aggregation: no symbolic proof "
                                    "(its rows of the verdict table check it, in float64 and exact)");
    if (length < 2 || length > 8)
        throw std::invalid_argument("a proof needs every axis of length 2 to 8, got " + std::to_string(length));
    const auto t0 = std::chrono::steady_clock::now();
    const Signature s = signature_of(family);
    SignatureSmtResult r;
    r.layer = family.name;
    for (const Axis& a : s.axes) r.lengths[a.name] = length;
    const std::vector<Tensors> masks = mask_assignments(s, r.lengths);
    r.mask_assignments = masks.size() > 1 || !masks.front().empty() ? static_cast<int>(masks.size()) : 0;
    const std::map<std::string, std::string> witnesses =
        opts.witness_cases > 0 ? signature_witnesses(family, s, r.lengths, opts.witness_seed)
                               : std::map<std::string, std::string>{};
    const ProofContext context{family, s, r.lengths, masks, opts};
    std::optional<SymbolicSignatureLayer> l;
    for (const AxisExpectation& e : family.expectations) {
        AxisProof a{e.axis, property_along(s, e.axis), e.holds, SmtVerdict::unknown, {}, "", false};
        if (const auto w = witnesses.find(e.axis); w != witnesses.end()) {
            a.verdict = SmtVerdict::violated;
            a.witness = w->second;
        }
        if (a.witness.empty() || opts.keep_smtlib) {
            if (!l) l = symbolic_layer(family, s, r.lengths);
            prove_axis(a, *l, context);
        }
        r.axes.push_back(std::move(a));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

namespace {

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

std::string describe(const SignatureSmtResult& r) {
    std::ostringstream s;
    s << r.layer << " at";
    for (const auto& [axis, len] : r.lengths) s << " " << axis << " = " << len;
    if (r.mask_assignments > 0) s << ", " << r.mask_assignments << " mask assignments (none padding a whole line)";
    s << " (" << r.seconds << " s)\n";
    const std::string masks = r.mask_assignments > 0 ? ", every mask assignment" : "";
    for (const AxisProof& a : r.axes) {
        const std::string what = a.property == Property::invariance ? "invariant" : "equivariant";
        std::vector<Permutation> generators;
        for (const SmtQuery& q : a.queries)
            if (std::find(generators.begin(), generators.end(), q.perm) == generators.end()) generators.push_back(q.perm);
        for (const Permutation& g : generators) describe_generator(s, a, g);
        if (!a.witness.empty())
            s << "  " << a.axis << " witness ("
              << (a.witness_from_model ? "Z3 model" : "exact witness search, Z3 not asked") << "): " << a.witness << "\n";
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
