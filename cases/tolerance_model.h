// The model of a floating comparison's tolerance, as data: what an audit's result and a report record. A header of
// its own, apart from cases/compare.h (which computes tolerances and knows every scalar, exact rationals included),
// so that the public API (<permcheck/audit.h>, through audit/blackbox.h) reads no exact-scalar header.
#pragma once

namespace permcheck {

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
