// Eigen's NumTraits for the exact scalar types of scalars/ (Degree, Symbolic): exact, so no epsilon, no
// precision and no range; Cost is what Eigen's expression evaluator assumes an addition or product costs.
#pragma once

#include <Eigen/Core>

namespace permcheck {

template <class T, int Cost> struct ExactNumTraits : Eigen::GenericNumTraits<T> {
    using Real = T;
    using NonInteger = T;
    using Nested = T;
    using Literal = T;
    enum {
        IsComplex = 0,
        IsInteger = 0,
        IsSigned = 1,
        RequireInitialization = 1,
        ReadCost = 1,
        AddCost = Cost,
        MulCost = Cost,
    };
    static Real epsilon() { return Real(0); }
    static Real dummy_precision() { return Real(0); }
    static Real highest() { return Real(0); }
    static Real lowest() { return Real(0); }
    static int digits10() { return 0; }
};

}  // namespace permcheck
