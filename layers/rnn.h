// Elman RNN, h_t = tanh(x_t W_x + h_{t-1} W_h + b), h_{-1} = 0: the recurrent contrast, which knows order
// because it computes in order.
#pragma once

#include "scalars/weights.h"

#include <stdexcept>
#include <string>

namespace permcheck {

template <class S> struct ElmanRnn {
    Mat<S> wx;    // d_in x hidden
    Mat<S> wh;    // hidden x hidden
    Mat<S> bias;  // 1 x hidden

    static ElmanRnn random(Eigen::Index d_in, Eigen::Index hidden, Draw<S>& draw) {
        return {draw_matrix(d_in, hidden, draw), draw_matrix(hidden, hidden, draw), draw_matrix(1, hidden, draw)};
    }

    // All states, one row per step.
    Mat<S> states(const Mat<S>& x) const {
        // Eigen only asserts on a shape mismatch, and asserts are off in release builds.
        if (x.cols() != wx.rows())
            throw std::invalid_argument("Elman RNN expects " + std::to_string(wx.rows()) +
                                        " features per step, got " + std::to_string(x.cols()));
        Mat<S> out(x.rows(), wh.cols());
        Mat<S> h = Mat<S>::Zero(1, wh.cols());
        for (Eigen::Index t = 0; t < x.rows(); ++t) {
            Mat<S> pre = x.row(t) * wx + h * wh + bias;
            for (Eigen::Index j = 0; j < pre.cols(); ++j) h(0, j) = sc::tanh<S>(pre(0, j));
            out.row(t) = h;
        }
        return out;
    }
    Mat<S> operator()(const Mat<S>& x) const { return states(x); }
    // The final state, 1 x hidden: a pooled output that depends on order.
    Mat<S> final_state(const Mat<S>& x) const {
        if (x.rows() == 0) throw std::invalid_argument("an empty sequence has no final RNN state");
        const Mat<S> s = states(x);
        return s.bottomRows(1);
    }
};

}  // namespace permcheck
