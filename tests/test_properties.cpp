// The property engine as a specification: permutations, generators, the verdict matrix in both arithmetics,
// minimal counterexamples, and the harness self-test on planted bugs.
#include "check/check.h"
#include "layers/message_passing.h"
#include "report/text.h"
#include "tests/support/mutants.h"
#include "tests/support/search.h"
#include "tests/support/sequence.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <set>
#include <sstream>

using namespace permcheck;

namespace {
// A check's finding as text, for failure messages.
std::string finding(const CheckResult& r) {
    if (!r.counterexample) return "no counterexample";
    return describe(*r.counterexample, r.signature, finding_words(r.property, Verdict::violated, *r.counterexample, true));
}

// The check of a catalog layer's row of property p.
CheckResult checked(const std::string& layer, Property p, CheckOptions o = {}) {
    const Family& f = find_layer(layer);
    return check(f, row_of(f, p), o);
}
}  // namespace

// ---------------------------------------------------------------------------------------------- permutations

TEST(Permutation, ActsOnRowsAsDocumented) {
    Mat<double> x(3, 1);
    x << 10, 11, 12;
    const Permutation p(std::vector<int>{2, 0, 1});  // (P x)[i] = x[p[i]]
    const Mat<double> y = p.apply(x);
    EXPECT_EQ(y(0, 0), 12);
    EXPECT_EQ(y(1, 0), 10);
    EXPECT_EQ(y(2, 0), 11);
}

TEST(Permutation, InverseUndoesAndThenComposesInOrder) {
    const Permutation p(std::vector<int>{2, 0, 3, 1}), q(std::vector<int>{1, 3, 0, 2});
    Mat<double> x(4, 2);
    x << 1, 2, 3, 4, 5, 6, 7, 8;
    EXPECT_EQ(p.inverse().apply(p.apply(x)), x);
    EXPECT_EQ(p.then(q).apply(x), q.apply(p.apply(x)));
    EXPECT_TRUE(p.then(p.inverse()).is_identity());
}

TEST(Permutation, CycleNotationLeavesOutFixedPoints) {
    EXPECT_EQ(Permutation::transposition(4, 0, 1).cycles(), "(0 1)");
    EXPECT_EQ(Permutation::rotation(3).cycles(), "(0 1 2)");
    EXPECT_EQ(Permutation::identity(3).cycles(), "()");
    EXPECT_EQ(Permutation::transposition(5, 3, 1).moved(), 2);
}

TEST(Permutation, RejectsWhatIsNotAPermutation) {
    EXPECT_THROW(Permutation(std::vector<int>{0, 0}), std::invalid_argument);
    EXPECT_THROW(Permutation(std::vector<int>{0, 2}), std::invalid_argument);
    EXPECT_THROW(Permutation::transposition(2, 0, 2), std::invalid_argument);
    EXPECT_THROW(Permutation::identity(3).apply(Mat<double>(2, 1)), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------- generators

// ------------------------------------------------------------------------------------------------ comparison

// compare_tensors, the one comparison: the largest difference and its first place in reading order, the verdict
// within the tolerance, non-finite entries equal only to the same value, ignored entries left out, and an exact
// difference, when given, in place of the doubles'.
RC_GTEST_PROP(Comparison, TheLargestDifferenceIsReportedAtItsFirstPlaceInReadingOrder, ()) {
    const int rows = *rc::gen::inRange(1, 7), cols = *rc::gen::inRange(1, 7);
    const auto entries = rc::gen::container<std::vector<int>>(static_cast<std::size_t>(rows * cols),
                                                              rc::gen::inRange(-3, 4));
    const std::vector<int> a = *entries, b = *entries;  // small integers: ties of the largest difference are common
    Tensor lhs{{rows, cols}, {}}, rhs{{rows, cols}, {}};
    for (std::size_t k = 0; k < a.size(); ++k) {
        lhs.values.push_back(a[k] / 4.0);
        rhs.values.push_back(b[k] / 4.0);
    }
    const double tolerance = *rc::gen::element(0.0, 0.25, 0.5, 1.0);
    const OutputComparison c = compare_tensors("y", lhs, rhs, tolerance);
    double largest = 0.0;
    std::size_t first = 0;
    for (std::size_t k = 0; k < a.size(); ++k)
        if (std::abs(lhs.values[k] - rhs.values[k]) > largest) {
            largest = std::abs(lhs.values[k] - rhs.values[k]);
            first = k;
        }
    RC_ASSERT(c.max_abs_diff == largest);
    RC_ASSERT(c.holds == (largest <= tolerance));
    RC_ASSERT(c.where == (std::vector<int>{static_cast<int>(first) / cols, static_cast<int>(first) % cols}));
}

TEST(Comparison, NonFiniteEntriesEqualOnlyThemselvesAndIgnoredOnesAreLeftOut) {
    const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
    const Tensor a{{4}, {nan, inf, 1.0, 5.0}}, same{{4}, {nan, inf, 1.0, 5.0}}, other{{4}, {nan, -inf, 1.0, 5.0}};
    EXPECT_TRUE(compare_tensors("y", a, same, 0.0).holds);
    const OutputComparison c = compare_tensors("y", a, other, 1e-3);
    EXPECT_FALSE(c.holds);
    EXPECT_EQ(c.max_abs_diff, inf);
    EXPECT_EQ(c.where, std::vector<int>{1});
    EXPECT_TRUE(compare_tensors("y", a, other, 1e-3, {false, true, false, false}).holds);
    const OutputComparison shapes = compare_tensors("y", a, Tensor{{2, 2}, {nan, inf, 1.0, 5.0}}, 1.0);
    EXPECT_TRUE(shapes.shape_mismatch);
    EXPECT_FALSE(shapes.holds);
    // Two exact values closer than the doubles resolve: their exact difference decides, in place of 0.
    const OutputComparison exact = compare_tensors("y", same, same, 0.0, {}, {0.0, 0.0, 0x1p-1074, 0.0});
    EXPECT_FALSE(exact.holds);
    EXPECT_EQ(exact.where, std::vector<int>{2});
}

// ------------------------------------------------------------------------------- half precision tolerance

// proofs-notes/half-precision-tolerance.md: the worst-case gamma(k) of bfloat16 is infinite from k = 256 on; the
// probabilistic gamma~(k, 2) stays finite and below 1 at k = 4096 in both half precisions.
TEST(HalfTolerance, StaysFiniteAndBelowOneRelativeAtLength4096) {
    for (Arithmetic a : {Arithmetic::float16, Arithmetic::bfloat16}) {
        const ToleranceModel m = tolerance_model(a, 1.0);
        EXPECT_EQ(m.lambda, kHalfLambda) << arithmetic_name(a);
        for (double k : {256.0, 1536.0, 4096.0}) {
            const double g = relative_bound(m, k);
            EXPECT_TRUE(std::isfinite(g)) << arithmetic_name(a) << " k = " << k;
            EXPECT_GT(g, 0.0) << arithmetic_name(a) << " k = " << k;
            EXPECT_LT(g, 1.0) << arithmetic_name(a) << " k = " << k;
        }
    }
    EXPECT_TRUE(std::isinf(gamma(256.0, 0x1p-8))) << "the worst-case bound is no bound for bfloat16 at k = 256";
    EXPECT_TRUE(std::isinf(gamma(4096.0, 0x1p-11)));
    // The whole tolerance (safety 4, amplification 1) at n + d = 4096 in float16, and at n = 512, d = 8 in
    // bfloat16, is below the magnitude itself: a position leak of the size of the outputs is seen.
    EXPECT_LT(float_tolerance(tolerance_model(Arithmetic::float16, 1.0), 3072, 1024, 1.0), 0.27);
    EXPECT_LT(float_tolerance(tolerance_model(Arithmetic::bfloat16, 1.0), 512, 8, 1.0), 0.82);
}

TEST(HalfTolerance, IsHighamAndMarysBoundWithItsStatedValues) {
    // gamma~(k, lambda) = exp(lambda sqrt(k) u + k u^2 / (1 - u)) - 1, computed by hand for k = 4096.
    const double u16 = 0x1p-11, u8 = 0x1p-8;
    EXPECT_NEAR(probabilistic_gamma(4096, u16, 2.0), std::exp(2.0 * 64 * u16 + 4096 * u16 * u16 / (1 - u16)) - 1, 1e-15);
    EXPECT_NEAR(relative_bound(tolerance_model(Arithmetic::float16, 1.0), 4096), 0.0655, 1e-4);
    EXPECT_NEAR(relative_bound(tolerance_model(Arithmetic::bfloat16, 1.0), 4096), 0.7555, 1e-4);
    EXPECT_NEAR(relative_bound(tolerance_model(Arithmetic::bfloat16, 1.0), 10), 0.0252, 1e-4);
    EXPECT_NEAR(probabilistic_gamma(1536, u8, 2.0), 0.3906, 1e-4);
    // It grows with k and with u.
    EXPECT_LT(probabilistic_gamma(100, u8, 2.0), probabilistic_gamma(200, u8, 2.0));
    EXPECT_LT(probabilistic_gamma(100, u16, 2.0), probabilistic_gamma(100, u8, 2.0));
}

TEST(HalfTolerance, LeavesTheFloat32AndFloat64TolerancesAsTheyWere) {
    for (Arithmetic a : {Arithmetic::float32, Arithmetic::float64}) {
        const ToleranceModel m = tolerance_model(a, 3.0);
        const double u = a == Arithmetic::float32 ? 0x1p-24 : 0x1p-53;
        EXPECT_EQ(m.unit_roundoff, u);
        EXPECT_EQ(m.lambda, 0.0) << "the worst-case gamma(k)";
        for (Eigen::Index n : {1, 8, 100, 1024})
            EXPECT_EQ(float_tolerance(m, n, 8, 2.5), 4.0 * 3.0 * gamma(static_cast<double>(n + 8), u) * 2.5);
    }
    EXPECT_EQ(float_tolerance(tolerance_model(Arithmetic::exact, 1.0), 8, 8, 1.0), 0.0);
    // Every value 0: the two sides are equal exactly, and the tolerance is 0, not a subnormal number.
    EXPECT_EQ(float_tolerance(tolerance_model(Arithmetic::float32, 1.0), 8, 8, 0.0), 0.0);
    EXPECT_GE(float_tolerance(tolerance_model(Arithmetic::float64, 1.0), 8, 8, 1e-280), std::numeric_limits<double>::min());
}

// The white-box checks take their model from the same map (issue 21): a reference layer's scalar names its
// arithmetic, and long double (the wider evaluation that measures a double one) its own unit roundoff.
TEST(HalfTolerance, AReferenceLayersScalarTakesTheModelOfItsArithmetic) {
    const auto same = [](const ToleranceModel& a, const ToleranceModel& b) {
        return a.unit_roundoff == b.unit_roundoff && a.amplification == b.amplification && a.safety == b.safety &&
               a.lambda == b.lambda;
    };
    EXPECT_TRUE(same(tolerance_model_of<float>(3.0), tolerance_model(Arithmetic::float32, 3.0)));
    EXPECT_TRUE(same(tolerance_model_of<double>(3.0), tolerance_model(Arithmetic::float64, 3.0)));
    EXPECT_TRUE(same(tolerance_model_of<Rational>(3.0), tolerance_model(Arithmetic::exact, 3.0)));
    EXPECT_EQ(float_tolerance(tolerance_model_of<Rational>(1.0), 8, 8, 1.0), 0.0);
    const ToleranceModel wide = tolerance_model_of<long double>(3.0);
    EXPECT_EQ(wide.unit_roundoff, std::numeric_limits<long double>::epsilon() / 2);
    EXPECT_EQ(wide.amplification, 3.0);
    EXPECT_EQ(wide.lambda, 0.0);
}

TEST(HalfTolerance, NamesRoundTripAndTheReferenceLayersRefuseHalfPrecision) {
    for (Arithmetic a : {Arithmetic::float16, Arithmetic::bfloat16}) {
        EXPECT_EQ(parse_arithmetic(arithmetic_name(a)), a);
        EXPECT_TRUE(is_half(a));
        CheckOptions o;
        o.arithmetic = a;
        try {
            checked("attention", Property{"equivariance"}, o);
            ADD_FAILURE() << "a reference layer evaluated in " << arithmetic_name(a);
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("compute in float32, float64 or exact"), std::string::npos) << e.what();
        }
    }
    EXPECT_FALSE(is_half(Arithmetic::float32));
    EXPECT_THROW(parse_arithmetic("float8"), std::invalid_argument);
}

TEST(PermutationGenerator, CoversAllOfS4) {
    std::set<std::vector<int>> seen;
    rc::Random random(7);
    for (int i = 0; i < 2000; ++i) seen.insert(gen::permutation(4)(random.split(), 100).value().one_line());
    EXPECT_EQ(seen.size(), 24u);
}

TEST(PermutationGenerator, ShrinksToASingleTransposition) {
    // Any non-identity permutation "fails": the minimum must move exactly two positions.
    const std::function<bool(const Permutation&)> moves = [](const Permutation& p) { return !p.is_identity(); };
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
        const test::SearchResult<Permutation> r = test::search<Permutation>(rc::gen::resize(100, gen::permutation(8)), moves, {100, seed});
        ASSERT_TRUE(r.minimal) << "seed " << seed;
        EXPECT_EQ(r.minimal->moved(), 2) << r.minimal->cycles();
    }
}

TEST(PermutationGenerator, ShrinksTowardFewerMovedPositions) {
    // Fails when position 5 is moved: the minimum is one transposition involving 5.
    const std::function<bool(const Permutation&)> moves5 = [](const Permutation& p) { return p[5] != 5; };
    const test::SearchResult<Permutation> r = test::search<Permutation>(rc::gen::resize(100, gen::permutation(8)), moves5, {200, 3});
    ASSERT_TRUE(r.minimal);
    EXPECT_EQ(r.minimal->moved(), 2);
    EXPECT_NE((*r.minimal)[5], 5);
}

TEST(PermutationGenerator, DrawsEveryElementOfS4AboutEquallyOften) {
    // Uniform over S_n: each of the 24 permutations of 4 positions about 1/24 of the time (24,000 draws: the
    // expected count is 1000, its standard deviation about 31; 850..1150 is a five-sigma band).
    std::map<std::vector<int>, int> count;
    rc::Random random(5);
    for (int i = 0; i < 24000; ++i) ++count[gen::permutation(4)(random.split(), 100).value().one_line()];
    ASSERT_EQ(count.size(), 24u);
    for (const auto& [p, k] : count) {
        EXPECT_GT(k, 850) << Permutation(p).cycles();
        EXPECT_LT(k, 1150) << Permutation(p).cycles();
    }
}

TEST(Sampler, DrawsIntegersAsRapidChecksInRangeDoesAtEachSize) {
    // The same support as rc::gen::inRange(min, max) at the same size: the range scaled by the size.
    for (int size : {0, 1, 10, 50, 100}) {
        std::set<int> ours, theirs;
        rc::Random random(static_cast<std::uint64_t>(size) + 1);
        for (int i = 0; i < 3000; ++i) {
            gen::Sampler s(random.split(), size);
            ours.insert(s.in_range(3, 40));
            theirs.insert(rc::gen::inRange(3, 40)(random.split(), size).value());
        }
        EXPECT_EQ(ours, theirs) << "size " << size;
    }
}

TEST(Sampler, SizeZeroDrawsTheSimplestCase) {
    // RapidCheck's first case has size 0: all zeros.
    const Signature s{{parse_axis("n=2..9")}, {parse_input("x:n,4")}, {parse_output("y:n,4")}};
    rc::Random random(3);
    for (int i = 0; i < 50; ++i) {
        const Case c = draw_signature_case(s, {{"n", 2}}, random.split(), 0);
        for (double v : c.inputs.at("x").values) EXPECT_EQ(v, 0.0);
    }
}

// A seed names the same inputs in every permcheck: the values below were drawn by the Sampler before its draw of
// a value lost its branch (it now computes both candidates from the words ahead and keeps one), and must stay.
// Pinned: a seed's cases are part of what a replay line means. They changed once on purpose (one word a value
// instead of two or three, issue 15; CHANGELOG.md says so); any other change is a regression.
TEST(Sampler, ASeedDrawsThePinnedValues) {
    gen::Sampler values(rc::Random(7), 100);
    for (double v : {-0.5, -4.0, 0.5, 3.125, -3.75, 4.5, -6.5, -0.806640625}) EXPECT_EQ(values.value(), v);
    gen::Sampler rows(rc::Random(4), 100);
    const std::vector<double> expected{-2, -0.25, 0, -3.6796875, 4.5, 2, 5.7109375, -2, 3.5712890625};
    std::vector<double> drawn(9);
    rows.sequence_rows(drawn.data(), 3, 3);
    EXPECT_EQ(drawn, expected);
    const Mat<double> x = gen::Sampler(rc::Random(4), 100).sequence(3, 3);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) EXPECT_EQ(x(i, j), expected[static_cast<std::size_t>(3 * i + j)]);
}

TEST(Sampler, HalfTheValuesAreSimpleAndTheSignsAreBalanced) {
    // One word a value keeps the distribution: a simple value (a multiple of 1/4) half the time, plus the generic
    // values that happen to be multiples of 1/4 (about a fifth of them); values in [-8, 8], either sign alike.
    gen::Sampler s(rc::Random(99), 100);
    const int count = 200000;
    int quarters = 0, negative = 0, positive = 0, beyond_quarters = 0;
    double largest = 0;
    for (int i = 0; i < count; ++i) {
        const double v = s.value();
        quarters += v * 4 == std::floor(v * 4);
        beyond_quarters += v * 1024 != std::floor(v * 1024);
        negative += v < 0;
        positive += v > 0;
        largest = std::max(largest, std::abs(v));
    }
    EXPECT_NEAR(static_cast<double>(quarters) / count, 0.596, 0.01);
    EXPECT_NEAR(static_cast<double>(negative) / count, static_cast<double>(positive) / count, 0.01);
    EXPECT_GT(beyond_quarters, count / 10);  // exponents beyond 10 are drawn
    EXPECT_EQ(largest, 8.0);
}

TEST(ValueShrinks, EverySimplificationEndsAndEndsSmall) {
    // Following the first simpler value while it is nonzero ends, at a value of magnitude at most 1.
    for (double v : {7.0, -7.0, 0.3, -0.3, 5.5, -8.0, 1.0 / 1048576, 3.0 / 1024 - 6}) {
        double current = v;
        int steps = 0;
        for (;;) {
            std::vector<double> simpler = gen::simpler_values(current);
            std::erase(simpler, 0.0);
            if (simpler.empty()) break;
            current = simpler.front();
            ASSERT_LT(++steps, 64) << "from " << v;
        }
        EXPECT_LE(std::abs(current), 1.0) << "from " << v;
        EXPECT_GT(current, 0.0) << "from " << v;
    }
    EXPECT_TRUE(gen::simpler_values(0.0).empty());
}

TEST(InputGenerator, ProducesRepeatedRowsAndGenericValuesOften) {
    rc::Random random(11);
    int with_repeated_rows = 0, with_generic_values = 0;
    const int trials = 400;
    for (int t = 0; t < trials; ++t) {
        const Mat<double> x = gen::sequence(6, 3)(random.split(), 100).value();
        bool repeated = false, generic = false;
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
            for (Eigen::Index k = 0; k < i; ++k) repeated |= x.row(i) == x.row(k);
            for (Eigen::Index j = 0; j < x.cols(); ++j) generic |= x(i, j) * 4 != std::round(x(i, j) * 4);
        }
        with_repeated_rows += repeated;
        with_generic_values += generic;
    }
    EXPECT_GE(with_repeated_rows, trials / 5);
    EXPECT_GE(with_generic_values, trials / 5);
}

TEST(InputGenerator, ValuesShrinkToOneSmallValue) {
    // Shrinking keeps the kind of input (independent values, repeated rows, repeated values), so the minimum of
    // "some entry is nonzero" is a single small nonzero value, which a palette may repeat.
    const std::function<bool(const Mat<double>&)> nonzero = [](const Mat<double>& x) { return x.cwiseAbs().maxCoeff() > 0; };
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
        const test::SearchResult<Mat<double>> r = test::search<Mat<double>>(gen::sequence(5, 3), nonzero, {100, seed});
        ASSERT_TRUE(r.minimal);
        std::set<double> values;
        for (Eigen::Index i = 0; i < r.minimal->size(); ++i)
            if (r.minimal->data()[i] != 0) values.insert(r.minimal->data()[i]);
        EXPECT_EQ(values.size(), 1u) << *r.minimal;
        EXPECT_LE(std::abs(*values.begin()), 1.0) << *r.minimal;
    }
}

TEST(CaseShrinks, DeletingAPositionRemovesOneRowFromXAndFromPxAndKeepsTheOthersInOrder) {
    // Every other row keeps the output position it is sent to (renumbered), so a violation between an output
    // row and the row it receives survives any deletion but that of its own rows.
    const Signature s{{parse_axis("n=1..8")}, {parse_input("x:n,1")}, {parse_output("y:n,1")}};
    const Tensor x{{5, 1}, {10, 11, 12, 13, 14}};
    for (const Permutation& p : {Permutation(std::vector<int>{1, 2, 0, 4, 3}), Permutation::rotation(5),
                                 Permutation::transposition(5, 0, 4), Permutation::identity(5)})
        for (int k = 0; k < 5; ++k) {
            const Case c{{{"n", 5}}, {{"n", p}}, {{"x", x}}};
            const std::optional<Case> smaller = without_elements(s, c, "n", {k});
            ASSERT_TRUE(smaller);
            std::vector<double> expected;
            for (int i = 0; i < 5; ++i)
                if (p[i] != k) expected.push_back(x.values[static_cast<std::size_t>(p[i])]);
            EXPECT_EQ(smaller->lengths.at("n"), 4);
            EXPECT_EQ(permute_inputs(s, smaller->perms, smaller->inputs).at("x").values, expected)
                << p.cycles() << " without " << k;
        }
}

TEST(CaseGenerator, ABlackBoxCaseHasNoWeightSeedOrShift) {
    const Signature s{{parse_axis("n=1..8")}, {parse_input("x:n,3")}, {parse_output("y:n,3")}};
    rc::Random random(4);
    for (int i = 0; i < 50; ++i) {
        const Case c = draw_signature_case(s, {{"n", 1 + i % 8}}, random.split(), 100);
        EXPECT_EQ(c.weight_seed, 0u);
        EXPECT_TRUE(c.part.empty());
        EXPECT_EQ(c.inputs.at("x").shape, (std::vector<int>{1 + i % 8, 3}));
    }
}

TEST(CaseGenerator, RejectsImpossibleLengths) {
    CheckOptions o;
    o.min_len = 3;
    o.max_len = 2;
    EXPECT_THROW(check(find_layer("attention"), row_of(find_layer("attention"), Property{"equivariance"}), o),
                 std::invalid_argument);
}

// ------------------------------------------------------------------------------------------ verdict matrix

namespace {
struct MatrixRow {
    std::string layer;
    Expectation row;
    Arithmetic arithmetic;
};

// Every row of every family, in float32 (the families built in it), float64 and exact.
std::vector<MatrixRow> verdict_matrix() {
    std::vector<MatrixRow> rows;
    for (const Family& f : catalog())
        for (const Expectation& e : f.expectations)
            for (Arithmetic a : {Arithmetic::float32, Arithmetic::float64, Arithmetic::exact})
                if (a != Arithmetic::float32 || f.f32) rows.push_back({f.name, e, a});
    return rows;
}

void PrintTo(const MatrixRow& row, std::ostream* os) {
    *os << row.layer << " " << property_name(row.row.property) << " along " << row.row.axis << " ("
        << arithmetic_name(row.arithmetic) << ")";
}

std::string row_name(const ::testing::TestParamInfo<MatrixRow>& info) {
    std::string s = info.param.layer + "_" + property_name(info.param.row.property) + "_" + info.param.row.axis + "_" +
                    arithmetic_name(info.param.arithmetic);
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return s;
}

// The layers whose symmetry breaks at the smallest possible case: two positions, swapped.
bool breaks_at_one_swap(const std::string& layer, Property p) {
    static const std::set<std::string> layers = {"causal-attention", "attention+sinusoidal", "attention+learned",
                                                 "rnn", "attention-last-readout"};
    return layers.count(layer) && (p == Property{"equivariance"} || p == Property{"invariance"});
}

}  // namespace

class VerdictMatrix : public ::testing::TestWithParam<MatrixRow> {};

// Every row of the verdict table as the theory expects, over several seeds (the layers over named inputs:
// proofs-notes/signature-audit.md; the rows over token and position ids: proofs-notes/position-aware-audits.md).
TEST_P(VerdictMatrix, MatchesTheTheoryOverSeveralSeeds) {
    const MatrixRow& row = GetParam();
    const Family& f = find_layer(row.layer);
    for (std::uint64_t seed : {1u, 2u, 3u}) {
        CheckOptions o;
        o.arithmetic = row.arithmetic;
        o.seed = seed;
        o.cases = 100;
        const CheckResult r = check(f, row.row, o);
        EXPECT_TRUE(r.as_expected()) << "seed " << seed << ": " << finding(r);
        if (row.row.holds) {
            EXPECT_GE(r.cases_run, 50) << "too few cases moved the axis";
            continue;
        }
        ASSERT_FALSE(r.holds) << "seed " << seed << ": no violation found in " << r.cases_run << " cases";
        const Counterexample& ce = *r.counterexample;
        EXPECT_TRUE(ce.confirmed_exactly) << finding(r);
        if (breaks_at_one_swap(row.layer, row.row.property)) {
            EXPECT_EQ(ce.lengths.at("n"), 2) << finding(r);
            EXPECT_EQ(ce.perms.at("n").cycles(), "(0 1)") << finding(r);
        }
        if (row.row.property == Property{"causal"} || row.row.property == Property{"packing"}) {
            // sees the next token: two tokens cut after one; sequences meet: two one-token sequences
            EXPECT_EQ(ce.lengths.at("n"), 2) << finding(r);
            ASSERT_TRUE(ce.part.lists.count("at")) << finding(r);
            EXPECT_EQ(ce.part.lists.at("at"), std::vector<int>{1}) << finding(r);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(EveryLayerEveryProperty, VerdictMatrix, ::testing::ValuesIn(verdict_matrix()), row_name);

TEST(VerdictMatrix, NoFloatCheckFailsSpuriouslyOverTwentySeeds) {
    // Every property that must hold, in float32 and float64, 100 cases for each of 20 seeds.
    for (const Family& f : test::sequence_families())
        for (const Expectation& e : f.expectations) {
            if (!e.holds) continue;
            for (Arithmetic a : {Arithmetic::float32, Arithmetic::float64})
                for (std::uint64_t seed = 100; seed < 120; ++seed) {
                    CheckOptions o;
                    o.arithmetic = a;
                    o.seed = seed;
                    const CheckResult r = check(f, e, o);
                    EXPECT_TRUE(r.holds) << finding(r);
                }
        }
}

// ------------------------------------------------------------------------------------ counterexample record

TEST(Counterexample, CausalAttentionReadsAsTheSmallestSwapWithAReplayLine) {
    const CheckResult r = checked("causal-attention", Property{"equivariance"});
    ASSERT_TRUE(r.counterexample);
    const Counterexample& ce = *r.counterexample;
    const std::string text = finding(r);
    EXPECT_NE(text.find("permutations n (0 1)"), std::string::npos) << text;
    EXPECT_NE(text.find("replay: permcheck check causal-attention --property equivariance"), std::string::npos) << text;
    EXPECT_NE(text.find("confirmed in exact rational arithmetic"), std::string::npos) << text;
    // Both sides are in the record, and they differ where it says.
    const OutputComparison& y = ce.outputs.at(0);
    const std::size_t at = flat_index(y.where, y.layer_of_permuted.shape);
    EXPECT_EQ(std::abs(y.layer_of_permuted.values.at(at) - y.permuted_layer.values.at(at)), y.max_abs_diff);
    EXPECT_GT(y.max_abs_diff, y.tolerance);
}

TEST(Counterexample, ReplayingTheRecordedCaseFailsAgain) {
    const Family& f = find_layer("attention+learned");
    CheckOptions o;
    o.arithmetic = Arithmetic::exact;
    const CheckResult r = check(f, row_of(f, Property{"equivariance"}), o);
    ASSERT_TRUE(r.counterexample);
    const Counterexample again = counterexample_at(f, row_of(f, Property{"equivariance"}), *r.counterexample, o, 0, 0);
    EXPECT_FALSE(again.outputs.at(0).holds);
    // The same search, run again with the same seed, finds the very same case.
    const CheckResult twice = check(f, row_of(f, Property{"equivariance"}), o);
    EXPECT_EQ(twice.counterexample->inputs.at("x").values, r.counterexample->inputs.at("x").values);
    EXPECT_EQ(twice.counterexample->perms, r.counterexample->perms);
}

// ------------------------------------------------------------------------------- stopping a check (issue 14)

// CheckOptions::stop_requested ends a check between cases: the cases run are kept, and a stop never reads as a
// failing case (a layer that holds is not called violated) nor as a passing one.
TEST(StopRequested, EndsAHoldingCheckBetweenCasesWithoutCallingItViolated) {
    CheckOptions o;
    o.cases = 50;
    int seen = 0;
    o.on_progress = [&seen](const CheckProgress& p) {
        EXPECT_FALSE(p.shrinking);
        EXPECT_EQ(p.cases_total, 50);
        seen = p.cases_done;
    };
    o.stop_requested = [&seen] { return seen >= 7; };
    const CheckResult r = checked("attention", Property{"equivariance"}, o);
    EXPECT_TRUE(r.interrupted);
    EXPECT_TRUE(r.holds);
    EXPECT_FALSE(r.counterexample);
    EXPECT_EQ(r.cases_run, 7);
    EXPECT_EQ(seen, 7);

    o.stop_requested = [] { return true; };  // before the first case
    const CheckResult none = checked("attention", Property{"equivariance"}, o);
    EXPECT_TRUE(none.interrupted);
    EXPECT_EQ(none.cases_run, 0);
}

TEST(StopRequested, WhileShrinkingKeepsTheCounterexampleFoundSoFar) {
    CheckOptions o;
    o.min_len = 8;  // a first failing case with much to shrink: its inputs, its permutation, its weights
    o.max_len = 16;
    const CheckResult full = checked("attention+learned", Property{"equivariance"}, o);
    ASSERT_TRUE(full.counterexample);
    ASSERT_GT(full.counterexample->shrink_steps, 1);
    bool shrinking = false;
    o.on_progress = [&shrinking](const CheckProgress& p) { shrinking = shrinking || p.shrinking; };
    o.stop_requested = [&shrinking] { return shrinking; };  // at the first shrink step's end
    const CheckResult r = checked("attention+learned", Property{"equivariance"}, o);
    EXPECT_TRUE(r.interrupted);
    EXPECT_FALSE(r.holds);
    ASSERT_TRUE(r.counterexample);
    EXPECT_EQ(r.cases_run, full.cases_run);
    EXPECT_LE(r.counterexample->shrink_steps, 1);
    EXPECT_FALSE(r.counterexample->outputs.at(0).holds);  // a case that fails, shrunk or not
}

TEST(StopRequested, HooksThatNeverStopChangeNothing) {
    CheckOptions o;
    const CheckResult plain = checked("causal-attention", Property{"equivariance"}, o);
    int calls = 0;
    o.on_progress = [&calls](const CheckProgress&) { ++calls; };
    o.stop_requested = [] { return false; };
    const CheckResult hooked = checked("causal-attention", Property{"equivariance"}, o);
    EXPECT_FALSE(hooked.interrupted);
    EXPECT_EQ(hooked.cases_run, plain.cases_run);
    EXPECT_EQ(hooked.evaluations, plain.evaluations);
    ASSERT_TRUE(hooked.counterexample && plain.counterexample);
    EXPECT_TRUE(same_values(hooked.counterexample->inputs, plain.counterexample->inputs));
    EXPECT_EQ(calls, plain.evaluations);  // one call per case and per shrink step
}

// ---------------------------------------------------------------------------------- harness self-test

class HarnessSelfTest : public ::testing::TestWithParam<mutants::Kind> {};

TEST_P(HarnessSelfTest, CatchesThePlantedBugAndShrinksItToTheSmallestLength) {
    const mutants::Kind kind = GetParam();
    const Family s = mutants::family(kind);
    for (Arithmetic a : {Arithmetic::float64, Arithmetic::exact})
        for (std::uint64_t seed : {1u, 2u, 3u}) {
            CheckOptions o;
            o.arithmetic = a;
            o.seed = seed;
            const CheckResult r = check(s, s.expectations.front(), o);
            ASSERT_FALSE(r.holds) << mutants::name(kind) << " was not caught (" << arithmetic_name(a) << ", seed " << seed << ")";
            const Counterexample& ce = *r.counterexample;
            EXPECT_EQ(ce.lengths.at("n"), mutants::minimal_length(kind)) << finding(r);
            EXPECT_EQ(ce.perms.at("n").moved(), 2) << finding(r);
            EXPECT_TRUE(ce.confirmed_exactly) << finding(r);
        }
}

INSTANTIATE_TEST_SUITE_P(PlantedBugs, HarnessSelfTest, ::testing::ValuesIn(mutants::all()),
                         [](const ::testing::TestParamInfo<mutants::Kind>& info) {
                             std::string s = mutants::name(info.param);
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

TEST(HarnessSelfTest, TheLeakFromPosition4IsInvisibleBelowFivePositions) {
    // The minimum is n = 5 because shorter sequences truly satisfy the property, not because of a search limit.
    const Family s = mutants::family(mutants::Kind::leak_from_position_4);
    CheckOptions o;
    o.arithmetic = Arithmetic::exact;
    o.max_len = 4;
    EXPECT_TRUE(check(s, s.expectations.front(), o).holds);
}

// ------------------------------------------------------------------------- properties of every random case

// Every random case of a row that holds, exactly: a check of 100 cases of up to six positions.
bool holds_exactly(const char* layer, Property p) {
    CheckOptions o;
    o.arithmetic = Arithmetic::exact;
    o.max_len = 6;
    return checked(layer, p, o).holds;
}

TEST(Equivariance, AttentionCommutesWithEveryPermutationExactly) {
    for (const char* layer : {"attention", "mha", "encoder", "mlp", "layernorm"})
        EXPECT_TRUE(holds_exactly(layer, Property{"equivariance"})) << layer;
}

TEST(Invariance, SymmetricPoolingForgetsOrderExactly) {
    for (const char* layer : {"attention-sum-pool", "attention-mean-pool", "attention-max-pool", "deepsets"})
        EXPECT_TRUE(holds_exactly(layer, Property{"invariance"})) << layer;
}

TEST(RelativePosition, ShiftingEveryPositionChangesNothingExactly) {
    for (const char* layer : {"attention+rope", "attention+alibi", "attention+t5"})
        EXPECT_TRUE(holds_exactly(layer, Property{"shift"})) << layer;
}

TEST(CausalAttention, OutputIgnoresTheOrderOfItsPrefix) {
    EXPECT_TRUE(holds_exactly("causal-attention", Property{"causal-prefix"}));
}

TEST(RelativePosition, ScoresDependOnlyOnOffsets) {
    // RoPE, ALiBi and T5 scores for positions 0..n-1 and 37..37+n-1 are identical, exactly.
    Draw<Rational> draw = dyadic_draw<Rational>(9);
    const Mat<Rational> x = from_double<Rational>(Mat<double>::Random(5, 4));
    for (int kind = 0; kind < 3; ++kind) {
        Draw<Rational> w = dyadic_draw<Rational>(9);
        Attention<Rational> a = Attention<Rational>::random({4, 1, false}, w);
        if (kind == 0) a.rope = Rope<Rational>{0};
        if (kind == 1) a.bias = ScoreBias<Rational>::alibi();
        if (kind == 2) a.bias = ScoreBias<Rational>::t5(1, draw);
        const Mat<Rational> at0 = a.scores(x, 0);
        if (a.rope) a.rope->offset = 37;
        if (a.bias) a.bias->offset = 37;
        EXPECT_EQ(a.scores(x, 0), at0) << "kind " << kind;
    }
}

TEST(RelativePosition, AbsoluteSignalsAreNotShiftInvariant) {
    CheckOptions o;
    o.arithmetic = Arithmetic::exact;
    for (const char* layer : {"attention+sinusoidal", "attention+learned"})
        EXPECT_FALSE(checked(layer, Property{"shift"}, o).holds) << layer;
}

// ------------------------------------------------------------------------------------------ dog bites man

namespace {
template <class S> Mat<S> pooled_sentence(const std::vector<int>& tokens, bool with_position, bool rnn) {
    Draw<S> draw = dyadic_draw<S>(2024);
    const Embedding<S> embed = Embedding<S>::random(3, 4, draw);
    const Attention<S> attn = Attention<S>::random({4, 1, false}, draw);
    const ElmanRnn<S> recurrent = ElmanRnn<S>::random(4, 4, draw);
    Mat<S> x = embed(tokens);
    if (with_position) x = AbsolutePosition<S>::sinusoidal()(x);
    return rnn ? recurrent.final_state(x) : pool(attn(x), Pool::mean);
}
const std::vector<int> dog_bites_man = {0, 1, 2}, man_bites_dog = {2, 1, 0};
}  // namespace

TEST(DogBitesMan, WithoutAPositionSignalBothSentencesPoolToTheSameVector) {
    EXPECT_EQ(pooled_sentence<Rational>(dog_bites_man, false, false), pooled_sentence<Rational>(man_bites_dog, false, false));
}

TEST(DogBitesMan, ASinusoidalSignalTellsThemApart) {
    EXPECT_NE(pooled_sentence<Rational>(dog_bites_man, true, false), pooled_sentence<Rational>(man_bites_dog, true, false));
}

TEST(DogBitesMan, TheRnnTellsThemApart) {
    EXPECT_NE(pooled_sentence<Rational>(dog_bites_man, false, true), pooled_sentence<Rational>(man_bites_dog, false, true));
}

RC_GTEST_PROP(DogBitesMan, AnyReorderingOfAnySentencePoolsIdenticallyWithoutPosition, ()) {
    const int n = *rc::gen::inRange(1, 7);
    const auto tokens = *rc::gen::container<std::vector<int>>(static_cast<std::size_t>(n), rc::gen::inRange(0, 3));
    const Permutation p = *rc::gen::resize(100, gen::permutation(n));
    std::vector<int> shuffled(tokens.size());
    for (int i = 0; i < n; ++i) shuffled[static_cast<std::size_t>(i)] = tokens[static_cast<std::size_t>(p[i])];
    RC_ASSERT(pooled_sentence<Rational>(tokens, false, false) == pooled_sentence<Rational>(shuffled, false, false));
}

TEST(Embedding, TheSameTokenGivesTheSameRowAtAnyPosition) {
    Draw<Rational> draw = dyadic_draw<Rational>(5);
    const Embedding<Rational> e = Embedding<Rational>::random(4, 3, draw);
    const Mat<Rational> x = e({2, 0, 2, 3, 2});
    EXPECT_EQ(Mat<Rational>(x.row(0)), Mat<Rational>(x.row(2)));
    EXPECT_EQ(Mat<Rational>(x.row(0)), Mat<Rational>(x.row(4)));
    EXPECT_EQ(Mat<Rational>(x.row(0)), Mat<Rational>(e.table.row(2)));
}

// ------------------------------------------------------------------ layers over named inputs (issue 12)

namespace {
// The broken counterparts are refuted with a witness shrunk to two elements of the axis at fault and one
// transposition there, in both arithmetics.
void expect_two_element_witness(const std::string& layer, const std::string& axis) {
    for (Arithmetic a : {Arithmetic::float64, Arithmetic::exact}) {
        CheckOptions o;
        o.arithmetic = a;
        const Family& f = find_layer(layer);
        const CheckResult r = check(f, row_of(f, f.expectations.front().property == Property{"equivariance"} &&
                                                         f.expectations.front().axis == axis
                                                     ? Property{"equivariance"}
                                                     : Property{"invariance"},
                                              axis),
                                    o);
        ASSERT_FALSE(r.holds) << layer;
        ASSERT_TRUE(r.counterexample);
        const Counterexample& c = *r.counterexample;
        EXPECT_EQ(c.axis_at_fault, axis);
        EXPECT_EQ(c.lengths.at(axis), 2) << finding(r);
        EXPECT_EQ(c.perms.at(axis).cycles(), "(0 1)");
        for (const auto& [other, p] : c.perms)
            if (other != axis) {
                EXPECT_EQ(p.one_line(), Permutation::identity(p.size()).one_line());
            }
        EXPECT_TRUE(std::any_of(c.outputs.begin(), c.outputs.end(), [](const OutputComparison& out) {
            return !out.holds && out.max_abs_diff > 0.0;
        }));
    }
}
}  // namespace

TEST(SignatureVerdictTable, CrossAttentionWithMemoryPositionsIsRefutedAtTwoMemoryItems) {
    expect_two_element_witness("cross-attention+memory-positions", "m");
}
TEST(SignatureVerdictTable, TheNodeIndexFeatureIsRefutedAtTwoNodes) {
    expect_two_element_witness("message-passing+node-index", "nodes");
}
TEST(SignatureVerdictTable, TheEdgeOrderAggregatorIsRefutedAtTwoEdges) {
    expect_two_element_witness("message-passing+edge-order", "edges");
}

// The rows over token and position ids are refuted by the smallest witnesses, in both arithmetics: an absolute
// signal by one token shifted by 1; RoPE at the row index by two tokens swapped with their position ids; a mean
// over the pads by one token and one pad.
namespace {
CheckResult row_checked(const std::string& layer, Property p, Arithmetic a) {
    CheckOptions o;
    o.arithmetic = a;
    return checked(layer, p, o);
}
}  // namespace

TEST(SignatureVerdictTable, AnAbsolutePositionTableIsRefutedByOneTokenShiftedByOne) {
    for (const char* layer : {"tokens+learned", "tokens+sinusoidal"})
        for (Arithmetic a : {Arithmetic::float64, Arithmetic::exact}) {
            const CheckResult r = row_checked(layer, Property{"shift"}, a);
            ASSERT_FALSE(r.holds) << layer;
            ASSERT_TRUE(r.counterexample);
            EXPECT_EQ(r.counterexample->lengths.at("n"), 1) << finding(r);
            EXPECT_EQ(r.counterexample->part.number("shift"), 1) << layer;
        }
}

TEST(SignatureVerdictTable, RopeAtTheRowIndexIsRefutedByTwoTokensSwappedWithTheirPositionIds) {
    for (Arithmetic a : {Arithmetic::float64, Arithmetic::exact}) {
        const CheckResult r = row_checked("tokens+rope-by-index", Property{"equivariance"}, a);
        ASSERT_FALSE(r.holds);
        ASSERT_TRUE(r.counterexample);
        EXPECT_EQ(r.counterexample->lengths.at("n"), 2);
        EXPECT_EQ(r.counterexample->perms.at("n").cycles(), "(0 1)");
    }
}

TEST(SignatureVerdictTable, AMeanOverThePadsIsRefutedByOneTokenAndOnePad) {
    for (const char* layer : {"tokens+rope-mean-with-pads", "tokens+rope+mask-ignored", "tokens+rope-by-index"})
        for (Arithmetic a : {Arithmetic::float64, Arithmetic::exact}) {
            const CheckResult r = row_checked(layer, Property{"padding"}, a);
            ASSERT_FALSE(r.holds) << layer;
            ASSERT_TRUE(r.counterexample && r.counterexample->part.lists.count("slots"));
            const Counterexample& c = *r.counterexample;
            EXPECT_EQ(c.part.lists.at("slots").size(), 1u) << layer << "\n" << finding(r);
            EXPECT_LE(c.lengths.at("n"), 2) << layer;
            for (const auto& [axis, p] : c.perms) EXPECT_TRUE(p.is_identity());
        }
}

// The harness checks itself on the reference rows too: a planted bug in a transformation makes a row that holds fail.
TEST(SignatureVerdictTable, APlantedBugInAPositionTransformationFailsAHoldingRow) {
    for (const auto& [bug, p] : {std::pair{test_only::HarnessBug::positions_kept, Property{"equivariance"}},
                                 std::pair{test_only::HarnessBug::shift_tokens, Property{"shift"}},
                                 std::pair{test_only::HarnessBug::pads_unmasked, Property{"padding"}},
                                 std::pair{test_only::HarnessBug::pads_move_positions, Property{"padding"}}}) {
        ASSERT_TRUE(row_checked("tokens+rope", p, Arithmetic::exact).holds);
        test_only::plant_harness_bug(bug);
        const CheckResult r = row_checked("tokens+rope", p, Arithmetic::exact);
        test_only::plant_harness_bug(test_only::HarnessBug::none);
        EXPECT_FALSE(r.holds) << static_cast<int>(bug);
    }
}

// Over one-hot incidence matrices the incidence layer is the edge-list layer: the certificates' stand-in for
// edge_index computes what the edge_index code computes (proofs-notes/signature-audit.md).
TEST(SignatureVerdictTable, TheIncidenceLayersAgreeWithTheEdgeListLayersOnOneHotRows) {
    for (const Aggregation how : {Aggregation::sum, Aggregation::mean}) {
        Draw<Rational> draw = dyadic_draw<Rational>(7);
        MessagePassing<Rational> mp = MessagePassing<Rational>::random(3, 2, draw, how);
        const std::vector<int> src{0, 2, 2, 1, 0}, dst{1, 1, 0, 1, 1};  // a repeated edge, node 2 receives none
        Mat<Rational> x(3, 3), a(5, 2), s = Mat<Rational>::Zero(5, 3), t = Mat<Rational>::Zero(5, 3);
        for (Eigen::Index i = 0; i < x.size(); ++i) x(i) = Rational(static_cast<int>(i) - 4, 3);
        for (Eigen::Index i = 0; i < a.size(); ++i) a(i) = Rational(static_cast<int>(i * i) - 5, 7);
        for (int e = 0; e < 5; ++e) {
            s(e, src[static_cast<std::size_t>(e)]) = 1;
            t(e, dst[static_cast<std::size_t>(e)]) = 1;
        }
        EXPECT_TRUE(mp(x, src, dst, a) == mp.over_incidence(x, s, t, a));
    }
}
