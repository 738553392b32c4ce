// Attention over named inputs (issue 12): cross-attention of queries (n x d) over a memory (m x d), with an
// optional key-padding mask over the memory (true = padding, as PyTorch's key_padding_mask) and an optional
// pairwise score bias (n x m; n x n for self-attention: attention biases, graph-transformer structure biases).
// Self-attention is the case q = memory. With `memory_positions` the memory gets a sinusoidal position signal:
// the symmetry-breaking counterpart, no longer invariant to the order of the memory.
//
//   y = softmax(q Wq (mem Wk)^T / sqrt(d) + B, padded keys left out) (mem Wv) Wo
//
// Equivariant in the queries (row i of y depends on q_i and the memory as a set), invariant in the memory when
// the mask and the bias move with it (proofs-notes/signature-audit.md).
#pragma once

#include "layers/attention.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

template <class S> struct CrossAttention {
    Mat<S> wq, wk, wv, wo;  // d x d each
    bool memory_positions = false;

    static CrossAttention random(Eigen::Index d, Draw<S>& draw, bool memory_positions = false) {
        return {draw_matrix(d, d, draw), draw_matrix(d, d, draw), draw_matrix(d, d, draw), draw_matrix(d, d, draw),
                memory_positions};
    }

    // q: n x d, mem: m x d; padded: m flags or empty (nothing padded); bias: n x m or empty (none).
    Mat<S> operator()(const Mat<S>& q, const Mat<S>& memory, std::vector<bool> padded = {}, const Mat<S>& bias = {}) const {
        const Eigen::Index d = wq.rows();
        if (q.cols() != d || memory.cols() != d)
            throw std::invalid_argument("cross-attention expects " + std::to_string(d) + " features, got " +
                                        std::to_string(q.cols()) + " and " + std::to_string(memory.cols()));
        if (padded.empty()) padded.assign(static_cast<std::size_t>(memory.rows()), false);
        if (bias.size() > 0 && (bias.rows() != q.rows() || bias.cols() != memory.rows()))
            throw std::invalid_argument("the score bias must be queries x keys");
        Mat<S> mem = memory;
        if (memory_positions) mem += sinusoidal_signal<S>(mem.rows(), d);
        const Mat<S> k = mem * wk;
        Mat<S> s = (q * wq) * k.transpose();
        s *= sc::from_double<S>(1.0 / std::sqrt(static_cast<double>(d)));
        if (bias.size() > 0) s += bias;
        const auto keys = padded.begin() + memory.rows();
        if (q.rows() > 0 && std::find(padded.begin(), keys, false) == keys)
            throw std::invalid_argument("attention over a memory whose every position is padded");
        const auto unpadded = [&padded](Eigen::Index, Eigen::Index j) { return !padded[static_cast<std::size_t>(j)]; };
        const Mat<S> weights = softmax_over(s, unpadded);
        const Mat<S> v = mem * wv;
        return weights * v * wo;
    }
};

}  // namespace permcheck
