#include "proofs/signature_certificate.h"

#include "check/signature_case.h"
#include "check/signature_check.h"
#include "proofs/identity.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace permcheck {
namespace {
using identity::NamedMove;
using identity::NamedSubject;

AxisCertificate* axis_of(SignatureCertificate& c, const std::string& axis) {
    const auto a = std::ranges::find(c.axes, axis, &AxisCertificate::axis);
    return a == c.axes.end() ? nullptr : &*a;
}

// One random point: the first entry where a generator's sides differ refutes its axis (an exact difference of the
// stand-in layer); returns false when a denominator vanished there.
bool schwartz_zippel_point(SignatureCertificate& c, const NamedSubject& subject, SplitMix64& rng) {
    const auto settled = [&c](const NamedMove& m) {
        const AxisCertificate* a = axis_of(c, m.axis);
        return !a || a->conclusive;
    };
    const auto visit = [&](const NamedMove& m, const auto&, const auto& lhs, const auto& rhs) {
        AxisCertificate& a = *axis_of(c, m.axis);
        subject.each_pair(lhs, rhs, [&](const auto& e, const RationalStandin& l, const RationalStandin& r) {
            if (a.conclusive || l == r) return;
            a.conclusive = true;
            a.method = Method::schwartz_zippel;
            a.witness = SignatureWitness{.source = WitnessSource::standin_point, .axis = m.axis, .perm = m.g,
                                         .output = e.output, .entry = e.k,
                                         .difference = identity::as_rational(RationalStandin(l - r))};
        });
        return true;
    };
    try {
        Draw<RationalStandin> draw = uniform_integers(rng, c.set_bits);
        identity::each_identity<RationalStandin>(subject, draw, draw, visit, settled);
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
        const DegreeBound d = identity::degree_of(NamedSubject{f, s, c.lengths, m});
        if (d.total() > c.degree.total()) c.degree = d;
    }
    const double union_log2 = std::log2(static_cast<double>(masks.size()));
    c.trials = o.trials;
    c.set_bits = set_bits_for(c.degree.total(), o.trials, o.target_log2 - static_cast<int>(std::ceil(union_log2)));
    c.log2_bound = identity::log2_bound(c.degree.total(), c.set_bits, o.trials) + union_log2;
    SplitMix64 rng(o.seed);
    for (const Tensors& m : masks)
        for (int t = 0; t < o.trials; ++t)
            if (!schwartz_zippel_point(c, NamedSubject{f, s, c.lengths, m}, rng)) return;
    for (AxisCertificate& a : c.axes)
        if (!a.conclusive) {
            a.conclusive = true;
            a.holds = true;
            a.method = Method::schwartz_zippel;
        }
}

SignatureWitness exact_witness(const NamedMove& m, const OutputComparison& o, std::uint64_t weight_seed) {
    std::size_t at = 0;
    for (std::size_t d = 0; d < o.where.size(); ++d)
        at = at * static_cast<std::size_t>(o.layer_of_permuted.shape[d]) + static_cast<std::size_t>(o.where[d]);
    return {.source = WitnessSource::exact_search, .axis = m.axis, .perm = m.g, .output = o.name, .where = o.where,
            .lhs = o.layer_of_permuted.values.at(at), .rhs = o.permuted_layer.values.at(at),
            .max_abs_diff = o.max_abs_diff, .weight_seed = weight_seed};
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
    if (bits > kMaxMaskEntries)
        throw std::invalid_argument("more than " + std::to_string(kMaxMaskEntries) +
                                    " mask entries: too many mask assignments to enumerate");
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

std::map<std::string, SignatureWitness> signature_witnesses(const SignatureFamily& f, const Signature& s,
                                                            const Lengths& lengths, std::uint64_t seed) {
    std::map<std::string, SignatureWitness> found;
    const std::vector<NamedMove> moves = identity::generator_moves(lengths);
    for (int k = 0; k < identity::kWitnessAttempts; ++k) {
        const identity::Attempt a = identity::attempt(seed, k);
        const Tensors x = draw_signature_case(s, lengths, rc::Random(a.input_seed), identity::kWitnessCaseSize).inputs;
        for (const NamedMove& m : moves) {
            if (found.count(m.axis)) continue;
            const auto outputs = compare_signature_case<Rational>(f, s, lengths, m.perms, x, a.weight_seed);
            for (const OutputComparison& out : outputs)
                if (!out.holds && !found.count(m.axis)) found.emplace(m.axis, exact_witness(m, out, a.weight_seed));
        }
    }
    return found;
}

SignatureCertificate certify_signature(const SignatureFamily& family, const SignatureCertificateOptions& opts) {
    if (!family.rational())
        throw std::invalid_argument("'" + family.name + "' has an index input or max aggregation: no polynomial "
                                    "identity certificate (its rows of the verdict table check it, in float64 and "
                                    "exact)");
    if (opts.length < 2 || opts.length > kMaxCertificateLength)
        throw std::invalid_argument("a certificate needs every axis of length 2 to " +
                                    std::to_string(kMaxCertificateLength) + ", got " + std::to_string(opts.length));
    identity::require_trials(opts.trials);
    const Signature s = signature_of(family);
    SignatureCertificate c;
    c.layer = family.name;
    for (const Axis& a : s.axes) c.lengths[a.name] = opts.length;
    for (const AxisExpectation& e : family.expectations)
        c.axes.push_back({e.axis, property_along(s, e.axis), e.holds, false, false, Method::none, std::nullopt});
    for (auto& [axis, w] : signature_witnesses(family, s, c.lengths, opts.seed))  // dyadic weights, exactly
        if (AxisCertificate* a = axis_of(c, axis)) {
            a->conclusive = true;
            a->method = Method::exact_witness;
            a->witness = std::move(w);
        }
    if (!std::ranges::all_of(c.axes, &AxisCertificate::conclusive))
        schwartz_zippel(c, family, s, opts);
    return c;
}

std::string describe(const SignatureCertificate& c) {
    std::ostringstream s;
    s << c.layer << ": every axis at length";
    for (const auto& [axis, len] : c.lengths) s << " " << axis << " = " << len;
    s << "\n  generators: (0 1) and (0 1 ... len-1) of each axis, on that axis alone (they generate the product of "
         "the axes' symmetric groups)\n";
    if (c.set_bits > 0)
        s << "  degree: D = " << c.degree.numerator << ", divisors " << c.degree.divisors << " ("
          << c.degree.divisor_count << " distinct), D' = " << c.degree.total() << "; |S| = 2^" << c.set_bits
          << ", k = " << c.trials << "; failure bound (D'/|S|)^k = 2^" << std::fixed << std::setprecision(1)
          << c.log2_bound << "\n";
    if (c.mask_assignments > 0)
        s << "  masks: each of the " << c.mask_assignments << " assignments that pad no line entirely tested on its "
             "own; the bound is the union over them\n";
    if (!c.note.empty()) s << "  note: " << c.note << "\n";
    for (const AxisCertificate& a : c.axes) {
        s << "  " << a.axis << ": " << method_name(a.method) << "\n";
        if (a.witness) s << "    witness: " << describe(*a.witness) << "\n";
        s << "  " << a.axis << ": " << identity::certificate_verdict(a.conclusive, a.holds, a.property)
          << (a.as_expected() ? "" : "   <-- NOT what the verdict matrix expects") << "\n";
    }
    return s.str();
}

}  // namespace permcheck
