// Weights drawn from a seed as small dyadic rationals k / 2^bits, so that float, double and exact rationals
// hold the very same weights and results can be compared exactly across arithmetics.
#pragma once

#include "scalars/scalar.h"

#include <cmath>
#include <cstdint>
#include <functional>

namespace permcheck {

// A source of weight entries. Reference layers take one, so that a certificate can supply its own draws
// (large random integers, or symbolic variables) without the layers knowing.
template <class S> using Draw = std::function<S()>;

// SplitMix64: a tiny, fully specified generator, so a seed means the same weights on every platform.
class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform in [0, bound), bound > 0. The modulo bias is irrelevant for weights.
    std::uint64_t below(std::uint64_t bound) { return next() % bound; }

private:
    std::uint64_t state_;
};

// Dyadic weights k / 2^bits with k uniform in [-2^bits, 2^bits]: values in [-1, 1], exact in float.
template <class S> class DyadicDraw {
public:
    DyadicDraw(std::uint64_t seed, int bits)
        : rng_(seed), span_(std::uint64_t{1} << bits), unit_(std::ldexp(1.0, -bits)) {}
    S operator()() {
        // The default 4 bits divides by the constant 33, which compiles to a multiplication: weights are
        // drawn d^2 at a time for every case of a check (bench/bench_check.cpp).
        const std::uint64_t k = span_ == 16 ? rng_.next() % 33 : rng_.below(2 * span_ + 1);
        return sc::from_double<S>(static_cast<double>(static_cast<std::int64_t>(k) - static_cast<std::int64_t>(span_)) *
                                  unit_);
    }

private:
    SplitMix64 rng_;
    std::uint64_t span_;
    double unit_;  // 2^-bits: the product is exact
};

template <class S> Draw<S> dyadic_draw(std::uint64_t seed, int bits = 4) { return DyadicDraw<S>(seed, bits); }

template <class S> Mat<S> draw_matrix(Eigen::Index rows, Eigen::Index cols, Draw<S>& draw) {
    Mat<S> m(rows, cols);
    const auto fill = [&](auto& next) {
        for (Eigen::Index i = 0; i < rows; ++i)
            for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = next();
    };
    // The same draws in the same order; the dyadic draw is called directly, without std::function's indirection.
    if (auto* dyadic = draw.template target<DyadicDraw<S>>()) fill(*dyadic);
    else fill(draw);
    return m;
}

}  // namespace permcheck
