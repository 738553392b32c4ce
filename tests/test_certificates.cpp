// Certificates (issue 4): generator reduction, the degree-tracking scalar, the Schwartz-Zippel certificate,
// exact witnesses, and bit-for-bit permutation-invariant pooling in float and double.
#include "layers/exact_pooling.h"
#include "layers/layers.h"
#include "layers/make_family.h"
#include "proofs/certificate.h"
#include "proofs/signature_certificate.h"
#include "scalars/degree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <ostream>
#include <random>
#include <set>

namespace {
using namespace permcheck;

// ---------------------------------------------------------------------------------------------------------
// A second rational stand-in for exp, as its own scalar type (proofs-notes/any-elementwise-function.md):
// exp(v) -> 1 / (1 + (v - 1)^2), positive and bounded, nothing like 1 + v + v^2/2.
struct OtherStandin {
    Rational v;
    OtherStandin() = default;
    OtherStandin(int i) : v(i) {}  // NOLINT: Eigen writes Scalar(0)
    explicit OtherStandin(const Rational& r) : v(r) {}
    OtherStandin operator-() const { return OtherStandin(Rational(-v)); }
    OtherStandin& operator+=(const OtherStandin& b) { v += b.v; return *this; }
    OtherStandin& operator-=(const OtherStandin& b) { v -= b.v; return *this; }
    OtherStandin& operator*=(const OtherStandin& b) { v *= b.v; return *this; }
    OtherStandin& operator/=(const OtherStandin& b) { v /= b.v; return *this; }
    friend OtherStandin operator+(OtherStandin a, const OtherStandin& b) { return a += b; }
    friend OtherStandin operator-(OtherStandin a, const OtherStandin& b) { return a -= b; }
    friend OtherStandin operator*(OtherStandin a, const OtherStandin& b) { return a *= b; }
    friend OtherStandin operator/(OtherStandin a, const OtherStandin& b) { return a /= b; }
    friend bool operator==(const OtherStandin& a, const OtherStandin& b) { return a.v == b.v; }
    friend bool operator!=(const OtherStandin& a, const OtherStandin& b) { return a.v != b.v; }
    friend bool operator<(const OtherStandin& a, const OtherStandin& b) { return a.v < b.v; }
    friend std::ostream& operator<<(std::ostream& o, const OtherStandin& s) { return o << s.v; }
};
}  // namespace

namespace Eigen {
template <> struct NumTraits<OtherStandin> : GenericNumTraits<OtherStandin> {
    using Real = OtherStandin;
    using NonInteger = OtherStandin;
    using Nested = OtherStandin;
    using Literal = OtherStandin;
    enum { IsComplex = 0, IsInteger = 0, IsSigned = 1, RequireInitialization = 1, ReadCost = 1, AddCost = 4, MulCost = 4 };
    static Real epsilon() { return Real(0); }
    static Real dummy_precision() { return Real(0); }
    static int digits10() { return 0; }
};
}  // namespace Eigen

namespace permcheck {
template <> struct ScalarTraits<OtherStandin> {
    using S = OtherStandin;
    static constexpr const char* name = "other-standin";
    static constexpr bool exact = true;
    static constexpr bool shift_softmax = false;
    static constexpr double unit_roundoff = 0.0;
    static S from_double(double x) { return S(Rational(x)); }
    static double to_double(const S& x) { return x.v.convert_to<double>(); }
    static S exp(const S& x) { return S(1) / (S(1) + (x - S(1)) * (x - S(1))); }
    static S sqrt(const S& x) { return (S(1) + x) / S(2); }
    static S tanh(const S& x) { return x / (S(1) + x * x); }
    static S relu(const S& x) { return x * x; }
    static S max(const S& a, const S& b) { return a < b ? b : a; }
};
}  // namespace permcheck

namespace {

Mat<Rational> to_rational(const Mat<OtherStandin>& m) {
    Mat<Rational> out(m.rows(), m.cols());
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) out(i, j) = m(i, j).v;
    return out;
}
Mat<Rational> to_rational(const Mat<RationalStandin>& m) {
    Mat<Rational> out(m.rows(), m.cols());
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) out(i, j) = Rational(m(i, j).backend().data());
    return out;
}

std::set<std::vector<int>> as_set(const std::vector<Permutation>& group) {
    std::set<std::vector<int>> s;
    for (const Permutation& p : group) s.insert(p.one_line());
    return s;
}

long factorial(int n) { return n <= 1 ? 1 : n * factorial(n - 1); }

// ---------------------------------------------------------------------------------------------------------
// Generator reduction (proofs-notes/generators.md)

TEST(Generators, TranspositionAndFullCycleGenerateAllOfSn) {
    for (int n = 2; n <= 7; ++n) {
        const std::vector<Permutation> group = generated_group(Permutation::generators(n));
        EXPECT_EQ(static_cast<long>(group.size()), factorial(n)) << "n = " << n;
        EXPECT_EQ(as_set(group).size(), group.size()) << "duplicates at n = " << n;
    }
}

TEST(Generators, TranspositionZeroTwoWithFourCycleGeneratesOnlyEightOfTwentyFour) {
    const std::vector<Permutation> group =
        generated_group({Permutation::transposition(4, 0, 2), Permutation::rotation(4)});
    ASSERT_EQ(group.size(), 8u);
    // The 8 are the symmetries of the square 0-1-2-3: each keeps cyclically adjacent positions adjacent.
    for (const Permutation& p : group)
        for (int i = 0; i < 4; ++i) {
            const int gap = (p[i] - p[(i + 1) % 4] + 4) % 4;
            EXPECT_TRUE(gap == 1 || gap == 3) << p.cycles() << " separates neighbours " << i << " and " << (i + 1) % 4;
        }
    // (0 1) is not among them, so equality on these two generators says nothing about swapping neighbours.
    EXPECT_EQ(as_set(group).count(Permutation::transposition(4, 0, 1).one_line()), 0u);
}

TEST(Generators, TranspositionOfCycleNeighboursAtDistanceCoprimeToNGeneratesSn) {
    // (0 k) with (0 1 ... n-1) generates S_n exactly when gcd(k, n) = 1.
    for (int n = 3; n <= 6; ++n)
        for (int k = 1; k < n; ++k) {
            const auto size = generated_group({Permutation::transposition(n, 0, k), Permutation::rotation(n)}).size();
            EXPECT_EQ(static_cast<long>(size) == factorial(n), std::gcd(k, n) == 1) << "n = " << n << ", k = " << k;
        }
}

TEST(Generators, GeneratedGroupRefusesToEnumerateBeyondItsLimit) {
    EXPECT_THROW(generated_group(Permutation::generators(9), 1000), std::length_error);
    EXPECT_THROW(generated_group({}), std::invalid_argument);
    EXPECT_THROW(generated_group({Permutation::identity(3), Permutation::identity(4)}), std::invalid_argument);
}

// The reduction needs the identity for ALL inputs: at a single input, both generators can pass while another
// permutation fails. The layer adds 1 wherever the first feature is strictly decreasing down the rows (a
// piecewise layer, like a sort or a max with ties broken by position).
Mat<Rational> decreasing_detector(const Mat<Rational>& x) {
    Mat<Rational> y = x;
    if (x(0, 0) > x(1, 0) && x(1, 0) > x(2, 0)) y.array() += Rational(1);
    return y;
}

TEST(Generators, GeneratorIdentitiesAtOneInputDoNotCoverItsOrbit) {
    Mat<Rational> x(3, 1);
    x << 1, 2, 3;
    for (const Permutation& g : Permutation::generators(3))
        EXPECT_EQ(decreasing_detector(g.apply(x)), g.apply(decreasing_detector(x))) << g.cycles();
    const Permutation reversal = Permutation::transposition(3, 0, 2);
    EXPECT_NE(decreasing_detector(reversal.apply(x)), reversal.apply(decreasing_detector(x)))
        << "(0 2) breaks equivariance at the very input where both generators held";
}

TEST(Generators, ExactAttentionAgreesWithTheReductionOnEveryPermutationOfS4) {
    // The identity holds for all inputs, so every element of S_4 must pass, not only the generators.
    const LayerFn<Rational> layer = seeded_layer<Rational>(find_layer("attention"), 3, 7);
    Draw<Rational> input = dyadic_draw<Rational>(8);
    const Mat<Rational> x = draw_matrix<Rational>(4, 3, input);
    const Mat<Rational> lx = layer(x);
    for (const Permutation& p : generated_group(Permutation::generators(4)))
        EXPECT_EQ(layer(p.apply(x)), p.apply(lx)) << p.cycles();
}

// ---------------------------------------------------------------------------------------------------------
// The degree-tracking scalar (scalars/degree.h)

TEST(Degree, StandinFormulasAreTheOnesOfScalarTraits) {
    using T = ScalarTraits<RationalStandin>;
    for (int k = -7; k <= 7; ++k) {
        const RationalStandin v = RationalStandin(k) / RationalStandin(3);
        EXPECT_EQ(standin::exp(v), T::exp(v));
        EXPECT_EQ(standin::sqrt(v), T::sqrt(v));
        EXPECT_EQ(standin::tanh(v), T::tanh(v));
        EXPECT_EQ(standin::relu(v), T::relu(v));
    }
    EXPECT_EQ(ScalarTraits<Degree>::shift_softmax, ScalarTraits<RationalStandin>::shift_softmax);
}

TEST(Degree, TracksSumsProductsAndQuotientsWithSharedDenominators) {
    const Degree x = Degree::variable(), y = Degree::variable(), z = Degree::variable();
    EXPECT_EQ((x * y * z).numerator_degree(), 3);
    EXPECT_EQ((x + y * z).numerator_degree(), 2);
    const Degree q = x / y;
    EXPECT_EQ(q.numerator_degree(), 1);
    EXPECT_EQ(q.denominator_degree(), 1);
    // Terms over the same divisor keep it once: x/y + z/y = (x + z)/y.
    const Degree same = x / y + z / y;
    EXPECT_EQ(same.numerator_degree(), 1);
    EXPECT_EQ(same.denominator_degree(), 1);
    // Over different divisors the denominators multiply: x/y + x/z = (x z + x y)/(y z).
    const Degree different = x / y + x / z;
    EXPECT_EQ(different.numerator_degree(), 2);
    EXPECT_EQ(different.denominator_degree(), 2);
    // Dividing by a quotient moves its denominator up: x / (y / z) = x z / y.
    const Degree nested = x / (y / z);
    EXPECT_EQ(nested.numerator_degree(), 2);
    EXPECT_EQ(nested.denominator_degree(), 1);
    // The stand-ins: exp 2, tanh v/(1+v^2).
    EXPECT_EQ(ScalarTraits<Degree>::exp(x).numerator_degree(), 2);
    const Degree t = ScalarTraits<Degree>::tanh(x);
    EXPECT_EQ(t.numerator_degree(), 1);
    EXPECT_EQ(t.denominator_degree(), 2);
    // Constants fold exactly; zero is the zero polynomial.
    EXPECT_EQ((Degree(3) * Degree(0) * x).numerator_degree(), -1);
    EXPECT_EQ((x + Degree(0)).numerator_degree(), 1);
}

TEST(Degree, RecordsEveryDistinctDivisor) {
    DivisorRecord record;
    const Degree x = Degree::variable(), y = Degree::variable();
    const Degree total = x * x + y;  // degree 2
    const Degree a = x / total, b = y / total;  // the same divisor twice
    const Degree c = a / (x + y);               // another, degree 1
    (void)b;
    (void)c;
    EXPECT_EQ(record.count(), 2u);
    EXPECT_EQ(record.total_degree(), 3);
}

TEST(Degree, RefusesComparisonsOfVariablesAndDivisionByZero) {
    const Degree x = Degree::variable(), y = Degree::variable();
    EXPECT_THROW((void)(x < y), NotRational);
    EXPECT_THROW(ScalarTraits<Degree>::max(x, y), NotRational);
    EXPECT_THROW(x / Degree(0), std::domain_error);
    EXPECT_TRUE(Degree(2) < Degree(3));  // constants still compare
}

TEST(Degree, AttentionBoundMatchesTheHandCount) {
    // q = x W_q and k = x W_k have degree 2, a score q k^T degree 4, exp's stand-in 8, so a softmax row is
    // (8, 8) over its row total; times v = x W_v (2) and W_o (1): an output is (11, 8) over one row total.
    // The difference of two such rows, over two different totals: 11 + 8 = 19. Each of the 3 evaluations
    // (L(x) and L(g x) for both generators) divides by n row totals of degree 8.
    const int n = 8;
    const DegreeBound b = degree_bound(find_layer("attention"), n, 4);
    EXPECT_EQ(b.numerator, 19);
    EXPECT_EQ(b.divisor_count, 3u * n);
    EXPECT_EQ(b.divisors, 3 * n * 8);
    EXPECT_EQ(b.total(), 19 + 3 * n * 8);
}

TEST(Degree, MaxPoolingIsNotRational) {
    EXPECT_THROW(degree_bound(find_layer("attention-max-pool"), 4, 2), NotRational);
}

// ---------------------------------------------------------------------------------------------------------
// The Schwartz-Zippel certificate

TEST(SchwartzZippel, SetSizeReachesTheTargetBound) {
    EXPECT_EQ(set_bits_for(2, 2, -64), 33);
    EXPECT_EQ(set_bits_for(1, 4, -64), 32);  // never below 2^32
    for (long long d : {2LL, 211LL, 4221LL, 1LL << 40})
        for (int k : {1, 2, 3, 7}) {
            const int bits = set_bits_for(d, k, -64);
            EXPECT_LE(k * (std::log2(static_cast<double>(d)) - bits), -64.0) << d << " " << k;
            if (bits > 32) {  // 2^32 is the floor; above it, one bit fewer would miss the target
                EXPECT_GT(k * (std::log2(static_cast<double>(d)) - (bits - 1)), -64.0) << "not the smallest";
            }
        }
    EXPECT_THROW(set_bits_for(10, 0, -64), std::invalid_argument);
}

TEST(SchwartzZippel, AttentionIsCertifiedEquivariantWithBoundBelowTwoToTheMinus64) {
    const Certificate c = certify(find_layer("attention"), CertificateOptions{});
    EXPECT_TRUE(c.conclusive) << describe(c);
    EXPECT_TRUE(c.holds) << describe(c);
    EXPECT_EQ(c.method, Method::schwartz_zippel);
    EXPECT_EQ(c.verdict(), "certified equivariant");
    EXPECT_LE(c.log2_bound, -64.0);
    EXPECT_GE(c.set_bits, 32);
    EXPECT_EQ(c.degree.numerator, 19);
}

TEST(SchwartzZippel, EveryReferenceLayerIsCertifiedAsTheVerdictMatrixExpects) {
    CertificateOptions o;
    o.n = 5;
    o.d = 2;
    for (const LayerFamily& spec : catalog()) {
        const Certificate c = certify(spec, o);
        EXPECT_TRUE(c.as_expected()) << describe(c);
        if (spec.expected_symmetric()) {
            EXPECT_LE(c.log2_bound, -64.0) << spec.name;
        } else {
            ASSERT_TRUE(c.witness.has_value()) << spec.name;
            EXPECT_NE(c.witness->difference, 0) << spec.name;
        }
    }
}

// What a certificate runs depends on the layer, never on what the verdict matrix expects of it (issue 15): a
// user's own layer has no expectation worth trusting. Every catalog layer with its expectations reversed gets the
// same method and verdict as the original, and only as_expected() changes.
TEST(SchwartzZippel, TheMethodDoesNotDependOnTheExpectedVerdict) {
    CertificateOptions o;
    o.n = 4;
    o.d = 2;
    for (const LayerFamily& spec : catalog()) {
        LayerFamily liar = spec;
        for (Expectation& e : liar.expectations) e.holds = !e.holds;
        ASSERT_NE(liar.expected_symmetric(), spec.expected_symmetric()) << spec.name;
        const Certificate truth = certify(spec, o), lied_to = certify(liar, o);
        EXPECT_EQ(lied_to.method, truth.method) << describe(lied_to);
        EXPECT_EQ(lied_to.conclusive, truth.conclusive) << describe(lied_to);
        EXPECT_EQ(lied_to.holds, truth.holds) << describe(lied_to);
        EXPECT_EQ(lied_to.verdict(), truth.verdict()) << spec.name;
        EXPECT_TRUE(truth.as_expected()) << describe(truth);
        EXPECT_FALSE(lied_to.as_expected()) << describe(lied_to);
    }
    // The two directions spelled out: a symmetric layer said to break the symmetry is still proved by the
    // polynomial identity test, and a position-dependent one said to keep it still gets its exact witness.
    LayerFamily attention = find_layer("attention");
    for (Expectation& e : attention.expectations) e.holds = false;
    const Certificate proved = certify(attention, o);
    EXPECT_EQ(proved.method, Method::schwartz_zippel);
    EXPECT_EQ(proved.verdict(), "certified equivariant") << describe(proved);
    LayerFamily causal = find_layer("causal-attention");
    for (Expectation& e : causal.expectations) e.holds = true;
    const Certificate refuted = certify(causal, o);
    EXPECT_EQ(refuted.method, Method::exact_witness);
    EXPECT_EQ(refuted.verdict(), "certified not equivariant") << describe(refuted);
}

// A planted bug: attention whose output row 0 is scaled by 3/2. The certificate must find it, exactly.
template <class S> LayerFn<S> scaled_row_zero(Eigen::Index d, Draw<S>& draw) {
    Attention<S> a = Attention<S>::random({d, 1, false}, draw);
    return [a](const Mat<S>& x) {
        Mat<S> y = a(x);
        for (Eigen::Index j = 0; j < y.cols(); ++j) y(0, j) = y(0, j) * S(3) / S(2);
        return y;
    };
}

TEST(SchwartzZippel, APlantedPositionDependentScaleIsRefutedExactly) {
    const LayerFamily mutant = make_family(
        "scaled-row-0", Output::sequence,
        []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) { return scaled_row_zero<S>(d, draw); });
    const Certificate c = certify(mutant, CertificateOptions{});
    EXPECT_TRUE(c.conclusive);
    EXPECT_FALSE(c.holds) << describe(c);
    ASSERT_TRUE(c.witness.has_value());
    EXPECT_NE(c.witness->difference, 0);
    EXPECT_EQ(c.verdict(), "certified not equivariant");
    EXPECT_FALSE(c.as_expected());
}

// A bug that vanishes on a hypersurface: row 0 gets (x00 - x10)^2 (x00 - 5) added. Random dyadic inputs in
// [-1, 1] hit x00 = x10 one time in 33; random integers from 2^32 essentially never.
template <class S> LayerFn<S> rare_leak(Eigen::Index d, Draw<S>& draw) {
    Attention<S> a = Attention<S>::random({d, 1, false}, draw);
    return [a](const Mat<S>& x) {
        Mat<S> y = a(x);
        const S gap = x(0, 0) - x(1, 0);
        y(0, 0) += gap * gap * (x(0, 0) - S(5));
        return y;
    };
}

TEST(SchwartzZippel, ALeakThatVanishesOnAHypersurfaceIsRefuted) {
    const LayerFamily mutant = make_family(
        "rare-leak", Output::sequence,
        []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) { return rare_leak<S>(d, draw); });
    CertificateOptions o;
    o.n = 4;
    o.d = 2;
    const Certificate c = certify(mutant, o);
    EXPECT_TRUE(c.conclusive);
    EXPECT_FALSE(c.holds) << describe(c);
    ASSERT_TRUE(c.witness.has_value());
    EXPECT_NE(c.witness->difference, 0);
    // The degree pass sees attention's own 19 at least; the leak is a polynomial on top.
    EXPECT_GE(degree_bound(mutant, o.n, o.d).numerator, 19);
}

TEST(SchwartzZippel, PiecewiseLayersAreNotCertifiedByPolynomialIdentity) {
    const LayerFamily pooled_max = make_family(
        "max", Output::pooled,
        []<class S>(std::type_identity<S>, Eigen::Index, Draw<S>&, long) { return LayerFn<S>([](const Mat<S>& x) { return pool(x, Pool::max); }); });
    const Certificate c = certify(pooled_max, CertificateOptions{});
    EXPECT_FALSE(c.conclusive);
    EXPECT_EQ(c.verdict(), "not certified");
}

TEST(SchwartzZippel, MaxPoolingIsCertifiedByCompositionWithCertifiedAttention) {
    const Certificate c = certify(find_layer("attention-max-pool"), CertificateOptions{});
    EXPECT_EQ(c.method, Method::composition);
    EXPECT_EQ(c.inner_layer, "attention");
    EXPECT_TRUE(c.as_expected()) << describe(c);
    EXPECT_EQ(c.verdict(), "certified invariant");
}

TEST(SchwartzZippel, BadShapesAndTrialCountsAreRefusedWithAReason) {
    CertificateOptions o;
    o.n = 1;
    EXPECT_THROW(certify(find_layer("attention"), o), std::invalid_argument);
    o.n = 4;
    o.trials = 0;
    EXPECT_THROW(certify(find_layer("attention"), o), std::invalid_argument);
    o.trials = 2;
    o.d = 0;
    EXPECT_THROW(certify(find_layer("attention"), o), std::invalid_argument);
    EXPECT_THROW(certify(find_layer("no-such-layer"), CertificateOptions{}), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------------------
// From the stand-in to exp (proofs-notes/any-elementwise-function.md)

TEST(AnyElementwiseFunction, AttentionIdentityHoldsExactlyWithTwoDifferentStandins) {
    const int n = 6, d = 4;
    // The same integer weights and inputs in both arithmetics.
    Draw<Rational> ints = [rng = SplitMix64(3)]() mutable {
        return Rational(static_cast<long>(rng.below(41)) - 20) / 8;
    };
    const Mat<Rational> w = draw_matrix<Rational>(4 * d + n, d, ints);  // weights, then the input
    // Entry k of the draws is w(k / d, k % d), in both arithmetics.
    auto nth = [&](std::size_t k) { return w(static_cast<Eigen::Index>(k / d), static_cast<Eigen::Index>(k % d)); };
    std::size_t ka = 0, kb = 0;
    Draw<RationalStandin> a_draw = [&] { return RationalStandin(nth(ka++).str()); };
    Draw<OtherStandin> b_draw = [&] { return OtherStandin(nth(kb++)); };
    const Attention<RationalStandin> a = Attention<RationalStandin>::random({d, 1, false}, a_draw);
    const Attention<OtherStandin> b = Attention<OtherStandin>::random({d, 1, false}, b_draw);
    const Mat<RationalStandin> xa = draw_matrix<RationalStandin>(n, d, a_draw);
    const Mat<OtherStandin> xb = draw_matrix<OtherStandin>(n, d, b_draw);
    ASSERT_EQ(to_rational(xa), to_rational(xb));
    for (const Permutation& g : Permutation::generators(n)) {
        EXPECT_EQ(a(g.apply(xa)), g.apply(a(xa))) << g.cycles();
        EXPECT_EQ(b(g.apply(xb)), g.apply(b(xb))) << g.cycles();
    }
    // Not vacuous: the two stand-ins give different layers.
    EXPECT_NE(to_rational(a(xa)), to_rational(b(xb)));
}

// ---------------------------------------------------------------------------------------------------------
// Non-equivariance certificates

TEST(Witness, PositionSignalsGetAnExactWitnessThatReplays) {
    for (const char* name : {"attention+sinusoidal", "attention+rope", "causal-attention", "attention-first-readout"}) {
        const LayerFamily& spec = find_layer(name);
        const Certificate c = certify(spec, CertificateOptions{});
        ASSERT_TRUE(c.witness.has_value()) << name;
        EXPECT_EQ(c.method, Method::exact_witness);
        EXPECT_TRUE(c.as_expected()) << describe(c);
        // Replay: the witness names the weight seed; recompute both sides exactly.
        const Witness& w = *c.witness;
        EXPECT_EQ(w.source, WitnessSource::exact_search) << name;
        EXPECT_NE(describe(c).find("dyadic weights of seed " + std::to_string(w.weight_seed)), std::string::npos);
        const LayerFn<Rational> layer = seeded_layer<Rational>(spec, c.d, w.weight_seed);
        const Mat<Rational> lhs = layer(w.perm.apply(w.x));
        const Mat<Rational> lx = layer(w.x);
        const Mat<Rational> rhs = spec.output == Output::pooled ? lx : w.perm.apply(lx);
        EXPECT_EQ(lhs(w.row, w.col) - rhs(w.row, w.col), w.difference) << name;
        EXPECT_NE(w.difference, 0) << name;
    }
}

TEST(Witness, DescribeStatesTheWitnessAndEndsInTheVerdict) {
    const Certificate c = certify(find_layer("attention+learned"), CertificateOptions{});
    const std::string text = describe(c);
    EXPECT_NE(text.find("exact difference = " + c.witness->difference.str()), std::string::npos) << text;
    EXPECT_NE(text.find("permutation " + c.witness->perm.cycles()), std::string::npos) << text;
    EXPECT_EQ(text.substr(text.size() - std::string("certified not equivariant\n").size()), "certified not equivariant\n");
}

// ---------------------------------------------------------------------------------------------------------
// Bit-for-bit pooling in float and double (proofs-notes/exact-float-pooling.md)

template <class F> auto bits_of(F v) {
    if constexpr (std::is_same_v<F, float>) return std::bit_cast<std::uint32_t>(v);
    else return std::bit_cast<std::uint64_t>(v);
}

template <class F> bool same_bits(const Mat<F>& a, const Mat<F>& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
    for (Eigen::Index j = 0; j < a.size(); ++j)
        if (bits_of(a(j)) != bits_of(b(j))) return false;
    return true;
}

// Values of wildly different magnitude: random exponents over the whole range (subnormals included), random
// signs, and exact negatives of earlier values so that large parts cancel.
template <class F> Mat<F> spread(std::mt19937_64& rng, Eigen::Index n, Eigen::Index d) {
    const int lo = std::numeric_limits<F>::min_exponent - std::numeric_limits<F>::digits;
    const int hi = std::numeric_limits<F>::max_exponent - 2;
    std::uniform_int_distribution<int> exponent(lo, hi), kind(0, 9);
    std::uniform_real_distribution<F> fraction(F(0.5), F(1));
    Mat<F> x(n, d);
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j < d; ++j) {
            const int k = kind(rng);
            if (k == 0 && i > 0) x(i, j) = -x(rng() % i, j);
            else if (k == 1) x(i, j) = std::ldexp(fraction(rng), static_cast<int>(rng() % 40) - 20);
            else x(i, j) = std::ldexp(fraction(rng), exponent(rng)) * ((rng() & 1) ? F(1) : F(-1));
        }
    return x;
}

template <class F> Mat<F> shuffled(const Mat<F>& x, std::mt19937_64& rng) {
    std::vector<int> p(static_cast<std::size_t>(x.rows()));
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), rng);
    return Permutation(p).apply(x);
}

template <class F> void expect_bitwise_invariant(int cases) {
    std::mt19937_64 rng(2024);
    for (int c = 0; c < cases; ++c) {
        const Eigen::Index n = 1 + static_cast<Eigen::Index>(rng() % 40);
        const Mat<F> x = spread<F>(rng, n, 3);
        for (Pool how : {Pool::sum, Pool::mean, Pool::max}) {
            const Mat<F> reference = exact_pool(x, how);
            for (int s = 0; s < 8; ++s)
                ASSERT_TRUE(same_bits(exact_pool(shuffled(x, rng), how), reference))
                    << pool_name(how) << " pooling changed bits under a shuffle, case " << c;
        }
    }
}

TEST(ExactPooling, SumMeanAndMaxAreBitForBitInvariantUnderShufflesInDouble) { expect_bitwise_invariant<double>(300); }
TEST(ExactPooling, SumMeanAndMaxAreBitForBitInvariantUnderShufflesInFloat) { expect_bitwise_invariant<float>(300); }

// The result is the exact sum (mean) rounded once to nearest, ties to even: no representable value is closer.
template <class F> void expect_correctly_rounded(int cases) {
    std::mt19937_64 rng(77);
    for (int c = 0; c < cases; ++c) {
        const Eigen::Index n = 1 + static_cast<Eigen::Index>(rng() % 12);
        const Mat<F> x = spread<F>(rng, n, 2);
        for (Pool how : {Pool::sum, Pool::mean}) {
            const Mat<F> r = exact_pool(x, how);
            for (Eigen::Index j = 0; j < x.cols(); ++j) {
                Rational exact = 0;
                for (Eigen::Index i = 0; i < n; ++i) exact += Rational(static_cast<double>(x(i, j)));
                if (how == Pool::mean) exact /= static_cast<long>(n);
                const F got = r(0, j);
                if (std::isinf(got)) {
                    // Overflow: the exact value is at least the largest finite value plus half an ulp.
                    const F top = std::numeric_limits<F>::max();
                    const Rational half_ulp = (Rational(static_cast<double>(top)) -
                                               Rational(static_cast<double>(std::nextafter(top, F(0))))) / 2;
                    EXPECT_GE(abs(exact), Rational(static_cast<double>(top)) + half_ulp);
                    continue;
                }
                const Rational err = abs(exact - Rational(static_cast<double>(got)));
                for (F neighbour : {std::nextafter(got, std::numeric_limits<F>::infinity()),
                                    std::nextafter(got, -std::numeric_limits<F>::infinity())}) {
                    if (std::isinf(neighbour)) continue;
                    const Rational other = abs(exact - Rational(static_cast<double>(neighbour)));
                    EXPECT_LE(err, other) << pool_name(how) << " case " << c << " column " << j;
                    if (err == other) {  // a tie: the even significand wins
                        EXPECT_EQ(bits_of(got) & 1, 0u) << "tie not broken to even, case " << c;
                    }
                }
            }
        }
    }
}

TEST(ExactPooling, SumAndMeanAreTheCorrectlyRoundedExactValuesInDouble) { expect_correctly_rounded<double>(300); }
TEST(ExactPooling, SumAndMeanAreTheCorrectlyRoundedExactValuesInFloat) { expect_correctly_rounded<float>(300); }

TEST(ExactPooling, CancellationAcrossMagnitudesIsExact) {
    Mat<double> x(4, 1);
    x << 1e300, 1.0, -1e300, 1e-300;
    EXPECT_EQ(exact_pool(x, Pool::sum)(0, 0), 1.0 + 1e-300);  // = 1.0, correctly rounded
    Mat<double> y(3, 1);
    y << 0x1p-1074, 0x1p-1074, -0x1p-1074;  // subnormals add exactly
    EXPECT_EQ(exact_pool(y, Pool::sum)(0, 0), 0x1p-1074);
    Mat<float> f(3, 1);
    f << 0x1p100f, 0x1p-100f, -0x1p100f;
    EXPECT_EQ(exact_pool(f, Pool::sum)(0, 0), 0x1p-100f);
    // A mean of 3 that is not a float: one rounding of 1/3.
    Mat<float> g(3, 1);
    g << 1.0f, 0.0f, 0.0f;
    EXPECT_EQ(exact_pool(g, Pool::mean)(0, 0), 1.0f / 3.0f);
}

TEST(ExactPooling, SignedZerosInfinitiesAndNaNAreDeterministic) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    auto column = [](std::initializer_list<double> v) {
        Mat<double> m(static_cast<Eigen::Index>(v.size()), 1);
        Eigen::Index i = 0;
        for (double e : v) m(i++, 0) = e;
        return m;
    };
    EXPECT_TRUE(std::signbit(exact_pool(column({-0.0, -0.0}), Pool::sum)(0, 0)));
    EXPECT_FALSE(std::signbit(exact_pool(column({-0.0, 0.0}), Pool::sum)(0, 0)));
    EXPECT_FALSE(std::signbit(exact_pool(column({1.0, -1.0}), Pool::sum)(0, 0)));
    EXPECT_TRUE(std::isnan(exact_pool(column({inf, 1.0, -inf}), Pool::sum)(0, 0)));
    EXPECT_EQ(exact_pool(column({inf, 1e308, 1e308}), Pool::sum)(0, 0), inf);
    EXPECT_EQ(exact_pool(column({1e308, 1e308}), Pool::sum)(0, 0), inf);  // overflow rounds to infinity
    // max: -0 < +0 in either order; any NaN gives the same quiet NaN.
    for (const Mat<double>& m : {column({-0.0, 0.0}), column({0.0, -0.0})})
        EXPECT_FALSE(std::signbit(exact_pool(m, Pool::max)(0, 0)));
    const double payload = std::bit_cast<double>(std::bit_cast<std::uint64_t>(nan) | 0x5ULL);
    const Mat<double> a = exact_pool(column({1.0, payload, -nan}), Pool::max);
    const Mat<double> b = exact_pool(column({-nan, 1.0, payload}), Pool::max);
    EXPECT_TRUE(std::isnan(a(0, 0)));
    EXPECT_TRUE(same_bits(a, b));
    EXPECT_TRUE(same_bits(exact_pool(column({payload, 2.0}), Pool::sum), exact_pool(column({2.0, -nan}), Pool::sum)));
    EXPECT_THROW(exact_pool(Mat<double>(0, 2), Pool::sum), std::invalid_argument);
}

// The contrast, documented rather than failing: Eigen's column sum rounds after every addition, so its bits
// depend on the order of the rows. The exact pooling of the same columns does not.
TEST(ExactPooling, PlainEigenColumnSumDependsOnRowOrderWhereExactPoolingDoesNot) {
    Mat<double> x(3, 1);
    x << 1e16, 1.0, -1e16;
    const Mat<double> y = Permutation(std::vector<int>{0, 2, 1}).apply(x);
    const double plain_x = x.colwise().sum()(0, 0), plain_y = y.colwise().sum()(0, 0);
    EXPECT_NE(plain_x, plain_y) << "Eigen happened to agree here";
    EXPECT_EQ(exact_pool(x, Pool::sum)(0, 0), 1.0);
    EXPECT_EQ(exact_pool(y, Pool::sum)(0, 0), 1.0);
    // Over random spread columns the plain sum changes bits under some shuffle, the exact one never.
    std::mt19937_64 rng(5);
    int plain_changed = 0;
    for (int c = 0; c < 50; ++c) {
        const Mat<double> m = spread<double>(rng, 16, 1);
        const Mat<double> s = shuffled(m, rng);
        plain_changed += !same_bits<double>(m.colwise().sum(), s.colwise().sum());
        EXPECT_TRUE(same_bits(exact_pool(m, Pool::sum), exact_pool(s, Pool::sum)));
    }
    EXPECT_GT(plain_changed, 0);
}

}  // namespace

// ------------------------------------------------------------------ layers over named inputs (issue 12)

namespace {
SignatureCertificate certified(const std::string& layer, int length = 4) {
    SignatureCertificateOptions o;
    o.length = length;
    return certify_signature(find_signature_layer(layer), o);
}

// Every axis certified as the theory expects: Schwartz-Zippel where it holds, an exact witness where it fails.
void expect_certified_as_expected(const std::string& layer) {
    for (int length : {2, 3, 5}) {
        const SignatureCertificate c = certified(layer, length);
        EXPECT_TRUE(c.as_expected()) << describe(c);
        EXPECT_LE(c.log2_bound, -64.0) << describe(c);
        for (const AxisCertificate& a : c.axes) {
            EXPECT_EQ(a.method, a.holds ? Method::schwartz_zippel : Method::exact_witness) << describe(c);
            EXPECT_EQ(!a.witness, a.holds) << describe(c);
        }
    }
}
}  // namespace

TEST(SignatureCertificate, CrossAttentionIsEquivariantInTheQueriesAndInvariantInTheMemory) {
    expect_certified_as_expected("cross-attention");
}
TEST(SignatureCertificate, AttentionWithAPairwiseBiasIsEquivariantUnderPBPt) {
    expect_certified_as_expected("attention+pairwise-bias");
}
TEST(SignatureCertificate, SumAndMeanMessagePassingOverIncidenceMatricesHold) {
    expect_certified_as_expected("message-passing-sum-incidence");
    expect_certified_as_expected("message-passing-mean-incidence");
}
TEST(SignatureCertificate, TheGraphReadoutIsInvariantToNodesAndEdges) {
    expect_certified_as_expected("message-passing-readout-incidence");
}
TEST(SignatureCertificate, MemoryPositionsAreRefutedOnTheMemoryAxisWithAWitness) {
    expect_certified_as_expected("cross-attention+memory-positions");
    const SignatureCertificate c = certified("cross-attention+memory-positions");
    EXPECT_FALSE(c.axes[1].holds);
    ASSERT_TRUE(c.axes[1].witness.has_value()) << describe(c);
    EXPECT_EQ(c.axes[1].witness->axis, "m") << describe(c);
    EXPECT_NE(describe(*c.axes[1].witness).find("of axis m"), std::string::npos) << describe(c);
}
TEST(SignatureCertificate, TheNodeIndexFeatureAndTheEdgeOrderAggregatorAreRefutedWithWitnesses) {
    expect_certified_as_expected("message-passing+node-index-incidence");
    expect_certified_as_expected("message-passing+edge-order-incidence");
    const SignatureCertificate nodes = certified("message-passing+node-index-incidence");
    ASSERT_TRUE(nodes.axes[0].witness.has_value()) << describe(nodes);
    EXPECT_EQ(nodes.axes[0].witness->axis, "nodes") << describe(nodes);
    const SignatureCertificate edges = certified("message-passing+edge-order-incidence");
    ASSERT_TRUE(edges.axes[1].witness.has_value()) << describe(edges);
    EXPECT_EQ(edges.axes[1].witness->axis, "edges") << describe(edges);
}
// A mask takes finitely many values: each assignment that pads no line entirely (2^n - 1 of them for one mask
// over n) gets its own identity test, so the certificate covers every mask.
TEST(SignatureCertificate, TheKeyPaddingMaskIsCertifiedForEveryMaskAssignment) {
    expect_certified_as_expected("attention+key-padding-mask");
    for (int length : {2, 3, 5}) EXPECT_EQ(certified("attention+key-padding-mask", length).mask_assignments, (1 << length) - 1);
    EXPECT_EQ(certified("cross-attention").mask_assignments, 0);
}

// The certificate tests the harness's own transformation too: a mask left in place while the tokens move (a
// planted harness bug) is refuted.
TEST(SignatureCertificate, AMaskLeftInPlaceByAPlantedHarnessBugIsRefuted) {
    struct Unplant {
        ~Unplant() { permcheck::test_only::plant_harness_bug(permcheck::test_only::HarnessBug::none); }
    } unplant;
    permcheck::test_only::plant_harness_bug(permcheck::test_only::HarnessBug::mask_wrong_axis);
    const SignatureCertificate c = certified("attention+key-padding-mask");
    ASSERT_EQ(c.axes.size(), 1u);
    EXPECT_TRUE(c.axes[0].conclusive) << describe(c);
    EXPECT_FALSE(c.axes[0].holds) << describe(c);
}

// An edge_index is discrete and max piecewise: those layers are checked by their rows of the verdict table.
TEST(SignatureCertificate, AnEdgeIndexOrMaxAggregationHasNoPolynomialCertificate) {
    for (const char* layer : {"message-passing-sum", "message-passing-max"})
        EXPECT_THROW(certified(layer), std::invalid_argument) << layer;
}
TEST(SignatureCertificate, EveryRationalLayerOverNamedInputsIsCertifiedAsExpected) {
    int rational = 0;
    for (const SignatureFamily& f : signature_catalog())
        if (f.rational()) {
            ++rational;
            EXPECT_TRUE(certify_signature(f, {}).as_expected()) << f.name;
        }
    EXPECT_EQ(rational, 9);
}
