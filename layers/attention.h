// Scaled dot-product self-attention, single- or multi-head, with optional causal mask, additive score bias
// (ALiBi, T5 buckets) and optional RoPE on queries and keys.
#pragma once

#include "layers/position.h"

#include <optional>
#include <stdexcept>
#include <string>

namespace permcheck {

// Row-wise softmax of scores over the keys visible(i, j) lets row i see; its weights on the others are 0, and a row
// that sees no key is all 0.
template <class S, class Visible> Mat<S> softmax_over(const Mat<S>& s, const Visible& visible) {
    Mat<S> a = Mat<S>::Zero(s.rows(), s.cols());
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
        S shift = S(0);
        bool any = false;
        for (Eigen::Index j = 0; j < s.cols(); ++j)
            if (visible(i, j)) {
                if constexpr (ScalarTraits<S>::shift_softmax) shift = any ? sc::max(shift, s(i, j)) : s(i, j);
                any = true;
            }
        if (!any) continue;
        S total = S(0);
        for (Eigen::Index j = 0; j < s.cols(); ++j)
            if (visible(i, j)) {
                a(i, j) = sc::exp<S>(s(i, j) - shift);
                total += a(i, j);
            }
        for (Eigen::Index j = 0; j < s.cols(); ++j) a(i, j) /= total;
    }
    return a;
}

struct AttentionShape {
    Eigen::Index d = 4;      // model width
    Eigen::Index heads = 1;  // d must be a multiple of heads
    bool causal = false;
};

template <class S> struct Attention {
    AttentionShape shape;
    Mat<S> wq, wk, wv, wo;  // d x d each
    std::optional<ScoreBias<S>> bias;
    std::optional<Rope<S>> rope;

    static Attention random(const AttentionShape& shape, Draw<S>& draw) {
        if (shape.heads < 1 || shape.d % shape.heads != 0)
            throw std::invalid_argument("attention width " + std::to_string(shape.d) +
                                        " is not a multiple of the head count " + std::to_string(shape.heads));
        const Eigen::Index d = shape.d;  // the braces draw in order: wq, wk, wv, wo
        return {shape, draw_matrix(d, d, draw), draw_matrix(d, d, draw), draw_matrix(d, d, draw), draw_matrix(d, d, draw),
                std::nullopt, std::nullopt};
    }

    Eigen::Index head_width() const { return shape.d / shape.heads; }

    // 1/sqrt(d_k) as a constant (computed in double, converted exactly): it is data, not a function of x.
    S scale() const { return sc::from_double<S>(1.0 / std::sqrt(static_cast<double>(head_width()))); }

    // Scores of one head, before masking and softmax: (q k^T) * scale + bias.
    Mat<S> scores(const Mat<S>& x, Eigen::Index head) const {
        const Eigen::Index w = head_width();
        Mat<S> q = x * wq.middleCols(head * w, w);
        Mat<S> k = x * wk.middleCols(head * w, w);
        if (rope) {
            q = (*rope)(q);
            k = (*rope)(k);
        }
        Mat<S> s = q * k.transpose();
        s *= scale();
        if (bias) s += (*bias)(x.rows(), head, shape.heads);
        return s;
    }

    // Row-wise softmax; with a causal mask, position i attends to positions j <= i only.
    Mat<S> softmax(const Mat<S>& s) const {
        const Eigen::Index n = s.rows();
        Mat<S> a = Mat<S>::Zero(n, n);
        for (Eigen::Index i = 0; i < n; ++i) {
            const Eigen::Index last = shape.causal ? i : n - 1;
            S shift = S(0);
            if constexpr (ScalarTraits<S>::shift_softmax) {
                shift = s(i, 0);
                for (Eigen::Index j = 1; j <= last; ++j) shift = sc::max(shift, s(i, j));
            }
            S total = S(0);
            for (Eigen::Index j = 0; j <= last; ++j) {
                a(i, j) = sc::exp<S>(s(i, j) - shift);
                total += a(i, j);
            }
            for (Eigen::Index j = 0; j <= last; ++j) a(i, j) /= total;
        }
        return a;
    }

    Mat<S> operator()(const Mat<S>& x) const {
        if (x.cols() != shape.d)
            throw std::invalid_argument("attention expects " + std::to_string(shape.d) + " features, got " +
                                        std::to_string(x.cols()));
        const Eigen::Index w = head_width();
        Mat<S> concat(x.rows(), shape.d);
        for (Eigen::Index h = 0; h < shape.heads; ++h) {
            const Mat<S> weights = softmax(scores(x, h));
            const Mat<S> v = x * wv.middleCols(h * w, w);
            concat.middleCols(h * w, w) = weights * v;
        }
        return concat * wo;
    }
};

}  // namespace permcheck
