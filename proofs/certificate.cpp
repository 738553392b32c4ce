#include "proofs/certificate.h"

#include "proofs/identity.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace permcheck {
namespace {
constexpr int kMaxSize = 64;      // of n and d: beyond, the exact evaluation takes too long
constexpr int kMinSetBits = 32;   // |S| >= 2^32
constexpr int kMaxDrawBits = 4096;
constexpr int kChunkBits = 32;    // of each SplitMix64 word an integer draw takes

void require_shape(int n, int d) {
    const std::string most = std::to_string(kMaxSize);
    if (n < 2 || n > kMaxSize)
        throw std::invalid_argument("a certificate needs 2 <= n <= " + most + " positions, got n = " +
                                    std::to_string(n) + " (S_1 is trivial; beyond " + most +
                                    " the exact evaluation takes too long)");
    if (d < 1 || d > kMaxSize)
        throw std::invalid_argument("the width d must be in [1, " + most + "], got " + std::to_string(d));
}

using identity::SequenceSubject;

// The entry of largest |lhs - rhs|, or nothing when the sides are equal.
template <class S>
std::optional<Witness> difference(const SequenceSubject& subject, const Mat<S>& x, const Permutation& g,
                                  const Mat<S>& lhs, const Mat<S>& rhs) {
    std::optional<Witness> w;
    subject.each_pair(lhs, rhs, [&](const SequenceSubject::Entry& e, const S& left, const S& right) {
        const Rational a = identity::as_rational(left), b = identity::as_rational(right);
        const Rational delta = a - b;
        if (delta == 0 || (w && abs(delta) <= abs(w->difference))) return;
        if (!w) w = Witness{g, Mat<Rational>(x.unaryExpr([](const S& v) { return identity::as_rational(v); }))};
        w->row = e.row;
        w->col = e.col;
        w->lhs = a;
        w->rhs = b;
        w->difference = delta;
    });
    return w;
}

// The first generator whose two sides differ at the point the draws give (the weights first, then x).
template <class S>
std::optional<Witness> first_difference(const SequenceSubject& subject, Draw<S>& weights, Draw<S>& input) {
    std::optional<Witness> w;
    const auto differs = [&](const Permutation& g, const Mat<S>& x, const Mat<S>& lhs, const Mat<S>& rhs) {
        w = difference(subject, x, g, lhs, rhs);
        return !w;
    };
    identity::each_identity<S>(subject, weights, input, differs);
    return w;
}

// A witness settles the certificate: not symmetric, exactly.
void refute(Certificate& c, std::optional<Witness> w) {
    c.conclusive = true;
    c.holds = false;
    c.witness = std::move(w);
}

void fill_schwartz_zippel(Certificate& c, const LayerFamily& family, const CertificateOptions& opts) {
    c.degree = degree_bound(family, opts.n, opts.d);
    c.trials = opts.trials;
    c.set_bits = set_bits_for(c.degree.total(), opts.trials, opts.target_log2);
    c.log2_bound = identity::log2_bound(c.degree.total(), c.set_bits, c.trials);
    SplitMix64 rng(opts.seed);
    for (int t = 1; t <= opts.trials; ++t) {
        std::optional<Witness> w;
        try {
            Draw<RationalStandin> draw = uniform_integers(rng, c.set_bits);
            w = first_difference(SequenceSubject{family, opts.n, opts.d}, draw, draw);
        } catch (const NotRational&) {
            throw;
        } catch (const std::exception& e) {
            c.note = "trial " + std::to_string(t) + " could not be evaluated (" + e.what() +
                     "): a denominator vanished at the random point; rerun with another --seed";
            return;
        }
        if (w) {
            // An exact nonzero difference of the stand-in layer: a refutation, no probability involved.
            w->source = WitnessSource::standin_point;
            w->trial = t;
            w->bits = c.set_bits;
            refute(c, std::move(w));
            c.note = "an exact difference of the layer with rational stand-ins: the generator identity is false";
            return;
        }
    }
    c.conclusive = true;
    c.holds = true;
}

// Attempt k of the exact witness search (identity::attempt): dyadic weights and inputs as in `permcheck check`,
// exp, sin and cos evaluated in double and used exactly (ScalarTraits<Rational>); the first generator whose sides
// differ.
std::optional<Witness> exact_attempt(const LayerFamily& family, const CertificateOptions& opts, int k) {
    const identity::Attempt a = identity::attempt(opts.seed, k);
    Draw<Rational> weights = dyadic_draw<Rational>(a.weight_seed);
    Draw<Rational> input = dyadic_draw<Rational>(SplitMix64(a.input_seed).next());
    std::optional<Witness> w = first_difference(SequenceSubject{family, opts.n, opts.d}, weights, input);
    if (w) w->weight_seed = a.weight_seed;
    return w;
}

// The composition claim rests on the family building the pooled layer as pool(inner) with the same weights:
// confirm it exactly, and check the generators on the same inputs (a difference would refute invariance).
// True when that settled the certificate: not built so (inconclusive), or a witness (not invariant).
bool settled_by_exact_composition_check(Certificate& c, const LayerFamily& family, const CertificateOptions& opts) {
    const LayerFamily& inner = *family.composition->inner;
    const Pool how = family.composition->pooling;
    const SequenceSubject subject{family, opts.n, opts.d};
    for (int k = 0; k < opts.trials; ++k) {
        const identity::Attempt a = identity::attempt(opts.seed, k);
        const LayerFn<Rational> pooled = seeded_layer<Rational>(family, opts.d, a.weight_seed);
        const LayerFn<Rational> sequence = seeded_layer<Rational>(inner, opts.d, a.weight_seed);
        Draw<Rational> input = dyadic_draw<Rational>(SplitMix64(a.input_seed).next());
        const Mat<Rational> x = draw_matrix<Rational>(opts.n, opts.d, input);
        if (difference(subject, x, Permutation::identity(opts.n), pooled(x), pool(sequence(x), how))) {
            c.conclusive = false;
            c.holds = false;
            c.note = "'" + family.name + "' is not built as " + pool_name(how) + " pooling of '" + inner.name + "'";
            return true;
        }
        if (std::optional<Witness> w = exact_attempt(family, opts, k)) {
            refute(c, std::move(w));
            return true;
        }
    }
    return false;
}

// Max pooling is piecewise, so the pooled layer has no Schwartz-Zippel certificate. It is a symmetric pooling
// composed with an inner sequence layer: certify the inner layer's equivariance (its figures are c's), check that
// the family builds the pooled layer as that composition, and rely on the pooling being a symmetric function of
// the rows.
void fill_composition(Certificate& c, const LayerFamily& family, const CertificateOptions& opts) {
    const LayerFamily& inner = *family.composition->inner;
    const Pool how = family.composition->pooling;
    if (inner.output != Output::sequence)
        throw std::logic_error("'" + inner.name + "' is not a sequence layer; cannot compose it with " +
                               pool_name(how) + " pooling");
    fill_schwartz_zippel(c, inner, opts);
    c.inner_layer = inner.name;
    if (!c.conclusive || !c.holds) {
        c.conclusive = false;
        c.witness.reset();
        c.note = "the inner layer '" + inner.name + "' was not certified equivariant: " + c.note;
        return;
    }
    if (settled_by_exact_composition_check(c, family, opts)) return;
    c.note = std::string(pool_name(how)) + " over positions is a symmetric function of the rows, so pool(L(P x)) = "
             "pool(P L(x)) = pool(L(x)) once L is equivariant (proofs-notes/schwartz-zippel.md, 'Piecewise layers')";
}

Certificate blank(const LayerFamily& family, const CertificateOptions& opts) {
    require_shape(opts.n, opts.d);
    identity::require_trials(opts.trials);
    const Property property = family.output == Output::pooled ? Property::invariance : Property::equivariance;
    return {.layer = family.name, .property = property, .expected_holds = family.expected_symmetric(), .n = opts.n,
            .d = opts.d};
}

std::string bits_text(double log2_value) {
    if (std::isinf(log2_value)) return "0";
    std::ostringstream s;
    s << "2^" << std::fixed << std::setprecision(1) << log2_value;
    return s.str();
}

constexpr const char* kStandins = "exp(v) = 1 + v + v^2/2, sqrt(v) = (1 + v)/2, tanh(v) = v/(1 + v^2), relu(v) = v^2";

void describe_witness(std::ostringstream& s, const Witness& w, Property property) {
    const SideNames names = side_names(property);
    s << "  witness: permutation " << w.perm.cycles() << " (rows: (P x)[i] = x[p[i]]), ";
    if (w.source == WitnessSource::standin_point)
        s << "trial " << w.trial << ": uniform " << w.bits << "-bit integers, weights in build order, then x\n"
          << "    in rational stand-ins (" << kStandins << ")\n";
    else
        s << "dyadic weights of seed " << w.weight_seed << " (as in permcheck check)\n"
          << "    in exact rationals; exp, sin and cos evaluated in double and used exactly\n";
    s << "    x =\n";
    for (Eigen::Index i = 0; i < w.x.rows(); ++i) {
        s << "      [" << i << "]";
        for (Eigen::Index j = 0; j < w.x.cols(); ++j) s << ' ' << w.x(i, j).str();
        s << "\n";
    }
    s << "    at position " << w.row << ", feature " << w.col << ":\n";
    s << "      " << std::left << std::setw(6) << names.lhs << " = " << std::setprecision(17)
      << w.lhs.convert_to<double>() << "\n";
    s << "      " << std::setw(6) << names.rhs << std::right << " = " << w.rhs.convert_to<double>() << "\n";
    s << "      exact difference = " << w.difference.str() << "\n";
    s << "                       ~ " << std::setprecision(6) << w.difference.convert_to<double>() << "\n";
}
}  // namespace

DegreeBound degree_bound(const LayerFamily& family, int n, int d) {
    require_shape(n, d);
    return identity::degree_of(identity::SequenceSubject{family, n, d});
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

Certificate certify(const LayerFamily& family, const CertificateOptions& opts) {
    Certificate c = blank(family, opts);
    for (int k = 0; k < identity::kWitnessAttempts; ++k)
        if (std::optional<Witness> w = exact_attempt(family, opts, k)) {
            c.method = Method::exact_witness;
            refute(c, std::move(w));
            return c;
        }
    try {
        fill_schwartz_zippel(c, family, opts);
        c.method = Method::schwartz_zippel;
    } catch (const NotRational& e) {
        if (family.composition && is_symmetric(family.composition->pooling)) {
            c.method = Method::composition;
            fill_composition(c, family, opts);
        } else {
            c.note = std::string("piecewise layer, no polynomial identity certificate: ") + e.what();
        }
    }
    return c;
}

std::string Certificate::verdict() const { return identity::certificate_verdict(conclusive, holds, property); }

std::string describe(const Certificate& c) {
    std::ostringstream s;
    s << c.layer << ": " << property_name(c.property) << " at n = " << c.n << ", d = " << c.d << "\n";
    s << "  method: " << method_name(c.method) << "\n";
    const bool has_degree = c.method == Method::schwartz_zippel || c.method == Method::composition;
    if (has_degree && c.set_bits > 0) {
        if (c.method == Method::composition) s << "  inner layer '" << c.inner_layer << "' certified equivariant:\n";
        s << "  generators: " << Permutation::transposition(c.n, 0, 1).cycles() << " and "
          << Permutation::rotation(c.n).cycles() << " (equality on both, for all inputs, covers all " << c.n
          << "! permutations)\n";
        s << "  degree: D = " << c.degree.numerator << " (numerator of each entry of the difference), divisors "
          << c.degree.divisors << " (" << c.degree.divisor_count << " distinct), D' = " << c.degree.total() << "\n";
        s << "  |S| = 2^" << c.set_bits << " (integers in [-2^" << c.set_bits - 1 << ", 2^" << c.set_bits - 1
          << ")), inputs and weights drawn from S; k = " << c.trials << (c.trials == 1 ? " trial\n" : " trials\n");
        s << "  failure bound (D'/|S|)^k = " << bits_text(c.log2_bound) << "\n";
        s << "  stand-ins: " << kStandins << "; equivariance carries over to any elementwise function "
             "(proofs-notes/any-elementwise-function.md)\n";
    }
    if (c.witness) describe_witness(s, *c.witness, c.property);
    if (!c.note.empty()) s << "  note: " << c.note << "\n";
    s << "  " << c.verdict() << (c.as_expected() ? "" : "   <-- NOT what the verdict matrix expects") << "\n";
    return s.str();
}

}  // namespace permcheck
