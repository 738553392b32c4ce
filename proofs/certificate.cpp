#include "proofs/certificate.h"

#include "check/check.h"
#include "proofs/identity.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace permcheck {
namespace {

constexpr int kMinSetBits = 32;   // |S| >= 2^32
constexpr int kMaxDrawBits = 4096;
constexpr int kChunkBits = 32;    // of each SplitMix64 word an integer draw takes

using identity::NamedMove;
using identity::NamedSubject;

constexpr const char* kStandins = "exp(v) = 1 + v + v^2/2, sqrt(v) = (1 + v)/2, tanh(v) = v/(1 + v^2), relu(v) = v^2";

// What a certificate is about: a family at one shape, its signature there, and its mask assignments.
struct Shape {
    const Family& family;
    Signature s;
    Lengths lengths;
    std::vector<Tensors> masks;
    int d;
    Shape(const Family& f, const CertificateOptions& o) : family(f), s(signature_of(f, o.d)), d(o.d) {
        for (const Axis& a : s.axes) lengths[a.name] = o.length;
        masks = mask_assignments(s, lengths);
    }
    NamedSubject subject(const Tensors& m) const { return NamedSubject{family, s, lengths, m, d}; }
};

// D' the largest over the mask assignments. Throws NotRational for a piecewise layer.
DegreeBound most_degree(const Shape& shape) {
    DegreeBound most;
    for (const Tensors& m : shape.masks)
        if (const DegreeBound d = identity::degree_of(shape.subject(m)); d.total() > most.total()) most = d;
    return most;
}

AxisCertificate* axis_of(Certificate& c, const std::string& axis) {
    const auto a = std::ranges::find(c.axes, axis, &AxisCertificate::axis);
    return a == c.axes.end() ? nullptr : &*a;
}

// One random point: the first entry where a generator's sides differ refutes its axis (an exact difference of the
// stand-in layer); returns false when a denominator vanished there. NotRational goes through: the layer is piecewise.
bool schwartz_zippel_point(Certificate& c, const NamedSubject& subject, SplitMix64& rng) {
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
            a.witness = Witness{.source = WitnessSource::standin_point, .axis = m.axis, .perm = m.g, .output = e.output,
                                .entry = e.k, .difference = Rational(RationalStandin(l - r).backend().data())};
        });
    };
    try {
        Draw<RationalStandin> draw = uniform_integers(rng, c.set_bits);
        identity::each_identity<RationalStandin>(subject, draw, visit, settled);
    } catch (const NotRational&) {
        throw;
    } catch (const std::exception& e) {
        c.note = std::string("a random point could not be evaluated (") + e.what() + "); rerun with another --seed";
        return false;
    }
    return true;
}

// With masks, one identity test per mask assignment: D' the largest over them, and the union bound over the
// assignments (A of them) asks (D'/|S|)^k <= 2^target / A of each. `shape` may be another family's (a composition's
// inner layer). Throws NotRational for a piecewise layer.
void schwartz_zippel(Certificate& c, const Shape& shape, const CertificateOptions& o) {
    c.mask_assignments = shape.masks.size() > 1 || !shape.masks.front().empty() ? static_cast<int>(shape.masks.size()) : 0;
    c.degree = most_degree(shape);
    const double union_log2 = std::log2(static_cast<double>(shape.masks.size()));
    c.trials = o.trials;
    c.set_bits = set_bits_for(c.degree.total(), o.trials, o.target_log2 - static_cast<int>(std::ceil(union_log2)));
    c.log2_bound = identity::log2_bound(c.degree.total(), c.set_bits, o.trials) + union_log2;
    SplitMix64 rng(o.seed);
    for (const Tensors& m : shape.masks)
        for (int t = 0; t < o.trials; ++t)
            if (!schwartz_zippel_point(c, shape.subject(m), rng)) return;
    for (AxisCertificate& a : c.axes)
        if (!a.conclusive) {
            a.conclusive = true;
            a.holds = true;
            a.method = Method::schwartz_zippel;
        }
}

// The witness of an exact difference found by the search: its generator, the output's largest difference, both
// sides there, the weights' seed and the input.
Witness exact_witness(const NamedMove& m, const OutputComparison& o, std::uint64_t weight_seed, const Tensors& x,
                      const Signature& s) {
    Witness w{.source = WitnessSource::exact_search, .axis = m.axis, .perm = m.g, .output = o.name, .where = o.where,
              .lhs = o.layer_of_permuted.values.at(flat_index(o.where, o.layer_of_permuted.shape)),
              .rhs = o.permuted_layer.values.at(flat_index(o.where, o.permuted_layer.shape)),
              .max_abs_diff = o.max_abs_diff, .weight_seed = weight_seed};
    for (const TensorSpec& t : s.inputs) w.inputs.emplace_back(t.name, x.at(t.name));
    return w;
}

// The composition claim rests on the family building the pooled layer as pool(inner) with the same weights: confirm
// it exactly on the witness search's points. True when it is not built so (the certificate says so).
bool not_a_composition(Certificate& c, const Shape& shape, const CertificateOptions& opts) {
    const Family& inner = *shape.family.composition->inner;
    const Pool how = shape.family.composition->pooling;
    for (int k = 0; k < opts.trials; ++k) {
        const identity::Attempt a = identity::attempt(opts.seed, k);
        const LayerFn<Rational> pooled = seeded_layer<Rational>(shape.family, shape.d, a.weight_seed);
        const LayerFn<Rational> sequence = seeded_layer<Rational>(inner, shape.d, a.weight_seed);
        Draw<Rational> input = dyadic_draw<Rational>(SplitMix64(a.input_seed).next());
        const NamedTensors<Rational> x = shape.subject(shape.masks.front()).input<Rational>(input);
        const NamedTensors<Rational> y = pooled(x), z = sequence(x);
        const Mat<Rational> left = as_matrix(y.at(shape.s.outputs.at(0).name));
        const Mat<Rational> right = pool(as_matrix(z.at(signature_of(inner, shape.d).outputs.at(0).name)), how);
        if (left.rows() != right.rows() || left.cols() != right.cols() || left != right) {
            c.note = "'" + shape.family.name + "' is not built as " + pool_name(how) + " pooling of '" + inner.name + "'";
            for (AxisCertificate& ax : c.axes) ax.conclusive = ax.holds = false;
            return true;
        }
    }
    return false;
}

// Max pooling is piecewise, so the pooled layer has no Schwartz-Zippel certificate. It is a symmetric pooling composed
// with an inner sequence layer: certify the inner layer's equivariance (its figures are c's), check that the family
// builds the pooled layer as that composition, and rely on the pooling being a symmetric function of the rows.
void composition(Certificate& c, const Shape& shape, const CertificateOptions& opts) {
    const Family& inner = *shape.family.composition->inner;
    const Pool how = shape.family.composition->pooling;
    Certificate of_inner;
    of_inner.axes = c.axes;
    schwartz_zippel(of_inner, Shape(inner, opts), opts);
    c.degree = of_inner.degree;
    c.set_bits = of_inner.set_bits;
    c.trials = of_inner.trials;
    c.log2_bound = of_inner.log2_bound;
    c.inner_layer = inner.name;
    if (!of_inner.conclusive() || !of_inner.holds()) {
        c.note = "the inner layer '" + inner.name + "' was not certified equivariant: " + of_inner.note;
        return;
    }
    if (not_a_composition(c, shape, opts)) return;
    for (AxisCertificate& a : c.axes) {
        a.conclusive = a.holds = true;
        a.method = Method::composition;
    }
    c.note = std::string(pool_name(how)) + " over positions is a symmetric function of the rows, so pool(L(P x)) = "
             "pool(P L(x)) = pool(L(x)) once L is equivariant (proofs-notes/schwartz-zippel.md, 'Piecewise layers')";
}

// The axes a certificate decides: the family's rows of a property the generators decide (equivariance, invariance).
Certificate blank(const Shape& shape, const CertificateOptions& opts) {
    if (opts.length < 2 || opts.length > kMaxCertificateLength)
        throw std::invalid_argument("a certificate needs every axis of length 2 to " + std::to_string(kMaxCertificateLength) +
                                    " (S_1 is trivial; beyond, the exact evaluation takes too long), got " +
                                    std::to_string(opts.length));
    identity::require_trials(opts.trials);
    Certificate c;
    c.layer = shape.family.name;
    c.lengths = shape.lengths;
    c.d = shape.family.takes_width() ? opts.d : 0;
    for (const Expectation& e : shape.family.expectations) {
        const PropertyRules& rules = rules_of(e.property);
        if (!rules.decided_by_generators()) continue;
        const PropertyArgs args = rules.completed_args(shape.s, {e.axis, PadPlacement::any, false, true});
        c.axes.push_back({e.axis, rules.recorded_as(shape.s, args), e.holds, false, false, Method::none, std::nullopt});
    }
    return c;
}

std::string bits_text(double log2_value) {
    if (std::isinf(log2_value)) return "0";
    std::ostringstream s;
    s << "2^" << std::fixed << std::setprecision(1) << log2_value;
    return s.str();
}

void describe_figures(std::ostream& s, const Certificate& c) {
    s << "  degree: D = " << c.degree.numerator << " (numerator of each entry of the difference), divisors "
      << c.degree.divisors << " (" << c.degree.divisor_count << " distinct), D' = " << c.degree.total() << "\n";
    s << "  |S| = 2^" << c.set_bits << " (integers in [-2^" << c.set_bits - 1 << ", 2^" << c.set_bits - 1
      << ")), inputs and weights drawn from S; k = " << c.trials << (c.trials == 1 ? " trial\n" : " trials\n");
    s << "  failure bound (D'/|S|)^k = " << bits_text(c.log2_bound) << "\n";
    s << "  stand-ins: " << kStandins << "; equivariance carries over to any elementwise function "
         "(proofs-notes/any-elementwise-function.md)\n";
    if (c.mask_assignments > 0)
        s << "  masks: each of the " << c.mask_assignments << " assignments that pad no line entirely tested on its "
             "own; the bound is the union over them\n";
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

std::map<std::string, Witness> exact_witnesses(const Family& f, const Signature& s, const Lengths& lengths,
                                               std::uint64_t seed, int d) {
    std::map<std::string, Witness> found;
    for (int k = 0; k < identity::kWitnessAttempts; ++k) {
        const identity::Attempt a = identity::attempt(seed, k);
        const Tensors x = draw_signature_case(s, lengths, rc::Random(a.input_seed), identity::kWitnessCaseSize).inputs;
        for (const NamedMove& m : identity::generator_moves(lengths)) {
            if (found.count(m.axis)) continue;
            const Case c{lengths, m.perms, x, a.weight_seed};
            for (const OutputComparison& out : compare_case<Rational>(f, s, rules_of(Property{"equivariance"}), {}, c, d))
                if (!out.holds && !found.count(m.axis)) found.emplace(m.axis, exact_witness(m, out, a.weight_seed, x, s));
        }
    }
    return found;
}

DegreeBound degree_bound(const Family& family, const CertificateOptions& opts) {
    return most_degree(Shape(family, opts));
}

int set_bits_for(long long degree_total, int trials, int target_log2) {
    if (trials < 1)
        throw std::invalid_argument("the number of trials must be at least 1, got " + std::to_string(trials));
    if (target_log2 >= 0) throw std::invalid_argument("the target failure bound must be below 1 (2^-1 or smaller)");
    const double log2_d = degree_total <= 1 ? 0.0 : std::log2(static_cast<double>(degree_total));
    int bits = std::max(kMinSetBits, static_cast<int>(std::ceil(log2_d + static_cast<double>(-target_log2) / trials)));
    while (trials * (log2_d - bits) > target_log2) ++bits;  // guards the ceil against rounding
    return bits;
}

// Assembled from 32-bit chunks of SplitMix64.
Draw<RationalStandin> uniform_integers(SplitMix64& rng, int bits) {
    if (bits < 2 || bits > kMaxDrawBits)
        throw std::invalid_argument("integer draws need 2 to " + std::to_string(kMaxDrawBits) + " bits, got " +
                                    std::to_string(bits));
    return [&rng, bits] {
        RationalStandin v = 0;
        for (int left = bits; left > 0;) {
            const int take = std::min(kChunkBits, left);
            v = v * RationalStandin(1ULL << take) + RationalStandin(rng.next() >> (64 - take));
            left -= take;
        }
        RationalStandin half = 1;
        for (int i = 1; i < bits; ++i) half *= 2;
        return RationalStandin(v - half);
    };
}

const char* method_name(Method m) {
    switch (m) {
        case Method::schwartz_zippel: return "Schwartz-Zippel polynomial identity test";
        case Method::composition: return "composition: certified equivariant layer, then a symmetric pooling";
        case Method::exact_witness: return "exact witness";
        case Method::none: return "none";
    }
    return "?";
}

Certificate certify(const Family& family, const CertificateOptions& opts) {
    if (!family.rational())
        throw std::invalid_argument("'" + family.name + "' has an index input or max aggregation: no polynomial "
                                    "identity certificate (its rows of the verdict table check it, in float64 and exact)");
    const Shape shape(family, opts);
    Certificate c = blank(shape, opts);
    for (auto& [axis, w] : exact_witnesses(family, shape.s, shape.lengths, opts.seed, opts.d))  // dyadic weights, exactly
        if (AxisCertificate* a = axis_of(c, axis)) {
            a->conclusive = true;
            a->method = Method::exact_witness;
            a->witness = std::move(w);
        }
    if (c.conclusive()) return c;
    try {
        schwartz_zippel(c, shape, opts);
    } catch (const NotRational& e) {
        if (family.composition && is_symmetric(family.composition->pooling)) composition(c, shape, opts);
        else c.note = std::string("piecewise layer, no polynomial identity certificate: ") + e.what();
    }
    return c;
}

std::string certificate_verdict(const AxisCertificate& a) {
    if (!a.conclusive) return "not certified";
    return (a.holds ? "certified " : "certified not ") + std::string(property_adjective(a.property));
}

std::string describe(const Certificate& c) {
    std::ostringstream s;
    s << c.layer << ": every axis at length";
    for (const auto& [axis, len] : c.lengths) s << " " << axis << " = " << len;
    if (c.d > 0) s << ", d = " << c.d;
    s << "\n  generators: (0 1) and (0 1 ... len-1) of each axis, on that axis alone (equality on all of them, for "
         "all inputs, covers every permutation of every axis)\n";
    if (!c.inner_layer.empty()) s << "  inner layer '" << c.inner_layer << "':\n";
    if (c.set_bits > 0) describe_figures(s, c);
    if (!c.note.empty()) s << "  note: " << c.note << "\n";
    for (const AxisCertificate& a : c.axes) {
        s << "  " << a.axis << ": " << method_name(a.method) << "\n";
        if (a.witness) s << "    witness: " << describe(*a.witness, "    ") << "\n";
        s << "  " << a.axis << ": " << certificate_verdict(a)
          << (a.as_expected() ? "" : "   <-- NOT what the verdict matrix expects") << "\n";
    }
    return s.str();
}

}  // namespace permcheck
