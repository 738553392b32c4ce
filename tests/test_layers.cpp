// Every reference layer against values derived by hand on a tiny case, in exact arithmetic (Rational), plus
// the structural claims of the position signals and the errors bad input must raise.
//
// The exact non-rational functions are specified as "the exact rational of the double result of the double
// argument" (proofs-notes/exact-arithmetic.md); qexp/qsqrt/qtanh below build expected values that way, from
// arguments derived by hand.
#include "layers/layers.h"
#include "layers/catalog.h"
#include "cases/permutation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace permcheck {
namespace {

using Q = Rational;

Q frac(long num, long den = 1) { return Q(num) / Q(den); }
Q qexp(const Q& a) { return Q(std::exp(a.convert_to<double>())); }
Q qsqrt(const Q& a) { return Q(std::sqrt(a.convert_to<double>())); }
Q qtanh(const Q& a) { return Q(std::tanh(a.convert_to<double>())); }

Mat<Q> mat(Eigen::Index rows, Eigen::Index cols, std::initializer_list<Q> values) {
    if (static_cast<Eigen::Index>(values.size()) != rows * cols) throw std::logic_error("mat: wrong value count");
    Mat<Q> m(rows, cols);
    auto it = values.begin();
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = *it++;
    return m;
}
Mat<Q> identity(Eigen::Index d) { return Mat<Q>::Identity(d, d); }
Mat<Q> zeros(Eigen::Index r, Eigen::Index c) { return Mat<Q>::Zero(r, c); }

std::string show(const Mat<Q>& m) {
    std::string s;
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        s += "  [";
        for (Eigen::Index j = 0; j < m.cols(); ++j) s += (j ? ", " : "") + m(i, j).str();
        s += "]\n";
    }
    return s;
}

::testing::AssertionResult exactly(const Mat<Q>& actual, const Mat<Q>& expected) {
    if (actual.rows() != expected.rows() || actual.cols() != expected.cols())
        return ::testing::AssertionFailure() << "shape " << actual.rows() << "x" << actual.cols() << ", expected "
                                             << expected.rows() << "x" << expected.cols();
    for (Eigen::Index i = 0; i < actual.rows(); ++i)
        for (Eigen::Index j = 0; j < actual.cols(); ++j)
            if (actual(i, j) != expected(i, j))
                return ::testing::AssertionFailure() << "entry (" << i << ", " << j << ") is " << actual(i, j).str()
                                                     << ", expected " << expected(i, j).str() << "\nactual:\n"
                                                     << show(actual) << "expected:\n"
                                                     << show(expected);
    return ::testing::AssertionSuccess();
}

// Runs fn, which must throw E whose message contains every fragment.
template <class E> ::testing::AssertionResult throws_with(const std::function<void()>& fn,
                                                           std::initializer_list<std::string> fragments) {
    try {
        fn();
    } catch (const E& e) {
        const std::string what = e.what();
        for (const std::string& f : fragments)
            if (what.find(f) == std::string::npos)
                return ::testing::AssertionFailure() << "message \"" << what << "\" lacks \"" << f << "\"";
        return ::testing::AssertionSuccess();
    } catch (const std::exception& e) {
        return ::testing::AssertionFailure() << "threw another exception type: " << e.what();
    }
    return ::testing::AssertionFailure() << "did not throw";
}

Mat<Q> dyadic_input(Eigen::Index n, Eigen::Index d, std::uint64_t seed) {
    Draw<Q> draw = dyadic_draw<Q>(seed);
    return draw_matrix(n, d, draw);
}

// ---------------------------------------------------------------------------------------------------------
// Token embedding

TEST(Embedding, LooksUpTheRowOfEachToken) {
    const Embedding<Q> e{mat(3, 2, {1, 2, 3, 4, 5, 6})};
    EXPECT_TRUE(exactly(e({2, 0, 2}), mat(3, 2, {5, 6, 1, 2, 5, 6})));
}

// The identity property: a row is a function of the token alone, never of where the token stands.
TEST(Embedding, SameTokenGivesTheSameRowAtEveryPosition) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        Draw<Q> draw = dyadic_draw<Q>(seed);
        const Embedding<Q> e = Embedding<Q>::random(4, 3, draw);
        const std::vector<int> tokens{3, 1, 3, 0, 1, 3, 2};
        const Mat<Q> rows = e(tokens);
        for (std::size_t p = 0; p < tokens.size(); ++p) {
            EXPECT_TRUE(exactly(Mat<Q>(rows.row(static_cast<Eigen::Index>(p))), Mat<Q>(e.table.row(tokens[p]))));
            for (std::size_t r = 0; r < tokens.size(); ++r)
                if (tokens[p] == tokens[r]) {
                    EXPECT_TRUE(exactly(Mat<Q>(rows.row(static_cast<Eigen::Index>(p))),
                                        Mat<Q>(rows.row(static_cast<Eigen::Index>(r)))))
                        << "positions " << p << " and " << r << " hold token " << tokens[p];
                }
        }
    }
}

// Reordering the tokens only reorders the rows: the embedding itself is permutation-equivariant, so it
// cannot be what tells a symmetric layer where a token stands.
TEST(Embedding, EmbeddingOfPermutedTokensIsThePermutedEmbedding) {
    Draw<Q> draw = dyadic_draw<Q>(7);
    const Embedding<Q> e = Embedding<Q>::random(5, 2, draw);
    const std::vector<int> tokens{4, 0, 2, 2, 1};
    const Permutation p({2, 4, 0, 1, 3});
    std::vector<int> permuted(tokens.size());
    for (int i = 0; i < p.size(); ++i) permuted[static_cast<std::size_t>(i)] = tokens[static_cast<std::size_t>(p[i])];
    EXPECT_TRUE(exactly(e(permuted), p.apply(e(tokens))));
}

TEST(Embedding, TokenOutsideTheVocabularyIsAClearError) {
    const Embedding<Q> e{mat(3, 1, {1, 2, 3})};
    EXPECT_TRUE(throws_with<std::out_of_range>([&] { e({0, 3}); },
                                               {"token id 3", "at position 1", "outside the vocabulary [0, 3)"}));
    EXPECT_TRUE(throws_with<std::out_of_range>([&] { e({-1}); }, {"token id -1", "at position 0"}));
}

// ---------------------------------------------------------------------------------------------------------
// Absolute position signals

// PE[p][2i] = sin(p w_i), PE[p][2i+1] = cos(p w_i), w_i = 10000^(-2i/d); for d = 4: w_0 = 1, w_1 = 0.01.
TEST(Sinusoidal, SignalFollowsVaswaniFormula) {
    const Mat<Q> expected = mat(2, 4, {0, 1, 0, 1,  // position 0: sin 0, cos 0
                                       Q(std::sin(1.0)), Q(std::cos(1.0)), Q(std::sin(0.01)), Q(std::cos(0.01))});
    EXPECT_TRUE(exactly(sinusoidal_signal<Q>(2, 4), expected));
}

TEST(Sinusoidal, SignalAtAnOffsetIsTheLaterRowsOfTheTable) {
    const Mat<Q> table = sinusoidal_signal<Q>(6, 4);
    EXPECT_TRUE(exactly(sinusoidal_signal<Q>(2, 4, 3), Mat<Q>(table.middleRows(3, 2))));
}

TEST(Sinusoidal, AbsolutePositionAddsTheSignalToTheInput) {
    const Mat<Q> x = mat(2, 2, {1, 2, 3, 4});
    // d = 2: PE[0] = (sin 0, cos 0) = (0, 1), PE[1] = (sin 1, cos 1).
    const Mat<Q> expected = mat(2, 2, {1, 3, Q(3) + Q(std::sin(1.0)), Q(4) + Q(std::cos(1.0))});
    EXPECT_TRUE(exactly(AbsolutePosition<Q>::sinusoidal()(x), expected));
}

TEST(LearnedPosition, AddsTheTableRowsFromItsOffset) {
    AbsolutePosition<Q> pos{AbsoluteKind::learned, mat(3, 2, {10, 20, 30, 40, 50, 60}), 1};
    const Mat<Q> x = mat(2, 2, {1, 2, 3, 4});
    EXPECT_TRUE(exactly(pos(x), mat(2, 2, {31, 42, 53, 64})));  // rows 1 and 2 of the table
}

TEST(LearnedPosition, TableOverflowIsAClearError) {
    AbsolutePosition<Q> pos{AbsoluteKind::learned, mat(3, 2, {10, 20, 30, 40, 50, 60}), 2};
    EXPECT_TRUE(throws_with<std::out_of_range>([&] { pos(mat(2, 2, {1, 2, 3, 4})); },
                                               {"holds positions [0, 3)", "asked for [2, 4)"}));
    pos.offset = 0;
    EXPECT_TRUE(throws_with<std::out_of_range>([&] { pos(mat(1, 3, {1, 2, 3})); }, {"of width 2", "of width 3"}));
}

// ---------------------------------------------------------------------------------------------------------
// RoPE

// Pair 0 of a width-2 head turns by theta = 1 per position: t = round(tan(1/2) * 4096) / 4096 = 2238/4096
// = 1119/2048, so cos = (1 - t^2)/(1 + t^2) = 2942143/5446465 and sin = 2t/(1 + t^2) = 4583424/5446465.
// Pair 1 of a width-4 head: theta = 0.01, t = round(20.48...) / 4096 = 5/1024, cos = 1048551/1048601,
// sin = 10240/1048601. Both are exact Pythagorean triples (2942143^2 + 4583424^2 = 5446465^2).
TEST(Rope, BaseTurnIsThePythagoreanRotationOfTheDyadicHalfAngleTangent) {
    const Rope<Q>::Turn a = Rope<Q>::base_turn(0, 2);
    EXPECT_EQ(a.c, frac(2942143, 5446465));
    EXPECT_EQ(a.s, frac(4583424, 5446465));
    const Rope<Q>::Turn b = Rope<Q>::base_turn(1, 4);
    EXPECT_EQ(b.c, frac(1048551, 1048601));
    EXPECT_EQ(b.s, frac(10240, 1048601));
    EXPECT_EQ(Q(a.c * a.c + a.s * a.s), Q(1));
}

TEST(Rope, RotatesEachRowByItsPosition) {
    const Q c = frac(2942143, 5446465), s = frac(4583424, 5446465);
    const Q c2 = c * c - s * s, s2 = Q(2) * c * s;  // the turn of position 2
    const Mat<Q> q = mat(3, 2, {1, 0, 1, 0, 0, 1});
    // row 0 at position 0 stays; row 1 turns (1, 0) to (c, s); row 2 turns (0, 1) to (-s2, c2).
    EXPECT_TRUE(exactly(Rope<Q>{0}(q), mat(3, 2, {1, 0, c, s, -s2, c2})));
}

TEST(Rope, PowersComposeExactly) {
    for (Eigen::Index pair : {0, 1}) {
        const Rope<Q>::Turn step = Rope<Q>::base_turn(pair, 4);
        for (long a = -4; a <= 4; ++a)
            for (long b = -4; b <= 4; ++b) {
                const Rope<Q>::Turn ab = Rope<Q>::compose(Rope<Q>::power(step, a), Rope<Q>::power(step, b));
                const Rope<Q>::Turn sum = Rope<Q>::power(step, a + b);
                EXPECT_EQ(ab.c, sum.c) << "pair " << pair << ", a = " << a << ", b = " << b;
                EXPECT_EQ(ab.s, sum.s) << "pair " << pair << ", a = " << a << ", b = " << b;
                EXPECT_EQ(Q(sum.c * sum.c + sum.s * sum.s), Q(1)) << "R^" << (a + b) << " is not a rotation";
            }
    }
}

// Rotated rows differ with the offset, their dot products do not: q_i . k_j sees only j - i.
TEST(Rope, ScoresDependOnlyOnTheOffsetBetweenPositions) {
    const Mat<Q> q = dyadic_input(4, 4, 11), k = dyadic_input(4, 4, 12);
    const Mat<Q> base = Rope<Q>{0}(q) * Rope<Q>{0}(k).transpose();
    for (long offset : {-3L, 1L, 7L, 100L}) {
        const Mat<Q> shifted = Rope<Q>{offset}(q) * Rope<Q>{offset}(k).transpose();
        EXPECT_TRUE(exactly(shifted, base)) << "offset " << offset;
        EXPECT_FALSE(exactly(Rope<Q>{offset}(q), Rope<Q>{0}(q))) << "offset " << offset << " rotated nothing";
    }
}

TEST(Rope, OddHeadWidthIsAClearError) {
    EXPECT_TRUE(throws_with<std::invalid_argument>([] { Rope<Q>{0}(mat(1, 3, {1, 2, 3})); },
                                                   {"RoPE needs an even head width, got 3"}));
}

// ---------------------------------------------------------------------------------------------------------
// ALiBi and T5 relative biases

// B[i][j] = -m |i - j| with slope m_h = 2^(-8 (h+1) / H): H = 1 gives 1/256; H = 2 gives 1/16 and 1/256.
TEST(Alibi, BiasIsMinusSlopeTimesDistance) {
    const ScoreBias<Q> alibi = ScoreBias<Q>::alibi();
    auto expected = [](const Q& m) { return mat(3, 3, {0, -m, -2 * m, -m, 0, -m, -2 * m, -m, 0}); };
    EXPECT_TRUE(exactly(alibi(3, 0, 1), expected(frac(1, 256))));
    EXPECT_TRUE(exactly(alibi(3, 0, 2), expected(frac(1, 16))));
    EXPECT_TRUE(exactly(alibi(3, 1, 2), expected(frac(1, 256))));
}

TEST(Alibi, ShiftedOffsetGivesTheIdenticalBiasMatrix) {
    ScoreBias<Q> alibi = ScoreBias<Q>::alibi();
    const Mat<Q> base = alibi(5, 0, 1);
    for (long offset : {1L, 9L, 1000L}) {
        alibi.offset = offset;
        EXPECT_TRUE(exactly(alibi(5, 0, 1), base)) << "offset " << offset;
    }
    for (Eigen::Index i = 0; i + 1 < 5; ++i)  // Toeplitz: constant along every diagonal j - i
        for (Eigen::Index j = 0; j + 1 < 5; ++j) EXPECT_EQ(base(i, j), base(i + 1, j + 1));
}

// Buckets for offset r = key - query (32 buckets, max distance 128): |r| < 8 is exact, the sign picks the
// half (r > 0 adds 16); beyond, 8 + floor(log(|r|/8) / log(16) * 8), capped at 15:
// |r| = 8 -> 8, 12 -> 8 + floor(1.17) = 9, 16 -> 8 + 2 = 10, 200 -> min(15, 8 + floor(9.29)) = 15.
TEST(T5Bias, BucketsMatchTheHandComputedTable) {
    const std::vector<std::pair<long, int>> cases{{0, 0},   {1, 17},  {-1, 1},   {7, 23},  {-7, 7},   {8, 24},
                                                  {-8, 8},  {12, 25}, {-12, 9},  {16, 26}, {200, 31}, {-200, 15}};
    for (const auto& [relative, bucket] : cases) EXPECT_EQ(t5_bucket(relative), bucket) << "offset " << relative;
}

TEST(T5Bias, BiasIsTheTableEntryOfTheOffsetsBucket) {
    ScoreBias<Q> t5{BiasKind::t5, Mat<Q>(1, 32), 0};
    for (int b = 0; b < 32; ++b) t5.t5_table(0, b) = b;  // entry = bucket number
    // B[i][j] = bucket(j - i): 0 on the diagonal, 17 and 18 above it (offsets 1, 2), 1 and 2 below.
    EXPECT_TRUE(exactly(t5(3, 0, 1), mat(3, 3, {0, 17, 18, 1, 0, 17, 2, 1, 0})));
}

TEST(T5Bias, ShiftedOffsetGivesTheIdenticalBiasMatrix) {
    Draw<Q> draw = dyadic_draw<Q>(3);
    ScoreBias<Q> t5 = ScoreBias<Q>::t5(2, draw);
    for (Eigen::Index head : {0, 1}) {
        t5.offset = 0;
        const Mat<Q> base = t5(20, head, 2);
        for (long offset : {1L, 13L, 500L}) {
            t5.offset = offset;
            EXPECT_TRUE(exactly(t5(20, head, 2), base)) << "head " << head << ", offset " << offset;
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Attention

Attention<Q> attention_with(Mat<Q> wq, Mat<Q> wk, Mat<Q> wv, Mat<Q> wo, Eigen::Index heads = 1, bool causal = false) {
    Attention<Q> a;
    a.shape = {wq.rows(), heads, causal};
    a.wq = std::move(wq);
    a.wk = std::move(wk);
    a.wv = std::move(wv);
    a.wo = std::move(wo);
    return a;
}

// x = I, wq = wk = I: scores = x x^T / sqrt(2) = r I with r = 1/sqrt(2) (the double, exactly). Row 0 is
// (r, 0): softmax subtracts r, so the weights are (1, E) / (1 + E) with E = exp(-r); row 1 mirrors it.
// v = x wv = diag(2, 3); y = (A v) wo with wo = [[1, 1], [0, 1]] adds column 0 into column 1.
TEST(Attention, SingleHeadMatchesTheHandComputedSoftmax) {
    const Attention<Q> a = attention_with(identity(2), identity(2), mat(2, 2, {2, 0, 0, 3}), mat(2, 2, {1, 1, 0, 1}));
    const Q r(1.0 / std::sqrt(2.0));
    const Q E = qexp(-r);
    const Q near = 1 / (1 + E), far = E / (1 + E);
    const Mat<Q> expected = mat(2, 2, {2 * near, 2 * near + 3 * far, 2 * far, 2 * far + 3 * near});
    EXPECT_EQ(a.scale(), r);
    EXPECT_TRUE(exactly(a(identity(2)), expected));
}

// Two heads of width 1 (scale 1), all weights I, x = [[1, 2], [3, 4]]. Head 0 sees column (1, 3): scores
// [[1, 3], [3, 9]], so row 0 weighs (e^-2, 1) and row 1 (e^-6, 1) over values (1, 3). Head 1 sees (2, 4):
// scores [[4, 8], [8, 16]], weights (e^-4, 1) and (e^-8, 1) over values (2, 4).
TEST(Attention, MultiHeadAttendsPerHeadAndConcatenates) {
    const Attention<Q> a = attention_with(identity(2), identity(2), identity(2), identity(2), 2);
    const Q E2 = qexp(-2), E4 = qexp(-4), E6 = qexp(-6), E8 = qexp(-8);
    const Mat<Q> expected = mat(2, 2, {(E2 + 3) / (1 + E2), (2 * E4 + 4) / (1 + E4),  //
                                       (E6 + 3) / (1 + E6), (2 * E8 + 4) / (1 + E8)});
    EXPECT_TRUE(exactly(a(mat(2, 2, {1, 2, 3, 4})), expected));
}

// The single-head case of above with a causal mask: position 0 sees only itself (weight exp(0)/exp(0) = 1),
// so its output is v_0 wo = (2, 0) wo = (2, 2); position 1 sees both, as without the mask.
TEST(Attention, CausalMaskLetsPositionZeroSeeOnlyItself) {
    const Attention<Q> a =
        attention_with(identity(2), identity(2), mat(2, 2, {2, 0, 0, 3}), mat(2, 2, {1, 1, 0, 1}), 1, true);
    const Q E = qexp(-Q(1.0 / std::sqrt(2.0)));
    const Q near = 1 / (1 + E), far = E / (1 + E);
    EXPECT_TRUE(exactly(a(identity(2)), mat(2, 2, {2, 2, 2 * far, 2 * far + 3 * near})));
}

TEST(Attention, CausalOutputIgnoresLaterPositions) {
    Draw<Q> draw = dyadic_draw<Q>(5);
    const Attention<Q> a = Attention<Q>::random({4, 1, true}, draw);
    const Mat<Q> x = dyadic_input(3, 4, 21);
    Mat<Q> changed = x;
    changed.row(2) = dyadic_input(1, 4, 22);
    const Mat<Q> y = a(x), z = a(changed);
    EXPECT_TRUE(exactly(Mat<Q>(z.topRows(2)), Mat<Q>(y.topRows(2))));
    EXPECT_FALSE(exactly(Mat<Q>(z.bottomRows(1)), Mat<Q>(y.bottomRows(1))));  // the last one does see it
}

// wq = 0 makes the scores the bias alone. ALiBi (one head, m = 1/256): row 0 scores (0, -m), weights
// (1, e^-m) / (1 + e^-m); row 1 mirrors. With v = x = I and wo = I the output is the weight matrix.
TEST(Attention, AlibiBiasEntersTheScores) {
    Attention<Q> a = attention_with(zeros(2, 2), identity(2), identity(2), identity(2));
    a.bias = ScoreBias<Q>::alibi();
    const Q Em = qexp(-frac(1, 256));
    EXPECT_TRUE(exactly(a(identity(2)), mat(2, 2, {1 / (1 + Em), Em / (1 + Em), Em / (1 + Em), 1 / (1 + Em)})));
}

// T5 with table entries 1 at bucket 17 (offset +1) and -1 at bucket 1 (offset -1): scores [[0, 1], [-1, 0]].
// Row 0 subtracts 1: weights (e^-1, 1) / (1 + e^-1); row 1 subtracts 0: weights (e^-1, 1) / (1 + e^-1).
TEST(Attention, T5BiasEntersTheScores) {
    Attention<Q> a = attention_with(zeros(2, 2), identity(2), identity(2), identity(2));
    ScoreBias<Q> t5{BiasKind::t5, zeros(1, 32), 0};
    t5.t5_table(0, 17) = 1;
    t5.t5_table(0, 1) = -1;
    a.bias = t5;
    const Q E1 = qexp(-1);
    const Q lo = E1 / (1 + E1), hi = 1 / (1 + E1);
    EXPECT_TRUE(exactly(a(identity(2)), mat(2, 2, {lo, hi, lo, hi})));
}

// RoPE on x = I, wq = wk = I: q_0 = k_0 = (1, 0), q_1 = k_1 = R (0, 1) = (-s, c), so q k^T = [[1, -s], [-s, 1]]
// and the scores are r times that. Row 0 subtracts r: weights (1, F) / (1 + F), F = exp(-r (1 + s)); row 1
// mirrors. Values are not rotated: v = I, so the output is the weight matrix. (Without RoPE F = exp(-r).)
TEST(Attention, RopeRotatesQueriesAndKeys) {
    Attention<Q> a = attention_with(identity(2), identity(2), identity(2), identity(2));
    a.rope = Rope<Q>{0};
    const Q r(1.0 / std::sqrt(2.0)), s = frac(4583424, 5446465);
    const Q F = qexp(-r * (1 + s));
    EXPECT_TRUE(exactly(a(identity(2)), mat(2, 2, {1 / (1 + F), F / (1 + F), F / (1 + F), 1 / (1 + F)})));
}

TEST(Attention, WrongWidthIsAClearError) {
    Draw<Q> draw = dyadic_draw<Q>(1);
    const Attention<Q> a = Attention<Q>::random({4, 2, false}, draw);
    EXPECT_TRUE(throws_with<std::invalid_argument>([&] { a(dyadic_input(2, 3, 1)); },
                                                   {"attention expects 4 features, got 3"}));
    EXPECT_TRUE(throws_with<std::invalid_argument>([&] { Attention<Q>::random({3, 2, false}, draw); },
                                                   {"width 3 is not a multiple of the head count 2"}));
}

// ---------------------------------------------------------------------------------------------------------
// Pointwise layers

// x W = [[1 + 4, -2], [3 + 8, -4]]; adding b = (1/2, -1) gives [[11/2, -3], [23/2, -5]].
TEST(Linear, ComputesXTimesWPlusB) {
    const Linear<Q> lin{mat(2, 2, {1, 0, 2, -1}), mat(1, 2, {frac(1, 2), -1})};
    EXPECT_TRUE(exactly(lin(mat(2, 2, {1, 2, 3, 4})), mat(2, 2, {frac(11, 2), -3, frac(23, 2), -5})));
}

// First layer: x W1 + b1 = [[3, 1], [0, 2]] + (0, -4) = [[3, -3], [0, -2]]; ReLU -> [[3, 0], [0, 0]];
// second: h (2, 5)^T + 1 = [[7], [1]]. Row 1 shows a negative pre-activation cut to zero.
TEST(Mlp, AppliesLinearReluLinear) {
    const Mlp<Q> mlp{{mat(2, 2, {1, -1, 1, 1}), mat(1, 2, {0, -4})}, {mat(2, 1, {2, 5}), mat(1, 1, {1})}};
    EXPECT_TRUE(exactly(mlp(mat(2, 2, {1, 2, -1, 1})), mat(2, 1, {7, 1})));
}

TEST(Linear, WrongWidthIsAClearError) {
    const Linear<Q> lin{zeros(3, 2), zeros(1, 2)};
    EXPECT_TRUE(throws_with<std::invalid_argument>([&] { lin(zeros(2, 2)); },
                                                   {"linear layer expects 3 features per position, got 2"}));
    const Mlp<Q> mlp{lin, Linear<Q>{zeros(2, 2), zeros(1, 2)}};
    EXPECT_TRUE(throws_with<std::invalid_argument>([&] { mlp(zeros(1, 4)); }, {"expects 3 features", "got 4"}));
}

// Row 0 = (1, 3): mean 2, centred (-1, 1), variance 1, sigma = sqrt(1 + 2^-16): y = (-1/sigma, 2/sigma + 1/2)
// with gain (1, 2) and bias (0, 1/2). Row 1 = (2, 2) is constant: centred 0, so y = bias = (0, 1/2).
TEST(LayerNorm, NormalisesEachPositionThenScalesAndShifts) {
    const LayerNorm<Q> ln{mat(1, 2, {1, 2}), mat(1, 2, {0, frac(1, 2)})};
    const Q sigma = qsqrt(frac(65537, 65536));
    EXPECT_TRUE(exactly(ln(mat(2, 2, {1, 3, 2, 2})), mat(2, 2, {-1 / sigma, 2 / sigma + frac(1, 2), 0, frac(1, 2)})));
}

TEST(LayerNorm, WrongWidthIsAClearError) {
    const LayerNorm<Q> ln{mat(1, 2, {1, 1}), zeros(1, 2)};
    EXPECT_TRUE(throws_with<std::invalid_argument>([&] { ln(zeros(2, 3)); },
                                                   {"LayerNorm expects 2 features per position, got 3"}));
}

// ---------------------------------------------------------------------------------------------------------
// Encoder block

// wq = wk = 0: uniform attention, each output row the mean row (2, 2) of x = [[1, 3], [3, 1]] (wv = wo = I).
// x + attn = [[3, 5], [5, 3]]; LayerNorm (gain 1, bias 0): centred (-1, 1), variance 1, so y = [[-p, p],
// [p, -p]] with p = 1/sqrt(1 + 2^-16). MLP with W1 = W2 = I, zero biases is ReLU: y + relu(y) = [[-p, 2p],
// [2p, -p]]; second LayerNorm: mean p/2, centred -+3p/2, variance 9p^2/4, so z = +-(3p/2) / sigma2.
TEST(EncoderBlock, AttentionResidualNormMlpResidualNorm) {
    const LayerNorm<Q> plain{mat(1, 2, {1, 1}), zeros(1, 2)};
    const EncoderBlock<Q> block{attention_with(zeros(2, 2), zeros(2, 2), identity(2), identity(2)), plain, plain,
                                Mlp<Q>{{identity(2), zeros(1, 2)}, {identity(2), zeros(1, 2)}}};
    const Q p = 1 / qsqrt(frac(65537, 65536));
    const Q sigma2 = qsqrt(Q(9) * p * p / 4 + frac(1, 65536));
    const Q z = Q(3) * p / 2 / sigma2;
    EXPECT_TRUE(exactly(block(mat(2, 2, {1, 3, 3, 1})), mat(2, 2, {-z, z, z, -z})));
}

// ---------------------------------------------------------------------------------------------------------
// Pooling and DeepSets

TEST(Pooling, EachPoolOverThreePositions) {
    const Mat<Q> x = mat(3, 2, {1, -2, 3, 5, -4, 0});
    EXPECT_TRUE(exactly(pool(x, Pool::sum), mat(1, 2, {0, 3})));
    EXPECT_TRUE(exactly(pool(x, Pool::mean), mat(1, 2, {0, 1})));
    EXPECT_TRUE(exactly(pool(x, Pool::max), mat(1, 2, {3, 5})));
    EXPECT_TRUE(exactly(pool(x, Pool::first), mat(1, 2, {1, -2})));
    EXPECT_TRUE(exactly(pool(x, Pool::last), mat(1, 2, {-4, 0})));
}

TEST(Pooling, EmptySequenceIsAClearError) {
    for (Pool how : {Pool::sum, Pool::mean, Pool::max, Pool::first, Pool::last})
        EXPECT_TRUE(throws_with<std::invalid_argument>([&] { pool(zeros(0, 2), how); },
                                                       {std::string("cannot ") + pool_name(how) + "-pool",
                                                        "empty sequence"}));
}

// phi = ReLU (identity weights, zero biases): phi(x) = [[1, 0], [3, 1]], summed (4, 1). rho: (4, 1) (1, -1)^T
// = 3, ReLU 3, times 2 plus 1 = 7. Swapping the rows changes nothing.
TEST(DeepSets, RhoOfTheSumOfPhi) {
    const DeepSets<Q> ds{Mlp<Q>{{identity(2), zeros(1, 2)}, {identity(2), zeros(1, 2)}},
                         Mlp<Q>{{mat(2, 1, {1, -1}), zeros(1, 1)}, {mat(1, 1, {2}), mat(1, 1, {1})}}};
    EXPECT_TRUE(exactly(ds(mat(2, 2, {1, -2, 3, 1})), mat(1, 1, {7})));
    EXPECT_TRUE(exactly(ds(mat(2, 2, {3, 1, 1, -2})), mat(1, 1, {7})));
    EXPECT_TRUE(throws_with<std::invalid_argument>([&] { ds(zeros(0, 2)); }, {"empty sequence"}));
}

// ---------------------------------------------------------------------------------------------------------
// Elman RNN

// One input, one hidden unit: wx = 1, wh = 1/2, b = 0. x = (1, 2): h_0 = tanh(1), h_1 = tanh(2 + h_0 / 2).
TEST(ElmanRnn, StatesFollowTheRecurrence) {
    const ElmanRnn<Q> rnn{mat(1, 1, {1}), mat(1, 1, {frac(1, 2)}), zeros(1, 1)};
    const Q h0 = qtanh(1);
    const Q h1 = qtanh(2 + h0 / 2);
    EXPECT_TRUE(exactly(rnn.states(mat(2, 1, {1, 2})), mat(2, 1, {h0, h1})));
    EXPECT_TRUE(exactly(rnn(mat(2, 1, {1, 2})), mat(2, 1, {h0, h1})));
}

// The final state of (1, 2) is tanh(2 + tanh(1)/2) ~ 0.983; of (2, 1) it is tanh(1 + tanh(2)/2) ~ 0.902.
TEST(ElmanRnn, FinalStateIsTheLastStateAndDependsOnOrder) {
    const ElmanRnn<Q> rnn{mat(1, 1, {1}), mat(1, 1, {frac(1, 2)}), zeros(1, 1)};
    EXPECT_TRUE(exactly(rnn.final_state(mat(2, 1, {1, 2})), mat(1, 1, {qtanh(2 + qtanh(1) / 2)})));
    EXPECT_TRUE(exactly(rnn.final_state(mat(2, 1, {2, 1})), mat(1, 1, {qtanh(1 + qtanh(2) / 2)})));
    EXPECT_NE(qtanh(2 + qtanh(1) / 2), qtanh(1 + qtanh(2) / 2));
}

TEST(ElmanRnn, BadInputIsAClearError) {
    const ElmanRnn<Q> rnn{mat(1, 1, {1}), mat(1, 1, {frac(1, 2)}), zeros(1, 1)};
    EXPECT_TRUE(throws_with<std::invalid_argument>([&] { rnn(zeros(2, 2)); },
                                                   {"Elman RNN expects 1 features per step, got 2"}));
    EXPECT_TRUE(throws_with<std::invalid_argument>([&] { rnn.final_state(zeros(0, 1)); },
                                                   {"empty sequence has no final RNN state"}));
}

// ---------------------------------------------------------------------------------------------------------
// Exact arithmetic at the edges

TEST(ExactScalar, NonFiniteValueIsAClearError) {
    EXPECT_TRUE(throws_with<std::domain_error>([] { sc::from_double<Q>(std::nan("")); }, {"non-finite"}));
    // exp overflows double beyond ~709.78: the exact type refuses rather than inventing a value.
    EXPECT_TRUE(throws_with<std::domain_error>([] { sc::exp<Q>(Q(1000)); }, {"non-finite value (exp)"}));
    EXPECT_TRUE(throws_with<std::domain_error>([] { sc::sqrt<Q>(Q(-1)); }, {"non-finite value (sqrt)"}));
}

TEST(Catalog, UnknownLayerNameListsTheValidOnes) {
    EXPECT_TRUE(throws_with<std::invalid_argument>([] { find_layer("no-such-layer"); },
                                                   {"unknown layer 'no-such-layer'", "valid layers:", "attention"}));
}

}  // namespace
}  // namespace permcheck
