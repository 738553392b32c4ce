// Every catalog layer in float, double and exact rationals: it runs, has the declared shape, and the float
// and double results stay within the error bound derived in proofs-notes/float-vs-exact.md of the exact one.
#include "layers/layers.h"
#include "layers/catalog.h"
#include "tests/support/sequence.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

namespace permcheck {
namespace {

// ---------------------------------------------------------------------------------------------------------
// The error budget of proofs-notes/float-vs-exact.md: every stage maps (magnitude, error) of its input to
// those of its output. Magnitudes are bounds on max |entry| of the exact values; errors bound
// max |computed - reference|. Weights are dyadic in [-1, 1] (LayerNorm gains in [0, 2]).

struct Budget {
    double mag = 0.0;  // bound on |exact entry|
    double err = 0.0;  // bound on |float entry - reference entry|
};

class ErrorModel {
public:
    // u = unit roundoff of the evaluated type plus that of double: the reference rounds its exp/sqrt/tanh
    // arguments and results to double, so it too is an evaluation with unit roundoff 2^-53 at those points.
    explicit ErrorModel(double u) : u_(u) {}

    double gamma(double k) const {
        const double ku = k * u_;
        if (ku >= 1.0) throw std::logic_error("gamma(k) undefined for k u >= 1");
        return ku / (1.0 - ku);
    }

    // x W (+ b), W k x m: |fl(xW + b) - (xW + b)| <= gamma(k + 1) (|x||W| + |b|), any summation order.
    Budget linear(Budget x, double k, bool bias) const {
        const double mag = k * x.mag + (bias ? 1.0 : 0.0);
        return {mag, k * x.err + gamma(bias ? k + 1 : k) * mag};
    }
    Budget relu(Budget x) const { return x; }  // 1-Lipschitz and exact
    Budget add(Budget a, Budget b) const {
        const double mag = a.mag + b.mag;
        return {mag, a.err + b.err + u_ * mag};
    }
    // Rows normalised by sigma = sqrt(var + eps) >= sigma_min; gain in [0, 2], bias in [-1, 1].
    Budget layernorm(Budget x, double d, double sigma_min) const {
        const double gain = 2.0, bias = 1.0, rd = std::sqrt(d);
        const double lipschitz = gain * (2.0 + 4.0 * rd) / sigma_min;
        const double mag = gain * rd + bias;
        return {mag, lipschitz * (x.err + gamma(d + 3) * x.mag) + gamma(d + 8) * mag};
    }
    Budget sum_pool(Budget x, double n) const { return {n * x.mag, n * x.err + gamma(n - 1) * n * x.mag}; }
    Budget mean_pool(Budget x, double n) const { return {x.mag, x.err + gamma(n) * x.mag}; }

    // Scaled dot-product attention, heads of width w = d / heads, scores bias |B| <= beta; RoPE at offset 0.
    Budget attention(Budget x, double n, double d, double heads, double beta, bool rope) const {
        const double w = d / heads, scale = 1.0 / std::sqrt(w);
        Budget q = linear(x, d, false);  // also k
        const Budget v = q;
        if (rope) {
            const double turn_err = std::sqrt(2.0) * (n - 1) * gamma(6);  // 2-norm error of (cos, sin) at row n-1
            q = {std::sqrt(2.0) * q.mag, std::sqrt(2.0) * (q.err + q.mag * turn_err + gamma(2) * q.mag)};
        }
        const double S = scale * w * q.mag * q.mag + beta;  // |score|
        const double delta = scale * w * (2.0 * q.mag * q.err + gamma(w + 2) * q.mag * q.mag) + u_ * S;
        const double rho = 2.0 * delta + 4.0 * S * u_ + gamma(n + 8);  // relative error of a softmax weight
        const Budget mixed{v.mag, v.err + (rho + gamma(n)) * v.mag};
        return linear(mixed, d, false);
    }
    // h_t = tanh(x_t Wx + h_{t-1} Wh + b), d inputs and d hidden units, n steps; the last state's budget.
    Budget rnn(Budget x, double n, double d) const {
        Budget h{0.0, 0.0};
        for (int t = 0; t < static_cast<int>(n); ++t) {
            const double pre_mag = d * x.mag + d * h.mag + 1.0;
            const double pre_err = d * x.err + d * h.err + gamma(2 * d + 1) * pre_mag;
            h = {1.0, pre_err + gamma(5)};  // tanh: 1-Lipschitz, library error <= 4u, reference argument rounding
        }
        return h;
    }

    double u() const { return u_; }

private:
    double u_;
};

// What the bound needs to know beyond the shape: the smallest sigma = sqrt(var + eps) of every LayerNorm.
struct Observed {
    double sigma1 = 1.0 / 256.0, sigma2 = 1.0 / 256.0;  // a priori: sqrt(eps) = 2^-8
};

Budget catalog_bound(const ErrorModel& m, const std::string& name, double n, double d, double X,
                     const Observed& seen) {
    const Budget x{X, 0.0};  // inputs are dyadic, exact in every type
    auto mlp = [&](Budget in, double d_in, double hidden) {
        return m.linear(m.relu(m.linear(in, d_in, true)), hidden, true);
    };
    auto attn = [&](Budget in, double heads, double beta, bool rope) {
        return m.attention(in, n, d, heads, beta, rope);
    };
    if (name == "linear") return m.linear(x, d, true);
    if (name == "mlp") return mlp(x, d, 2 * d);
    if (name == "layernorm") return m.layernorm(x, d, seen.sigma1);
    if (name == "attention" || name == "causal-attention") return attn(x, 1, 0, false);
    if (name == "mha") return attn(x, 2, 0, false);
    if (name == "encoder") {
        const Budget y = m.layernorm(m.add(x, attn(x, 1, 0, false)), d, seen.sigma1);
        return m.layernorm(m.add(y, mlp(y, d, 2 * d)), d, seen.sigma2);
    }
    // sinusoidal: the double sin/cos values rounded once to the evaluated type, |PE| <= 1
    if (name == "attention+sinusoidal") return attn(m.add(x, {1.0, m.u()}), 1, 0, false);
    if (name == "attention+learned") return attn(m.add(x, {1.0, 0.0}), 1, 0, false);  // dyadic table
    if (name == "attention+rope") return attn(x, 1, 0, true);
    if (name == "attention+alibi") return attn(x, 1, (n - 1) / 256.0, false);  // slope 2^-8, dyadic
    if (name == "attention+t5") return attn(x, 1, 1.0, false);                 // dyadic table in [-1, 1]
    if (name == "rnn" || name == "rnn-final-state") return m.rnn(x, n, d);
    if (name == "attention-sum-pool") return m.sum_pool(attn(x, 1, 0, false), n);
    if (name == "attention-mean-pool") return m.mean_pool(attn(x, 1, 0, false), n);
    if (name == "attention-max-pool" || name == "attention-first-readout" || name == "attention-last-readout")
        return attn(x, 1, 0, false);  // max and readouts are exact and 1-Lipschitz
    if (name == "attention+sinusoidal-mean-pool") return m.mean_pool(attn(m.add(x, {1.0, m.u()}), 1, 0, false), n);
    if (name == "deepsets") return mlp(m.sum_pool(mlp(x, d, 2 * d), n), 2 * d, 2 * d);
    throw std::logic_error("no float-vs-exact error bound derived for catalog layer '" + name +
                           "': add its stages to catalog_bound and to proofs-notes/float-vs-exact.md");
}

// ---------------------------------------------------------------------------------------------------------

constexpr Eigen::Index kWidth = 4;

Mat<double> dyadic_input(Eigen::Index n, std::uint64_t seed) {
    Draw<double> draw = dyadic_draw<double>(seed + 1000);
    return draw_matrix(n, kWidth, draw);
}

double smallest_sigma(const Mat<Rational>& x) {
    double best = std::numeric_limits<double>::infinity();
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        Rational mean = 0, var = 0;
        for (Eigen::Index j = 0; j < x.cols(); ++j) mean += x(i, j);
        mean /= static_cast<int>(x.cols());
        for (Eigen::Index j = 0; j < x.cols(); ++j) var += (x(i, j) - mean) * (x(i, j) - mean);
        var /= static_cast<int>(x.cols());
        best = std::min(best, std::sqrt(var.convert_to<double>() + 1.0 / 65536.0));
    }
    return best;
}

// The LayerNorm inputs the bound needs, from an exact twin built from the same draws as the catalog's.
Observed observe(const std::string& name, const Mat<Rational>& x, std::uint64_t seed) {
    Observed seen;
    if (name == "layernorm") seen.sigma1 = smallest_sigma(x);
    if (name == "encoder") {
        Draw<Rational> draw = dyadic_draw<Rational>(seed);
        const EncoderBlock<Rational> block = EncoderBlock<Rational>::random({kWidth, 1, false}, draw);
        const Mat<Rational> y0 = x + block.attention(x);
        seen.sigma1 = smallest_sigma(y0);
        const Mat<Rational> y = block.norm1(y0);
        seen.sigma2 = smallest_sigma(Mat<Rational>(y + block.mlp(y)));
        const Mat<Rational> twin = block(x), built = test::sequence_layer<Rational>(find_layer(name), kWidth, seed)(x);
        if (twin != built) throw std::logic_error("the encoder twin no longer matches the catalog's encoder");
    }
    return seen;
}

template <class F> class FloatVersusExact : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FloatVersusExact, FloatTypes);

// For every layer, 4 weight seeds x lengths 1..4 at width 4: |float - exact| <= the derived bound, entrywise,
// compared exactly (the float result converted to a rational, no rounding in the comparison).
TYPED_TEST(FloatVersusExact, EveryCatalogLayerStaysWithinTheDerivedBoundOfTheExactResult) {
    using F = TypeParam;
    const ErrorModel model(ScalarTraits<F>::unit_roundoff + ScalarTraits<double>::unit_roundoff);
    std::map<std::string, double> worst_ratio;
    for (const Family& spec : test::sequence_families()) {
        for (std::uint64_t seed = 1; seed <= 4; ++seed)
            for (Eigen::Index n = 1; n <= 4; ++n) {
                const Mat<double> xd = dyadic_input(n, seed * 10 + static_cast<std::uint64_t>(n));
                const Mat<Rational> xq = from_double<Rational>(xd);
                const Mat<Rational> exact = test::sequence_layer<Rational>(spec, kWidth, seed)(xq);
                const Mat<F> approx = test::sequence_layer<F>(spec, kWidth, seed)(from_double<F>(xd));
                ASSERT_EQ(approx.rows(), exact.rows()) << spec.name;
                ASSERT_EQ(approx.cols(), exact.cols()) << spec.name;
                const double X = xd.cwiseAbs().maxCoeff();
                const Budget b = catalog_bound(model, spec.name, static_cast<double>(n), kWidth, X,
                                               observe(spec.name, xq, seed));
                const Rational bound(b.err);
                for (Eigen::Index i = 0; i < exact.rows(); ++i)
                    for (Eigen::Index j = 0; j < exact.cols(); ++j) {
                        ASSERT_TRUE(std::isfinite(static_cast<double>(approx(i, j)))) << spec.name;
                        const Rational diff = abs(Rational(static_cast<double>(approx(i, j))) - exact(i, j));
                        EXPECT_LE(diff, bound) << spec.name << " in " << ScalarTraits<F>::name << ", seed " << seed
                                               << ", n " << n << ", entry (" << i << ", " << j
                                               << "): |error| = " << diff.convert_to<double>() << " > bound "
                                               << b.err;
                        worst_ratio[spec.name] =
                            std::max(worst_ratio[spec.name], diff.convert_to<double>() / b.err);
                    }
            }
    }
    // How tight the bound is, for the record (the assertion above is what matters).
    std::cout << "largest |error| / bound in " << ScalarTraits<F>::name << ":\n";
    for (const auto& [layer, ratio] : worst_ratio)
        std::cout << "  " << std::left << std::setw(32) << layer << std::scientific << std::setprecision(2) << ratio
                  << "\n";
}

// The bound must say something: below 1% of the output magnitude in every case checked above, with one
// stated exception. For the encoder in float the first-order worst case is NOT informative: two LayerNorms,
// each with Lipschitz factor 2 (2 + 4 sqrt d) / sigma, multiply the a-priori attention error (worst-case
// weights, |score| <= 32) to more than the output scale, even with the observed sigmas (a-priori sigma_min =
// 2^-8 is worse still). The float-vs-exact check of the encoder in float is therefore only a sanity check;
// in double its bound is ~1e-8 of the output scale. See proofs-notes/float-vs-exact.md. If the analysis is
// tightened, this test fails and the exception should go.
bool bound_is_uninformative(const std::string& layer, const char* type) {
    return layer == "encoder" && std::string(type) == "float32";
}

TYPED_TEST(FloatVersusExact, DerivedBoundIsSmallAgainstTheOutputMagnitude) {
    using F = TypeParam;
    const ErrorModel model(ScalarTraits<F>::unit_roundoff + ScalarTraits<double>::unit_roundoff);
    std::map<std::string, double> worst;
    for (const Family& spec : test::sequence_families())
        for (std::uint64_t seed = 1; seed <= 4; ++seed)
            for (Eigen::Index n = 1; n <= 4; ++n) {
                const Mat<double> xd = dyadic_input(n, seed * 10 + static_cast<std::uint64_t>(n));
                const Budget b = catalog_bound(model, spec.name, static_cast<double>(n), kWidth,
                                               xd.cwiseAbs().maxCoeff(),
                                               observe(spec.name, from_double<Rational>(xd), seed));
                worst[spec.name] = std::max(worst[spec.name], b.err / b.mag);
                if (bound_is_uninformative(spec.name, ScalarTraits<F>::name)) continue;
                EXPECT_LT(b.err, 1e-2 * b.mag) << spec.name << " in " << ScalarTraits<F>::name << ", seed " << seed
                                               << ", n " << n << ": bound " << b.err << " for outputs up to " << b.mag;
            }
    for (const auto& [layer, ratio] : worst)
        if (bound_is_uninformative(layer, ScalarTraits<F>::name)) {
            EXPECT_GE(ratio, 1e-2) << layer << " in " << ScalarTraits<F>::name
                                   << ": the bound became informative; drop the exception";
        }
    std::cout << "largest bound / output magnitude in " << ScalarTraits<F>::name << ":\n";
    for (const auto& [layer, ratio] : worst)
        std::cout << "  " << std::left << std::setw(32) << layer << std::scientific << std::setprecision(2) << ratio
                  << "\n";
    const Budget a_priori = catalog_bound(model, "encoder", 4, kWidth, 1.0, Observed{});
    std::cout << "encoder, n = 4, a-priori sigma_min = 2^-8: bound " << a_priori.err << " for outputs up to "
              << a_priori.mag << "\n";
}

// ---------------------------------------------------------------------------------------------------------
// Every catalog layer builds and runs in every scalar, with the declared output shape.

template <class S> class CatalogInEveryScalar : public ::testing::Test {};
using AllScalars = ::testing::Types<float, double, Rational>;
TYPED_TEST_SUITE(CatalogInEveryScalar, AllScalars);

TYPED_TEST(CatalogInEveryScalar, EveryLayerRunsWithTheDeclaredShape) {
    using S = TypeParam;
    for (const Family& spec : test::sequence_families())
        for (std::uint64_t seed : {1u, 2u}) {
            const test::SequenceFn<S> layer = test::sequence_layer<S>(spec, kWidth, seed);
            const Mat<S> y = layer(from_double<S>(dyadic_input(3, seed)));
            EXPECT_EQ(y.rows(), test::is_pooled(spec) ? 1 : 3) << spec.name;
            EXPECT_EQ(y.cols(), kWidth) << spec.name;
            for (Eigen::Index i = 0; i < y.rows(); ++i)
                for (Eigen::Index j = 0; j < y.cols(); ++j)
                    EXPECT_TRUE(std::isfinite(sc::to_double<S>(y(i, j)))) << spec.name << " (" << i << ", " << j << ")";
            // Same seed, same weights: a second build gives the identical result.
            EXPECT_TRUE(y == test::sequence_layer<S>(spec, kWidth, seed)(from_double<S>(dyadic_input(3, seed))))
                << spec.name;
        }
}

// An empty sequence is a valid input to a sequence layer (nothing to reorder) and an error for a pooled one.
TYPED_TEST(CatalogInEveryScalar, EmptySequenceGivesAnEmptyOutputOrAClearError) {
    using S = TypeParam;
    const Mat<S> empty(0, kWidth);
    for (const Family& spec : test::sequence_families()) {
        const test::SequenceFn<S> layer = test::sequence_layer<S>(spec, kWidth, 1);
        if (!test::is_pooled(spec)) {
            const Mat<S> y = layer(empty);
            EXPECT_EQ(y.rows(), 0) << spec.name;
            EXPECT_EQ(y.cols(), kWidth) << spec.name;
        } else {
            try {
                layer(empty);
                ADD_FAILURE() << spec.name << " accepted an empty sequence";
            } catch (const std::invalid_argument& e) {
                EXPECT_NE(std::string(e.what()).find("empty sequence"), std::string::npos) << e.what();
            }
        }
    }
}

TYPED_TEST(CatalogInEveryScalar, WrongWidthIsAClearErrorForEveryLayer) {
    using S = TypeParam;
    const Mat<S> narrow = from_double<S>(Mat<double>::Zero(2, kWidth - 1));
    for (const Family& spec : test::sequence_families()) {
        const test::SequenceFn<S> layer = test::sequence_layer<S>(spec, kWidth, 1);
        try {
            layer(narrow);
            ADD_FAILURE() << spec.name << " accepted 3 features where it was built for 4";
        } catch (const std::exception& e) {
            const std::string what = e.what();
            EXPECT_TRUE(what.find("expects 4") != std::string::npos || what.find("of width 4") != std::string::npos)
                << spec.name << ": " << what;
        }
    }
}

}  // namespace
}  // namespace permcheck
