// The version of the weight draw (scalars/weights.h) that a record names, apart from the draw itself, which
// computes in every scalar: the public API (<permcheck/audit.h>, through report/text.h) reads this
// header and no exact-scalar one.
#pragma once

namespace permcheck {

// The draw of weights from a seed has versions, because a report names its weights by (version, seed) and must
// replay with the weights it was made with:
//  1  one SplitMix64 word per weight: k = word mod (2^(bits+1) + 1), weight (k - 2^bits) / 2^bits.
//  2  several weights per word: the word w read as the fraction w / 2^64 in base b = 2^(bits+1) + 1, one digit a
//     weight (k = the high half of w * b, w = the low half), as many digits as keep b^digits <= 2^56, so that
//     every tuple of digits is within 2^-8 of uniform (11 weights a word at the default 4 bits).
//  3  the word cut into chunks of bits + 1 bits, lowest first (12 a word at 4 bits; the top bits left over are not
//     used): chunk c is the weight (2c + 1 - 2^(bits+1)) / 2^(bits+1), an odd multiple of 2^-(bits+1) in (-1, 1),
//     uniform and symmetric about 0; and draw_matrix fills a matrix in its storage order (column by column)
//     instead of row by row. A chunk is a shift and a mask where a digit of version 2 was two 64-bit products, and
//     storage order lets a matrix be filled from whole words: a check draws 4 d^2 weights a case, and at
//     (64, 64) in float32 the draw of version 2 was a third of the check's cost above its two forward passes
//     (bench/bench_check.cpp).
inline constexpr int kWeightsVersion = 3;
inline constexpr int kOldestWeightsVersion = 1;

}  // namespace permcheck
