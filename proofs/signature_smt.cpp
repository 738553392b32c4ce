#include "proofs/signature_smt.h"

#include "check/signature_check.h"
#include "proofs/signature_certificate.h"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <stdexcept>

namespace permcheck {

namespace {

// The family on symbolic weights w0, w1, ... and inputs <name>_0, <name>_1, ... (row-major).
struct SymbolicSignatureLayer {
    SignatureLayerFn<Symbolic> layer;
    NamedTensors<Symbolic> x;
    std::vector<Symbolic> constants;  // the inputs, then the weights
};

std::string constant_name(const std::string& prefix, std::size_t k) {
    std::string name = prefix;
    name += std::to_string(k);
    return name;
}

SymbolicSignatureLayer symbolic_layer(const SignatureFamily& f, const Signature& s, const Lengths& lengths) {
    std::size_t drawn = 0;
    Draw<Symbolic> draw = [&drawn] { return symbolic_constant(constant_name("w", drawn++)); };
    SymbolicSignatureLayer l{f.symbolic(draw), {}, {}};
    for (const TensorSpec& t : s.inputs) {
        NamedTensor<Symbolic>& u = l.x[t.name];
        u.shape = shape_of(t, lengths);
        std::size_t size = 1;
        for (int d : u.shape) size *= static_cast<std::size_t>(d);
        for (std::size_t k = 0; k < size; ++k) u.values.push_back(symbolic_constant(constant_name(t.name + "_", k)));
        l.constants.insert(l.constants.end(), u.values.begin(), u.values.end());
    }
    for (std::size_t k = 0; k < drawn; ++k) l.constants.push_back(symbolic_constant(constant_name("w", k)));
    return l;
}

// One generator of one axis: is some entry of the two sides different?
SmtQuery ask(const SymbolicSignatureLayer& l, const Signature& s, const Permutations& perms, const Permutation& g,
             const SmtOptions& opts) {
    const NamedTensors<Symbolic> lx = l.layer(l.x);
    const NamedTensors<Symbolic> lhs = l.layer(permuted_real_inputs(s, perms, l.x));
    z3::context& ctx = smt_context();
    z3::expr_vector differs(ctx);
    for (const TensorSpec& spec : s.outputs) {
        const NamedTensor<Symbolic> rhs = permuted_output(spec, perms, lx.at(spec.name));
        for (std::size_t k = 0; k < rhs.values.size(); ++k)
            differs.push_back(lhs.at(spec.name).values[k].expr() != rhs.values[k].expr());
    }
    z3::solver solver(ctx);
    solver.add(differs.empty() ? ctx.bool_val(false) : z3::mk_or(differs));
    SmtQuery q;
    q.perm = g;
    if (opts.keep_smtlib) q.smtlib = solver.to_smt2();
    const detail::IsolatedCheck found = detail::check_isolated(solver, {}, opts.timeout_seconds, opts.stop_requested);
    q.answer = found.answer;
    q.reason_unknown = found.answer == SmtAnswer::sat ? "a model, not confirmed for a layer over named inputs"
                                                      : found.reason_unknown;
    q.seconds = found.seconds;
    q.cpu_seconds = found.cpu_seconds;
    return q;
}

void prove_axis(AxisProof& a, const SymbolicSignatureLayer& l, const Signature& s, const Lengths& lengths,
                const SmtOptions& opts) {
    for (const Permutation& g : Permutation::generators(lengths.at(a.axis))) {
        Permutations perms;
        for (const auto& [axis, len] : lengths) perms[axis] = axis == a.axis ? g : Permutation::identity(len);
        a.queries.push_back(ask(l, s, perms, g, opts));
        if (a.queries.back().answer != SmtAnswer::unsat) return;
    }
    a.verdict = SmtVerdict::proved;
}

}  // namespace

bool SignatureSmtResult::as_expected() const {
    return !axes.empty() && std::all_of(axes.begin(), axes.end(), [](const AxisProof& a) { return a.as_expected(); });
}

SignatureSmtResult smt_prove_signature(const SignatureFamily& family, int length, const SmtOptions& opts) {
    if (!family.rational())
        throw std::invalid_argument("'" + family.name + "' has a mask or an index input: no symbolic proof (its rows "
                                    "of the verdict table check it, in float64 and exact)");
    if (length < 2 || length > 8)
        throw std::invalid_argument("a proof needs every axis of length 2 to 8, got " + std::to_string(length));
    const auto t0 = std::chrono::steady_clock::now();
    const Signature s = signature_of(family);
    if (std::any_of(s.inputs.begin(), s.inputs.end(), [](const TensorSpec& t) { return t.kind == TensorKind::mask; }))
        throw std::invalid_argument("'" + family.name + "' has a mask input: no symbolic proof (its certificate "
                                    "enumerates the masks; its rows of the verdict table check it)");
    SignatureSmtResult r;
    r.layer = family.name;
    for (const Axis& a : s.axes) r.lengths[a.name] = length;
    const std::map<std::string, std::string> witnesses = signature_witnesses(family, s, r.lengths, opts.witness_seed);
    std::optional<SymbolicSignatureLayer> l;
    for (const AxisExpectation& e : family.expectations) {
        AxisProof a{e.axis, property_along(s, e.axis), e.holds, SmtVerdict::unknown, {}, ""};
        if (const auto w = witnesses.find(e.axis); w != witnesses.end()) {
            a.verdict = SmtVerdict::violated;
            a.witness = w->second;
        } else {
            if (!l) l = symbolic_layer(family, s, r.lengths);
            prove_axis(a, *l, s, r.lengths, opts);
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
    s << " (" << r.seconds << " s)\n";
    for (const AxisProof& a : r.axes) {
        const std::string what = a.property == Property::invariance ? "invariant" : "equivariant";
        for (const SmtQuery& q : a.queries) {
            s << "  " << a.axis << " " << q.perm.cycles() << ": " << answer_name(q.answer);
            if (!q.reason_unknown.empty()) s << " (" << q.reason_unknown << ")";
            s << ", Z3 " << q.seconds << " s (CPU " << q.cpu_seconds << " s)\n";
        }
        if (!a.witness.empty()) s << "  " << a.axis << " witness (exact witness search, Z3 not asked): " << a.witness << "\n";
        s << "  " << a.axis << ": "
          << (a.verdict == SmtVerdict::proved     ? "proved " + what + " (all real inputs and weights, uninterpreted exp)"
              : a.verdict == SmtVerdict::violated ? "not " + what
                                                  : std::string("not proved"))
          << (a.as_expected() ? "" : "   <-- NOT what the verdict matrix expects") << "\n";
    }
    return s.str();
}

}  // namespace permcheck
