// Two ways to compare the sides of a property: exactly (zero tolerance) for exact scalars, and with a
// tolerance derived from the unit roundoff for float and double (proofs-notes/float-tolerance.md) and for the
// half precisions of black boxes (proofs-notes/half-precision-tolerance.md).
#pragma once

#include "check/comparison.h"
#include "check/vocabulary.h"
#include "scalars/scalar.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace permcheck {

// ToleranceModel, what the tolerance of a floating comparison is made of: check/comparison.h.

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
inline double float_tolerance(const ToleranceModel& m, Eigen::Index n, Eigen::Index d, double magnitude) {
    if (m.unit_roundoff == 0.0) return 0.0;
    const double floor = std::numeric_limits<double>::min();
    return m.safety * m.amplification * relative_bound(m, static_cast<double>(n + d)) * std::max(magnitude, floor);
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
    }
    return t;
}

// The tolerance model of a reference layer computing in scalar S (check/engine.cpp, check/signature_check.cpp):
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
        ToleranceModel t;
        t.unit_roundoff = ScalarTraits<S>::unit_roundoff;
        t.amplification = amplification;
        return t;
    }
}

// The largest |entry|, NaN ignored (0 for an empty or all-NaN matrix). Floating matrices are reduced by Eigen's
// vectorized maximum, which a check calls three times a case (property.h).
template <class S> double max_abs(const Mat<S>& a) {
    if constexpr (std::is_floating_point_v<S>) {
        if (a.size() == 0) return 0.0;
        const double m = static_cast<double>(a.cwiseAbs().template maxCoeff<Eigen::PropagateNumbers>());
        return std::isnan(m) ? 0.0 : m;
    } else {
        double m = 0.0;
        for (Eigen::Index k = 0; k < a.size(); ++k) m = std::max(m, std::abs(sc::to_double<S>(a.data()[k])));
        return m;
    }
}

// The largest |entry| of a floating matrix with NaN and infinity propagated (0 for an empty one): finite exactly
// when every entry is, so that one vectorized reduction gives both the magnitude and the finiteness of a side.
template <class S> double max_abs_or_non_finite(const Mat<S>& a) {
    static_assert(std::is_floating_point_v<S>);
    if (a.size() == 0) return 0.0;
    return static_cast<double>(a.cwiseAbs().template maxCoeff<Eigen::PropagateNaN>());
}

namespace detail {
// compare() of two finite floating matrices of one shape, vectorized: the largest difference (computed in double,
// as the general loop does), then its first place in reading order.
template <class S> Comparison compare_finite(const Mat<S>& lhs, const Mat<S>& rhs, double tolerance) {
    Comparison c;
    c.tolerance = tolerance;
    if (lhs.size() == 0) return c;
    c.max_abs_diff = (lhs.template cast<double>() - rhs.template cast<double>()).cwiseAbs().maxCoeff();
    c.holds = c.max_abs_diff <= tolerance;
    if (c.max_abs_diff == 0.0) return c;
    const auto diff = [&](Eigen::Index i, Eigen::Index j) {
        return std::abs(static_cast<double>(lhs(i, j)) - static_cast<double>(rhs(i, j)));
    };
    for (Eigen::Index i = 0; i < lhs.rows() && c.row < 0; ++i)
        for (Eigen::Index j = 0; j < lhs.cols(); ++j)
            if (diff(i, j) == c.max_abs_diff) {
                c.row = i;
                c.col = j;
                break;
            }
    return c;
}

// compare() entry by entry, for every scalar and every value (non-finite ones included), of one shape.
template <class S> Comparison compare_each(const Mat<S>& lhs, const Mat<S>& rhs, double tolerance) {
    Comparison c;
    c.tolerance = tolerance;
    // Column by column (storage order); of equal differences, the first in reading order (row by row) is
    // the one reported.
    for (Eigen::Index j = 0; j < lhs.cols(); ++j)
        for (Eigen::Index i = 0; i < lhs.rows(); ++i) {
            double diff;
            bool equal;
            if constexpr (ScalarTraits<S>::exact) {
                const S delta = lhs(i, j) - rhs(i, j);
                equal = delta == 0;
                diff = std::abs(sc::to_double<S>(delta));
                if (!equal && diff == 0.0) diff = std::numeric_limits<double>::denorm_min();  // below double range
            } else {
                const double a = sc::to_double<S>(lhs(i, j)), b = sc::to_double<S>(rhs(i, j));
                if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
                    equal = (std::isnan(a) && std::isnan(b)) || a == b;
                    diff = equal ? 0.0 : std::numeric_limits<double>::infinity();
                } else {
                    diff = std::abs(a - b);
                    equal = diff <= tolerance;
                }
            }
            if (!equal) c.holds = false;
            if (diff > c.max_abs_diff || (diff == c.max_abs_diff && diff > 0.0 && i < c.row)) {
                c.max_abs_diff = diff;
                c.row = i;
                c.col = j;
            }
        }
    return c;
}
}  // namespace detail

// Compares lhs and rhs; `magnitude` is the scale the tolerance is relative to (ignored for exact scalars).
// Non-finite entries never compare equal to anything but the same non-finite value.
template <class S>
Comparison compare(const Mat<S>& lhs, const Mat<S>& rhs, double tolerance) {
    Comparison c;
    c.tolerance = tolerance;
    if (lhs.rows() != rhs.rows() || lhs.cols() != rhs.cols()) {
        c.holds = false;
        c.shape_mismatch = true;
        c.max_abs_diff = std::numeric_limits<double>::infinity();
        return c;
    }
    if constexpr (std::is_floating_point_v<S>)
        if (lhs.allFinite() && rhs.allFinite()) return detail::compare_finite(lhs, rhs, tolerance);
    return detail::compare_each(lhs, rhs, tolerance);
}

}  // namespace permcheck
