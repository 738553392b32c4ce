// The outcome of comparing the two sides of a property, and the model of its tolerance, as data: what a
// counterexample and a report record. A header of its own, apart from check/compare.h (which compares, for every
// scalar, exact rationals included), so that the public API (<permcheck/audit.h>, through check/counterexample.h)
// reads no exact-scalar header.
#pragma once

#include <Eigen/Core>

#include <limits>

namespace permcheck {

struct Comparison {
    bool holds = true;
    double max_abs_diff = 0.0;  // largest |lhs - rhs| (for exact scalars: the exact difference, rounded once)
    Eigen::Index row = -1, col = -1;  // where it is; -1 when the shapes differ
    double tolerance = 0.0;     // 0 for exact comparisons
    bool shape_mismatch = false;
    // difference / tolerance: > 1 is a violation. Infinite for exact violations.
    double margin() const {
        if (max_abs_diff == 0.0) return 0.0;
        return tolerance > 0.0 ? max_abs_diff / tolerance : std::numeric_limits<double>::infinity();
    }
};

// What the tolerance of a floating comparison is made of. The two sides differ only in the order of the
// reductions over positions (sums of n terms, in softmax denominators, weighted sums and pooling), each
// contributing at most gamma(n) times the magnitude it sums; the layer can amplify that by `amplification`
// (LayerNorm divides by a row's standard deviation, at least sqrt(eps)). See proofs-notes/float-tolerance.md.
struct ToleranceModel {
    double unit_roundoff = 0.0;   // u: 2^-24 for float, 2^-53 for double, 2^-11 for float16, 2^-8 for bfloat16
    double amplification = 1.0;   // layer's worst-case growth of a perturbation, per catalog entry
    double safety = 4.0;          // both sides err, each in a few reductions: a small constant, stated once
    // 0: the worst-case gamma(k) (float32, float64). > 0: Higham & Mary's probabilistic gamma~(k, lambda), for the
    // half precisions, whose worst-case gamma(k) passes 1 at k = 1/u (proofs-notes/half-precision-tolerance.md).
    double lambda = 0.0;
};

}  // namespace permcheck
