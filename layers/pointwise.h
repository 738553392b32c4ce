// Pointwise layers: the same map applied to every position (row) independently.
#pragma once

#include "scalars/weights.h"

#include <stdexcept>
#include <string>

namespace permcheck {

template <class S> struct Linear {
    Mat<S> weight;  // d_in x d_out
    Mat<S> bias;    // 1 x d_out

    static Linear random(Eigen::Index d_in, Eigen::Index d_out, Draw<S>& draw) {
        return {draw_matrix(d_in, d_out, draw), draw_matrix(1, d_out, draw)};
    }
    Mat<S> operator()(const Mat<S>& x) const {
        // Eigen only asserts on a shape mismatch, and asserts are off in release builds.
        if (x.cols() != weight.rows())
            throw std::invalid_argument("linear layer expects " + std::to_string(weight.rows()) +
                                        " features per position, got " + std::to_string(x.cols()));
        Mat<S> y = x * weight;
        for (Eigen::Index i = 0; i < y.rows(); ++i) y.row(i) += bias;
        return y;
    }
};

template <class S> Mat<S> relu(const Mat<S>& x) {
    Mat<S> y(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i)
        for (Eigen::Index j = 0; j < x.cols(); ++j) y(i, j) = sc::relu(x(i, j));
    return y;
}

// Two-layer perceptron: Linear -> ReLU -> Linear.
template <class S> struct Mlp {
    Linear<S> first, second;

    static Mlp random(Eigen::Index d_in, Eigen::Index hidden, Eigen::Index d_out, Draw<S>& draw) {
        return {Linear<S>::random(d_in, hidden, draw), Linear<S>::random(hidden, d_out, draw)};
    }
    Mat<S> operator()(const Mat<S>& x) const { return second(relu(first(x))); }
};

// LayerNorm over the features of each position. eps = 2^-16 is dyadic, hence the same in every arithmetic.
template <class S> struct LayerNorm {
    Mat<S> gain;  // 1 x d
    Mat<S> bias;  // 1 x d
    double eps = 1.0 / 65536.0;

    static LayerNorm random(Eigen::Index d, Draw<S>& draw) {
        Mat<S> g = draw_matrix(1, d, draw);
        for (Eigen::Index j = 0; j < d; ++j) g(0, j) += S(1);  // gains near 1, as after initialisation
        return {std::move(g), draw_matrix(1, d, draw)};
    }
    Mat<S> operator()(const Mat<S>& x) const {
        const Eigen::Index d = x.cols();
        if (d != gain.cols())
            throw std::invalid_argument("LayerNorm expects " + std::to_string(gain.cols()) +
                                        " features per position, got " + std::to_string(d));
        const S inv_d = S(1) / S(static_cast<int>(d));
        const S eps_s = sc::from_double<S>(eps);
        Mat<S> y(x.rows(), d);
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
            S mean = S(0);
            for (Eigen::Index j = 0; j < d; ++j) mean += x(i, j);
            mean *= inv_d;
            S var = S(0);
            for (Eigen::Index j = 0; j < d; ++j) {
                const S c = x(i, j) - mean;
                var += c * c;
            }
            var *= inv_d;
            const S inv_std = S(1) / sc::sqrt<S>(var + eps_s);
            for (Eigen::Index j = 0; j < d; ++j) y(i, j) = (x(i, j) - mean) * inv_std * gain(0, j) + bias(0, j);
        }
        return y;
    }
};

}  // namespace permcheck
