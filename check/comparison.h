// The outcome of comparing the two sides of a property, as data: what a counterexample records. A header of its
// own, apart from check/compare.h (which compares, for every scalar, exact rationals included), so that the public
// API (<permcheck/audit.h>, through check/counterexample.h) reads no exact-scalar header.
#pragma once

#include <Eigen/Core>

#include <limits>

namespace permcheck {

struct Comparison {
    bool holds = true;
    double max_abs_diff = 0.0;  // largest |lhs - rhs| (for exact scalars: the exact difference, rounded once)
    Eigen::Index row = -1, col = -1;  // where it is; -1 when the shapes differ
    double tolerance = 0.0;     // 0 for exact comparisons
    bool shape_mismatch = false;
    // difference / tolerance: > 1 is a violation. Infinite for exact violations.
    double margin() const {
        if (max_abs_diff == 0.0) return 0.0;
        return tolerance > 0.0 ? max_abs_diff / tolerance : std::numeric_limits<double>::infinity();
    }
};

}  // namespace permcheck
