// The properties, each a function of a layer and a case, evaluated in any scalar type.
#pragma once

#include "check/case.h"
#include "layers/expectation.h"
#include "layers/family.h"
#include "check/compare.h"
#include "check/permutation.h"
#include "check/vocabulary.h"

#include <cstdint>
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
        case Property::causal_prefix: {
            const Mat<S> a = layer(p.apply(x)), b = layer(x);
            out.lhs = a.bottomRows(1);
            out.rhs = b.bottomRows(1);
            break;
        }
    }
    const double magnitude = std::max({max_abs(x), max_abs(out.lhs), max_abs(out.rhs)});
    out.comparison = compare<S>(out.lhs, out.rhs, float_tolerance(tol, x.rows(), x.cols(), magnitude));
    return out;
}

}  // namespace permcheck
