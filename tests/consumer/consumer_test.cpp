// A user's own layer checked with permcheck's GoogleTest macros, through the installed headers.
#include <permcheck/gtest.h>

#include "masked_kernel.h"

#include <gtest/gtest-spi.h>

#include <cstdlib>
#include <fstream>

namespace {

// Each position mixed with the mean of all positions (a DeepSets-style layer): equivariant.
Eigen::MatrixXd mix_with_mean(const Eigen::MatrixXd& x) {
    const Eigen::RowVectorXd mean = x.colwise().mean();
    return (x.rowwise() + mean).array().tanh().matrix();
}

// The same layer with a bug: the first position is treated differently.
Eigen::MatrixXd first_is_special(const Eigen::MatrixXd& x) {
    Eigen::MatrixXd y = mix_with_mean(x);
    y.row(0) *= 2.0;
    return y;
}

permcheck::AuditOptions options() {
    permcheck::AuditOptions o;
    o.d = 3;
    o.cases = 50;
    return o;
}

TEST(ConsumerLayer, MixWithMeanIsEquivariant) { EXPECT_EQUIVARIANT(mix_with_mean, options()); }

TEST(ConsumerLayer, FirstIsSpecialIsCaught) {
    EXPECT_NONFATAL_FAILURE(EXPECT_EQUIVARIANT(first_is_special, options()), "equivariance violated");
}

// A kernel over several inputs, gated by the signature forms of the macros: equivariance, padding, agreement with a
// reference implementation; the padding-normalisation bug is equivariant, and only the padding and agreement
// audits catch it.
permcheck::AuditOptions cases(int n) {
    permcheck::AuditOptions o;
    o.cases = n;
    return o;
}

TEST(ConsumerKernel, MaskedKernelKeepsItsSignature) {
    const permcheck::Signature s = consumer::kernel_signature();
    EXPECT_EQUIVARIANT(consumer::masked_kernel, s, cases(50));
    EXPECT_HOLDS(consumer::masked_kernel, permcheck::Property{"padding"}, s, cases(50));
    EXPECT_AGREE(consumer::masked_kernel, consumer::reference_attention, s, cases(50));
}

TEST(ConsumerKernel, PadsInTheDenominatorAreCaughtByPaddingAndAgreementNotByEquivariance) {
    const permcheck::Signature s = consumer::kernel_signature();
    EXPECT_EQUIVARIANT(consumer::pads_in_the_denominator, s, cases(50));
    EXPECT_NONFATAL_FAILURE(EXPECT_HOLDS(consumer::pads_in_the_denominator, permcheck::Property{"padding"}, s, cases(50)),
                            "to be padding-invariant");
    EXPECT_NONFATAL_FAILURE(EXPECT_AGREE(consumer::pads_in_the_denominator, consumer::reference_attention, s, cases(50)),
                            "to agree with consumer::reference_attention");
}

// The C++ replay hint explain() prints for the padding audit, written where PERMCHECK_HINT_FILE says (run.sh
// compiles it against the installed package and checks it finds the same case), with the case it must find.
TEST(ConsumerKernel, ThePaddingAuditsReplayHintIsWritten) {
    const permcheck::Signature s = consumer::kernel_signature();
    permcheck::AuditOptions o = cases(50);
    o.property = permcheck::Property{"padding"};
    const permcheck::AuditResult r = permcheck::audit_signature(consumer::pads_in_the_denominator, s, o);
    ASSERT_EQ(r.verdict, permcheck::Verdict::violated);
    const std::string text = permcheck::explain(r, o);
    EXPECT_NE(text.find(permcheck::replay_hint(r, o)), std::string::npos) << text;
    const std::size_t at = text.find("replay (C++):\n");
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_NE(text.find(".property = permcheck::Property{\"padding\"}"), std::string::npos) << text;
    if (const char* file = std::getenv("PERMCHECK_HINT_FILE")) {
        std::ofstream(file) << text.substr(at + 14) << "// expect: " << r.counterexample->case_index << " "
                            << r.counterexample->lengths.at("n") << "\n";
    }
}

}  // namespace

