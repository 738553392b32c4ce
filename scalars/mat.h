// The dense matrix every layer, check and audit speaks, without the exact scalars: the public API
// (<permcheck/audit.h>) reads this header and not scalars/scalar.h, so that a user's test file never parses
// Boost.Multiprecision or GMP (tests/public_headers.sh keeps it so).
#pragma once

#include <Eigen/Core>

namespace permcheck {

template <class S> using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

}  // namespace permcheck
