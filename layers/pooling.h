// Pooling over positions: every function here maps n x d to 1 x d.
// sum, mean and max are symmetric in the rows; first and last are readouts, the contrast.
#pragma once

#include "scalars/scalar.h"

#include <stdexcept>
#include <string>

namespace permcheck {

enum class Pool { sum, mean, max, first, last };

inline const char* pool_name(Pool p) {
    switch (p) {
        case Pool::sum: return "sum";
        case Pool::mean: return "mean";
        case Pool::max: return "max";
        case Pool::first: return "first";
        case Pool::last: return "last";
    }
    return "?";
}

inline bool is_symmetric(Pool p) { return p == Pool::sum || p == Pool::mean || p == Pool::max; }

template <class S> Mat<S> pool(const Mat<S>& x, Pool how) {
    if (x.rows() == 0) throw std::invalid_argument(std::string("cannot ") + pool_name(how) + "-pool an empty sequence");
    Mat<S> out(1, x.cols());
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
        switch (how) {
            case Pool::sum:
            case Pool::mean: {
                S total = S(0);
                for (Eigen::Index i = 0; i < x.rows(); ++i) total += x(i, j);
                out(0, j) = how == Pool::mean ? S(total / S(static_cast<int>(x.rows()))) : total;
                break;
            }
            case Pool::max: {
                S best = x(0, j);
                for (Eigen::Index i = 1; i < x.rows(); ++i) best = sc::max(best, x(i, j));
                out(0, j) = best;
                break;
            }
            case Pool::first: out(0, j) = x(0, j); break;
            case Pool::last: out(0, j) = x(x.rows() - 1, j); break;
        }
    }
    return out;
}

}  // namespace permcheck
