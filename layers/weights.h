// Weights drawn from a seed as small dyadic rationals k / 2^bits, so that float, double and exact rationals
// hold the very same weights and results can be compared exactly across arithmetics.
#pragma once

#include "scalar.h"

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
template <class S> Draw<S> dyadic_draw(std::uint64_t seed, int bits = 4) {
    const std::uint64_t span = (std::uint64_t{1} << bits);
    return [rng = SplitMix64(seed), span, bits]() mutable {
        const double k = static_cast<double>(static_cast<std::int64_t>(rng.below(2 * span + 1)) -
                                             static_cast<std::int64_t>(span));
        return sc::from_double<S>(std::ldexp(k, -bits));
    };
}

template <class S> Mat<S> draw_matrix(Eigen::Index rows, Eigen::Index cols, Draw<S>& draw) {
    Mat<S> m(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = draw();
    return m;
}

}  // namespace permcheck
