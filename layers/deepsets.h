// DeepSets (Zaheer et al. 2017): rho(sum_i phi(x_i)), permutation-invariant by construction.
#pragma once

#include "layers/pointwise.h"
#include "layers/pooling.h"

namespace permcheck {

template <class S> struct DeepSets {
    Mlp<S> phi, rho;

    static DeepSets random(Eigen::Index d_in, Eigen::Index hidden, Eigen::Index d_out, Draw<S>& draw) {
        return {Mlp<S>::random(d_in, hidden, hidden, draw), Mlp<S>::random(hidden, hidden, d_out, draw)};
    }
    Mat<S> operator()(const Mat<S>& x) const { return rho(pool(phi(x), Pool::sum)); }
};

}  // namespace permcheck
