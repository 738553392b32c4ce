// The properties, each a function of a layer and a case, evaluated in any scalar type.
#pragma once

#include <cmath>

#include "check/case.h"
#include "layers/expectation.h"
#include "layers/family.h"
#include "check/compare.h"
#include "check/permutation.h"
#include "check/vocabulary.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

// Both sides of a property in scalar S, and how they compare.
template <class S> struct Sides {
    Mat<S> lhs, rhs;
    Comparison comparison;
};

// The permutation a property actually applies (the reversal, or the case's permutation with the last position
// fixed for the causal prefix property).
Permutation acting_permutation(Property p, const Permutation& perm);

template <class S>
Sides<S> evaluate(const LayerFn<S>& layer, const LayerFn<S>& shifted, Property property, const Mat<S>& x,
                  const Permutation& perm, const ToleranceModel& tol) {
    Sides<S> out;
    const Permutation p = acting_permutation(property, perm);
    switch (property) {
        case Property::equivariance:
        case Property::reversal: out.lhs = layer(p.apply(x)); out.rhs = p.apply(layer(x)); break;
        case Property::invariance: out.lhs = layer(p.apply(x)); out.rhs = layer(x); break;
        case Property::shift: out.lhs = shifted(x); out.rhs = layer(x); break;
        case Property::padding:  // an audit's property (check/signature_audit.h): the one-tensor check has no mask
            throw std::invalid_argument("the padding property is audited (permcheck audit --property padding), not checked");
        case Property::causal_prefix: {
            const Mat<S> a = layer(p.apply(x)), b = layer(x);
            out.lhs = a.bottomRows(1);
            out.rhs = b.bottomRows(1);
            break;
        }
    }
    if constexpr (std::is_floating_point_v<S>) {
        // Finite sides of one shape (every case of a layer that holds): each side is read once for its magnitude and
        // finiteness, where max_abs, then compare's finiteness test, read it twice.
        const double l = max_abs_or_non_finite(out.lhs), r = max_abs_or_non_finite(out.rhs);
        if (std::isfinite(l) && std::isfinite(r) && out.lhs.rows() == out.rhs.rows() && out.lhs.cols() == out.rhs.cols()) {
            const double magnitude = std::max({max_abs(x), l, r});
            out.comparison = detail::compare_finite(out.lhs, out.rhs, float_tolerance(tol, x.rows(), x.cols(), magnitude));
            return out;
        }
    }
    const double magnitude = std::max({max_abs(x), max_abs(out.lhs), max_abs(out.rhs)});
    out.comparison = compare<S>(out.lhs, out.rhs, float_tolerance(tol, x.rows(), x.cols(), magnitude));
    return out;
}

}  // namespace permcheck
