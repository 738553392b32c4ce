// A user's own layer checked with permcheck's GoogleTest macros, through the installed headers.
#include <permcheck/gtest.h>

#include <gtest/gtest-spi.h>

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

}  // namespace
