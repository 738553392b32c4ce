#include "proofs/signature_certificate.h"

#include "check/signature_case.h"
#include "check/signature_check.h"
#include "scalars/degree.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace permcheck {

namespace {

// Every permutation the certificate checks: each generator of each axis's symmetric group on that axis alone.
struct Move {
    std::string axis;
    Permutation g;
    Permutations perms;  // g on `axis`, the identity elsewhere
};

std::vector<Move> generator_moves(const Lengths& lengths) {
    std::vector<Move> moves;
    for (const auto& [axis, len] : lengths)
        for (const Permutation& g : Permutation::generators(len)) {
            Move m{axis, g, {}};
            for (const auto& [other, l] : lengths) m.perms[other] = other == axis ? g : Permutation::identity(l);
            moves.push_back(std::move(m));
        }
    return moves;
}

AxisCertificate* axis_of(SignatureCertificate& c, const std::string& axis) {
    for (AxisCertificate& a : c.axes)
        if (a.axis == axis) return &a;
    return nullptr;
}

std::string num(double v) {
    std::ostringstream s;
    s << std::setprecision(17) << v;
    return s.str();
}

std::string witness_text(const Move& m, const OutputComparison& o, const std::string& how) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < o.where.size(); ++d)
        at = at * static_cast<std::size_t>(o.layer_of_permuted.shape[d]) + static_cast<std::size_t>(o.where[d]);
    return "permutation " + m.g.cycles() + " of axis " + m.axis + ", output " + o.name + " at " + index_text(o.where) +
           ": " + num(o.layer_of_permuted.values.at(at)) + " against " + num(o.permuted_layer.values.at(at)) +
           " (an exact, nonzero difference; ~" + num(o.max_abs_diff) + "), " + how;
}

// The exact witness search: dyadic weights and the signature audit's inputs, exactly.
void search_witnesses(SignatureCertificate& c, const SignatureFamily& f, const Signature& s,
                      const SignatureCertificateOptions& o) {
    for (const auto& [axis, text] : signature_witnesses(f, s, c.lengths, o.seed))
        if (AxisCertificate* a = axis_of(c, axis)) {
            a->conclusive = true;
            a->holds = false;
            a->method = Method::exact_witness;
            a->witness = text;
        }
}

// The inputs at these lengths: real entries from `draw`, mask entries from `masks` (one value assignment of every
// mask input).
template <class S>
NamedTensors<S> drawn_inputs(const Signature& s, const Lengths& lengths, Draw<S>& draw, const Tensors& masks) {
    NamedTensors<S> x;
    for (const TensorSpec& t : s.inputs) {
        NamedTensor<S>& u = x[t.name];
        u.shape = shape_of(t, lengths);
        std::size_t size = 1;
        for (int d : u.shape) size *= static_cast<std::size_t>(d);
        for (std::size_t k = 0; k < size; ++k)
            u.values.push_back(t.kind == TensorKind::mask ? S(static_cast<int>(masks.at(t.name).values[k])) : draw());
    }
    return x;
}

DegreeBound signature_degree(const SignatureFamily& f, const Signature& s, const Lengths& lengths,
                             const Tensors& masks) {
    DivisorRecord record;
    Draw<Degree> variable = [] { return Degree::variable(); };
    const SignatureLayerFn<Degree> layer = f.degree(variable);
    const NamedTensors<Degree> x = drawn_inputs<Degree>(s, lengths, variable, masks);
    const NamedTensors<Degree> lx = layer(x);
    long long numerator = 0;
    for (const Move& m : generator_moves(lengths)) {
        const NamedTensors<Degree> lhs = layer(permuted_real_inputs(s, m.perms, x));
        for (const TensorSpec& spec : s.outputs) {
            const NamedTensor<Degree> rhs = permuted_output(spec, m.perms, lx.at(spec.name));
            for (std::size_t k = 0; k < rhs.values.size(); ++k)
                numerator = std::max(numerator, Degree(lhs.at(spec.name).values[k] - rhs.values[k]).numerator_degree());
        }
    }
    DegreeBound bound;
    bound.numerator = numerator;
    bound.divisors = record.total_degree();
    bound.divisor_count = record.count();
    return bound;
}

Rational as_rational(const RationalStandin& v) { return Rational(v.backend().data()); }

// One random point: the first generator whose sides differ refutes its axis (an exact difference of the stand-in
// layer); returns false when a denominator vanished there.
bool schwartz_zippel_point(SignatureCertificate& c, const SignatureFamily& f, const Signature& s, SplitMix64& rng,
                           const Tensors& masks) {
    try {
        Draw<RationalStandin> draw = uniform_integers(rng, c.set_bits);
        const SignatureLayerFn<RationalStandin> layer = f.standin(draw);
        const NamedTensors<RationalStandin> x = drawn_inputs<RationalStandin>(s, c.lengths, draw, masks);
        const NamedTensors<RationalStandin> lx = layer(x);
        for (const Move& m : generator_moves(c.lengths)) {
            AxisCertificate* a = axis_of(c, m.axis);
            if (!a || a->conclusive) continue;
            const NamedTensors<RationalStandin> lhs = layer(permuted_real_inputs(s, m.perms, x));
            for (const TensorSpec& spec : s.outputs) {
                const NamedTensor<RationalStandin> rhs = permuted_output(spec, m.perms, lx.at(spec.name));
                for (std::size_t k = 0; k < rhs.values.size() && !a->conclusive; ++k)
                    if (lhs.at(spec.name).values[k] != rhs.values[k]) {
                        a->conclusive = true;
                        a->method = Method::schwartz_zippel;
                        a->witness = "permutation " + m.g.cycles() + " of axis " + m.axis + ", output " + spec.name +
                                     " entry " + std::to_string(k) + ": exact difference " +
                                     as_rational(RationalStandin(lhs.at(spec.name).values[k] - rhs.values[k])).str() +
                                     " of the stand-in layer at a random integer point";
                    }
            }
        }
    } catch (const std::exception& e) {
        c.note = std::string("a random point could not be evaluated (") + e.what() + "); rerun with another --seed";
        return false;
    }
    return true;
}

// With masks, one identity test per mask assignment: D' the largest over them, and the union bound over the
// assignments (A of them) asks (D'/|S|)^k <= 2^target / A of each.
void schwartz_zippel(SignatureCertificate& c, const SignatureFamily& f, const Signature& s,
                     const SignatureCertificateOptions& o) {
    const std::vector<Tensors> masks = mask_assignments(s, c.lengths);
    c.mask_assignments = masks.size() > 1 || !masks.front().empty() ? static_cast<int>(masks.size()) : 0;
    for (const Tensors& m : masks) {
        const DegreeBound d = signature_degree(f, s, c.lengths, m);
        if (d.total() > c.degree.total()) c.degree = d;
    }
    const int union_bits = static_cast<int>(std::ceil(std::log2(static_cast<double>(masks.size()))));
    c.trials = o.trials;
    c.set_bits = set_bits_for(c.degree.total(), o.trials, o.target_log2 - union_bits);
    c.log2_bound = c.degree.total() <= 0 ? -std::numeric_limits<double>::infinity()
                                         : o.trials * (std::log2(static_cast<double>(c.degree.total())) - c.set_bits) +
                                               std::log2(static_cast<double>(masks.size()));
    SplitMix64 rng(o.seed);
    for (const Tensors& m : masks)
        for (int t = 0; t < o.trials; ++t)
            if (!schwartz_zippel_point(c, f, s, rng, m)) return;
    for (AxisCertificate& a : c.axes)
        if (!a.conclusive) {
            a.conclusive = true;
            a.holds = true;
            a.method = Method::schwartz_zippel;
        }
}

}  // namespace

std::vector<Tensors> mask_assignments(const Signature& s, const Lengths& lengths) {
    Tensors base;
    std::size_t bits = 0;
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::mask) {
            Tensor& m = base[t.name];
            m.shape = shape_of(t, lengths);
            m.values.assign(m.size(), 0.0);
            bits += m.size();
        }
    if (bits > 12) throw std::invalid_argument("more than 12 mask entries: too many mask assignments to enumerate");
    std::vector<Tensors> all;
    for (std::uint64_t code = 0; code < (std::uint64_t{1} << bits); ++code) {
        Tensors masks = base;
        std::size_t bit = 0;
        for (auto& [name, m] : masks)
            for (double& v : m.values) v = static_cast<double>((code >> bit++) & 1U);
        Tensors inputs = masks;
        for (const TensorSpec& t : s.inputs)
            if (t.kind != TensorKind::mask) inputs[t.name] = Tensor{shape_of(t, lengths), std::vector<double>(0)};
        if (masks_keep_a_position(s, inputs)) all.push_back(std::move(masks));
    }
    return all;
}

std::map<std::string, std::string> signature_witnesses(const SignatureFamily& f, const Signature& s,
                                                       const Lengths& lengths, std::uint64_t seed) {
    constexpr int kAttempts = 20;
    std::map<std::string, std::string> found;
    const std::vector<Move> moves = generator_moves(lengths);
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        const std::uint64_t weights = seed + static_cast<std::uint64_t>(attempt);
        const Tensors x = draw_signature_case(s, lengths, rc::Random(weights ^ 0x5eedULL), 100).inputs;
        for (const Move& m : moves) {
            if (found.count(m.axis)) continue;
            for (const OutputComparison& out : compare_signature_case<Rational>(f, s, lengths, m.perms, x, weights))
                if (!out.holds && !found.count(m.axis))
                    found[m.axis] = witness_text(m, out, "dyadic weights of seed " + std::to_string(weights) +
                                                             ", exact rationals with exp evaluated in double and used exactly");
        }
    }
    return found;
}

bool SignatureCertificate::as_expected() const {
    return !axes.empty() && std::all_of(axes.begin(), axes.end(), [](const AxisCertificate& a) { return a.as_expected(); });
}

SignatureCertificate certify_signature(const SignatureFamily& family, const SignatureCertificateOptions& opts) {
    if (!family.rational())
        throw std::invalid_argument("'" + family.name + "' has an index input or max aggregation: no polynomial "
                                    "identity certificate (its rows of the verdict table check it, in float64 and exact)");
    if (opts.length < 2 || opts.length > 16)
        throw std::invalid_argument("a certificate needs every axis of length 2 to 16, got " + std::to_string(opts.length));
    if (opts.trials < 1 || opts.trials > 64)
        throw std::invalid_argument("the number of trials must be in [1, 64], got " + std::to_string(opts.trials));
    const Signature s = signature_of(family);
    SignatureCertificate c;
    c.layer = family.name;
    for (const Axis& a : s.axes) c.lengths[a.name] = opts.length;
    for (const AxisExpectation& e : family.expectations)
        c.axes.push_back({e.axis, property_along(s, e.axis), e.holds, false, false, Method::none, ""});
    search_witnesses(c, family, s, opts);
    if (std::any_of(c.axes.begin(), c.axes.end(), [](const AxisCertificate& a) { return !a.conclusive; }))
        schwartz_zippel(c, family, s, opts);
    return c;
}

std::string describe(const SignatureCertificate& c) {
    std::ostringstream s;
    s << c.layer << ": every axis at length";
    for (const auto& [axis, len] : c.lengths) s << " " << axis << " = " << len;
    s << "\n  generators: (0 1) and (0 1 ... len-1) of each axis, on that axis alone (they generate the product of "
         "the axes' symmetric groups)\n";
    if (c.set_bits > 0) {
        s << "  degree: D = " << c.degree.numerator << ", divisors " << c.degree.divisors << " ("
          << c.degree.divisor_count << " distinct), D' = " << c.degree.total() << "; |S| = 2^" << c.set_bits
          << ", k = " << c.trials << "; failure bound (D'/|S|)^k = 2^" << std::fixed << std::setprecision(1)
          << c.log2_bound << "\n";
    }
    if (c.mask_assignments > 0)
        s << "  masks: each of the " << c.mask_assignments << " assignments that pad no line entirely tested on its "
             "own; the bound is the union over them\n";
    if (!c.note.empty()) s << "  note: " << c.note << "\n";
    for (const AxisCertificate& a : c.axes) {
        const std::string what = a.property == Property::invariance ? "invariant" : "equivariant";
        s << "  " << a.axis << ": " << method_name(a.method) << "\n";
        if (!a.witness.empty()) s << "    witness: " << a.witness << "\n";
        s << "  " << a.axis << ": "
          << (!a.conclusive ? "not certified" : a.holds ? "certified " + what : "certified not " + what)
          << (a.as_expected() ? "" : "   <-- NOT what the verdict matrix expects") << "\n";
    }
    return s.str();
}

}  // namespace permcheck
