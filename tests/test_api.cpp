// The in-process C++ API (<permcheck/audit.h>) and the GoogleTest macros (<permcheck/gtest.h>): they pass on
// equivariant and invariant layers, and FAIL, with a readable shrunk counterexample, on layers that are not.
#include <permcheck/gtest.h>

#include <gtest/gtest-spi.h>

#include <cmath>
#include <functional>
#include <stdexcept>

namespace {

using Eigen::MatrixXd;
using Eigen::MatrixXf;

// Weights as small dyadic numbers: the layers below are deterministic, and the float and double versions
// hold the same weights.
template <class M> M weights(Eigen::Index rows, Eigen::Index cols, int salt) {
    M w(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) w(i, j) = static_cast<typename M::Scalar>(((i * 7 + j * 3 + salt) % 9) - 4) / 8;
    return w;
}

// Single-head self-attention without a position signal: equivariant.
template <class M> M attention(const M& x) {
    const Eigen::Index d = x.cols();
    const M q = x * weights<M>(d, d, 1), k = x * weights<M>(d, d, 2), v = x * weights<M>(d, d, 3);
    M s = q * k.transpose() / std::sqrt(static_cast<typename M::Scalar>(d));
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
        s.row(i).array() -= s.row(i).maxCoeff();
        s.row(i) = s.row(i).array().exp().matrix();
        s.row(i) /= s.row(i).sum();
    }
    return M(s * v);
}

const auto attention_f64 = [](const MatrixXd& x) { return attention(x); };
const auto attention_f32 = [](const MatrixXf& x) { return attention(x); };

// Adds each position's index to its first feature: a position signal, so not equivariant (n = 2 shows it).
const auto position_leak = [](const MatrixXd& x) {
    MatrixXd y = x;
    for (Eigen::Index i = 0; i < y.rows(); ++i) y(i, 0) += static_cast<double>(i);
    return y;
};

// Causal running sum: output i sums the positions up to i. Not equivariant.
const auto running_sum = [](const MatrixXd& x) {
    MatrixXd y = x;
    for (Eigen::Index i = 1; i < y.rows(); ++i) y.row(i) += y.row(i - 1);
    return y;
};

const auto sum_pool = [](const MatrixXd& x) -> Eigen::RowVectorXd { return x.colwise().sum(); };
const auto first_pool = [](const MatrixXd& x) -> Eigen::RowVectorXd { return x.row(0); };
// A pooled layer answering a column vector: one vector all the same.
const auto norm_pool = [](const MatrixXd& x) -> Eigen::VectorXd { return x.colwise().norm().transpose(); };

permcheck::AuditOptions options(int d, int cases = 100) {
    permcheck::AuditOptions o;
    o.d = d;
    o.cases = cases;
    return o;
}

TEST(AuditCallable, EquivariantAttentionHoldsWithTheEngineRecord) {
    const permcheck::AuditOptions o = options(3, 60);
    const permcheck::AuditResult r = permcheck::audit_callable(attention_f64, o);
    EXPECT_EQ(r.verdict, permcheck::Verdict::holds) << permcheck::explain(r, o);
    EXPECT_EQ(r.property, permcheck::Property{"equivariance"});
    EXPECT_EQ(r.dtype, permcheck::Arithmetic::float64);
    EXPECT_EQ(r.cases, 60);
    // Two calls a case, plus the repeated first cases and one ask of the first case again at the end (a table that
    // only grows): the floor the engine promises.
    EXPECT_EQ(r.evaluations, 2 * 60 + o.repeat_checks + 1);
    EXPECT_FALSE(r.counterexample.has_value());
}

TEST(AuditCallable, FloatCallableIsAuditedWithTheFloat32Tolerance) {
    permcheck::AuditOptions o = options(4, 60);
    o.dtype = permcheck::Arithmetic::float64;  // overridden: the layer computes in float
    o.max_len = 24;
    const permcheck::AuditResult r = permcheck::audit_callable(attention_f32, o);
    EXPECT_EQ(r.dtype, permcheck::Arithmetic::float32);
    EXPECT_EQ(r.verdict, permcheck::Verdict::holds) << permcheck::explain(r, o);
}

// A float64 C++ layer whose answers are permcheck's own short dyadic inputs (a max pooling selects them): any
// precision computes them exactly, so they are judged as float64 (the stricter tolerance) and explain() says why.
TEST(AuditCallable, ShortDyadicAnswersOfAFloat64LayerAreJudgedAsFloat64) {
    permcheck::AuditOptions o = options(3, 60);
    o.output = permcheck::Output::pooled;
    const auto max_pool = [](const MatrixXd& x) -> Eigen::RowVectorXd { return x.colwise().maxCoeff(); };
    const permcheck::AuditResult r = permcheck::audit_callable(max_pool, o);
    EXPECT_EQ(r.verdict, permcheck::Verdict::holds) << permcheck::explain(r, o);
    EXPECT_EQ(r.dtype, permcheck::Arithmetic::float64);
    EXPECT_TRUE(r.dtype_inferred);
    EXPECT_EQ(r.dtype_evidence, permcheck::DtypeEvidence::short_dyadic);
    EXPECT_NE(permcheck::explain(r, o).find("layer calls, float64, as the answers were short dyadic numbers)"),
              std::string::npos) << permcheck::explain(r, o);
}

TEST(AuditCallable, PositionLeakIsViolatedAndShrunkToTwoPositions) {
    const permcheck::AuditOptions o = options(2);
    const permcheck::AuditResult r = permcheck::audit_callable(position_leak, o);
    ASSERT_EQ(r.verdict, permcheck::Verdict::violated);
    ASSERT_TRUE(r.counterexample.has_value());
    EXPECT_EQ(r.counterexample->lengths.at("n"), 2);
    EXPECT_EQ(r.counterexample->perms.at("n").one_line(), (std::vector<int>{1, 0}));
    EXPECT_DOUBLE_EQ(r.counterexample->outputs.at(0).max_abs_diff, 1.0);
}

TEST(AuditCallable, ColumnVectorAnswerOfAPooledLayerIsOneVector) {
    permcheck::AuditOptions o = options(3, 40);
    o.output = permcheck::Output::pooled;
    const permcheck::AuditResult r = permcheck::audit_callable(norm_pool, o);
    EXPECT_EQ(r.verdict, permcheck::Verdict::holds) << permcheck::explain(r, o);
    EXPECT_EQ(r.property, permcheck::Property{"invariance"});
}

TEST(AuditCallable, ALayerThatThrowsIsAnErrorNamingTheCause) {
    const auto broken = [](const MatrixXd& x) -> MatrixXd {
        if (x.rows() > 3) throw std::runtime_error("my layer supports at most 3 positions");
        return x;
    };
    const permcheck::AuditResult r = permcheck::audit_callable(broken, options(2));
    EXPECT_EQ(r.verdict, permcheck::Verdict::error);
    EXPECT_NE(r.error.find("at most 3 positions"), std::string::npos) << r.error;
    EXPECT_EQ(r.last_request, "n=4");
}

TEST(AuditCallable, TooFewRowsForASequenceLayerIsAnError) {
    const permcheck::AuditResult r = permcheck::audit_callable(sum_pool, options(2));  // pooled, audited as a sequence
    EXPECT_EQ(r.verdict, permcheck::Verdict::error);
    EXPECT_NE(r.error.find("one row per position"), std::string::npos) << r.error;
}

TEST(AuditCallable, BadOptionsAreRefusedWithWhatIsExpected) {
    permcheck::AuditOptions o = options(0);
    try {
        permcheck::audit_callable(attention_f64, o);
        FAIL() << "d = 0 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("at least 1"), std::string::npos) << e.what();
    }
}

TEST(AuditCallable, ALayerWithHiddenStateIsNondeterministic) {
    // Each call adds a counter: the same input never gets the same answer twice.
    int calls = 0;
    const auto drifting = [&calls](const MatrixXd& x) -> MatrixXd { return (x.array() + 0.5 * ++calls).matrix(); };
    const permcheck::AuditResult r = permcheck::audit_callable(std::ref(drifting), options(2));
    EXPECT_EQ(r.verdict, permcheck::Verdict::nondeterministic) << detail_text(r);
    EXPECT_GT(calls, 0);
}

// The macros pass on symmetric layers...
TEST(PermcheckMacros, EquivariantLayersPass) {
    EXPECT_EQUIVARIANT(attention_f64, options(3, 50));
    ASSERT_EQUIVARIANT(attention_f32, options(3, 50));
}

TEST(PermcheckMacros, InvariantPoolsPass) {
    EXPECT_INVARIANT(sum_pool, options(3, 50));
    ASSERT_INVARIANT(norm_pool);  // default options
}

// ... and fail on the others, with the verdict, the shrunk counterexample and how to replay it.
TEST(PermcheckMacros, ExpectEquivariantFailsOnAPositionLeakWithTheShrunkCounterexample) {
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(position_leak, options(2)),
                            "expected position_leak to be permutation equivariant, but the audit says: position_leak: "
                            "equivariance violated");
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(position_leak, options(2)), "lengths: n = 2\n");
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(position_leak, options(2)), "input x (2, 2) =");
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(position_leak, options(2)), "permutations n (0 1)");
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(position_leak, options(2)),
                            "replay: permcheck::AuditOptions{.output = permcheck::Output::sequence");
}

// A float callable's hint names float32, the dtype it was audited in, and runs as written: the options it
// spells find the same case again.
TEST(PermcheckMacros, ReplayHintOfAFloatCallableNamesFloat32AndFindsTheSameCase) {
    const auto leak_f32 = [](const MatrixXf& x) {
        MatrixXf y = x;
        for (Eigen::Index i = 0; i < y.rows(); ++i) y(i, 0) += static_cast<float>(i);
        return y;
    };
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(leak_f32, options(2)),
                            "replay: permcheck::AuditOptions{.output = permcheck::Output::sequence, "
                            ".dtype = permcheck::Arithmetic::float32, .d = 2, .min_len = 1, .max_len = 8, "
                            ".cases = 100, .seed = 1} finds the same case again");
    const permcheck::AuditResult first = permcheck::audit_callable(leak_f32, options(2));
    // The hint's fields, set one by one (a designated initializer that skips a field warns under -Wextra).
    permcheck::AuditOptions hint;
    hint.output = permcheck::Output::sequence;
    hint.dtype = permcheck::Arithmetic::float32;
    hint.d = 2;
    hint.min_len = 1;
    hint.max_len = 8;
    hint.cases = 100;
    hint.seed = 1;
    const permcheck::AuditResult again = permcheck::audit_callable(leak_f32, hint);
    EXPECT_EQ(permcheck::replay_hint(again, hint), permcheck::replay_hint(first, options(2))) << "the hint spells itself";
    EXPECT_NE(permcheck::explain(first, options(2)).find(permcheck::replay_hint(first, options(2))), std::string::npos);
    ASSERT_EQ(again.verdict, permcheck::Verdict::violated);
    EXPECT_EQ(again.dtype, permcheck::Arithmetic::float32);
    EXPECT_EQ(again.cases, first.cases);
    EXPECT_EQ(again.counterexample->inputs.at("x").values, first.counterexample->inputs.at("x").values);
}

TEST(PermcheckMacros, ExpectEquivariantFailsOnACausalRunningSum) {
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(running_sum, options(2)), "equivariance violated");
}

TEST(PermcheckMacros, AssertEquivariantIsFatal) {
    EXPECT_FATAL_FAILURE(ASSERT_EQUIVARIANT(position_leak, options(2)), "equivariance violated");
}

TEST(PermcheckMacros, ExpectInvariantFailsOnFirstPositionPooling) {
    EXPECT_NONFATAL_FAILURE(EXPECT_INVARIANT(first_pool, options(2)), "first_pool: invariance violated");
    EXPECT_FATAL_FAILURE(ASSERT_INVARIANT(first_pool, options(2)), "L(P x) (2) =");
}

TEST(PermcheckMacros, SequenceLayerAuditedAsPooledFailsWithAnError) {
    // A sequence layer audited as pooled answers n rows: the macro reports the error, not a pass.
    EXPECT_NONFATAL_FAILURE(EXPECT_INVARIANT(attention_f64, options(2)), "a pooled layer answers one vector");
}

// ------------------------------------------------------------------------------ layers over named tensors

// A 2-D named tensor as a matrix, and a matrix (or one row, as a vector) as a named tensor.
MatrixXd as_matrix(const permcheck::Tensor& t) {
    MatrixXd m(t.shape.at(0), t.shape.at(1));
    for (int i = 0; i < t.shape[0]; ++i)
        for (int j = 0; j < t.shape[1]; ++j) m(i, j) = t.values[static_cast<std::size_t>(i * t.shape[1] + j)];
    return m;
}
permcheck::Tensor as_tensor(const MatrixXd& m, bool vector = false) {
    permcheck::Tensor t;
    t.shape = vector ? std::vector<int>{static_cast<int>(m.cols())}
                     : std::vector<int>{static_cast<int>(m.rows()), static_cast<int>(m.cols())};
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) t.values.push_back(m(i, j));
    return t;
}

permcheck::Signature cross_signature() {
    return permcheck::Signature{{permcheck::parse_axis("n=1..8"), permcheck::parse_axis("m=1..8")},
                                {permcheck::parse_input("q:n,4"), permcheck::parse_input("mem:m,4")},
                                {permcheck::parse_output("y:n,4")}};
}

// Cross-attention of q over the memory: equivariant in n, invariant to the order of m.
MatrixXd cross_attend(const MatrixXd& q, const MatrixXd& mem) {
    const Eigen::Index d = q.cols();
    MatrixXd s = (q * weights<MatrixXd>(d, d, 1)) * (mem * weights<MatrixXd>(d, d, 2)).transpose() / 2.0;
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
        s.row(i).array() -= s.row(i).maxCoeff();
        s.row(i) = s.row(i).array().exp().matrix();
        s.row(i) /= s.row(i).sum();
    }
    return s * (mem * weights<MatrixXd>(d, d, 3));
}
const auto cross_attention_named = [](const permcheck::Tensors& in) {
    return permcheck::Tensors{{"y", as_tensor(cross_attend(as_matrix(in.at("q")), as_matrix(in.at("mem"))))}};
};
// The memory's positions leak in: memory item j gets j added to its first feature.
const auto memory_leak_named = [](const permcheck::Tensors& in) {
    MatrixXd mem = as_matrix(in.at("mem"));
    for (Eigen::Index j = 0; j < mem.rows(); ++j) mem(j, 0) += static_cast<double>(j);
    return permcheck::Tensors{{"y", as_tensor(cross_attend(as_matrix(in.at("q")), mem))}};
};

permcheck::Signature pooled_signature() {
    return permcheck::Signature{{permcheck::parse_axis("n=1..8")}, {permcheck::parse_input("x:n,3")},
                                {permcheck::parse_output("g:3")}};
}
const auto sum_pool_named = [](const permcheck::Tensors& in) {
    return permcheck::Tensors{{"g", as_tensor(as_matrix(in.at("x")).colwise().sum(), true)}};
};

TEST(AuditSignature, CrossAttentionOverNamedTensorsHoldsAtTheFloorOfTwoCallsACase) {
    permcheck::AuditOptions o;
    o.name = "cross-attention";
    const permcheck::AuditResult r = permcheck::audit_signature(cross_attention_named, cross_signature(), o);
    EXPECT_EQ(r.verdict, permcheck::Verdict::holds) << permcheck::explain(r, o);
    EXPECT_EQ(r.evaluations, 2 * 100 + o.repeat_checks + 1);  // and the first case asked again at the end
    EXPECT_EQ(r.axis_lengths.at("m").back(), 8);
    EXPECT_EQ(permcheck::audit_callable(cross_attention_named, cross_signature(), o).verdict, permcheck::Verdict::holds);
}

TEST(AuditSignature, AMemoryPositionLeakIsViolatedWithTheMemoryAxisAtFault) {
    permcheck::AuditOptions o;
    o.name = "leaky cross-attention";
    const permcheck::AuditResult r = permcheck::audit_signature(memory_leak_named, cross_signature(), o);
    ASSERT_EQ(r.verdict, permcheck::Verdict::violated);
    ASSERT_TRUE(r.counterexample.has_value());
    EXPECT_EQ(r.counterexample->axis_at_fault, "m");
    EXPECT_EQ(r.counterexample->lengths.at("m"), 2);
    const std::string text = permcheck::explain(r, o);
    EXPECT_NE(text.find("the axis at fault: m"), std::string::npos) << text;
    EXPECT_NE(text.find("m (0 1)"), std::string::npos) << text;
    // The replay hint is C++ with the signature and the options: what compiles when pasted (tests/consumer/run.sh
    // compiles one).
    EXPECT_NE(text.find("{{permcheck::parse_axis(\"n=1..8\"), permcheck::parse_axis(\"m=1..8\")}, "
                        "{permcheck::parse_input(\"q:n,4\"), permcheck::parse_input(\"mem:m,4\")}, "
                        "{permcheck::parse_output(\"y:n,4\")}}"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("permcheck::audit_signature(layer, signature, options);"), std::string::npos) << text;
    EXPECT_NE(text.find(permcheck::replay_hint(r, o)), std::string::npos) << "explain(r, opts) holds the replay hint";
    EXPECT_NE(permcheck::describe_finding(r).find("the axis at fault: m"), std::string::npos);
}

TEST(PermcheckMacros, ASignatureLayerPassesAndItsBrokenCounterpartFailsNamingTheAxis) {
    EXPECT_EQUIVARIANT(cross_attention_named, cross_signature());
    ASSERT_INVARIANT(sum_pool_named, pooled_signature(), permcheck::AuditOptions{});
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(memory_leak_named, cross_signature()),
                            "expected memory_leak_named to respect its signature --axis n=1..8");
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(memory_leak_named, cross_signature()), "the axis at fault: m");
    EXPECT_FATAL_FAILURE(ASSERT_EQUIVARIANT(memory_leak_named, cross_signature()), "violated");
    // An output with an axis is not invariant by declaration: EXPECT_INVARIANT says so rather than pass.
    EXPECT_NONFATAL_FAILURE(EXPECT_INVARIANT(cross_attention_named, cross_signature()), "has the axis n");
}

}  // namespace
