// The audit engine's specification (audit/blackbox.h, audit/audit_engine.h, cases/lengths.h), with in-process
// black boxes only: verdicts and their shrunk counterexamples, the dtype inferred from the answers, half
// precision, the length schedule, shards and workers, batched black boxes, stop requests and progress.
// No process is started here: the subprocess adapter is tests/test_exec_adapter.cpp, the command test_audit_cli.cpp.
#include "audit/audit_engine.h"
#include "audit/blackbox.h"
#include "check/check.h"
#include "cases/lengths.h"
#include "audit/signature_audit.h"
#include "report/text.h"
#include "tests/support/audit.h"
#include "tests/support/mutants.h"
#include "tests/support/sequence.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {
namespace {

using test::finding;
using test::margin;
using test::matrices;
using test::MatrixFinding;
using test::seeded;

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


TEST(Audit, EquivariantFloat32LayerHoldsUpToSummationOrder) {
    AuditOptions o = seeded(200);
    o.dtype = Arithmetic::float32;
    o.max_len = 100;
    const AuditResult r = audit(BlackBox(centered_float32), o);
    EXPECT_EQ(r.verdict, Verdict::holds) << detail_text(r);
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

// What a run checked (AuditResult::checked): each output's largest difference over the cases judged, with the
// tolerance of the case it was seen in and the largest fraction of its own tolerance any case came to.
TEST(AuditChecked, AHoldingRunRecordsItsLargestDifferenceWithinItsTolerance) {
    AuditOptions o = seeded(200);
    o.dtype = Arithmetic::float32;
    o.max_len = 100;
    const AuditResult r = audit(BlackBox(centered_float32), o);
    ASSERT_EQ(r.verdict, Verdict::holds) << detail_text(r);
    ASSERT_EQ(r.checked.size(), 1u);
    const OutputCheck& y = r.checked[0];
    EXPECT_EQ(y.name, "y");
    EXPECT_EQ(y.cases, 200);
    EXPECT_GT(y.max_abs_diff, 0.0) << "float32 summation order shows in some case";
    EXPECT_LE(y.max_abs_diff, y.tolerance_at_max);
    EXPECT_GT(y.largest_fraction, 0.0);
    EXPECT_LE(y.largest_fraction, 1.0);
    EXPECT_GE(y.largest_fraction, y.max_abs_diff / y.tolerance_at_max);
    EXPECT_LE(y.min_tolerance, y.tolerance_at_max);
    EXPECT_LE(y.tolerance_at_max, y.max_tolerance);
    EXPECT_LT(y.min_tolerance, y.max_tolerance) << "each case has its own tolerance (lengths, magnitudes)";
    EXPECT_EQ(r.tolerance.unit_roundoff, 0x1p-24);
    EXPECT_EQ(r.tolerance_widest, 4) << "x: n x 4";
    // The case closest to its tolerance, kept with both sides: its fraction is the run's largest.
    ASSERT_GE(y.closest_case, 0);
    EXPECT_EQ(y.closest.max_abs_diff / y.closest.tolerance, y.largest_fraction);
    EXPECT_EQ(y.closest.layer_of_permuted.shape, y.closest.permuted_layer.shape);
    ASSERT_EQ(y.closest.layer_of_permuted.shape.size(), 2u);
    EXPECT_EQ(y.closest.layer_of_permuted.shape[0], y.closest_lengths.at("n"));
    double largest = 0;
    for (std::size_t e = 0; e < y.closest.layer_of_permuted.values.size(); ++e)
        largest = std::max(largest, std::abs(y.closest.layer_of_permuted.values[e] - y.closest.permuted_layer.values[e]));
    EXPECT_EQ(largest, y.closest.max_abs_diff) << "its two sides are the ones compared";
    // Judged under float64, the same answers break the tolerance: the largest fraction says by how much.
    o.dtype = Arithmetic::float64;
    const AuditResult strict = audit(BlackBox(centered_float32), o);
    ASSERT_EQ(strict.verdict, Verdict::violated);
    ASSERT_EQ(strict.checked.size(), 1u);
    EXPECT_EQ(strict.checked[0].cases, strict.cases) << "the cases up to and including the failing one";
    EXPECT_GT(strict.checked[0].largest_fraction, 1.0);
    EXPECT_EQ(strict.checked[0].closest_case, -1) << "a violated run shows its counterexample instead";
    EXPECT_EQ(strict.tolerance.unit_roundoff, 0x1p-53);
}

TEST(AuditChecked, AnExactlyEquivariantLayerShowsNoDifferenceAndWorkersChangeNothing) {
    const AuditResult r = audit(BlackBox(identity_layer), seeded());
    ASSERT_EQ(r.checked.size(), 1u);
    EXPECT_EQ(r.checked[0].cases, r.cases);
    EXPECT_EQ(r.checked[0].max_abs_diff, 0.0);
    EXPECT_EQ(r.checked[0].largest_fraction, 0.0);
    // A case whose values are all 0 is compared exactly (tolerance 0, never a subnormal 4 gamma DBL_MIN); the others
    // have a positive tolerance.
    EXPECT_TRUE(r.checked[0].min_tolerance == 0.0 || r.checked[0].min_tolerance >= std::numeric_limits<double>::min())
        << r.checked[0].min_tolerance;
    EXPECT_GT(r.checked[0].max_tolerance, 0.0);
    for (const BlackBox& layer : {BlackBox(leak_from_position_4), BlackBox(centered_float32)}) {
        const AuditResult one = audit(layer, seeded());
        const AuditResult three = audit(std::vector<BlackBox>{layer, layer, layer}, seeded());
        ASSERT_EQ(one.checked.size(), 1u);
        ASSERT_EQ(three.checked.size(), 1u);
        EXPECT_EQ(one.checked[0].cases, three.checked[0].cases);
        EXPECT_EQ(one.checked[0].max_abs_diff, three.checked[0].max_abs_diff);
        EXPECT_EQ(one.checked[0].largest_fraction, three.checked[0].largest_fraction);
        EXPECT_EQ(one.checked[0].min_tolerance, three.checked[0].min_tolerance);
        EXPECT_EQ(one.checked[0].max_tolerance, three.checked[0].max_tolerance);
        EXPECT_EQ(one.checked[0].closest_case, three.checked[0].closest_case);
        EXPECT_EQ(one.checked[0].closest.permuted_layer.values, three.checked[0].closest.permuted_layer.values);
    }
}

TEST(AuditChecked, EachOutputOfASignatureIsRecordedInItsOrder) {
    Signature s;
    s.axes = {{"n", 1, 6}};
    s.inputs = {{"x", {{"n", 0}, {"", 3}}, TensorKind::real, ""}};
    s.outputs = {{"y", {{"n", 0}, {"", 3}}, TensorKind::real, ""}, {"g", {{"", 3}}, TensorKind::real, ""}};
    // y = x; g = the sum over n in index order, in float32: equivariant and invariant up to summation order.
    const NamedBlackBox box = [](const Tensors& in) {
        const Tensor& x = in.at("x");
        const int n = x.shape[0];
        Tensor g{{3}, {0, 0, 0}};
        for (int c = 0; c < 3; ++c) {
            float sum = 0;
            for (int i = 0; i < n; ++i) sum += static_cast<float>(x.values[static_cast<std::size_t>(i * 3 + c)]);
            g.values[static_cast<std::size_t>(c)] = sum;
        }
        return Tensors{{"y", x}, {"g", g}};
    };
    AuditOptions o = seeded(60);
    o.dtype = Arithmetic::float32;
    const AuditResult r = audit(box, s, o);
    ASSERT_EQ(r.verdict, Verdict::holds) << detail_text(r);
    ASSERT_EQ(r.checked.size(), 2u);
    EXPECT_EQ(r.checked[0].name, "y");
    EXPECT_EQ(r.checked[1].name, "g");
    EXPECT_EQ(r.checked[0].max_abs_diff, 0.0) << "y = x moves exactly";
    EXPECT_EQ(r.checked[1].cases, 60);
    EXPECT_LE(r.checked[1].largest_fraction, 1.0);
}

TEST(Audit, Float64LeakOfRelativeSize1e7IsViolated) {
    const AuditResult r = audit(BlackBox(tiny_leak_float64), seeded());
    ASSERT_EQ(r.verdict, Verdict::violated);
    ASSERT_TRUE(r.counterexample);
    EXPECT_EQ(r.counterexample->lengths.at("n"), 2);
    EXPECT_GT(margin(*r.counterexample), 1.0);
}

// ---------------------------------------------------------------------------------------------------------
// The dtype, inferred from the answers when not given

// floor(8 x): integer answers, equivariant.
Mat<double> integer_layer(const Mat<double>& x) { return (8.0 * x).array().floor().matrix(); }

TEST(AuditDtype, Float32LayerHoldsByDefaultAndIsViolatedUnderAFloat64Tolerance) {
    AuditOptions o = seeded(200);
    o.max_len = 100;
    ASSERT_FALSE(o.dtype.has_value()) << "inferring is the default";
    const AuditResult r = audit(BlackBox(centered_float32), o);
    EXPECT_EQ(r.verdict, Verdict::holds) << detail_text(r);
    EXPECT_EQ(r.dtype, Arithmetic::float32);
    EXPECT_TRUE(r.dtype_inferred);
    EXPECT_EQ(r.dtype_evidence, DtypeEvidence::float32_rounding);
    // The replay names the dtype used and judges the same; float64 would call the rounding a violation.
    o.dtype = r.dtype;
    const AuditResult again = audit(BlackBox(centered_float32), o);
    EXPECT_EQ(again.verdict, Verdict::holds);
    EXPECT_FALSE(again.dtype_inferred);
    EXPECT_EQ(again.dtype_evidence, DtypeEvidence::given);
    o.dtype = Arithmetic::float64;
    EXPECT_EQ(audit(BlackBox(centered_float32), o).verdict, Verdict::violated);
}

TEST(AuditDtype, Float64LeakOf1e7IsStillViolatedAndTheReplayFindsTheSameCase) {
    const AuditResult r = audit(BlackBox(tiny_leak_float64), seeded());
    ASSERT_EQ(r.verdict, Verdict::violated);
    EXPECT_EQ(r.dtype, Arithmetic::float64);
    EXPECT_TRUE(r.dtype_inferred);
    ASSERT_TRUE(r.counterexample);
    EXPECT_EQ(r.dtype, Arithmetic::float64);
    AuditOptions o = seeded();
    o.dtype = r.dtype;
    const AuditResult again = audit(BlackBox(tiny_leak_float64), o);
    ASSERT_EQ(again.verdict, Verdict::violated);
    EXPECT_EQ(again.cases, r.cases);
    EXPECT_EQ(again.counterexample->inputs.at("x").values, r.counterexample->inputs.at("x").values);
    EXPECT_EQ(again.counterexample->perms.at("n").cycles(), r.counterexample->perms.at("n").cycles());
}

TEST(AuditDtype, IntegerAnswersAreJudgedAsFloat64) {
    const AuditResult r = audit(BlackBox(integer_layer), seeded(50));
    EXPECT_EQ(r.verdict, Verdict::holds);
    EXPECT_EQ(r.dtype, Arithmetic::float64) << "integers are float32 values whatever the layer computes in";
    EXPECT_TRUE(r.dtype_inferred);
    EXPECT_EQ(r.dtype_evidence, DtypeEvidence::short_dyadic) << "small integers are short dyadic numbers";
}

TEST(AuditDtype, EvidenceSaysFloat32OnlyWhenSomeFloat32ValueShowsRounding) {
    struct Evidence : engine::PrecisionEvidence {
        using PrecisionEvidence::add;
        void add(const Mat<double>& m) { PrecisionEvidence::add(m.data(), static_cast<std::size_t>(m.size())); }
        void add(double v) { add(Mat<double>::Constant(1, 1, v)); }
    };
    EXPECT_EQ(engine::significant_bits(0.0), 0);
    EXPECT_EQ(engine::significant_bits(-8.0), 1);
    EXPECT_EQ(engine::significant_bits(0.75), 2);
    EXPECT_EQ(engine::significant_bits(0x7fffffp-20), 23) << "the longest input permcheck draws";
    EXPECT_EQ(engine::significant_bits(0.1f), 24);
    EXPECT_EQ(engine::significant_bits(0x1p-1074), 1) << "a subnormal double";
    Evidence none;
    EXPECT_EQ(none.evidence(), DtypeEvidence::no_answer);
    EXPECT_EQ(none.dtype(), Arithmetic::float64);
    Evidence e;
    e.add(Mat<double>::Constant(2, 2, 3.0));
    EXPECT_EQ(e.dtype(), Arithmetic::float64) << "all integers";
    EXPECT_EQ(e.evidence(), DtypeEvidence::short_dyadic);
    // permcheck's inputs, copied, negated or halved: at most 23 significant bits, exact in any precision.
    for (const double v : {0.0, -8.0, 0.75, -0x7fffffp-20, 0x7fffffp-21, 0x1p-149})
        e.add(v);
    EXPECT_EQ(e.dtype(), Arithmetic::float64) << "short dyadic numbers are ambiguous, judged as float64";
    EXPECT_EQ(e.evidence(), DtypeEvidence::short_dyadic);
    e.add(0x1ffffffp-21);  // 25 bits: not a float32 value
    EXPECT_EQ(e.dtype(), Arithmetic::float64);
    EXPECT_EQ(e.evidence(), DtypeEvidence::not_float32);
    Evidence f;
    f.add(Mat<double>::Constant(3, 1, 0.5));
    f.add(0.1f);  // 24 bits: float32 rounding
    EXPECT_EQ(f.dtype(), Arithmetic::float32);
    EXPECT_EQ(f.evidence(), DtypeEvidence::float32_rounding);
    f.add(std::numeric_limits<double>::quiet_NaN());
    f.add(-std::numeric_limits<double>::infinity());
    EXPECT_EQ(f.dtype(), Arithmetic::float32) << "a non-finite entry says nothing";
    Evidence g = f;
    g.add(1e300);
    EXPECT_EQ(g.dtype(), Arithmetic::float64) << "beyond float32's range";
    Evidence h = f;
    h.add(0.1);
    EXPECT_EQ(h.dtype(), Arithmetic::float64) << "one value that is not a float32 value decides";
    EXPECT_EQ(h.evidence(), DtypeEvidence::not_float32);
    Evidence i;
    i.add(0x800001p0);  // 2^23 + 1: an integer with 24 significant bits, as a float32 rounding near 10^7 gives
    EXPECT_EQ(i.dtype(), Arithmetic::float32) << "integers are values like any other";
    Evidence j;
    j.add(std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(j.evidence(), DtypeEvidence::no_finite_value);
    EXPECT_EQ(j.dtype(), Arithmetic::float64);
    Evidence merged;  // the engine merges the evidence of every case it judged
    merged.add(static_cast<const engine::PrecisionEvidence&>(e));
    EXPECT_EQ(merged.evidence(), DtypeEvidence::not_float32);
    Evidence merged_short;
    merged_short.add(static_cast<const engine::PrecisionEvidence&>(none));
    EXPECT_EQ(merged_short.evidence(), DtypeEvidence::no_answer);
    merged_short.add(static_cast<const engine::PrecisionEvidence&>(j));
    merged_short.add(0.25);
    merged_short.add(static_cast<const engine::PrecisionEvidence&>(f));
    EXPECT_EQ(merged_short.evidence(), DtypeEvidence::float32_rounding) << "one rounded answer decides";
}

// A float64 layer whose answers are short dyadic numbers, with a leak between the float64 and float32 tolerances:
// from position 1 on, each entry in the top binade of the input's largest |x| (2^E <= |x|, E = floor(log2 max |x|))
// moves toward zero by 2^(E - 22), one unit in its 23rd significant bit. Its answers keep at most 23 significant
// bits (the inputs' grid, 2^-20, is a multiple of 2^(E - 22) for E <= 2, and only +-8 has E = 3); the change, at
// most 2^-22 of the magnitude, is below every float32 tolerance (4 gamma(n + d) >= 20 * 2^-24 of it for d = 4) and
// far above float64's.
Mat<double> short_dyadic_leak(const Mat<double>& x) {
    Mat<double> y = x;
    const double largest = x.cwiseAbs().maxCoeff();
    if (largest == 0.0) return y;
    const int e = std::ilogb(largest);
    for (Eigen::Index i = 1; i < y.rows(); ++i)
        for (Eigen::Index j = 0; j < y.cols(); ++j)
            if (x(i, j) != 0.0 && std::ilogb(x(i, j)) == e) y(i, j) -= std::copysign(std::ldexp(1.0, e - 22), x(i, j));
    return y;
}

TEST(AuditDtype, Float64LayerWithShortDyadicAnswersIsJudgedAsFloat64AndItsSmallLeakFound) {
    const AuditResult r = audit(BlackBox(short_dyadic_leak), seeded());
    ASSERT_EQ(r.verdict, Verdict::violated) << detail_text(r);
    EXPECT_EQ(r.dtype, Arithmetic::float64);
    EXPECT_TRUE(r.dtype_inferred);
    EXPECT_EQ(r.dtype_evidence, DtypeEvidence::short_dyadic);
    EXPECT_NE(precision_text(r).find("short dyadic"), std::string::npos) << precision_text(r);
    ASSERT_TRUE(r.counterexample);
    const MatrixFinding ce = matrices(r);
    engine::PrecisionEvidence sides;
    for (const Mat<double>* m : {&ce.x, &ce.lhs, &ce.rhs}) sides.add(m->data(), static_cast<std::size_t>(m->size()));
    EXPECT_EQ(sides.evidence(), DtypeEvidence::short_dyadic) << finding(r);
    // The difference is real and below the float32 tolerance: judged as float32 (the old rule's guess for these
    // answers), the same layer holds.
    const double magnitude = std::max({ce.x.cwiseAbs().maxCoeff(), ce.lhs.cwiseAbs().maxCoeff(), ce.rhs.cwiseAbs().maxCoeff()});
    EXPECT_LT(r.counterexample->outputs.at(0).max_abs_diff,
              float_tolerance(tolerance_model(Arithmetic::float32, 1.0), ce.n(), ce.x.cols(), magnitude))
        << finding(r);
    AuditOptions as_float32 = seeded();
    as_float32.dtype = Arithmetic::float32;
    EXPECT_EQ(audit(BlackBox(short_dyadic_leak), as_float32).verdict, Verdict::holds);
    // Without the leak (a copy): short dyadic answers, judged as float64, and it holds.
    const AuditResult copy = audit(BlackBox(identity_layer), seeded());
    EXPECT_EQ(copy.verdict, Verdict::holds);
    EXPECT_EQ(copy.dtype, Arithmetic::float64);
    EXPECT_EQ(copy.dtype_evidence, DtypeEvidence::short_dyadic);
}

// A float32 layer that is exact on most cases (a copy) and rounds only at n = 5 (x - mean(x), summed in float):
// the one rounding seen decides float32 for the whole audit, and the layer holds.
TEST(AuditDtype, OneRoundedAnswerDecidesFloat32) {
    const BlackBox mostly_exact = [](const Mat<double>& x) { return x.rows() == 5 ? centered_float32(x) : x; };
    const AuditResult r = audit(mostly_exact, seeded());
    EXPECT_EQ(r.verdict, Verdict::holds) << detail_text(r);
    ASSERT_TRUE(std::count(r.axis_lengths.at("n").begin(), r.axis_lengths.at("n").end(), 5)) << "no case of n = 5";
    EXPECT_EQ(r.dtype, Arithmetic::float32);
    EXPECT_EQ(r.dtype_evidence, DtypeEvidence::float32_rounding);
    EXPECT_EQ(precision_text(r), "float32, inferred from the answers");
    const AuditResult centered = audit(BlackBox(centered_float32), seeded());
    EXPECT_EQ(centered.dtype, Arithmetic::float32) << "a genuine float32 layer is still inferred float32";
    EXPECT_EQ(centered.dtype_evidence, DtypeEvidence::float32_rounding);
}

// No answer, nothing inferred: a layer that errs at once, and a run stopped before its first answer.
TEST(AuditDtype, NothingIsInferredFromNoAnswer) {
    const BlackBox erring = [](const Mat<double>&) -> Mat<double> { throw std::runtime_error("model not loaded"); };
    const AuditResult r = audit(erring, seeded());
    ASSERT_EQ(r.verdict, Verdict::error);
    EXPECT_GT(r.evaluations, 0);
    EXPECT_FALSE(r.dtype_inferred);
    EXPECT_EQ(r.dtype_evidence, DtypeEvidence::no_answer);
    EXPECT_EQ(precision_text(r), "no answer came, so no precision was inferred");
    AuditOptions stopped = seeded();
    stopped.stop_requested = [] { return true; };
    const AuditResult s = audit(BlackBox(identity_layer), stopped);
    ASSERT_EQ(s.verdict, Verdict::interrupted);
    EXPECT_EQ(s.cases, 0);
    EXPECT_FALSE(s.dtype_inferred);
    EXPECT_EQ(s.dtype_evidence, DtypeEvidence::no_answer);
    AuditOptions given = seeded();
    given.dtype = Arithmetic::float32;
    const AuditResult g = audit(erring, given);
    EXPECT_FALSE(g.dtype_inferred);
    EXPECT_EQ(g.dtype_evidence, DtypeEvidence::given);
    EXPECT_EQ(precision_text(g), "float32");
}

TEST(AuditDtype, InferenceDoesNotDependOnTheNumberOfBlackBoxes) {
    // A float32 layer with a float64-sized leak from position 4: the inferred dtype and the case found must be
    // those of one box, whatever cases other workers finished past the failure.
    const BlackBox leaky = [](const Mat<double>& x) { return leak_from_position_4(centered_float32(x)); };
    const AuditResult one = audit(leaky, seeded());
    const AuditResult three = audit(std::vector<BlackBox>{leaky, leaky, leaky}, seeded());
    ASSERT_EQ(one.verdict, Verdict::violated);
    EXPECT_EQ(one.dtype, Arithmetic::float32);
    EXPECT_EQ(three.verdict, one.verdict);
    EXPECT_EQ(three.dtype, one.dtype);
    EXPECT_EQ(three.cases, one.cases);
    EXPECT_EQ(three.counterexample->inputs.at("x").values, one.counterexample->inputs.at("x").values);
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
        AuditOptions o = seeded(200);
        o.dtype = dtype;
        o.max_len = 32;
        o.long_len = 128;
        const AuditResult r = audit(BlackBox(RoundingAttention{bits}), o);
        EXPECT_EQ(r.verdict, Verdict::holds) << arithmetic_name(dtype) << ": " << detail_text(r);
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
        AuditOptions o = seeded(200);
        o.dtype = dtype;
        const AuditResult r = audit(BlackBox(RoundingAttention{bits, 0.25}), o);
        ASSERT_EQ(r.verdict, Verdict::violated) << arithmetic_name(dtype) << ": " << detail_text(r);
        ASSERT_TRUE(r.counterexample);
        EXPECT_EQ(r.counterexample->lengths.at("n"), 2) << finding(r);
        EXPECT_EQ(r.dtype, dtype);
        EXPECT_GT(margin(*r.counterexample), 1.0);
    }
}

TEST(AuditHalf, ALeakOfTenPercentPerPositionIsSeenInBothHalfPrecisions) {
    // Relative to the outputs, not added to zeros: a tolerance of the size of the outputs would accept it.
    for (const int bits : {11, 8}) {
        const Arithmetic dtype = bits == 11 ? Arithmetic::float16 : Arithmetic::bfloat16;
        AuditOptions o = seeded(200);
        o.dtype = dtype;
        const AuditResult r = audit(BlackBox(RoundingAttention{bits, 0.0, 0.1}), o);
        ASSERT_EQ(r.verdict, Verdict::violated) << arithmetic_name(dtype) << ": " << detail_text(r);
        ASSERT_TRUE(r.counterexample);
        EXPECT_LE(r.counterexample->lengths.at("n"), 3) << finding(r);
        EXPECT_GT(r.counterexample->outputs.at(0).max_abs_diff, 0.0);
    }
}

TEST(Audit, NondeterministicFindingIsDescribedAsTwoAnswersToOneInput) {
    AuditResult r = audit(BlackBox(Noisy{}), seeded());
    ASSERT_EQ(r.verdict, Verdict::nondeterministic);
    const std::string text = describe_finding(r);
    EXPECT_NE(text.find("first answer  (1, 4) ="), std::string::npos) << text;
    EXPECT_NE(text.find("second answer (1, 4) ="), std::string::npos) << text;
    EXPECT_EQ(text.find("permutation"), std::string::npos) << text;
    EXPECT_EQ(text.find("weight seed"), std::string::npos) << text;
}

TEST(Audit, LeakStartingAtPosition4IsShrunkToFivePositions) {
    const AuditResult r = audit(BlackBox(leak_from_position_4), seeded());
    ASSERT_EQ(r.verdict, Verdict::violated);
    const MatrixFinding ce = matrices(r);
    EXPECT_EQ(ce.n(), 5) << finding(r);
    EXPECT_EQ(ce.perm.moved(), 2) << "one transposition suffices";
    EXPECT_NE(ce.perm[4], 4) << "position 4 must receive another row";
}

TEST(Audit, IndexBasedTieBreakingIsShrunkToTwoPositions) {
    const AuditResult r = audit(BlackBox(argmax_first_index), seeded());
    ASSERT_EQ(r.verdict, Verdict::violated);
    const MatrixFinding ce = matrices(r);
    EXPECT_EQ(ce.n(), 2) << finding(r);
    EXPECT_EQ(ce.x(0, 0), ce.x(1, 0)) << "the witness is a tie";
}

TEST(Audit, NondeterministicLayerIsNeverCalledViolated) {
    for (bool also_leaks : {false, true}) {
        Noisy noisy;
        if (also_leaks) noisy.inner = leak_from_position_4;
        const AuditResult r = audit(BlackBox(noisy), seeded());
        EXPECT_EQ(r.verdict, Verdict::nondeterministic) << "also leaks: " << also_leaks;
        ASSERT_TRUE(r.counterexample);
        EXPECT_TRUE(r.counterexample->perms.at("n").is_identity()) << "the two answers are to one and the same input";
        EXPECT_FALSE(r.counterexample->outputs.at(0).holds);
        EXPECT_EQ(r.counterexample->lengths.at("n"), 1) << "shrunk to one position";
        EXPECT_NE(detail_text(r).find("answered twice"), std::string::npos) << detail_text(r);
    }
}

TEST(Audit, NondeterminismIsNamedEvenWhenNoPermutationCanDiffer) {
    // With one position every permutation is the identity: only the up-front repeats can see this.
    AuditOptions o = seeded(10);
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
    const AuditResult r = audit(counting, seeded());
    ASSERT_EQ(r.verdict, Verdict::violated);
    EXPECT_EQ(r.evaluations, calls);
    EXPECT_NE(detail_text(r).find("evaluated again"), std::string::npos);
}

TEST(Audit, PassingCasesCostTwoCallsEach) {
    AuditOptions o = seeded(50);
    const AuditResult r = audit(BlackBox(identity_layer), o);
    EXPECT_EQ(r.verdict, Verdict::holds);
    EXPECT_EQ(r.evaluations, 2 * 50 + o.repeat_checks + 1);  // and the first case asked again at the end
}

TEST(Audit, NonFiniteOutputIsItsOwnVerdictWithAShrunkInput) {
    const BlackBox nan_above_4 = [](const Mat<double>& x) {
        Mat<double> y = x;
        for (Eigen::Index i = 0; i < y.size(); ++i)
            if (y.data()[i] > 4) y.data()[i] = std::nan("");
        return y;
    };
    const AuditResult r = audit(nan_above_4, seeded());
    ASSERT_EQ(r.verdict, Verdict::non_finite);
    const MatrixFinding ce = matrices(r);
    EXPECT_EQ(ce.n(), 1);
    EXPECT_GT(ce.x.maxCoeff(), 4.0);
    EXPECT_EQ((ce.x.array() != 0).count(), 1) << "every other value shrunk to 0:\n" << finding(r);
    EXPECT_FALSE(ce.lhs.allFinite() && ce.rhs.allFinite());
}

TEST(Audit, AdapterErrorIsTheErrorVerdictWithTheLastRequest) {
    int calls = 0;
    const BlackBox dies = [&](const Mat<double>& x) -> Mat<double> {
        if (++calls == 5) throw AdapterError("adapter exited with status 3");
        return x;
    };
    const AuditResult r = audit(dies, seeded());
    EXPECT_EQ(r.verdict, Verdict::error);
    EXPECT_EQ(r.error, "adapter exited with status 3");
    EXPECT_FALSE(r.last_request.empty());
    EXPECT_EQ(exit_code(r.verdict), 2);
}

// A violation whose shrink candidates the layer raises on (an input with a single nonzero value, which shrinking
// reaches and the run's draws do not) stays a violation, shrunk as far as the candidates it answers allow: the
// raising candidates are rejected, never the end of the audit.
TEST(Audit, AViolationIsKeptWhenShrinkCandidatesRaise) {
    const BlackBox leaks = [](const Mat<double>& x) -> Mat<double> {
        if ((x.array() != 0).count() == 1) throw std::runtime_error("a single nonzero value");
        Mat<double> y = x;
        for (Eigen::Index i = 0; i < y.rows(); ++i) y(i, 1) += static_cast<double>(i) * x(i, 0);  // row i's position leaks
        return y;
    };
    const AuditResult r = audit(leaks, seeded());
    ASSERT_EQ(r.verdict, Verdict::violated) << r.error;
    EXPECT_TRUE(r.error.empty()) << r.error;
    const MatrixFinding ce = matrices(r);
    EXPECT_LE(ce.n(), 3) << finding(r);
    EXPECT_GT(r.counterexample->shrink_steps, 0) << finding(r);
    EXPECT_EQ((ce.x.array() != 0).count(), 2) << "shrunk to two nonzero values, one fewer raises:\n" << finding(r);
}

TEST(Audit, WrongRowCountIsAnError) {
    const BlackBox pooled_instead = [](const Mat<double>& x) { return Mat<double>(x.colwise().sum()); };
    AuditOptions o = seeded();
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
        const AuditResult one = audit(layer, seeded());
        const AuditResult three = audit(std::vector<BlackBox>{layer, layer, layer}, seeded());
        EXPECT_EQ(one.verdict, three.verdict);
        EXPECT_EQ(one.cases, three.cases);
        ASSERT_EQ(one.counterexample.has_value(), three.counterexample.has_value());
        if (one.counterexample) {
            EXPECT_EQ(one.counterexample->inputs.at("x").values, three.counterexample->inputs.at("x").values);
            EXPECT_EQ(one.counterexample->perms.at("n"), three.counterexample->perms.at("n"));
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
    const auto [all, all_cases] = inputs_of(seeded(40));
    std::set<std::vector<double>> joined;
    int shard_cases = 0;
    for (int k = 1; k <= 3; ++k) {
        AuditOptions o = seeded(40);
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
    // the property's draw and shrinker (properties/), so each planted bug ends at its smallest length, one transposition, either way.
    for (mutants::Kind kind : mutants::all()) {
        const Output output = mutants::output(kind);
        const Family subject = mutants::family(kind);
        CheckOptions co;
        co.seed = 3;
        const CheckResult checked =
            check(subject, row_of(subject, output == Output::pooled ? Property{"invariance"} : Property{"equivariance"}), co);
        AuditOptions ao = seeded();
        ao.output = output;
        const AuditResult audited = audit(test::sequence_layer<double>(subject, ao.d, 0), ao);  // the weights a check shrinks to
        ASSERT_TRUE(checked.counterexample) << mutants::name(kind);
        ASSERT_EQ(audited.verdict, Verdict::violated) << mutants::name(kind) << ": " << detail_text(audited);
        const Counterexample& c = *checked.counterexample;
        EXPECT_EQ(c.lengths.at("n"), mutants::minimal_length(kind)) << describe(c, checked.signature);
        EXPECT_EQ(audited.counterexample->lengths.at("n"), c.lengths.at("n")) << finding(audited);
        EXPECT_EQ(c.perms.at("n").moved(), 2) << describe(c, checked.signature);
        EXPECT_EQ(audited.counterexample->perms.at("n").moved(), 2) << finding(audited);
    }
}

// ---------------------------------------------------------------------------------------------------------
// The length schedule (cases/lengths.h)

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
        ASSERT_EQ(r.verdict, Verdict::violated) << "block " << block << ": " << detail_text(r);
        EXPECT_EQ(r.counterexample->lengths.at("n"), block + 1) << finding(r);
        EXPECT_EQ(r.counterexample->perms.at("n").moved(), 2) << finding(r);
        EXPECT_GT(r.axis_lengths.at("n").back(), block);
    }
}

TEST(AuditLengths, APoolThatAveragesOnlyItsFirstSevenPositionsIsViolatedAtEight) {
    AuditOptions o;
    o.output = Output::pooled;
    const AuditResult r = audit([](const Mat<double>& x) -> Mat<double> {
        return x.topRows(std::min<Eigen::Index>(7, x.rows())).colwise().mean();
    }, o);
    ASSERT_EQ(r.verdict, Verdict::violated) << detail_text(r);
    EXPECT_EQ(r.counterexample->lengths.at("n"), 8) << finding(r);
}

TEST(AuditLengths, AMaximumLengthGivenIsAHardCap) {
    AuditOptions o;
    o.max_len = 12;
    o.long_len = 0;
    const AuditResult r = audit([](const Mat<double>& x) { return block_mixing(x, 16); }, o);
    EXPECT_EQ(r.verdict, Verdict::holds) << detail_text(r);  // nothing longer than 12 is sent, so blocks of 16 hide
    ASSERT_FALSE(r.axis_lengths.at("n").empty());
    EXPECT_EQ(r.axis_lengths.at("n").back(), 12);
    EXPECT_EQ(r.axis_lengths.at("n").front(), 2);
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
// Batched black boxes (docs/protocol.md, "Batched requests")

// A batched side over an in-process layer, counting the calls of each side: capacity 0 (not batched) until the
// first call of `one`, then k; every batched call is checked to hold inputs of one shape, at most k of them.
struct CountedBatch {
    BlackBox layer;
    int k = 8;
    std::shared_ptr<int> ones = std::make_shared<int>(0), batches = std::make_shared<int>(0);
    std::shared_ptr<bool> mixed = std::make_shared<bool>(false);

    // The layer as the named box of its one-tensor signature, its batched side answering each input in turn.
    BatchedNamedBlackBox box(Output output = Output::sequence) const {
        BatchedNamedBlackBox b;
        const CountedBatch self = *this;
        b.one = one_tensor_box(
            [self](const Mat<double>& x) {
                ++*self.ones;
                return self.layer(x);
            },
            output);
        b.many.capacity = [self] { return *self.ones > 0 ? self.k : 0; };
        b.many.call = [self, output](const std::vector<Tensors>& inputs) {
            ++*self.batches;
            std::vector<Answer<Tensors>> out;
            for (const Tensors& in : inputs) {
                const Mat<double> x = tensor_matrix::as_matrix(in.at("x"));
                if (in.at("x").shape != inputs[0].at("x").shape || static_cast<int>(inputs.size()) > self.k)
                    *self.mixed = true;
                Answer<Tensors> a;
                try {
                    a.value = Tensors{{"y", one_tensor_answer(self.layer(x), output, static_cast<int>(x.rows()))}};
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

// An audit of the batched box, as audit(BlackBox) audits the one-tensor form: the signature of its shorthand.
AuditResult audit_batched(const CountedBatch& counted, const AuditOptions& o) {
    return audit(std::vector<BatchedNamedBlackBox>{counted.box(o.output)},
                 one_tensor_signature(o.d, o.output, o.min_len, o.max_len, o.long_len), o);
}

TEST(AuditBatched, SameVerdictCasesAndCounterexampleAsOneCaseACall) {
    int found = 0;
    const BlackBox leak_from_position_6 = [](const Mat<double>& x) {
        Mat<double> y = x;
        for (Eigen::Index i = 6; i < y.rows(); ++i) y.row(i) *= 2.0;
        return y;
    };
    for (const BlackBox& layer : {BlackBox(leak_from_position_4), leak_from_position_6, BlackBox(identity_layer),
                                  BlackBox(argmax_first_index), BlackBox(centered_float32)}) {
        const AuditResult one = audit(layer, seeded(300));
        const CountedBatch counted{layer, 8};
        const AuditResult batched = audit_batched(counted, seeded(300));
        EXPECT_EQ(one.verdict, batched.verdict);
        EXPECT_EQ(one.cases, batched.cases);
        EXPECT_EQ(one.dtype, batched.dtype);
        EXPECT_EQ(one.axis_lengths, batched.axis_lengths);
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
    const AuditResult r = audit_batched(counted, seeded(50));
    EXPECT_EQ(r.verdict, Verdict::holds);
    EXPECT_EQ(*counted.batches, 0);
    EXPECT_EQ(*counted.ones, r.evaluations);
}

TEST(AuditBatched, AnItemsErrorIsThatCasesErrorWithItsRequest) {
    const BlackBox picky = [](const Mat<double>& x) -> Mat<double> {
        if (x.rows() == 5) throw AdapterError("no n=5 here");
        return x;
    };
    const AuditResult one = audit(picky, seeded());
    const AuditResult batched = audit_batched(CountedBatch{picky, 8}, seeded());
    EXPECT_EQ(batched.verdict, Verdict::error);
    EXPECT_EQ(batched.error, "no n=5 here") << "an adapter's failure (AdapterError) is not shrunk";
    EXPECT_EQ(batched.last_request, "n=5");
    EXPECT_EQ(one.cases, batched.cases) << "the same failing case";
    EXPECT_EQ(one.last_request, batched.last_request);
}

TEST(AuditBatched, AStopRequestEndsTheRunBetweenTheCasesOfABlock) {
    int done = 0;
    AuditOptions o = seeded(200);
    o.on_progress = [&](const AuditProgress& p) { done = p.cases_done; };
    o.stop_requested = [&] { return done >= 20; };
    CountedBatch counted{identity_layer, 64};
    const AuditResult r = audit_batched(counted, o);
    EXPECT_EQ(r.verdict, Verdict::interrupted);
    EXPECT_EQ(r.cases, 20) << "stopped after the 20th case, in the middle of a block of 256";
    EXPECT_EQ(*counted.batches > 0, true);
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
    EXPECT_NE(detail_text(r).find("interrupted after"), std::string::npos) << detail_text(r);
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
    EXPECT_GT(r.counterexample->lengths.at("n"), 4);  // the leak needs a fifth position
    EXPECT_FALSE(r.counterexample->outputs.at(0).holds);
    EXPECT_NE(detail_text(r).find("interrupted while shrinking a violation"), std::string::npos) << detail_text(r);
}

TEST(AuditStop, VerdictNameRoundTrips) {
    EXPECT_STREQ(verdict_name(Verdict::interrupted), "interrupted");
    EXPECT_EQ(parse_verdict("interrupted"), Verdict::interrupted);
}

}  // namespace
}  // namespace permcheck
