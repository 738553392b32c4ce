// Weights drawn from a seed as small dyadic rationals k / 2^bits, so that float, double and exact rationals
// hold the very same weights and results can be compared exactly across arithmetics.
#pragma once

#include "scalars/scalar.h"
#include "scalars/weights_version.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

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

// The versions of the draw (kWeightsVersion): scalars/weights_version.h.

// Dyadic weights in [-1, 1], exact in float: k / 2^bits with k uniform in [-2^bits, 2^bits] (versions 1, 2), or
// the odd multiples of 2^-(bits+1) in (-1, 1) (version 3).
template <class S> class DyadicDraw {
public:
    DyadicDraw(std::uint64_t seed, int bits, int version = kWeightsVersion)
        : rng_(seed), version_(version), span_(std::uint64_t{1} << bits), base_(2 * span_ + 1),
          unit_(std::ldexp(1.0, -bits)), per_word_(digits_per_word(version, bits, base_)) {
        if (version < kOldestWeightsVersion || version > kWeightsVersion)
            throw std::invalid_argument("weights version " + std::to_string(version) + " is unknown; this permcheck "
                                        "draws versions " + std::to_string(kOldestWeightsVersion) + " to " +
                                        std::to_string(kWeightsVersion));
        if (bits < 1 || bits > 30) throw std::invalid_argument("weights of " + std::to_string(bits) + " bits: expected 1 to 30");
        set_up_powers();
        if (version >= 3) set_up_chunks(bits);
        digit_ = per_word_;  // the first draw takes a word
    }
    S operator()() {
        if (version_ >= 3) return chunks_[static_cast<std::size_t>(next_chunk())];
        return sc::from_double<S>(static_cast<double>(static_cast<std::int64_t>(next_k()) -
                                                      static_cast<std::int64_t>(span_)) * unit_);
    }
    // Fills m with the next m.size() weights, in the order draw_matrix documents for this version.
    void fill(Mat<S>& m) {
        if (version_ < 3) {
            for (Eigen::Index i = 0; i < m.rows(); ++i)
                for (Eigen::Index j = 0; j < m.cols(); ++j) m(i, j) = (*this)();
            return;
        }
        S* out = m.data();
        const std::size_t count = static_cast<std::size_t>(m.size());
        std::size_t k = 0;
        for (; k < count && digit_ < per_word_; ++k) out[k] = (*this)();  // what the current word has left
        for (; k + static_cast<std::size_t>(per_word_) <= count; k += static_cast<std::size_t>(per_word_)) {
            std::uint64_t word = rng_.next();  // whole words, without the per-weight bookkeeping
            for (int c = 0; c < per_word_; ++c, word >>= shift_) out[k + static_cast<std::size_t>(c)] = chunks_[word & mask_];
        }
        for (; k < count; ++k) out[k] = (*this)();
    }

private:
    static constexpr int kMaxDigits = 64;  // base >= 3: at most 35 digits keep base^digits <= 2^56; 64 chunks of 1 bit
    static int digits_per_word(int version, int bits, std::uint64_t base) {
        if (version >= 3) return 64 / (bits + 1);
        if (version == 1) return 0;
        int digits = 0;
        for (unsigned __int128 power = base; power <= (static_cast<unsigned __int128>(1) << 56); power *= base) ++digits;
        return digits < 1 ? 1 : digits;
    }
    // Digit i of w / 2^64 in base b is the high half of (w b^i mod 2^64) * b: with the powers b^i mod 2^64 at
    // hand, each digit is two independent multiplications instead of a chain through the previous remainder.
    void set_up_powers() {
        std::uint64_t power = 1;
        for (int i = 0; i < per_word_; ++i, power *= base_) powers_[static_cast<std::size_t>(i)] = power;
    }
    void set_up_chunks(int bits) {
        shift_ = bits + 1;
        mask_ = (std::uint64_t{1} << shift_) - 1;
        const double half_unit = std::ldexp(1.0, -shift_);
        for (std::uint64_t c = 0; c <= mask_; ++c)
            chunks_.push_back(sc::from_double<S>(static_cast<double>(2 * static_cast<std::int64_t>(c) + 1 -
                                                                     static_cast<std::int64_t>(mask_ + 1)) * half_unit));
    }
    std::uint64_t next_k() {
        if (per_word_ == 0) return span_ == 16 ? rng_.next() % 33 : rng_.below(base_);  // version 1
        if (digit_ == per_word_) {
            word_ = rng_.next();
            digit_ = 0;
        }
        const std::uint64_t shifted = word_ * powers_[static_cast<std::size_t>(digit_++)];  // mod 2^64
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(shifted) * base_) >> 64);
    }
    std::uint64_t next_chunk() {
        if (digit_ == per_word_) {
            word_ = rng_.next();
            digit_ = 0;
        }
        return (word_ >> (shift_ * digit_++)) & mask_;
    }

    SplitMix64 rng_;
    int version_;
    std::uint64_t span_, base_;
    double unit_;  // 2^-bits: the product is exact
    int per_word_;  // 0: version 1, one word per weight
    int digit_ = 0;  // the next digit (chunk) of word_
    std::uint64_t word_ = 0;
    std::array<std::uint64_t, kMaxDigits> powers_{};
    int shift_ = 0;             // version 3: bits + 1
    std::uint64_t mask_ = 0;    // version 3: 2^shift_ - 1
    std::vector<S> chunks_;     // version 3: the weight of each chunk value
};

template <class S> Draw<S> dyadic_draw(std::uint64_t seed, int bits = 4, int version = kWeightsVersion) {
    return DyadicDraw<S>(seed, bits, version);
}

// A rows x cols matrix of draws. A weight draw of version 3 fills it in storage order (column by column), every
// other draw row by row (versions 1 and 2, certificates' random integers, symbolic variables).
template <class S> Mat<S> draw_matrix(Eigen::Index rows, Eigen::Index cols, Draw<S>& draw) {
    Mat<S> m(rows, cols);
    // The dyadic draw fills the matrix itself, without std::function's indirection.
    if (auto* dyadic = draw.template target<DyadicDraw<S>>()) {
        dyadic->fill(m);
        return m;
    }
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = draw();
    return m;
}

}  // namespace permcheck
