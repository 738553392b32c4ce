// The black-box audit (check/blackbox.h), the subprocess adapter (adapters/exec_adapter.h) and the
// `permcheck audit --exec` command, with in-process layers, the Python example adapters and fault adapters.
#include "adapters/exec_adapter.h"
#include "check/signature_audit.h"
#include "check/lengths.h"
#include "check/engine.h"
#include "check/audit_engine.h"
#include "tests/support/process.h"
#include "tests/support/mutants.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace permcheck {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------------------
// In-process black boxes

// x_i - mean(x), computed in float with the sum in index order: equivariant, up to the order of summation.
Mat<double> centered_float32(const Mat<double>& x) {
    const Mat<float> xf = x.cast<float>();
    Eigen::RowVectorXf sum = Eigen::RowVectorXf::Zero(xf.cols());
    for (Eigen::Index i = 0; i < xf.rows(); ++i) sum += xf.row(i);
    const Eigen::RowVectorXf mean = sum / static_cast<float>(xf.rows());
    Mat<float> y = xf;
    for (Eigen::Index i = 0; i < y.rows(); ++i) y.row(i) -= mean;
    return y.cast<double>();
}

// Scales position i by (1 + 1e-7 i): a leak of relative size 1e-7 per position.
Mat<double> tiny_leak_float64(const Mat<double>& x) {
    Mat<double> y = x;
    for (Eigen::Index i = 0; i < y.rows(); ++i) y.row(i) *= 1.0 + 1e-7 * static_cast<double>(i);
    return y;
}

// Equivariant on the first four positions; from position 4 on, rows are doubled.
Mat<double> leak_from_position_4(const Mat<double>& x) {
    Mat<double> y = x;
    for (Eigen::Index i = 4; i < y.rows(); ++i) y.row(i) *= 2.0;
    return y;
}

// Marks the position with the largest first feature; among ties, the first index wins. Equivariant on
// inputs without ties, not on inputs with them.
Mat<double> argmax_first_index(const Mat<double>& x) {
    Eigen::Index best = 0;
    for (Eigen::Index i = 1; i < x.rows(); ++i)
        if (x(i, 0) > x(best, 0)) best = i;
    Mat<double> y = x;
    y(best, 0) += 1.0;
    return y;
}

Mat<double> identity_layer(const Mat<double>& x) { return x; }

// A layer with dropout left on: equivariant in expectation, two answers to the same input.
struct Noisy {
    std::shared_ptr<std::mt19937_64> rng = std::make_shared<std::mt19937_64>(7);
    BlackBox inner = identity_layer;
    Mat<double> operator()(const Mat<double>& x) const {
        Mat<double> y = inner(x);
        std::uniform_real_distribution<double> noise(-1e-3, 1e-3);
        for (Eigen::Index i = 0; i < y.size(); ++i) y.data()[i] += noise(*rng);
        return y;
    }
};

AuditOptions options(int cases = 100) {
    AuditOptions o;
    o.cases = cases;
    o.seed = 3;
    return o;
}

TEST(Audit, EquivariantFloat32LayerHoldsUpToSummationOrder) {
    AuditOptions o = options(200);
    o.dtype = Arithmetic::float32;
    o.max_len = 100;
    const AuditResult r = audit(BlackBox(centered_float32), o);
    EXPECT_EQ(r.verdict, Verdict::holds) << r.detail;
    EXPECT_EQ(r.cases, 200);
    // The test means something only if reordering really changes the float32 answer: a fixed zero tolerance
    // (or a float64 tolerance) would call this layer broken.
    bool some_difference = false;
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> v(-8, 8);
    for (int t = 0; t < 20 && !some_difference; ++t) {
        Mat<double> x(60, 4);
        for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = v(rng);
        const Permutation p = Permutation::reversal(60);
        some_difference = (centered_float32(p.apply(x)) - p.apply(centered_float32(x))).cwiseAbs().maxCoeff() > 0;
    }
    EXPECT_TRUE(some_difference);
    o.dtype = Arithmetic::float64;
    EXPECT_EQ(audit(BlackBox(centered_float32), o).verdict, Verdict::violated)
        << "float32 rounding must exceed a float64 tolerance, or the float32 verdict above proves nothing";
}

TEST(Audit, Float64LeakOfRelativeSize1e7IsViolated) {
    const AuditResult r = audit(BlackBox(tiny_leak_float64), options());
    ASSERT_EQ(r.verdict, Verdict::violated);
    ASSERT_TRUE(r.counterexample);
    EXPECT_EQ(r.counterexample->n(), 2);
    EXPECT_GT(r.counterexample->comparison.margin(), 1.0);
}

// ---------------------------------------------------------------------------------------------------------
// The dtype, inferred from the answers when not given

// floor(8 x): integer answers, equivariant.
Mat<double> integer_layer(const Mat<double>& x) { return (8.0 * x).array().floor().matrix(); }

TEST(AuditDtype, Float32LayerHoldsByDefaultAndIsViolatedUnderAFloat64Tolerance) {
    AuditOptions o = options(200);
    o.max_len = 100;
    ASSERT_FALSE(o.dtype.has_value()) << "inferring is the default";
    const AuditResult r = audit(BlackBox(centered_float32), o);
    EXPECT_EQ(r.verdict, Verdict::holds) << r.detail;
    EXPECT_EQ(r.dtype, Arithmetic::float32);
    EXPECT_TRUE(r.dtype_inferred);
    // The replay names the dtype used and judges the same; float64 would call the rounding a violation.
    o.dtype = r.dtype;
    const AuditResult again = audit(BlackBox(centered_float32), o);
    EXPECT_EQ(again.verdict, Verdict::holds);
    EXPECT_FALSE(again.dtype_inferred);
    o.dtype = Arithmetic::float64;
    EXPECT_EQ(audit(BlackBox(centered_float32), o).verdict, Verdict::violated);
}

TEST(AuditDtype, Float64LeakOf1e7IsStillViolatedAndTheReplayFindsTheSameCase) {
    const AuditResult r = audit(BlackBox(tiny_leak_float64), options());
    ASSERT_EQ(r.verdict, Verdict::violated);
    EXPECT_EQ(r.dtype, Arithmetic::float64);
    EXPECT_TRUE(r.dtype_inferred);
    ASSERT_TRUE(r.counterexample);
    EXPECT_EQ(r.counterexample->dtype, Arithmetic::float64);
    AuditOptions o = options();
    o.dtype = r.dtype;
    const AuditResult again = audit(BlackBox(tiny_leak_float64), o);
    ASSERT_EQ(again.verdict, Verdict::violated);
    EXPECT_EQ(again.cases, r.cases);
    EXPECT_EQ(again.counterexample->x, r.counterexample->x);
    EXPECT_EQ(again.counterexample->perm.cycles(), r.counterexample->perm.cycles());
}

TEST(AuditDtype, IntegerAnswersAreJudgedAsFloat64) {
    const AuditResult r = audit(BlackBox(integer_layer), options(50));
    EXPECT_EQ(r.verdict, Verdict::holds);
    EXPECT_EQ(r.dtype, Arithmetic::float64) << "integers are float32 values whatever the layer computes in";
    EXPECT_TRUE(r.dtype_inferred);
}

TEST(AuditDtype, EvidenceSaysFloat32OnlyForFloat32ValuesThatAreNotAllIntegers) {
    struct Evidence : engine::PrecisionEvidence {
        void add(const Mat<double>& m) { PrecisionEvidence::add(m.data(), static_cast<std::size_t>(m.size())); }
    };
    Evidence e;
    e.add(Mat<double>::Constant(2, 2, 3.0));
    EXPECT_EQ(e.dtype(), Arithmetic::float64) << "all integers";
    e.add(Mat<double>::Constant(1, 1, 0.1f));
    EXPECT_EQ(e.dtype(), Arithmetic::float32);
    e.add(Mat<double>::Constant(1, 1, std::numeric_limits<double>::quiet_NaN()));
    EXPECT_EQ(e.dtype(), Arithmetic::float32) << "a non-finite entry says nothing";
    e.add(Mat<double>::Constant(1, 1, 1e300));
    EXPECT_EQ(e.dtype(), Arithmetic::float64) << "beyond float32's range";
    Evidence f;
    f.add(Mat<double>::Constant(1, 1, 0.1));
    EXPECT_EQ(f.dtype(), Arithmetic::float64);
}

TEST(AuditDtype, InferenceDoesNotDependOnTheNumberOfBlackBoxes) {
    // A float32 layer with a float64-sized leak from position 4: the inferred dtype and the case found must be
    // those of one box, whatever cases other workers finished past the failure.
    const BlackBox leaky = [](const Mat<double>& x) { return leak_from_position_4(centered_float32(x)); };
    const AuditResult one = audit(leaky, options());
    const AuditResult three = audit(std::vector<BlackBox>{leaky, leaky, leaky}, options());
    ASSERT_EQ(one.verdict, Verdict::violated);
    EXPECT_EQ(one.dtype, Arithmetic::float32);
    EXPECT_EQ(three.verdict, one.verdict);
    EXPECT_EQ(three.dtype, one.dtype);
    EXPECT_EQ(three.cases, one.cases);
    EXPECT_EQ(three.counterexample->x, one.counterexample->x);
}

// ---------------------------------------------------------------------------------------------------------
// Half precision (proofs-notes/half-precision-tolerance.md): layers that round every intermediate

// v rounded to nearest (ties to even) with `bits` significant bits: 11 for float16, 8 for bfloat16 (their
// exponent ranges are not modelled: the values here stay far inside them).
double round_to_bits(double v, int bits) {
    if (v == 0.0 || !std::isfinite(v)) return v;
    int e = 0;
    const double m = std::frexp(v, &e);  // v = m 2^e, 0.5 <= |m| < 1
    return std::ldexp(std::nearbyint(std::ldexp(m, bits)), e - bits);
}

// Softmax self-attention plus a residual, y_i = x_i + sum_j softmax_j(x_i . x_j / sqrt(d)) x_j, in an arithmetic
// that rounds every product, partial sum and quotient to `bits` significant bits, summing in index order (so a
// permutation changes the rounding). Equivariant in real arithmetic; with `leak`, position i adds leak * i to
// its row, with `scale`, it multiplies its row by 1 + scale * i: position signals.
struct RoundingAttention {
    int bits = 8;
    double leak = 0.0;
    double scale = 0.0;
    double r(double v) const { return round_to_bits(v, bits); }
    Mat<double> operator()(const Mat<double>& x0) const {
        const Eigen::Index n = x0.rows(), d = x0.cols();
        const Mat<double> x = x0.unaryExpr([this](double v) { return r(v); });
        const double inv_sqrt_d = r(1.0 / std::sqrt(static_cast<double>(d)));
        Mat<double> y(n, d);
        for (Eigen::Index i = 0; i < n; ++i) {
            std::vector<double> s(n);
            for (Eigen::Index j = 0; j < n; ++j) {
                double dot = 0.0;
                for (Eigen::Index k = 0; k < d; ++k) dot = r(dot + r(x(i, k) * x(j, k)));
                s[j] = r(dot * inv_sqrt_d);
            }
            const double top = *std::max_element(s.begin(), s.end());
            double denom = 0.0;
            for (double& v : s) denom = r(denom + (v = r(std::exp(r(v - top)))));
            for (Eigen::Index k = 0; k < d; ++k) {
                double acc = 0.0;
                for (Eigen::Index j = 0; j < n; ++j) acc = r(acc + r(s[j] * x(j, k)));
                const double pos = static_cast<double>(i);
                y(i, k) = r(r(x(i, k) + r(acc / denom)) * (1.0 + scale * pos) + leak * pos);
            }
        }
        return y;
    }
};

TEST(AuditHalf, RoundingAttentionHoldsInItsOwnPrecisionUpToLongLengths) {
    for (const int bits : {11, 8}) {
        const Arithmetic dtype = bits == 11 ? Arithmetic::float16 : Arithmetic::bfloat16;
        AuditOptions o = options(200);
        o.dtype = dtype;
        o.max_len = 32;
        o.long_len = 128;
        const AuditResult r = audit(BlackBox(RoundingAttention{bits}), o);
        EXPECT_EQ(r.verdict, Verdict::holds) << arithmetic_name(dtype) << ": " << r.detail;
        EXPECT_EQ(r.dtype, dtype);
        EXPECT_FALSE(r.dtype_inferred);
        // The verdict means something only if the rounding really shows: under the float32 tolerance the same
        // layer is violated.
        o.dtype = Arithmetic::float32;
        EXPECT_EQ(audit(BlackBox(RoundingAttention{bits}), o).verdict, Verdict::violated) << arithmetic_name(dtype);
    }
}

TEST(AuditHalf, APositionSignalIsViolatedAtTwoPositionsInBothHalfPrecisions) {
    for (const int bits : {11, 8}) {
        const Arithmetic dtype = bits == 11 ? Arithmetic::float16 : Arithmetic::bfloat16;
        AuditOptions o = options(200);
        o.dtype = dtype;
        const AuditResult r = audit(BlackBox(RoundingAttention{bits, 0.25}), o);
        ASSERT_EQ(r.verdict, Verdict::violated) << arithmetic_name(dtype) << ": " << r.detail;
        ASSERT_TRUE(r.counterexample);
        EXPECT_EQ(r.counterexample->n(), 2) << describe(*r.counterexample);
        EXPECT_EQ(r.counterexample->dtype, dtype);
        EXPECT_GT(r.counterexample->comparison.margin(), 1.0);
    }
}

TEST(AuditHalf, ALeakOfTenPercentPerPositionIsSeenInBothHalfPrecisions) {
    // Relative to the outputs, not added to zeros: a tolerance of the size of the outputs would accept it.
    for (const int bits : {11, 8}) {
        const Arithmetic dtype = bits == 11 ? Arithmetic::float16 : Arithmetic::bfloat16;
        AuditOptions o = options(200);
        o.dtype = dtype;
        const AuditResult r = audit(BlackBox(RoundingAttention{bits, 0.0, 0.1}), o);
        ASSERT_EQ(r.verdict, Verdict::violated) << arithmetic_name(dtype) << ": " << r.detail;
        ASSERT_TRUE(r.counterexample);
        EXPECT_LE(r.counterexample->n(), 3) << describe(*r.counterexample);
        EXPECT_GT(r.counterexample->comparison.max_abs_diff, 0.0);
    }
}

TEST(Audit, NondeterministicFindingIsDescribedAsTwoAnswersToOneInput) {
    AuditResult r = audit(BlackBox(Noisy{}), options());
    ASSERT_EQ(r.verdict, Verdict::nondeterministic);
    const std::string text = describe_finding(r);
    EXPECT_NE(text.find("first answer ="), std::string::npos) << text;
    EXPECT_NE(text.find("second answer ="), std::string::npos) << text;
    EXPECT_EQ(text.find("permutation"), std::string::npos) << text;
    EXPECT_EQ(text.find("weight seed"), std::string::npos) << text;
}

TEST(Audit, LeakStartingAtPosition4IsShrunkToFivePositions) {
    const AuditResult r = audit(BlackBox(leak_from_position_4), options());
    ASSERT_EQ(r.verdict, Verdict::violated);
    const Counterexample& ce = *r.counterexample;
    EXPECT_EQ(ce.n(), 5) << describe(ce);
    EXPECT_EQ(ce.perm.moved(), 2) << "one transposition suffices";
    EXPECT_NE(ce.perm[4], 4) << "position 4 must receive another row";
}

TEST(Audit, IndexBasedTieBreakingIsShrunkToTwoPositions) {
    const AuditResult r = audit(BlackBox(argmax_first_index), options());
    ASSERT_EQ(r.verdict, Verdict::violated);
    const Counterexample& ce = *r.counterexample;
    EXPECT_EQ(ce.n(), 2) << describe(ce);
    EXPECT_EQ(ce.x(0, 0), ce.x(1, 0)) << "the witness is a tie";
}

TEST(Audit, NondeterministicLayerIsNeverCalledViolated) {
    for (bool also_leaks : {false, true}) {
        Noisy noisy;
        if (also_leaks) noisy.inner = leak_from_position_4;
        const AuditResult r = audit(BlackBox(noisy), options());
        EXPECT_EQ(r.verdict, Verdict::nondeterministic) << "also leaks: " << also_leaks;
        ASSERT_TRUE(r.counterexample);
        EXPECT_TRUE(r.counterexample->perm.is_identity()) << "the two answers are to one and the same input";
        EXPECT_FALSE(r.counterexample->comparison.holds);
        EXPECT_EQ(r.counterexample->n(), 1) << "shrunk to one position";
        EXPECT_NE(r.detail.find("answered twice"), std::string::npos) << r.detail;
    }
}

TEST(Audit, NondeterminismIsNamedEvenWhenNoPermutationCanDiffer) {
    // With one position every permutation is the identity: only the up-front repeats can see this.
    AuditOptions o = options(10);
    o.max_len = 1;
    const AuditResult r = audit(BlackBox(Noisy{}), o);
    EXPECT_EQ(r.verdict, Verdict::nondeterministic);
    EXPECT_EQ(r.cases, 1);
}

TEST(Audit, ViolationIsConfirmedByEvaluatingBothSidesAgain) {
    int calls = 0;
    const BlackBox counting = [&](const Mat<double>& x) {
        ++calls;
        return leak_from_position_4(x);
    };
    const AuditResult r = audit(counting, options());
    ASSERT_EQ(r.verdict, Verdict::violated);
    EXPECT_EQ(r.evaluations, calls);
    EXPECT_NE(r.detail.find("evaluated again"), std::string::npos);
}

TEST(Audit, PassingCasesCostTwoCallsEach) {
    AuditOptions o = options(50);
    const AuditResult r = audit(BlackBox(identity_layer), o);
    EXPECT_EQ(r.verdict, Verdict::holds);
    EXPECT_EQ(r.evaluations, 2 * 50 + o.repeat_checks);
}

TEST(Audit, NonFiniteOutputIsItsOwnVerdictWithAShrunkInput) {
    const BlackBox nan_above_4 = [](const Mat<double>& x) {
        Mat<double> y = x;
        for (Eigen::Index i = 0; i < y.size(); ++i)
            if (y.data()[i] > 4) y.data()[i] = std::nan("");
        return y;
    };
    const AuditResult r = audit(nan_above_4, options());
    ASSERT_EQ(r.verdict, Verdict::non_finite);
    const Counterexample& ce = *r.counterexample;
    EXPECT_EQ(ce.n(), 1);
    EXPECT_GT(ce.x.maxCoeff(), 4.0);
    EXPECT_EQ((ce.x.array() != 0).count(), 1) << "every other value shrunk to 0:\n" << describe(ce);
    EXPECT_FALSE(ce.lhs.allFinite() && ce.rhs.allFinite());
}

TEST(Audit, AdapterErrorIsTheErrorVerdictWithTheLastRequest) {
    int calls = 0;
    const BlackBox dies = [&](const Mat<double>& x) -> Mat<double> {
        if (++calls == 5) throw AdapterError("adapter exited with status 3");
        return x;
    };
    const AuditResult r = audit(dies, options());
    EXPECT_EQ(r.verdict, Verdict::error);
    EXPECT_EQ(r.error, "adapter exited with status 3");
    EXPECT_FALSE(r.last_request.empty());
    EXPECT_EQ(exit_code(r.verdict), 2);
}

TEST(Audit, WrongRowCountIsAnError) {
    const BlackBox pooled_instead = [](const Mat<double>& x) { return Mat<double>(x.colwise().sum()); };
    AuditOptions o = options();
    o.min_len = 2;
    const AuditResult r = audit(pooled_instead, o);
    EXPECT_EQ(r.verdict, Verdict::error);
    EXPECT_NE(r.error.find("answered 1 row for a request of n=2"), std::string::npos) << r.error;
    // The same layer is a fine pooled layer.
    o.output = Output::pooled;
    EXPECT_EQ(audit(pooled_instead, o).verdict, Verdict::holds);
}

TEST(Audit, ExitCodesFollowTheVerdicts) {
    EXPECT_EQ(exit_code(Verdict::holds), 0);
    EXPECT_EQ(exit_code(Verdict::violated), 1);
    EXPECT_EQ(exit_code(Verdict::nondeterministic), 1);
    EXPECT_EQ(exit_code(Verdict::non_finite), 1);
    EXPECT_EQ(exit_code(Verdict::error), 2);
}

TEST(Audit, ManyBlackBoxesGiveTheResultOfOne) {
    for (const BlackBox& layer : {BlackBox(leak_from_position_4), BlackBox(identity_layer)}) {
        const AuditResult one = audit(layer, options());
        const AuditResult three = audit(std::vector<BlackBox>{layer, layer, layer}, options());
        EXPECT_EQ(one.verdict, three.verdict);
        EXPECT_EQ(one.cases, three.cases);
        ASSERT_EQ(one.counterexample.has_value(), three.counterexample.has_value());
        if (one.counterexample) {
            EXPECT_EQ(one.counterexample->x, three.counterexample->x);
            EXPECT_EQ(one.counterexample->perm, three.counterexample->perm);
            EXPECT_EQ(one.counterexample->case_index, three.counterexample->case_index);
        }
    }
}

TEST(Audit, ShardsTogetherRunExactlyTheUnshardedCases) {
    const auto inputs_of = [](const AuditOptions& o) {
        std::set<std::vector<double>> seen;
        std::mutex m;
        const BlackBox recording = [&](const Mat<double>& x) {
            std::vector<double> key(x.data(), x.data() + x.size());
            key.push_back(static_cast<double>(x.rows()));
            std::lock_guard<std::mutex> lock(m);
            seen.insert(key);
            return x;
        };
        const AuditResult r = audit(std::vector<BlackBox>{recording, recording}, o);
        EXPECT_EQ(r.verdict, Verdict::holds);
        return std::make_pair(seen, r.cases);
    };
    const auto [all, all_cases] = inputs_of(options(40));
    std::set<std::vector<double>> joined;
    int shard_cases = 0;
    for (int k = 1; k <= 3; ++k) {
        AuditOptions o = options(40);
        o.shard = parse_shard(std::to_string(k) + "/3");
        const auto [part, cases] = inputs_of(o);
        EXPECT_EQ(cases, k == 1 ? 14 : 13);
        shard_cases += cases;
        joined.insert(part.begin(), part.end());
    }
    EXPECT_EQ(shard_cases, all_cases);
    EXPECT_EQ(joined, all);
}

TEST(Audit, CheckAndAuditOfAPlantedBugShrinkToTheSameLengthThroughTheOneShrinker) {
    // The white-box check sees the weights, the audit only the answers; both draw and shrink their cases with
    // check/case.h, so each planted bug ends at its smallest length, one transposition, either way.
    for (mutants::Kind kind : mutants::all()) {
        const Output output = mutants::output(kind);
        const LayerFamily subject = mutants::family(kind);
        CheckOptions co;
        co.seed = 3;
        const CheckResult checked =
            check(subject, output == Output::pooled ? Property::invariance : Property::equivariance, co);
        AuditOptions ao = options();
        ao.output = output;
        const AuditResult audited = audit(seeded_layer<double>(subject, ao.d, 0), ao);  // the weights a check shrinks to
        ASSERT_TRUE(checked.counterexample) << mutants::name(kind);
        ASSERT_EQ(audited.verdict, Verdict::violated) << mutants::name(kind) << ": " << audited.detail;
        EXPECT_EQ(checked.counterexample->n(), mutants::minimal_length(kind)) << describe(*checked.counterexample);
        EXPECT_EQ(audited.counterexample->n(), checked.counterexample->n()) << describe(*audited.counterexample);
        EXPECT_EQ(checked.counterexample->perm.moved(), 2) << describe(*checked.counterexample);
        EXPECT_EQ(audited.counterexample->perm.moved(), 2) << describe(*audited.counterexample);
    }
}

// ---------------------------------------------------------------------------------------------------------
// The length schedule (check/lengths.h)

// Mixes positions only inside blocks of `block` consecutive positions: a sum over the block, added to each row.
// Equivariant for every permutation that keeps each row inside its block, so only lengths above `block` show it.
Mat<double> block_mixing(const Mat<double>& x, Eigen::Index block) {
    Mat<double> y = x;
    for (Eigen::Index start = 0; start < x.rows(); start += block) {
        const Eigen::Index len = std::min(block, x.rows() - start);
        const Eigen::RowVectorXd sum = x.middleRows(start, len).colwise().sum();
        for (Eigen::Index i = start; i < start + len; ++i) y.row(i) += sum;
    }
    return y;
}

TEST(AuditLengths, EveryLengthOfAShortRangeIsSentAndLengthOneIsSkipped) {
    const std::vector<int> lengths = audit_lengths({1, 8, 0, 100});
    ASSERT_EQ(lengths.size(), 100u);
    const std::set<int> sent(lengths.begin(), lengths.end());
    EXPECT_EQ(sent, (std::set<int>{2, 3, 4, 5, 6, 7, 8}));  // 1: only the identity, nothing can fail
    EXPECT_EQ(lengths.front(), 2);
}

TEST(AuditLengths, AWideRangeIsSpreadAndEndsInItsLongest) {
    const std::vector<int> lengths = audit_lengths({1, 100, 0, 20});
    EXPECT_TRUE(std::is_sorted(lengths.begin(), lengths.end()));
    EXPECT_EQ(lengths.front(), 2);
    EXPECT_EQ(lengths.back(), 100);
    EXPECT_EQ(audit_lengths({3, 3, 0, 5}), (std::vector<int>{3, 3, 3, 3, 3}));
    EXPECT_EQ(audit_lengths({1, 1, 0, 2}), (std::vector<int>{1, 1}));  // nothing longer to send
}

TEST(AuditLengths, OneCaseInTenIsLongRisingToTheLongLength) {
    const std::vector<int> lengths = audit_lengths({1, 8, 256, 100});
    std::vector<int> longs;
    for (std::size_t i = 0; i < lengths.size(); ++i)
        if (lengths[i] > 8) longs.push_back(lengths[i]);
    ASSERT_EQ(longs.size(), 10u);
    EXPECT_TRUE(std::is_sorted(longs.begin(), longs.end()));
    EXPECT_EQ(longs.front(), 9);
    EXPECT_EQ(longs.back(), 256);
    for (int window : {16, 32, 128})  // a longer case than each window is sent
        EXPECT_TRUE(std::any_of(longs.begin(), longs.end(), [&](int n) { return n > window; })) << window;
    const std::set<int> short_ones(lengths.begin(), lengths.end());
    for (int n = 2; n <= 8; ++n) EXPECT_TRUE(short_ones.count(n)) << n;  // the range is still covered
}

TEST(AuditLengths, ABlockMixingLayerIsViolatedByADefaultAuditAtOneMoreThanItsBlock) {
    for (Eigen::Index block : {16, 32, 128}) {
        const AuditResult r = audit([block](const Mat<double>& x) { return block_mixing(x, block); }, AuditOptions{});
        ASSERT_EQ(r.verdict, Verdict::violated) << "block " << block << ": " << r.detail;
        EXPECT_EQ(r.counterexample->n(), block + 1) << describe(*r.counterexample);
        EXPECT_EQ(r.counterexample->perm.moved(), 2) << describe(*r.counterexample);
        EXPECT_GT(r.lengths.back(), block);
    }
}

TEST(AuditLengths, APoolThatAveragesOnlyItsFirstSevenPositionsIsViolatedAtEight) {
    AuditOptions o;
    o.output = Output::pooled;
    const AuditResult r = audit([](const Mat<double>& x) -> Mat<double> {
        return x.topRows(std::min<Eigen::Index>(7, x.rows())).colwise().mean();
    }, o);
    ASSERT_EQ(r.verdict, Verdict::violated) << r.detail;
    EXPECT_EQ(r.counterexample->n(), 8) << describe(*r.counterexample);
}

TEST(AuditLengths, AMaximumLengthGivenIsAHardCap) {
    AuditOptions o;
    o.max_len = 12;
    o.long_len = 0;
    const AuditResult r = audit([](const Mat<double>& x) { return block_mixing(x, 16); }, o);
    EXPECT_EQ(r.verdict, Verdict::holds) << r.detail;  // nothing longer than 12 is sent, so blocks of 16 hide
    ASSERT_FALSE(r.lengths.empty());
    EXPECT_EQ(r.lengths.back(), 12);
    EXPECT_EQ(r.lengths.front(), 2);
}

TEST(Audit, ShardTextIsCheckedWithAClearMessage) {
    EXPECT_EQ(parse_shard("2/4").index, 2);
    for (const char* bad : {"0/4", "5/4", "4", "/4", "a/b", "1/0", "-1/2", "1/99999999999"}) {
        try {
            parse_shard(bad);
            ADD_FAILURE() << bad << " accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("K/N"), std::string::npos);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// The protocol's lines

using adapters::parse_response;

TEST(ExecProtocol, ParsesRowsAndPooledVectors) {
    const auto rows = parse_response(R"({"id": 7, "y": [[0.5, -1.0], [2.0, 0.25]]})");
    EXPECT_EQ(rows.id, 7);
    EXPECT_FALSE(rows.vector);
    ASSERT_EQ(rows.y.rows(), 2);
    EXPECT_EQ(rows.y(1, 1), 0.25);
    const auto pooled = parse_response(R"({"id": 8, "y": [1, 2, 3]})");
    EXPECT_TRUE(pooled.vector);
    EXPECT_EQ(pooled.y.rows(), 1);
    EXPECT_EQ(pooled.y.cols(), 3);
}

TEST(ExecProtocol, AcceptsPythonsNonFiniteTokensOutsideStringsOnly) {
    const auto r = parse_response(R"({"id": 1, "y": [NaN, Infinity, -Infinity, 1.5]})");
    EXPECT_TRUE(std::isnan(r.y(0, 0)));
    EXPECT_EQ(r.y(0, 1), std::numeric_limits<double>::infinity());
    EXPECT_EQ(r.y(0, 2), -std::numeric_limits<double>::infinity());
    const auto e = parse_response(R"({"id": 1, "error": "saw NaN and \"Infinity\""})");
    EXPECT_TRUE(e.is_error);
    EXPECT_EQ(e.error, "saw NaN and \"Infinity\"");
    EXPECT_THROW(parse_response(R"({"id": 1, "y": ["NaN"]})"), std::invalid_argument) << "a string is not a number";
    EXPECT_THROW(parse_response(R"({"id": 1, "y": [NaNa]})"), std::invalid_argument);
}

TEST(ExecProtocol, RejectsWhatIsNotTheProtocolSayingWhatWasExpected) {
    const std::pair<std::string, const char*> cases[] = {
        {"Loading weights...", "not JSON"},
        {"[1, 2]", "not an object"},
        {R"({"y": [1]})", "\"id\""},
        {R"({"id": 1})", "neither"},
        {R"({"id": 1, "y": 3})", "not an array"},
        {R"({"id": 1, "y": []})", "empty"},
        {R"({"id": 5, "y": [[]]})", "row 0 of \"y\" is an empty array"},
        {R"({"id": 5, "y": [[], []]})", "row 0 of \"y\" is an empty array"},
        {R"({"id": 1, "y": [[1, 2], [3]]})", "equal width"},
        {R"({"id": 1, "y": [[1], 2]})", "not an array"},
        {R"({"id": 1, "y": [[1, null]]})", "expected numbers"},
        {"", "not JSON"},
        {std::string(100000, '['), "levels deep; at most 64"},
    };
    for (const auto& [line, says] : cases) {
        try {
            parse_response(line);
            ADD_FAILURE() << "accepted: " << line.substr(0, 40);
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    }
}

TEST(ExecProtocol, DeeplyNestedAnswersNeitherCrashNorPass) {
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    EXPECT_THROW(parse_response(R"({"id": 1, "error": )" + deep + "}"), std::invalid_argument);
    const auto e = parse_response(R"({"id": 1, "error": [[["shallow"]]]})");
    EXPECT_TRUE(e.is_error);
    EXPECT_NE(e.error.find("not a string"), std::string::npos);
    EXPECT_THROW(parse_response(R"({"id": 1, "y": )" + deep + "}"), std::invalid_argument);
}

TEST(ExecProtocol, RequestNumbersRoundTripExactly) {
    std::mt19937_64 rng(5);
    Mat<double> x(6, 5);
    for (Eigen::Index i = 0; i < x.size(); ++i) {
        const std::uint64_t bits = rng();
        double v;
        std::memcpy(&v, &bits, sizeof v);
        x.data()[i] = std::isfinite(v) ? v : 1.0 / 3.0;
    }
    x(0, 0) = 5e-324;
    x(0, 1) = -0.1;
    const nlohmann::json j = nlohmann::json::parse(adapters::format_request(9, x));
    EXPECT_EQ(j["id"], 9);
    for (Eigen::Index i = 0; i < x.rows(); ++i)
        for (Eigen::Index k = 0; k < x.cols(); ++k) EXPECT_EQ(j["x"][i][k].get<double>(), x(i, k));
}

// ---------------------------------------------------------------------------------------------------------
// The subprocess adapter

const std::string kPython = "/usr/bin/python3";
const std::string kSource = PERMCHECK_SOURCE_DIR;
const std::string kFault = kPython + " " + kSource + "/tests/adapters/fault.py";

bool process_group_gone(pid_t pgid) {
    for (int t = 0; t < 200; ++t) {
        if (kill(-pgid, 0) != 0 && errno == ESRCH) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

TEST(ExecAdapter, HangIsKilledAtTheTimeoutWithItsWholeProcessGroupAndNoZombie) {
    adapters::ExecOptions eo;
    eo.command = kFault + " hang 1";
    eo.timeout_seconds = 1.5;
    adapters::ExecAdapter adapter(eo);
    const Mat<double> x = Mat<double>::Ones(2, 3);
    adapter(x);  // startup within the first request's timeout
    const auto t0 = std::chrono::steady_clock::now();
    try {
        adapter(x);
        ADD_FAILURE() << "a hanging adapter answered";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("did not answer within 1.5 s"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("last request: id 2, n=2, d=3"), std::string::npos) << e.what();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(seconds, 1.5 + 2.0);
    EXPECT_TRUE(process_group_gone(adapter.pid())) << "the adapter and its child sleep must be killed";
    errno = 0;
    EXPECT_EQ(waitpid(adapter.pid(), nullptr, WNOHANG), -1) << "already reaped: no zombie";
    EXPECT_EQ(errno, ECHILD);
    EXPECT_THROW(adapter(x), AdapterError) << "a failed adapter stays failed";
}

TEST(ExecAdapter, CrashNamesTheStatusTheRequestCountAndTheLastRequest) {
    adapters::ExecOptions eo;
    eo.command = kFault + " crash 3";
    adapters::ExecAdapter adapter(eo);
    const Mat<double> x = Mat<double>::Ones(5, 2);
    for (int i = 0; i < 3; ++i) adapter(x);
    try {
        adapter(x);
        ADD_FAILURE() << "a crashed adapter answered";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("adapter exited with status 3 after 4 requests (3 answered); last request: "
                                             "id 4, n=5, d=2"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_TRUE(process_group_gone(adapter.pid()));
}

TEST(ExecAdapter, OverlongLineIsRefusedWithoutReadingItWhole) {
    adapters::ExecOptions eo;
    eo.command = kFault + " long 5000000";
    eo.max_line_bytes = 4096;
    adapters::ExecAdapter adapter(eo);
    try {
        adapter(Mat<double>::Ones(1, 1));
        ADD_FAILURE() << "an overlong line was accepted";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("longer than 4096 bytes"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(process_group_gone(adapter.pid()));
}

TEST(ExecAdapter, ImmediateExitIsReportedNotASignal) {
    adapters::ExecOptions eo;
    eo.command = kFault + " exit";
    adapters::ExecAdapter adapter(eo);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    try {
        adapter(Mat<double>::Ones(3, 2));
        ADD_FAILURE();
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("exited with status 0 after 1 request"), std::string::npos) << e.what();
    }
}

// ---------------------------------------------------------------------------------------------------------
// Batched requests (README "Batched requests")

TEST(ExecProtocol, BatchAnnouncementIsAnIntegerOfAtLeastOne) {
    EXPECT_EQ(adapters::parse_batch_announcement(R"({"id": 1, "y": [[1]], "batch": 64})"), 64);
    EXPECT_EQ(adapters::parse_batch_announcement(R"({"id": 1, "y": [[1]]})"), 0) << "no announcement";
    for (const char* bad : {R"({"id": 1, "y": [[1]], "batch": 0})", R"({"id": 1, "y": [[1]], "batch": "8"})",
                            R"({"id": 1, "y": [[1]], "batch": 2.5})", R"({"id": 1, "y": [[1]], "batch": [1]})"}) {
        try {
            adapters::parse_batch_announcement(bad);
            ADD_FAILURE() << "accepted: " << bad;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("expected an integer >= 1"), std::string::npos) << e.what();
        }
    }
}

TEST(ExecProtocol, BatchedAnswersAreCountedAndEachItemIsAnOrdinaryAnswer) {
    std::int64_t id = 0;
    std::optional<std::string> error;
    const auto items = adapters::batch_items(R"({"id": 4, "batch": [{"y": [[1.5]]}, {"error": "boom"}, {"y": [NaN]}]})",
                                             3, id, error);
    EXPECT_EQ(id, 4);
    EXPECT_FALSE(error);
    ASSERT_EQ(items.size(), 3u);
    EXPECT_EQ(parse_response(items[0]).y(0, 0), 1.5);
    EXPECT_EQ(parse_response(items[0]).id, 4);
    EXPECT_TRUE(parse_response(items[1]).is_error);
    EXPECT_EQ(parse_response(items[1]).error, "boom");
    EXPECT_TRUE(std::isnan(parse_response(items[2]).y(0, 0))) << "NaN survives the item's round trip";
    adapters::batch_items(R"({"id": 5, "error": "out of memory"})", 3, id, error);
    EXPECT_EQ(error.value_or(""), "out of memory") << "an error for the whole request";
    const std::pair<std::string, const char*> bad[] = {
        {R"({"id": 6, "batch": [{"y": [[1]]}]})", "holds 1 answers for a request of 3 items"},
        {R"({"id": 6, "y": [[1]]})", "no \"batch\" array"},
        {R"({"id": 6, "batch": [1, 2, 3]})", "item 0 of \"batch\" is number"},
    };
    for (const auto& [line, says] : bad) {
        try {
            adapters::batch_items(line, 3, id, error);
            ADD_FAILURE() << "accepted: " << line;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    }
}

TEST(ExecProtocol, BatchDimsAreEachTensorsFirstFixedDimOfSize1) {
    Signature s;
    s.axes = {parse_axis("n=1..8")};
    s.inputs = {parse_input("x:1,n,8"), parse_input("pad:1,n:mask")};
    s.outputs = {parse_output("y:1,n,8")};
    EXPECT_EQ(adapters::batch_dims_of(s), (std::map<std::string, int>{{"pad", 0}, {"x", 0}, {"y", 0}}));
    s.inputs = {parse_input("x:n,1,8")};
    s.outputs = {parse_output("y:n,1,8")};
    EXPECT_EQ(adapters::batch_dims_of(s), (std::map<std::string, int>{{"x", 1}, {"y", 1}})) << "batch_first=False";
    s.outputs = {parse_output("y:n,8")};
    EXPECT_TRUE(adapters::batch_dims_of(s).empty()) << "an output without a dim of size 1: no batch dims at all";
    EXPECT_EQ(adapters::format_batch_request(3, {R"({"x":[[1.0]]})", R"({"x":[[2.0]]})"}, {{"x", 1}}),
              R"({"id":3,"batch_dims":{"x":1},"batch":[{"x":[[1.0]]},{"x":[[2.0]]}]})");
}

// Stacked batches (README "Batched requests")

TEST(ExecProtocol, Float64Base64CarriesEveryValueExactlyAndRefusesAnythingElse) {
    const std::vector<double> values{0.0, -0.0, 5e-324, 1.0 / 3.0, -1e308, std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::quiet_NaN(), 0.1};
    const std::string text = adapters::float64_base64(values);
    EXPECT_EQ(text.size(), 88u) << "64 bytes: 22 groups of 4 characters, the last padded";
    EXPECT_EQ(adapters::float64_base64({1.0}), "AAAAAAAA8D8=") << "little-endian IEEE-754 binary64";
    const std::vector<double> back = adapters::float64_values(text, values.size(), "x");
    ASSERT_EQ(back.size(), values.size());
    for (std::size_t k = 0; k < values.size(); ++k)
        EXPECT_EQ(std::bit_cast<std::uint64_t>(back[k]), std::bit_cast<std::uint64_t>(values[k])) << k;
    const std::vector<std::pair<std::string, std::string>> bad{
        {text.substr(4), "84 base64 characters, expected 88 (8 little-endian float64 values)"},
        {"AAAAAAA!8D8=", "not base64 at character 7 of 12"},
        {"AAAAAAAA8D==", "not base64"},
        {"AAAA=AAA8D8=", "not base64 at character 4"}};
    for (const auto& [line, message] : bad) {
        try {
            adapters::float64_values(line, line.size() == 12 ? 1 : values.size(), "output 'y'");
            ADD_FAILURE() << "accepted " << line;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("output 'y': " + message), std::string::npos) << e.what();
        }
    }
}

namespace {
Signature stacked_signature(const char* input, const char* output) {
    Signature s;
    s.axes = {parse_axis("n=1..8")};
    s.inputs = {parse_input(input), parse_input("pad:n,1:mask")};
    s.outputs = {parse_output(output)};
    return s;
}
Tensors stacked_item(int n, double base) {  // x:n,1,2 with values base, base + 1, ...; pad all true but the last
    Tensors t;
    t["x"] = {{n, 1, 2}, {}};
    for (int k = 0; k < 2 * n; ++k) t["x"].values.push_back(base + k);
    t["pad"] = {{n, 1}, std::vector<double>(n, 1.0)};
    t["pad"].values.back() = 0.0;
    return t;
}
}  // namespace

TEST(ExecProtocol, AStackedRequestHoldsEachInputStackedOnItsBatchDimInBinary) {
    const Signature s = stacked_signature("x:n,1,2", "y:n,1,2");
    const auto dims = adapters::batch_dims_of(s);
    const nlohmann::json j = nlohmann::json::parse(
        adapters::format_stacked_request(5, s, {stacked_item(2, 10), stacked_item(2, 20), stacked_item(2, 30)}, dims));
    EXPECT_EQ(j["id"], 5);
    EXPECT_EQ(j["stacked"], 3);
    EXPECT_EQ(j["batch_dims"], nlohmann::json({{"pad", 1}, {"x", 1}, {"y", 1}}));
    EXPECT_EQ(j["shapes"], nlohmann::json({{"x", {2, 3, 2}}, {"pad", {2, 3}}}));
    EXPECT_EQ(j["kinds"], nlohmann::json({{"x", "float"}, {"pad", "mask"}}));
    EXPECT_EQ(j["outputs"], nlohmann::json({"y"}));
    // Position 0 of every item, then position 1 of every item: the items sit on dim 1, in order.
    EXPECT_EQ(adapters::float64_values(j["inputs"]["x"].get<std::string>(), 12, "x"),
              (std::vector<double>{10, 11, 20, 21, 30, 31, 12, 13, 22, 23, 32, 33}));
    EXPECT_EQ(adapters::float64_values(j["inputs"]["pad"].get<std::string>(), 6, "pad"),
              (std::vector<double>{1, 1, 1, 0, 0, 0}));
    Tensors nan = stacked_item(2, 0);
    nan["x"].values[3] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_THROW(adapters::format_stacked_request(6, s, {stacked_item(2, 0), nan}, dims), std::invalid_argument)
        << "a non-finite input is refused as in the item form";
    EXPECT_THROW(adapters::format_stacked_request(6, s, {stacked_item(2, 0), stacked_item(3, 0)}, dims),
                 std::invalid_argument)
        << "items of other shapes";
    EXPECT_THROW(adapters::format_stacked_request(6, s, {stacked_item(2, 0)}, {{"x", 1}}), std::invalid_argument)
        << "an input without a batch dim";
}

TEST(ExecProtocol, AStackedAnswerIsUnstackedOnItsBatchDimOrReadItemByItem) {
    const Signature s = stacked_signature("x:n,1,2", "y:1,n,2");
    const auto dims = adapters::batch_dims_of(s);
    const auto expected = adapters::expected_outputs(s, {{"n", 2}});
    const std::string y = adapters::float64_base64({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    const adapters::StackedResponse r = adapters::parse_stacked_response(
        R"({"id": 3, "outputs": {"y": ")" + y + R"("}, "shapes": {"y": [3, 2, 2]}, "stacked": true})", expected, 3, dims);
    EXPECT_EQ(r.id, 3);
    ASSERT_EQ(r.items.size(), 3u);
    EXPECT_EQ(r.items[1].at("y").shape, (std::vector<int>{1, 2, 2}));
    EXPECT_EQ(r.items[1].at("y").values, (std::vector<double>{5, 6, 7, 8})) << "item 1 is row 1 of dim 0";
    const auto items = adapters::parse_stacked_response(R"({"id": 3, "batch": [{"error": "a"}, {"error": "b"}]})",
                                                        expected, 2, dims);
    EXPECT_EQ(items.item_lines.size(), 2u);
    EXPECT_TRUE(adapters::parse_stacked_response(R"({"id": 3, "error": "oom"})", expected, 3, dims).is_error);
    std::vector<double> many(160);  // 40 items: 1,708 base64 characters, read apart from the JSON parser
    for (std::size_t k = 0; k < many.size(); ++k) many[k] = 0.5 * static_cast<double>(k);
    const adapters::StackedResponse big = adapters::parse_stacked_response(
        R"({"id": 3, "outputs": {"y": ")" + adapters::float64_base64(many) + R"("}})", expected, 40, dims);
    ASSERT_EQ(big.items.size(), 40u);
    EXPECT_EQ(big.items[39].at("y").values, (std::vector<double>{78, 78.5, 79, 79.5}));
    const std::string long_error(300, 'e');  // long strings are read apart from the JSON parser: this one too
    EXPECT_EQ(adapters::parse_stacked_response(R"({"id": 3, "error": ")" + long_error + R"("})", expected, 3, dims).error,
              long_error);
    const std::string escaped = R"({"id": 3, "outputs": {"y": ")" + y + R"("}, "note": ")" + std::string(300, 'a') +
                                R"(\"}"})";
    EXPECT_EQ(adapters::parse_stacked_response(escaped, expected, 3, dims).items.size(), 3u)
        << "a long string with an escaped quote";
    const std::vector<std::pair<std::string, std::string>> bad{
        {R"({"id": 3, "outputs": {"y": ")" + y + R"("}, "shapes": {"y": [2, 3, 2]}})",
         "output 'y' has shape '[2,3,2]', expected [3,2,2] (3 items stacked on dim 0)"},
        {R"({"id": 3, "outputs": {"y": ")" + y.substr(4) + R"("}})", "output 'y' [3,2,2]: 124 base64 characters, expected 128"},
        {R"({"id": 3, "outputs": {"y": [[1, 2]]}})", "output 'y' is array, expected a base64 string of [3,2,2]"},
        {R"({"id": 3, "outputs": {"z": ")" + y + R"("}})", "the answer has no output 'y'"},
        {R"({"id": 3, "outputs": {"y": "\u00000"}})", "output 'y' [3,2,2]: 2 base64 characters"},
        {R"({"id": 3, "outputs": {"y": ")" + y + R"(}})", "is not JSON"},
        {R"({"id": 3, "y": 1})", "has no \"outputs\" object"},
        {R"({"id": 3, "batch": [{"error": "a"}]})", "holds 1 answers for a request of 3 items"}};
    for (const auto& [line, message] : bad) {
        try {
            adapters::parse_stacked_response(line, expected, 3, dims);
            ADD_FAILURE() << "accepted " << line;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
        }
    }
}

TEST(ExecAdapter, AStackedAdapterGetsEachBatchAsOneStackedRequest) {
    adapters::ExecOptions eo;
    eo.command = kFault + " stacked 8";
    adapters::ExecAdapter adapter(eo);
    const Signature s = stacked_signature("x:n,1,2", "y:n,1,2");
    adapter(s, stacked_item(2, 0));
    ASSERT_TRUE(adapter.stacked());
    auto answers = adapter(s, std::vector<Tensors>{stacked_item(2, 10), stacked_item(2, 20), stacked_item(2, 30)});
    ASSERT_EQ(answers.size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
        ASSERT_TRUE(answers[k].value) << answers[k].error;
        std::vector<double> want = stacked_item(2, 10.0 * (k + 1)).at("x").values;
        for (double& v : want) v += 1000.0 * k;  // the adapter saw item k at position k of the batch dim
        EXPECT_EQ(answers[k].value->at("y").values, want) << k;
        EXPECT_EQ(answers[k].value->at("y").shape, (std::vector<int>{2, 1, 2}));
    }
    answers = adapter(s, std::vector<Tensors>{stacked_item(1, 99), stacked_item(1, 0)});
    ASSERT_EQ(answers.size(), 2u);
    EXPECT_NE(answers[1].error.find("adapter answered with an error: boom in item 1 (item 1 of 2 of request id 3"),
              std::string::npos)
        << answers[1].error;
    try {
        adapter(s, std::vector<Tensors>{stacked_item(1, 77), stacked_item(1, 0)});
        ADD_FAILURE() << "a short stacked output was accepted";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("adapter broke the protocol: output 'y' [1,2,2]: 32 base64 characters, "
                                             "expected 44"),
                  std::string::npos)
            << e.what();
    }
}

TEST(ExecAdapter, AnAnnouncedBatchIsLearntFromTheFirstAnswerAndItemErrorsStayItems) {
    adapters::ExecOptions eo;
    eo.command = kFault + " batched 16";
    adapters::ExecAdapter adapter(eo);
    EXPECT_EQ(adapter.batch_capacity(), 0) << "nothing is known before the first answer";
    adapter(Mat<double>::Ones(2, 2));
    EXPECT_EQ(adapter.batch_capacity(), 16);
    Mat<double> boom = Mat<double>::Ones(2, 2);
    boom(0, 0) = 99;
    const Signature s = one_tensor_signature(2, Output::sequence, 1, 8);
    const auto x = [](const Mat<double>& m) { return Tensors{{"x", tensor_matrix::as_tensor(m)}}; };
    const auto answers = adapter(s, std::vector<Tensors>{x(Mat<double>::Constant(2, 2, 3.0)), x(boom), x(Mat<double>::Ones(2, 2))});
    ASSERT_EQ(answers.size(), 3u);
    ASSERT_TRUE(answers[0].value && answers[2].value);
    EXPECT_EQ(tensor_matrix::as_matrix(answers[0].value->at("y")), Mat<double>::Constant(2, 2, 3.0));
    EXPECT_FALSE(answers[1].value);
    EXPECT_NE(answers[1].error.find("adapter answered with an error: boom at 99 (item 1 of 3 of request id 2, 3 items "
                                    "of n=2, d=2)"),
              std::string::npos)
        << answers[1].error;
    EXPECT_EQ(adapter(Mat<double>::Ones(1, 2)).rows(), 1) << "an item's error leaves the adapter running";
}

TEST(ExecAdapter, ABatchedAnswerWithTooFewItemsIsAProtocolError) {
    adapters::ExecOptions eo;
    eo.command = kFault + " batched-short 8";
    adapters::ExecAdapter adapter(eo);
    adapter(Mat<double>::Ones(2, 2));
    try {
        const Tensors x{{"x", tensor_matrix::as_tensor(Mat<double>::Ones(2, 2))}};
        adapter(one_tensor_signature(2, Output::sequence, 1, 8), std::vector<Tensors>(3, x));
        ADD_FAILURE() << "a short batch was accepted";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("adapter broke the protocol: the answer's \"batch\" holds 2 answers for a "
                                             "request of 3 items"),
                  std::string::npos)
            << e.what();
    }
}

// A batched side over an in-process layer, counting the calls of each side: capacity 0 (not batched) until the
// first call of `one`, then k; every batched call is checked to hold inputs of one shape, at most k of them.
struct CountedBatch {
    BlackBox layer;
    int k = 8;
    std::shared_ptr<int> ones = std::make_shared<int>(0), batches = std::make_shared<int>(0);
    std::shared_ptr<bool> mixed = std::make_shared<bool>(false);

    BatchedBlackBox box() const {
        BatchedBlackBox b;
        const CountedBatch self = *this;
        b.one = [self](const Mat<double>& x) {
            ++*self.ones;
            return self.layer(x);
        };
        b.many.capacity = [self] { return *self.ones > 0 ? self.k : 0; };
        b.many.call = [self](const std::vector<Mat<double>>& xs) {
            ++*self.batches;
            std::vector<BatchAnswer<Mat<double>>> out;
            for (const Mat<double>& x : xs) {
                if (x.rows() != xs[0].rows() || static_cast<int>(xs.size()) > self.k) *self.mixed = true;
                BatchAnswer<Mat<double>> a;
                try {
                    a.value = self.layer(x);
                } catch (const std::exception& e) {
                    a.error = e.what();
                }
                out.push_back(std::move(a));
            }
            return out;
        };
        return b;
    }
};

TEST(AuditBatched, SameVerdictCasesAndCounterexampleAsOneCaseACall) {
    int found = 0;
    const BlackBox leak_from_position_6 = [](const Mat<double>& x) {
        Mat<double> y = x;
        for (Eigen::Index i = 6; i < y.rows(); ++i) y.row(i) *= 2.0;
        return y;
    };
    for (const BlackBox& layer : {BlackBox(leak_from_position_4), leak_from_position_6, BlackBox(identity_layer),
                                  BlackBox(argmax_first_index), BlackBox(centered_float32)}) {
        const AuditResult one = audit(layer, options(300));
        const CountedBatch counted{layer, 8};
        const AuditResult batched = audit(std::vector<BatchedBlackBox>{counted.box()}, options(300));
        EXPECT_EQ(one.verdict, batched.verdict);
        EXPECT_EQ(one.cases, batched.cases);
        EXPECT_EQ(one.dtype, batched.dtype);
        EXPECT_EQ(one.lengths, batched.lengths);
        EXPECT_EQ(describe_finding(one), describe_finding(batched));
        // The first case is asked one at a time (nothing is announced before the first answer), the others batched.
        if (one.cases > 1) {
            EXPECT_GT(*counted.batches, 0) << "the evaluations went through the batched side";
        }
        EXPECT_FALSE(*counted.mixed) << "a batch held one shape, at most k inputs";
        found += one.verdict != Verdict::holds && one.cases > 1;
    }
    EXPECT_GE(found, 2) << "failures found past the first case, in a batch";
}

TEST(AuditBatched, ABlackBoxThatNeverAnnouncesIsCalledOneCaseAtATime) {
    CountedBatch counted{identity_layer, 0};
    const AuditResult r = audit(std::vector<BatchedBlackBox>{counted.box()}, options(50));
    EXPECT_EQ(r.verdict, Verdict::holds);
    EXPECT_EQ(*counted.batches, 0);
    EXPECT_EQ(*counted.ones, r.evaluations);
}

TEST(AuditBatched, AnItemsErrorIsThatCasesErrorWithItsRequest) {
    const BlackBox picky = [](const Mat<double>& x) -> Mat<double> {
        if (x.rows() == 5) throw AdapterError("no n=5 here");
        return x;
    };
    const AuditResult one = audit(picky, options());
    const AuditResult batched = audit(std::vector<BatchedBlackBox>{CountedBatch{picky, 8}.box()}, options());
    EXPECT_EQ(batched.verdict, Verdict::error);
    EXPECT_EQ(batched.error, "no n=5 here");
    EXPECT_EQ(batched.last_request, "n=5, d=4");
    EXPECT_EQ(one.cases, batched.cases) << "the same failing case";
    EXPECT_EQ(one.last_request, batched.last_request);
}

TEST(AuditBatched, AStopRequestEndsTheRunBetweenTheCasesOfABlock) {
    int done = 0;
    AuditOptions o = options(200);
    o.on_progress = [&](const AuditProgress& p) { done = p.cases_done; };
    o.stop_requested = [&] { return done >= 20; };
    CountedBatch counted{identity_layer, 64};
    const AuditResult r = audit(std::vector<BatchedBlackBox>{counted.box()}, o);
    EXPECT_EQ(r.verdict, Verdict::interrupted);
    EXPECT_EQ(r.cases, 20) << "stopped after the 20th case, in the middle of a block of 256";
    EXPECT_EQ(*counted.batches > 0, true);
}

TEST(AuditBatched, AViolationOnlyTheBatchedAnswersShowIsFoundThroughTheAdapter) {
    adapters::ExecOptions eo;
    eo.command = kFault + " batched 32";
    int progress_calls = 0;
    AuditOptions o = options(200);
    o.on_progress = [&](const AuditProgress& p) { progress_calls += p.shrinking ? 0 : 1; };
    const Signature s = one_tensor_signature(o.d, o.output, o.min_len, o.max_len);  // what audit --dim runs
    const AuditResult r = audit(std::vector<BatchedNamedBlackBox>{adapters::exec_batched_named_black_box(eo, s)}, s, o);
    // The ordinary answers (the first request, the shrink) are y = x; the batched ones leak from position 4 at n >= 6.
    EXPECT_EQ(r.verdict, Verdict::nondeterministic) << describe_finding(r);
    EXPECT_EQ(progress_calls, r.cases) << "progress once per case";
}

// ---------------------------------------------------------------------------------------------------------
// The command

struct CommandRun {
    int status = -1;
    std::string output;  // stdout and stderr
    double seconds = 0;
    nlohmann::json report;
};

fs::path scratch_dir(const std::string& name) {
    return fs::temp_directory_path() / ("permcheck-audit-test-" + std::to_string(getpid())) / name;
}

fs::path fresh_dir(const std::string& name) {
    const fs::path dir = scratch_dir(name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

std::string quote(const std::string& s) { return permcheck::test::shell_quote(s); }

// Runs `permcheck ARGS`, stdout and stderr together.
CommandRun permcheck_command(const std::string& args) {
    const permcheck::test::Scratch cwd("audit-command");
    const permcheck::test::Run r =
        permcheck::test::run_shell(quote(PERMCHECK_BINARY) + " " + args, cwd.dir(), /*merge_stderr=*/true);
    CommandRun run;
    run.status = r.exit_code;
    run.output = r.out;
    run.seconds = r.seconds;
    return run;
}

CommandRun permcheck_audit(const std::string& name, const std::string& command, const std::string& args) {
    const fs::path dir = fresh_dir(name);
    CommandRun run = permcheck_command("audit --exec " + quote(command) + " " + args + " --report " + quote(dir.string()));
    std::ifstream in(dir / "report.json");
    if (in) run.report = nlohmann::json::parse(in, nullptr, false);
    return run;
}

TEST(AuditCommand, PythonAttentionExampleHolds) {
    const CommandRun r = permcheck_audit("holds", kPython + " " + kSource + "/examples/adapters/attention.py",
                                  "--dim 3 --cases 40");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.report.value("verdict", ""), "holds") << r.output;
    EXPECT_EQ(r.report.value("cases", 0), 40);
    EXPECT_EQ(r.report["details"]["audit"]["evaluations"], 83) << "two calls a case, three repeats";
    // Without --max-len, one case in ten is a long one, up to 256 positions; the report lists the lengths sent.
    const nlohmann::json& lengths = r.report["details"]["audit"]["lengths"];
    ASSERT_TRUE(lengths.is_array()) << r.output;
    EXPECT_EQ(lengths.front(), 2);
    EXPECT_EQ(lengths.back(), 256) << lengths.dump();
    EXPECT_FALSE(r.report["details"]["audit"]["max_len_is_cap"].get<bool>());
}

TEST(AuditCommand, AGivenMaxLenIsAHardCapAndTheReplayLineKeepsIt) {
    const CommandRun r = permcheck_audit("capped", kPython + " " + kSource + "/examples/adapters/attention.py",
                                         "--dim 3 --cases 40 --max-len 8");
    EXPECT_EQ(r.status, 0) << r.output;
    const nlohmann::json& lengths = r.report["details"]["audit"]["lengths"];
    ASSERT_TRUE(lengths.is_array()) << r.output;
    EXPECT_EQ(lengths.back(), 8) << lengths.dump();
    EXPECT_TRUE(r.report["details"]["audit"]["max_len_is_cap"].get<bool>());
    EXPECT_NE(r.report.value("replay", "").find("--max-len 8"), std::string::npos) << r.report.value("replay", "");
    const CommandRun uncapped = permcheck_audit("uncapped", kPython + " " + kSource + "/examples/adapters/attention.py",
                                                "--dim 3 --cases 40");
    EXPECT_EQ(uncapped.report.value("replay", "").find("--max-len"), std::string::npos) << uncapped.report.value("replay", "");
}

TEST(AuditCommand, PythonCausalAttentionIsViolatedAndShrunkToTwoPositions) {
    const CommandRun r = permcheck_audit("causal", kPython + " " + kSource + "/examples/adapters/attention.py --causal",
                                  "--dim 3 --cases 40");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(r.report.value("verdict", ""), "violated") << r.output;
    EXPECT_EQ(r.report["counterexample"]["n"], 2) << r.output;
    EXPECT_NE(r.output.find("permcheck audit --exec"), std::string::npos) << "a replay line";
}

TEST(AuditCommand, PythonMeanPooledAttentionIsInvariant) {
    const CommandRun r = permcheck_audit("pooled", kPython + " " + kSource + "/examples/adapters/attention.py --pool mean",
                                  "--dim 3 --cases 40 --output pooled");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.report.value("property", ""), "invariance");
}

struct Fault {
    const char* mode;
    int exit_status;
    const char* verdict;
    const char* says;
};

TEST(AuditCommand, EveryFaultGetsItsVerdictExitCodeAndAReportOnDisk) {
    const Fault faults[] = {
        {"crash 4", 2, "error", "adapter exited with status 3 after 5 requests (4 answered); last request: id 5"},
        {"garbage 2", 2, "error", "not JSON"},
        {"few-rows", 2, "error", "for a request of n="},
        {"exit", 2, "error", "adapter exited with status 0 after 1 request"},
        {"error", 2, "error", "adapter answered with an error: model not loaded"},
        {"wrong-id", 2, "error", "answered id 2 to request id 1"},
        {"nan", 1, "non-finite", "non-finite"},
        {"noisy", 1, "nondeterministic", "answered twice"},
        {"index-leak", 1, "violated", "evaluated again"},
        {"identity", 0, "holds", "holds"},
    };
    for (const Fault& f : faults) {
        const CommandRun r = permcheck_audit(std::string("fault-") + f.mode, kFault + " " + f.mode, "--dim 2 --cases 30");
        EXPECT_EQ(r.status, f.exit_status) << f.mode << "\n" << r.output;
        EXPECT_EQ(r.report.value("verdict", ""), f.verdict) << f.mode << "\n" << r.output;
        EXPECT_NE(r.output.find(f.says), std::string::npos) << f.mode << "\n" << r.output;
        if (f.exit_status == 2) {
            EXPECT_NE(r.report.value("error", "").find(f.says), std::string::npos) << f.mode;
        }
        if (f.exit_status == 1) {
            EXPECT_TRUE(r.report["counterexample"].is_object()) << f.mode;
        }
    }
}

TEST(AuditCommand, HangIsAnErrorWithinSecondsOfTheTimeout) {
    const CommandRun r = permcheck_audit("hang", kFault + " hang 3", "--dim 2 --cases 30 --timeout 2");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.report.value("verdict", ""), "error");
    EXPECT_NE(r.report.value("error", "").find("did not answer within 2 s"), std::string::npos) << r.output;
    EXPECT_NE(r.report.value("error", "").find("last request: id 4"), std::string::npos) << r.output;
    EXPECT_LT(r.seconds, 2 + 10.0) << "python startup, three answers, the timeout, the cleanup";
}

TEST(AuditCommand, BadOptionsAreAnErrorWithAReport) {
    const CommandRun r = permcheck_audit("bad-shard", kFault + " identity", "--dim 2 --shard 3/2");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.report.value("verdict", ""), "error");
    EXPECT_NE(r.output.find("--shard must be K/N"), std::string::npos) << r.output;
}

TEST(AuditCommand, JobsGiveTheSameVerdictAndCounterexample) {
    const std::string leak = kFault + " index-leak";
    const CommandRun one = permcheck_audit("jobs1", leak, "--dim 2 --cases 30");
    const CommandRun two = permcheck_audit("jobs2", leak, "--dim 2 --cases 30 --jobs 2");
    EXPECT_EQ(one.status, 1);
    EXPECT_EQ(two.status, 1);
    EXPECT_EQ(one.report["counterexample"]["x"], two.report["counterexample"]["x"]);
    EXPECT_EQ(one.report["counterexample"]["permutation"], two.report["counterexample"]["permutation"]);
    EXPECT_EQ(one.report["cases"], two.report["cases"]);
}

TEST(AuditCommand, AmplificationWidensTheToleranceByItsFactor) {
    // index-leak grows row i by 1e-3 i: at most 7e-3 relative at n = 8. The float64 tolerance, about
    // 4 A (n + d) 2^-53 M, misses it by far with A = 1; with A = 1e13 it is 0.013 M to 0.044 M for n + d from
    // 3 to 10, and the leak, 1e-3 (n - 1) M at most, is within it.
    const std::string leak = kFault + " index-leak";
    const CommandRun plain = permcheck_audit("plain", leak, "--dim 2 --cases 30");
    const CommandRun wide = permcheck_audit("wide", leak, "--dim 2 --cases 30 --amplification 1e13");
    EXPECT_EQ(plain.status, 1) << plain.output;
    EXPECT_EQ(wide.status, 0) << wide.output;
    EXPECT_EQ(wide.report["details"]["audit"].value("amplification", 0.0), 1e13) << wide.output;
    EXPECT_NE(wide.report.value("replay", "").find("--amplification 1e+13"), std::string::npos) << wide.report.dump(2);
}

TEST(AuditCommand, ReplayOfAnAuditReportSendsTheSavedCaseToTheProgramTheUserNames) {
    const std::string leak = kFault + " index-leak", fixed = kFault + " identity";
    const CommandRun found = permcheck_audit("replay", leak, "--dim 2 --cases 30");
    ASSERT_EQ(found.status, 1) << found.output;
    const std::string report = quote(scratch_dir("replay").string());

    const CommandRun unnamed = permcheck_command("replay " + report);
    EXPECT_EQ(unnamed.status, 2) << unnamed.output;
    EXPECT_NE(unnamed.output.find("--exec \"COMMAND\" (a report never chooses the program it runs)"), std::string::npos)
        << unnamed.output;

    const CommandRun again = permcheck_command("replay " + report + " --exec " + quote(leak));
    EXPECT_EQ(again.status, 1) << again.output;
    EXPECT_NE(again.output.find("still fails: L(P x) against P L(x)"), std::string::npos) << again.output;
    EXPECT_NE(again.output.find("of the saved case (n=2; permutations n (0 1); float64)"), std::string::npos) << again.output;
    EXPECT_NE(again.output.find("output y: differ by "), std::string::npos) << again.output;

    const CommandRun after_fix = permcheck_command("replay " + report + " --exec " + quote(fixed));
    EXPECT_EQ(after_fix.status, 0) << after_fix.output;
    EXPECT_NE(after_fix.output.find("now holds"), std::string::npos) << after_fix.output;

    const CommandRun broken = permcheck_command("replay " + report + " --exec " + quote(kFault + " crash 0"));
    EXPECT_EQ(broken.status, 2) << broken.output;
    EXPECT_NE(broken.output.find("could not be evaluated through"), std::string::npos) << broken.output;
}

// Runs a report's replay line as written (its leading "permcheck" is this build's binary).
CommandRun run_replay_line(const std::string& line) {
    const std::string prefix = "permcheck ";
    EXPECT_EQ(line.rfind(prefix, 0), 0u) << line;
    return permcheck_command(line.substr(prefix.size()));
}

// The "re-evaluate this exact case" command of report.md, run in the report's directory as written.
permcheck::test::Run run_markdown_case_replay(const fs::path& dir) {
    std::ifstream in(dir / "report.md");
    const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string lead = "or re-evaluate this exact case: `";
    const std::size_t at = md.find(lead);
    EXPECT_NE(at, std::string::npos) << md;
    if (at == std::string::npos) return {};
    const std::size_t from = at + lead.size(), to = md.find('`', from);
    std::string line = md.substr(from, to - from);
    EXPECT_EQ(line.rfind("permcheck replay report.json --exec ", 0), 0u) << line;
    line.replace(0, std::string("permcheck").size(), quote(PERMCHECK_BINARY));
    return permcheck::test::run_shell(line, dir, /*merge_stderr=*/true);
}

TEST(AuditCommand, Float32AdapterHoldsByDefaultSayingTheDtypeWasInferred) {
    const std::string f32 = kFault + " float32";
    const CommandRun r = permcheck_audit("float32", f32, "--dim 4 --max-len 50 --cases 60");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("(float32, inferred from the answers, n in [1, 50]"), std::string::npos) << r.output;
    EXPECT_EQ(r.report.value("dtype", ""), "float32");
    EXPECT_EQ(r.report["details"]["audit"].value("dtype_inferred", false), true);
    const std::string replay = r.report.value("replay", "");
    EXPECT_NE(replay.find("--dtype float32"), std::string::npos) << replay;
    const CommandRun again = run_replay_line(replay);
    EXPECT_EQ(again.status, 0) << again.output;
    EXPECT_NE(again.output.find("equivariance (float32, n in"), std::string::npos) << again.output;
    // The same answers under a float64 tolerance are a false alarm: the default avoids it.
    const CommandRun strict = permcheck_audit("float32-strict", f32, "--dim 4 --max-len 50 --cases 60 --dtype float64");
    EXPECT_EQ(strict.status, 1) << strict.output;
    EXPECT_EQ(strict.report["details"]["audit"].value("dtype_inferred", true), false);
}

TEST(AuditCommand, EveryReplayHintOfAViolationRunsAsWrittenAndFindsTheSameVerdict) {
    const CommandRun r = permcheck_audit("replay-hints", kFault + " index-leak", "--dim 2 --cases 30");
    ASSERT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(r.report.value("dtype", ""), "float64") << "a float64 leak is judged as float64";
    const CommandRun again = run_replay_line(r.report.value("replay", ""));
    EXPECT_EQ(again.status, 1) << again.output;
    EXPECT_NE(again.output.find(" violated after " + std::to_string(r.report.value("cases", 0)) + " case"),
              std::string::npos) << again.output;
    const permcheck::test::Run exact = run_markdown_case_replay(scratch_dir("replay-hints"));
    EXPECT_EQ(exact.exit_code, 1) << exact.out;
    EXPECT_NE(exact.out.find("still fails"), std::string::npos) << exact.out;
}

TEST(AuditCommand, BlackBoxReportsOmitExactConfirmationAndWeightSeed) {
    for (const char* mode : {"index-leak", "noisy"}) {
        const CommandRun r = permcheck_audit(std::string("views-") + mode, kFault + " " + mode, "--dim 2 --cases 30");
        ASSERT_EQ(r.status, 1) << r.output;
        for (const char* file : {"report.md", "report.html"}) {
            std::ifstream in(scratch_dir(std::string("views-") + mode) / file);
            const std::string view((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            EXPECT_EQ(view.find("exact rational arithmetic"), std::string::npos) << mode << " " << file;
            EXPECT_EQ(view.find("Weight seed"), std::string::npos) << mode << " " << file;
            EXPECT_NE(view.find("--exec"), std::string::npos) << mode << " " << file << ": the case replay";
            const bool twice = std::string(mode) == "noisy";
            EXPECT_EQ(view.find("first answer") != std::string::npos, twice) << mode << " " << file;
            EXPECT_EQ(view.find("second answer") != std::string::npos, twice) << mode << " " << file;
            EXPECT_EQ(view.find("P L(x)") != std::string::npos, !twice) << mode << " " << file;
            EXPECT_EQ(view.find("class=\"permutation\"") != std::string::npos, !twice && file[7] == 'h')
                << mode << " " << file << ": a permutation is drawn only for a violation";
        }
    }
}

TEST(AuditCommand, AnswerWithABatchDimensionIsAnErrorSayingToDropIt) {
    const CommandRun r = permcheck_audit("batch", kFault + " batch", "--dim 2 --cases 5");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("drop the batch dimension"), std::string::npos) << r.output;
}

TEST(AuditCommand, LogHintOnlyForALineThatIsNoJsonObject) {
    const CommandRun str = permcheck_audit("string", kFault + " string", "--dim 2 --cases 5");
    EXPECT_EQ(str.status, 2) << str.output;
    EXPECT_NE(str.output.find("\"y\" is string"), std::string::npos) << str.output;
    EXPECT_EQ(str.output.find("write logs to stderr"), std::string::npos) << str.output;
    const CommandRun log = permcheck_audit("log-line", kFault + " garbage 1", "--dim 2 --cases 5");
    EXPECT_EQ(log.status, 2) << log.output;
    EXPECT_NE(log.output.find("write logs to stderr"), std::string::npos) << log.output;
}

TEST(AuditCommand, OneCallAndOneRowAreSingular) {
    const CommandRun crash = permcheck_audit("one-call", kFault + " crash 0", "--dim 2 --cases 5");
    EXPECT_EQ(crash.status, 2) << crash.output;
    EXPECT_NE(crash.output.find("after 1 case, 1 layer call,"), std::string::npos) << crash.output;
    const CommandRun rows = permcheck_audit("one-row", kFault + " few-rows", "--dim 2 --cases 5 --min-len 2 --max-len 2");
    EXPECT_EQ(rows.status, 2) << rows.output;
    EXPECT_NE(rows.output.find("answered 1 row for a request of n=2"), std::string::npos) << rows.output;
}

TEST(AuditCommand, StartupTimeoutCoversTheFirstAnswerAndTimeoutTheOthers) {
    const std::string slow = kFault + " slow-start 3";
    const CommandRun patient = permcheck_audit("slow-ok", slow, "--dim 2 --cases 5 --timeout 1 --startup-timeout 20");
    EXPECT_EQ(patient.status, 0) << patient.output;
    EXPECT_NE(patient.report.value("replay", "").find("--startup-timeout 20"), std::string::npos);
    const CommandRun hasty = permcheck_audit("slow-bad", slow, "--dim 2 --cases 5 --timeout 20 --startup-timeout 1");
    EXPECT_EQ(hasty.status, 2) << hasty.output;
    EXPECT_NE(hasty.output.find("did not answer within 1 s (--startup-timeout"), std::string::npos) << hasty.output;
    const CommandRun bad = permcheck_audit("slow-zero", slow, "--dim 2 --startup-timeout 0");
    EXPECT_EQ(bad.status, 2) << bad.output;
    EXPECT_NE(bad.output.find("--startup-timeout must be a number of seconds in (0, 86400]"), std::string::npos)
        << bad.output;
}

TEST(AuditCommand, ExecIsRefusedForAReferenceLayersReport) {
    const fs::path dir = fresh_dir("reference");
    const CommandRun check = permcheck_command("check causal-attention --no-db --report " + quote(dir.string()));
    ASSERT_EQ(check.status, 1) << check.output;
    const CommandRun r = permcheck_command("replay " + quote(dir.string()) + " --exec cat");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("holds one of the reference layer 'causal-attention'"), std::string::npos) << r.output;
}

TEST(AuditCommand, ShardsSplitTheCases) {
    int total = 0;
    for (const char* shard : {"1/3", "2/3", "3/3"}) {
        const CommandRun r = permcheck_audit(std::string("shard") + shard[0], kFault + " identity",
                                      std::string("--dim 2 --cases 31 --shard ") + shard);
        EXPECT_EQ(r.status, 0) << r.output;
        total += r.report.value("cases", 0);
    }
    EXPECT_EQ(total, 31);
}

// PyTorch's own layer, through the example adapter (Debian's python3-torch).
TEST(AuditCommand, TorchMultiheadAttentionVerdicts) {
    const std::string mha = kPython + " " + kSource + "/examples/adapters/torch_mha.py --dim 4";
    const std::string args = "--dim 4 --dtype float32 --cases 60 --timeout 120";
    const CommandRun eval = permcheck_audit("torch-eval", mha, args);
    EXPECT_EQ(eval.status, 0) << eval.output;
    const CommandRun causal = permcheck_audit("torch-causal", mha + " --causal", args);
    EXPECT_EQ(causal.status, 1) << causal.output;
    EXPECT_EQ(causal.report.value("verdict", ""), "violated");
    const CommandRun train = permcheck_audit("torch-train", mha + " --train", args);
    EXPECT_EQ(train.status, 1) << train.output;
    EXPECT_EQ(train.report.value("verdict", ""), "nondeterministic") << train.output;
}

// The most common model there is, audited as a new user would (no --dtype): float32 is inferred and it holds,
// where a float64 tolerance calls its rounding a violation.
TEST(AuditCommand, Float32TorchModelHoldsWithDefaultOptions) {
    const std::string mha = kPython + " " + kSource + "/examples/adapters/torch_mha.py --dim 4";
    const CommandRun plain = permcheck_audit("torch-default", mha, "--dim 4 --cases 60");
    EXPECT_EQ(plain.status, 0) << plain.output;
    EXPECT_EQ(plain.report.value("dtype", ""), "float32") << plain.output;
    EXPECT_NE(plain.output.find("float32, inferred from the answers"), std::string::npos) << plain.output;
    const CommandRun strict = permcheck_audit("torch-float64", mha, "--dim 4 --cases 60 --dtype float64");
    EXPECT_EQ(strict.status, 1) << strict.output;
}

// ---------------------------------------------------------------------------------------------------------
// Stopping an audit (AuditOptions::stop_requested, as the command's Ctrl-C handler sets it) and its progress

TEST(AuditStop, StopBetweenCasesKeepsTheCasesRun) {
    int calls = 0;
    const BlackBox identity = [&](const Mat<double>& x) { ++calls; return x; };
    AuditOptions o;
    o.cases = 100;
    o.stop_requested = [&] { return calls >= 10; };
    std::vector<int> done;
    o.on_progress = [&](const AuditProgress& p) {
        EXPECT_FALSE(p.shrinking);
        EXPECT_EQ(p.cases_total, 100);
        EXPECT_EQ(p.calls, calls);
        done.push_back(p.cases_done);
    };
    const AuditResult r = audit(identity, o);
    EXPECT_EQ(r.verdict, Verdict::interrupted);
    EXPECT_EQ(exit_code(r.verdict), 130);
    EXPECT_GT(r.cases, 0);
    EXPECT_LT(r.cases, 100);
    EXPECT_EQ(r.evaluations, calls);
    EXPECT_FALSE(r.counterexample);
    ASSERT_FALSE(done.empty());
    EXPECT_EQ(done.back(), r.cases);
    for (std::size_t k = 0; k < done.size(); ++k) EXPECT_EQ(done[k], static_cast<int>(k) + 1);
    EXPECT_NE(r.detail.find("interrupted after"), std::string::npos) << r.detail;
}

TEST(AuditStop, StopWhileShrinkingKeepsTheCounterexampleFound) {
    bool shrinking = false;
    AuditOptions o;
    o.cases = 200;
    o.max_len = 12;
    o.on_progress = [&](const AuditProgress& p) { shrinking = shrinking || p.shrinking; };
    o.stop_requested = [&] { return shrinking; };
    const AuditResult r = audit(BlackBox(leak_from_position_4), o);
    EXPECT_EQ(r.verdict, Verdict::interrupted);
    ASSERT_TRUE(r.counterexample);
    EXPECT_GT(r.counterexample->n(), 4);  // the leak needs a fifth position
    EXPECT_FALSE(r.counterexample->comparison.holds);
    EXPECT_NE(r.detail.find("interrupted while shrinking a violation"), std::string::npos) << r.detail;
}

TEST(AuditStop, VerdictNameRoundTrips) {
    EXPECT_STREQ(verdict_name(Verdict::interrupted), "interrupted");
    EXPECT_EQ(parse_verdict("interrupted"), Verdict::interrupted);
}

}  // namespace
}  // namespace permcheck
