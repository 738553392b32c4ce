// The one point where arithmetics differ (docs/ARCHITECTURE.md, "One idea carries the house").
//
// Every layer is written once over a scalar type S and reaches non-rational functions (exp, sqrt, tanh),
// comparisons (max) and conversions only through ScalarTraits<S>. For exact types the non-rational functions
// return a deterministic exact value of the exact argument; see proofs-notes/exact-arithmetic.md.
#pragma once

#include "scalars/mat.h"

#include <Eigen/Core>
#include <boost/multiprecision/eigen.hpp>
#include <boost/multiprecision/gmp.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace permcheck {

// Exact rationals (GMP). Zero-tolerance checks run in this type.
using Rational = boost::multiprecision::mpq_rational;

// The same rationals, as a distinct type whose non-rational functions are fixed rational stand-ins
// (exp(x) -> 1 + x + x^2/2, ...). Layers computed in it are rational functions of inputs and weights, which
// is what the Schwartz-Zippel certificate needs. Equivariance does not depend on which elementwise function
// is used (proofs-notes/any-elementwise-function.md).
using RationalStandin =
    boost::multiprecision::number<boost::multiprecision::gmp_rational, boost::multiprecision::et_off>;

template <class S> struct ScalarTraits;

namespace detail {
inline void require_finite(double v, const char* what) {
    if (!std::isfinite(v))
        throw std::domain_error(std::string("permcheck: cannot represent a non-finite value (") + what +
                                ") in exact arithmetic");
}

template <class F> struct FloatTraits {
    static constexpr const char* name = std::is_same_v<F, float>    ? "float32"
                                        : std::is_same_v<F, double> ? "float64"
                                                                    : "float80";
    static constexpr bool exact = false;
    // Subtract the row maximum before exp: only for overflow, it changes nothing mathematically.
    static constexpr bool shift_softmax = true;
    static constexpr double unit_roundoff = std::numeric_limits<F>::epsilon() / 2;
    static F from_double(double v) { return static_cast<F>(v); }
    static double to_double(F v) { return static_cast<double>(v); }
    static F exp(F v) { return std::exp(v); }
    static F sqrt(F v) { return std::sqrt(v); }
    static F tanh(F v) { return std::tanh(v); }
    static F relu(F v) { return v > F(0) ? v : F(0); }
    static F max(F a, F b) { return a < b ? b : a; }
};
}  // namespace detail

template <> struct ScalarTraits<float> : detail::FloatTraits<float> {};
template <> struct ScalarTraits<double> : detail::FloatTraits<double> {};
// x87 extended precision: only used to measure the rounding error of a double evaluation.
template <> struct ScalarTraits<long double> : detail::FloatTraits<long double> {};

template <> struct ScalarTraits<Rational> {
    static constexpr const char* name = "rational";
    static constexpr bool exact = true;
    static constexpr bool shift_softmax = true;  // keeps the double argument of std::exp in range
    static constexpr double unit_roundoff = 0.0;
    static Rational from_double(double v) {
        detail::require_finite(v, "input");
        return Rational(v);  // mpq_set_d: the exact value of the double
    }
    static double to_double(const Rational& v) { return v.convert_to<double>(); }
    // The exact rational value of the double result: deterministic, and a function of the exact argument.
    static Rational exp(const Rational& v) { return of_result(std::exp(to_double(v)), "exp"); }
    static Rational sqrt(const Rational& v) { return of_result(std::sqrt(to_double(v)), "sqrt"); }
    static Rational tanh(const Rational& v) { return of_result(std::tanh(to_double(v)), "tanh"); }
    static Rational relu(const Rational& v) { return v > 0 ? v : Rational(0); }
    static Rational max(const Rational& a, const Rational& b) { return a < b ? b : a; }

private:
    // Names the function, so an overflowing exp or a negative sqrt says which one failed.
    static Rational of_result(double r, const char* function) {
        detail::require_finite(r, function);
        return Rational(r);
    }
};

template <> struct ScalarTraits<RationalStandin> {
    using S = RationalStandin;
    static constexpr const char* name = "rational-standin";
    static constexpr bool exact = true;
    static constexpr bool shift_softmax = false;  // keep the layer a rational function of its inputs
    static constexpr double unit_roundoff = 0.0;
    static S from_double(double v) {
        detail::require_finite(v, "input");
        return S(v);
    }
    static double to_double(const S& v) { return v.convert_to<double>(); }
    // Positive everywhere (1 + x + x^2/2 = ((x+1)^2 + 1)/2), so softmax denominators never vanish.
    static S exp(const S& v) { return S(1) + v + v * v / S(2); }
    // Used only on var + eps >= eps > 0, where (1 + v) / 2 > 0.
    static S sqrt(const S& v) { return (S(1) + v) / S(2); }
    static S tanh(const S& v) { return v / (S(1) + v * v); }
    static S relu(const S& v) { return v * v; }
    static S max(const S& a, const S& b) { return a < b ? b : a; }
};

// Short spellings used by the layers.
namespace sc {
template <class S> S from_double(double v) { return ScalarTraits<S>::from_double(v); }
template <class S> double to_double(const S& v) { return ScalarTraits<S>::to_double(v); }
template <class S> S exp(const S& v) { return ScalarTraits<S>::exp(v); }
template <class S> S sqrt(const S& v) { return ScalarTraits<S>::sqrt(v); }
template <class S> S tanh(const S& v) { return ScalarTraits<S>::tanh(v); }
template <class S> S relu(const S& v) { return ScalarTraits<S>::relu(v); }
template <class S> S max(const S& a, const S& b) { return ScalarTraits<S>::max(a, b); }
}  // namespace sc

// Entry by entry in storage order (both matrices are column-major): a check converts every case's input and
// both sides, and row-by-row strides cost several times more at n = 256.
template <class S> Mat<S> from_double(const Mat<double>& x) {
    Mat<S> out(x.rows(), x.cols());
    for (Eigen::Index k = 0; k < x.size(); ++k) out.data()[k] = sc::from_double<S>(x.data()[k]);
    return out;
}

template <class S> Mat<double> to_double(const Mat<S>& x) {
    Mat<double> out(x.rows(), x.cols());
    for (Eigen::Index k = 0; k < x.size(); ++k) out.data()[k] = sc::to_double<S>(x.data()[k]);
    return out;
}

}  // namespace permcheck
