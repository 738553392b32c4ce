// Generators whose shrinking is part of the value (Shrinkable<T>), so that a failure is reported at its
// smallest: fewest positions, fewest moved positions, simplest values.
//
// Values are drawn directly from 64-bit words (a SplitMix64 stream seeded by RapidCheck's Random), not through
// RapidCheck's combinators: a check at n = 64, d = 64 draws 4096 values a case, and combinators cost about
// 1,700 instructions a value, as much as the layer's forward pass (bench/bench_check.cpp). Each integer is drawn
// as rc::gen::inRange draws it at the same size (the range scaled by rc::gen::detail::scaleInteger, then
// uniform), so a small size still means small values. Shrinking is explicit: the shrinks below.
#pragma once

#include "scalars/weights.h"
#include "cases/permutation.h"

#include <rapidcheck.h>
#include <rapidcheck/gen/detail/ScaleInteger.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck::gen {

// The draws of one case at one RapidCheck size.
class Sampler {
public:
    Sampler(const rc::Random& random, int size) : rng_(rc::Random(random).next()), size_(size) {
        for (int e = 0; e <= kMaxExponent; ++e) {
            generic_span_[static_cast<std::size_t>(e)] = scaled(16u << e);
            power_of_half_[static_cast<std::size_t>(e)] = std::ldexp(1.0, -e);
        }
        simple_span_ = scaled(64);
        exponent_span_ = scaled(kMaxExponent);
    }

    // The integers rc::gen::inRange(min, max) draws at this size: [min, min + count). Set up once for many draws.
    struct Range {
        int min;
        std::uint64_t count;
    };
    Range range(int min, int max) const { return {min, scaled(span_of(min, max)) + 1}; }
    int draw(const Range& r) { return r.min + static_cast<int>(below(r.count)); }
    // An integer in [min, max), as rc::gen::inRange(min, max) draws it at this size.
    int in_range(int min, int max) { return draw(range(min, max)); }
    // An integer in [min, max), uniform whatever the size (rc::gen::inRange at size 100).
    int uniform(int min, int max) { return min + static_cast<int>(below(span_of(min, max) + 1)); }

    // Values in [-8, 8]. Half are simple (multiples of 1/4, often equal: ties are where index-dependent code
    // hides), half generic (k / 2^e with e up to 20). One word a value, cut in three: its top bit says simple or
    // generic, the next 32 bits draw the multiple of 1/4 (simple) or e (generic), the low 32 bits k; a field of 32
    // bits read as the high half of a word draws a range of up to 2^24 + 1 values within 2^-8 of uniform. Both
    // candidates are computed and one is kept, without a branch that a coin flip would mispredict half the time.
    // (A value used to take two or three words, one per field: at n = 64, d = 64 in float32 that was a quarter of
    // a check's cost above its two forward passes, bench/bench_check.cpp.)
    double value() {
        const std::uint64_t word = rng_.next();
        const bool simple = (word >> 63) == 0;
        const std::uint64_t middle = (word << 1) & 0xffffffff00000000ULL;
        const double quarter = static_cast<double>(signed_toward_zero(mul_high(middle, simple_span_ + 1))) / 4.0;
        const double generic = generic_of(word);
        return simple ? quarter : generic;
    }
    // A generic value alone (k / 2^e): where ties would hide a bug (a bias constant along a row cancels in a softmax).
    double generic_value() { return generic_of(rng_.next()); }

    // n x d inputs of three kinds, so that ties (where index-dependent code hides) are common:
    //  - independent rows of independent values;
    //  - rows drawn from a small palette of rows, so that whole rows repeat;
    //  - entries drawn from a small palette of values, so that single features tie across positions.
    Mat<double> sequence(int n, int d) {
        Mat<double> x(n, d);
        sequence_into(n, d, [&x](int i, int j) -> double& { return x(i, j); });
        return x;
    }
    // The same draws into out[i * d + j] (row-major), as a signature's real input is laid out; `generic`:
    // independent generic values instead (no palette, no simple values), for a case that must not be blind to
    // what ties cancel.
    void sequence_rows(double* out, int n, int d, bool generic = false) {
        const auto at = [out, d](int i, int j) -> double& {
            return out[static_cast<std::size_t>(i) * static_cast<std::size_t>(d) + static_cast<std::size_t>(j)];
        };
        if (!generic) return sequence_into(n, d, at);
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < d; ++j) at(i, j) = generic_value();
    }

    // Uniform over S_n: a Fisher-Yates shuffle whose i-th step swaps i with i - k_i, k_i uniform in [0, i].
    Permutation permutation(int n) {
        std::vector<int> p(static_cast<std::size_t>(n < 0 ? 0 : n));
        for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
        for (int i = 1; i < n; ++i)
            std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(i - uniform(0, i + 1))]);
        return Permutation(std::move(p));
    }

private:
    static constexpr int kMaxExponent = 20;

    // sequence(), entry (i, j) written through at(i, j): the values drawn in the order of i, then j.
    template <class At> void sequence_into(int n, int d, At at) {
        switch (below(3)) {
            case 0:
                for (int i = 0; i < n; ++i)
                    for (int j = 0; j < d; ++j) at(i, j) = value();
                break;
            case 1: {
                Mat<double> palette(in_range(1, n + 1), d);
                for (Eigen::Index k = 0; k < palette.rows(); ++k)
                    for (int j = 0; j < d; ++j) palette(k, j) = value();
                const Range pick = range(0, static_cast<int>(palette.rows()));
                for (int i = 0; i < n; ++i) {
                    const Eigen::Index k = draw(pick);
                    for (int j = 0; j < d; ++j) at(i, j) = palette(k, j);
                }
                break;
            }
            default: {
                std::vector<double> palette(static_cast<std::size_t>(in_range(1, 4)));
                for (double& v : palette) v = value();
                const Range pick = range(0, static_cast<int>(palette.size()));
                for (int i = 0; i < n; ++i)
                    for (int j = 0; j < d; ++j) at(i, j) = palette[static_cast<std::size_t>(draw(pick))];
            }
        }
    }

    // The generic value of a word: its exponent e from the bits below the top one, k from the low 32 bits.
    double generic_of(std::uint64_t word) const {
        const std::uint64_t middle = (word << 1) & 0xffffffff00000000ULL, low = word << 32;
        const auto e = static_cast<std::size_t>(mul_high(middle, exponent_span_ + 1));
        const auto k = signed_toward_zero(mul_high(low, generic_span_[e] + 1));
        return static_cast<double>(k) * power_of_half_[e];  // exact: k / 2^e
    }

    static std::uint64_t span_of(int min, int max) {
        if (max <= min)
            throw std::invalid_argument("empty range [" + std::to_string(min) + ", " + std::to_string(max) + ")");
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(max) - min - 1);
    }
    std::uint64_t scaled(std::uint64_t span) const { return rc::gen::detail::scaleInteger(span, size_); }
    // Uniform in [0, bound), by the high half of a 64 x 64-bit product (Lemire): no division per draw.
    std::uint64_t below(std::uint64_t bound) { return mul_high(rng_.next(), bound); }
    static std::uint64_t mul_high(std::uint64_t word, std::uint64_t bound) {
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(word) * bound) >> 64);
    }
    // 0, 1, 2, 3, 4, ... -> 0, -1, 1, -2, 2, ...
    static std::int64_t signed_toward_zero(std::uint64_t k) {
        const auto h = static_cast<std::int64_t>((k + 1) / 2);
        return k % 2 ? -h : h;
    }

    SplitMix64 rng_;
    int size_;
    std::uint64_t simple_span_, exponent_span_;
    std::array<std::uint64_t, kMaxExponent + 1> generic_span_{};
    std::array<double, kMaxExponent + 1> power_of_half_{};
};

// ------------------------------------------------------------------------------------------------ shrinks

// Simpler values than v, simplest first: 0, v without its fraction, v on the grid of quarters, half of v's
// integer part (for |v| >= 2), -v for negative v. Each strictly simplifies, so shrinking ends.
inline std::vector<double> simpler_values(double v) {
    std::vector<double> out;
    for (double s : {0.0, std::trunc(v), std::round(v * 4) / 4, std::trunc(v / 2), -v}) {
        const bool simpler = s != v && (s != -v || v < 0);
        if (simpler && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
    return out;
}

// The inputs that simplify one entry of x, row by row. Lazy: a large failing input has many of them, and
// shrinking usually accepts one of the first.
inline rc::Seq<Mat<double>> value_shrinks(const Mat<double>& x) {
    const auto shared = std::make_shared<const Mat<double>>(x);
    const Eigen::Index d = x.cols();
    return rc::seq::mapcat(rc::seq::range<Eigen::Index>(0, x.size()), [shared, d](Eigen::Index k) {
        const Eigen::Index i = k / d, j = k % d;
        return rc::seq::map(rc::seq::fromContainer(simpler_values((*shared)(i, j))), [shared, i, j](double v) {
            Mat<double> y = *shared;
            y(i, j) = v;
            return y;
        });
    });
}

// The permutations with one moved position made fixed: shrinking ends at a single transposition when the
// failure needs any movement at all. A transposition (a b) then moves toward the first positions, (a b-1) and
// (a-1 b) (a + b decreases, so this ends): the positions it leaves become deletable, and a violation that needs
// two tied rows swapped is not stuck at n = 3 because the transposition it was found with took a third row.
inline rc::Seq<Permutation> permutation_shrinks(const Permutation& p) {
    std::vector<Permutation> out;
    std::vector<int> moved;
    for (int i = 0; i < p.size(); ++i)
        if (p[i] != i) {
            out.push_back(p.fixing(i));
            moved.push_back(i);
        }
    if (moved.size() == 2) {
        const int a = moved[0], b = moved[1];
        if (b - 1 > a) out.push_back(Permutation::transposition(p.size(), a, b - 1));
        if (a > 0) out.push_back(Permutation::transposition(p.size(), a - 1, b));
    }
    return rc::seq::fromContainer(std::move(out));
}

// ---------------------------------------------------------------------------------------------- generators

inline rc::Gen<Mat<double>> sequence(int n, int d) {
    return [n, d](const rc::Random& random, int size) {
        return rc::shrinkable::shrinkRecur(Sampler(random, size).sequence(n, d),
                                           [](const Mat<double>& x) { return value_shrinks(x); });
    };
}

inline rc::Gen<Permutation> permutation(int n) {
    return [n](const rc::Random& random, int size) {
        return rc::shrinkable::shrinkRecur(Sampler(random, size).permutation(n),
                                           [](const Permutation& p) { return permutation_shrinks(p); });
    };
}

}  // namespace permcheck::gen
