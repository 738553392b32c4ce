// The tolerance of a comparison of two sides: zero for exact scalars, derived from the unit roundoff for float and
// double (proofs-notes/float-tolerance.md) and for the half precisions of black boxes
// (proofs-notes/half-precision-tolerance.md). The comparison itself is compare_tensors (cases/signature_case.h).
#pragma once

#include "cases/tolerance_model.h"
#include "cases/vocabulary.h"
#include "scalars/scalar.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace permcheck {

// The probabilistic bound's lambda for float16 and bfloat16 (proofs-notes/half-precision-tolerance.md).
inline constexpr double kHalfLambda = 2.0;

inline double gamma(double k, double u) {
    const double ku = k * u;
    return ku < 1.0 ? ku / (1.0 - ku) : std::numeric_limits<double>::infinity();
}

// gamma~(k, lambda) = exp(lambda sqrt(k) u + k u^2 / (1 - u)) - 1 (Higham & Mary 2019, Theorem 2.4).
inline double probabilistic_gamma(double k, double u, double lambda) {
    return std::expm1(lambda * std::sqrt(k) * u + k * u * u / (1.0 - u));
}

// The relative bound of a sum over k terms under the model: gamma(k), or gamma~(k, lambda) when lambda > 0.
inline double relative_bound(const ToleranceModel& m, double k) {
    return m.lambda > 0.0 ? probabilistic_gamma(k, m.unit_roundoff, m.lambda) : gamma(k, m.unit_roundoff);
}

// tol = safety * amplification * gamma(n + d) * M, M = the largest magnitude among input and both sides
// (gamma~(n + d, lambda) for the half precisions).
// A tolerance below the smallest normal double is 0: M is then 0 (every value compared is 0, so the two sides are
// equal exactly) or below 2^-1022, where no layer's rounding lives; a subnormal tolerance would only be printed as
// a meaningless 7e-314.
inline double float_tolerance(const ToleranceModel& m, Eigen::Index n, Eigen::Index d, double magnitude) {
    if (m.unit_roundoff == 0.0) return 0.0;
    const double tol = m.safety * m.amplification * relative_bound(m, static_cast<double>(n + d)) * magnitude;
    return tol < std::numeric_limits<double>::min() ? 0.0 : tol;
}

// The tolerance model of a black box computing in `dtype` (exact: zero tolerance).
inline ToleranceModel tolerance_model(Arithmetic dtype, double amplification) {
    ToleranceModel t;
    t.amplification = amplification;
    switch (dtype) {
        case Arithmetic::float32: t.unit_roundoff = ScalarTraits<float>::unit_roundoff; break;
        case Arithmetic::float64: t.unit_roundoff = ScalarTraits<double>::unit_roundoff; break;
        case Arithmetic::exact: break;
        case Arithmetic::float16: t.unit_roundoff = 0x1p-11; t.lambda = kHalfLambda; break;
        case Arithmetic::bfloat16: t.unit_roundoff = 0x1p-8; t.lambda = kHalfLambda; break;
        // TensorFloat-32: products of inputs rounded to 10 mantissa bits, sums in float32; judged as float16 is
        // (the same unit roundoff), with the probabilistic bound.
        case Arithmetic::tf32: t.unit_roundoff = 0x1p-11; t.lambda = kHalfLambda; break;
    }
    return t;
}

// The tolerance model of a reference layer computing in scalar S (check/check.cpp):
// tolerance_model of S's arithmetic, float32 for float, float64 for double, exact (zero tolerance) for the exact
// scalars. long double, which names no arithmetic (it only measures the rounding error of a double evaluation),
// gets its own unit roundoff and the worst-case gamma.
template <class S> ToleranceModel tolerance_model_of(double amplification) {
    if constexpr (std::is_same_v<S, float>) {
        return tolerance_model(Arithmetic::float32, amplification);
    } else if constexpr (std::is_same_v<S, double>) {
        return tolerance_model(Arithmetic::float64, amplification);
    } else if constexpr (ScalarTraits<S>::exact) {
        return tolerance_model(Arithmetic::exact, amplification);
    } else {
        static_assert(std::is_same_v<S, long double>, "a floating scalar of its own precision");
        return ToleranceModel{ScalarTraits<S>::unit_roundoff, amplification};
    }
}

}  // namespace permcheck
