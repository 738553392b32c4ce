// Pooling over positions in float and double that is bit-for-bit permutation-invariant.
//
// Floating-point addition is not associative, so sum and mean pooling in the usual left-to-right (or Eigen's
// vectorised) order give results whose last bits depend on the order of the rows. Here every value is added
// exactly (each finite float or double is an integer multiple of its smallest subnormal, so the sum is one big
// integer), and the exact sum (or mean) is rounded once, to nearest, ties to even. The result is the correctly
// rounded value of the exact sum, a function of the multiset of the inputs, whatever their order or magnitudes.
// Max pooling orders -0 below +0 and returns a NaN when any input is NaN, always the same quiet NaN.
// Specials follow IEEE 754: any NaN, or +inf together with -inf, gives NaN; an exact zero sum is +0 unless
// every addend is -0. See proofs-notes/exact-float-pooling.md.
//
// This is a layer (what a user runs in float), not a test device, hence layers/. The exact accumulator is an
// arbitrary-precision integer (GMP): simple and obviously exact; a fixed-width superaccumulator would be faster.
#pragma once

#include "layers/pooling.h"

#include <boost/multiprecision/gmp.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace permcheck {

namespace exact_detail {
using Integer = boost::multiprecision::mpz_int;

template <class F> struct Format {
    static_assert(std::is_same_v<F, float> || std::is_same_v<F, double>, "exact pooling is for float and double");
    static constexpr int precision = std::numeric_limits<F>::digits;  // 24 or 53 significant bits
    // Every finite value is an integer multiple of 2^min_exponent (the smallest subnormal).
    static constexpr int min_exponent = std::numeric_limits<F>::min_exponent - 1 - (precision - 1);  // -149, -1074
};

// The exact value of v as m * 2^min_exponent, m an integer.
template <class F> Integer scaled(F v) {
    int e = 0;
    const F fraction = std::frexp(v, &e);  // v = fraction * 2^e, 0.5 <= |fraction| < 1
    const auto m = static_cast<std::int64_t>(std::ldexp(fraction, Format<F>::precision));  // exact: < 2^precision
    Integer out = m;
    const int shift = e - Format<F>::precision - Format<F>::min_exponent;  // >= 0 for every finite v
    if (shift > 0) out <<= static_cast<unsigned>(shift);
    else if (shift < 0) out >>= static_cast<unsigned>(-shift);  // cannot happen: the trailing bits are zero
    return out;
}

// num / den * 2^min_exponent rounded to F, to nearest, ties to even. den > 0, num != 0.
template <class F> F round_quotient(const Integer& num, const Integer& den) {
    using Fmt = Format<F>;
    const bool negative = num < 0;
    const Integer a = negative ? Integer(-num) : num;
    // Scale so the integer quotient has at least precision + 2 bits; the remainder becomes a sticky bit.
    const long gap = static_cast<long>(boost::multiprecision::msb(a)) - static_cast<long>(boost::multiprecision::msb(den));
    const long up = std::max(0L, static_cast<long>(Fmt::precision) + 2 - gap);
    Integer q, r;
    boost::multiprecision::divide_qr(Integer(a << static_cast<unsigned>(up)), den, q, r);
    const bool sticky = r != 0;
    // value = q * 2^(min_exponent - up) (+ sticky); keep `precision` bits, or fewer where the result is subnormal.
    const long bits = static_cast<long>(boost::multiprecision::msb(q)) + 1;
    long drop = bits - Fmt::precision;
    const long lowest = static_cast<long>(Fmt::min_exponent) - up;  // the exponent of q's last bit
    if (lowest + drop < Fmt::min_exponent) drop = Fmt::min_exponent - lowest;
    Integer kept = q >> static_cast<unsigned>(drop);
    const Integer dropped = q - (kept << static_cast<unsigned>(drop));
    const Integer half = Integer(1) << static_cast<unsigned>(drop - 1);  // drop >= 2 by the scaling above
    if (dropped > half || (dropped == half && (sticky || (kept & 1) != 0))) kept += 1;
    const F magnitude = std::ldexp(static_cast<F>(kept.convert_to<std::int64_t>()),
                                   static_cast<int>(lowest + drop));  // exact, or overflow to infinity
    return negative ? -magnitude : magnitude;
}

// The specials of a column, if any decide the result: NaN, or an infinity.
template <class F> struct Specials {
    bool nan = false, plus_inf = false, minus_inf = false, all_negative_zero = true;
    void see(F v) {
        if (std::isnan(v)) nan = true;
        else if (std::isinf(v)) (v > 0 ? plus_inf : minus_inf) = true;
        if (!(v == 0 && std::signbit(v))) all_negative_zero = false;
    }
    bool decide(F& out) const {
        if (nan || (plus_inf && minus_inf)) out = std::numeric_limits<F>::quiet_NaN();
        else if (plus_inf) out = std::numeric_limits<F>::infinity();
        else if (minus_inf) out = -std::numeric_limits<F>::infinity();
        else return false;
        return true;
    }
};

template <class F> F exact_sum_column(const Mat<F>& x, Eigen::Index j, long divisor) {
    Specials<F> specials;
    Integer total = 0;
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const F v = x(i, j);
        specials.see(v);
        if (std::isfinite(v) && v != 0) total += scaled(v);
    }
    F out;
    if (specials.decide(out)) return out;
    if (total == 0) return specials.all_negative_zero ? F(-0.0) : F(0.0);
    return round_quotient<F>(total, Integer(divisor));
}

// -0 < +0; NaN anywhere gives the quiet NaN.
template <class F> F exact_max_column(const Mat<F>& x, Eigen::Index j) {
    F best = x(0, j);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const F v = x(i, j);
        if (std::isnan(v)) return std::numeric_limits<F>::quiet_NaN();
        if (v > best || (v == best && !std::signbit(v))) best = v;
    }
    return best;
}
}  // namespace exact_detail

// Pools the rows of x (n x d) into 1 x d; sum, mean and max are bit-for-bit independent of the row order.
template <class F> Mat<F> exact_pool(const Mat<F>& x, Pool how) {
    if (x.rows() == 0)
        throw std::invalid_argument(std::string("cannot ") + pool_name(how) + "-pool an empty sequence");
    if (how == Pool::first || how == Pool::last) return pool(x, how);
    Mat<F> out(1, x.cols());
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
        if (how == Pool::max) out(0, j) = exact_detail::exact_max_column(x, j);
        else out(0, j) = exact_detail::exact_sum_column(x, j, how == Pool::mean ? static_cast<long>(x.rows()) : 1L);
    }
    return out;
}

}  // namespace permcheck
