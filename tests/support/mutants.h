// Planted non-equivariant variants of attention: the harness self-test. Each is a bug that real code has had;
// a checker that misses one of them is defective (tests/test_properties.cpp, HarnessSelfTest).
#pragma once

#include "layers/layers.h"
#include "layers/make_family.h"

#include <concepts>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck::mutants {

enum class Kind {
    scale_at_position_0,  // output row 0 scaled by 3/2: a position-dependent scale at one position
    marker_at_position_0, // a marker (+1) added to position 0's input only
    off_by_one_mask,      // "full" attention whose key loop stops one short: the last key is never attended
    tie_broken_by_index,  // a max-readout returning the whole row of the first maximal first feature
    leak_from_position_4, // positions >= 4 also receive half their own input: a leak that needs n >= 5
};

inline const std::vector<Kind>& all() {
    static const std::vector<Kind> kinds = {Kind::scale_at_position_0, Kind::marker_at_position_0,
                                            Kind::off_by_one_mask, Kind::tie_broken_by_index,
                                            Kind::leak_from_position_4};
    return kinds;
}

inline std::string name(Kind k) {
    switch (k) {
        case Kind::scale_at_position_0: return "scale-at-position-0";
        case Kind::marker_at_position_0: return "marker-at-position-0";
        case Kind::off_by_one_mask: return "off-by-one-mask";
        case Kind::tie_broken_by_index: return "tie-broken-by-index";
        case Kind::leak_from_position_4: return "leak-from-position-4";
    }
    return "?";
}

// Pooled mutants are checked for invariance, the others for equivariance.
inline Output output(Kind k) { return k == Kind::tie_broken_by_index ? Output::pooled : Output::sequence; }

// The smallest sequence length at which the mutant can be caught.
inline int minimal_length(Kind k) { return k == Kind::leak_from_position_4 ? 5 : 2; }

namespace detail {
// Attention whose softmax for every row covers keys 0 .. n-2 only (n >= 2).
template <class S> Mat<S> attention_skipping_last_key(const Attention<S>& a, const Mat<S>& x) {
    const Eigen::Index n = x.rows();
    if (n < 2) return a(x);
    Mat<S> s = a.scores(x, 0);
    Mat<S> w = Mat<S>::Zero(n, n);
    for (Eigen::Index i = 0; i < n; ++i) {
        S shift = S(0);
        if constexpr (ScalarTraits<S>::shift_softmax) {
            shift = s(i, 0);
            for (Eigen::Index j = 1; j < n - 1; ++j) shift = sc::max(shift, s(i, j));
        }
        S total = S(0);
        for (Eigen::Index j = 0; j < n - 1; ++j) {  // the bug: should be j < n
            w(i, j) = sc::exp<S>(s(i, j) - shift);
            total += w(i, j);
        }
        for (Eigen::Index j = 0; j < n - 1; ++j) w(i, j) /= total;
    }
    const Mat<S> v = x * a.wv;
    const Mat<S> mixed = w * v;
    Mat<S> y = mixed * a.wo;
    return y;
}

// A Z3 term has no truth value to branch on, so the tie-broken readout has no symbolic build.
template <class S> bool less(const S& a, const S& b) {
    if constexpr (requires { { a < b } -> std::convertible_to<bool>; }) return a < b;
    else throw std::domain_error("the tie-broken readout branches on an order its scalar does not have");
}
}  // namespace detail

// The mutant of kind k, single-head attention of width d underneath, weights from `draw`.
template <class S> std::function<Mat<S>(const Mat<S>&)> build(Kind k, Eigen::Index d, Draw<S>& draw) {
    Attention<S> a = Attention<S>::random({d, 1, false}, draw);
    switch (k) {
        case Kind::scale_at_position_0:
            return [a](const Mat<S>& x) {
                Mat<S> y = a(x);
                y.row(0) *= sc::from_double<S>(1.5);
                return y;
            };
        case Kind::marker_at_position_0:
            return [a](const Mat<S>& x) {
                Mat<S> marked = x;
                for (Eigen::Index j = 0; j < x.cols(); ++j) marked(0, j) += S(1);
                return a(marked);
            };
        case Kind::off_by_one_mask:
            return [a](const Mat<S>& x) { return detail::attention_skipping_last_key<S>(a, x); };
        case Kind::tie_broken_by_index:
            return [](const Mat<S>& x) {
                Eigen::Index best = 0;
                for (Eigen::Index i = 1; i < x.rows(); ++i)
                    if (detail::less(x(best, 0), x(i, 0))) best = i;  // ties keep the lower index
                Mat<S> row = x.row(best);
                return row;
            };
        case Kind::leak_from_position_4:
            return [a](const Mat<S>& x) {
                Mat<S> y = a(x);
                for (Eigen::Index i = 4; i < x.rows(); ++i) y.row(i) += x.row(i) * sc::from_double<S>(0.5);
                return y;
            };
    }
    throw std::logic_error("unknown mutant");
}

// The mutant of kind k as a layer family, which the theory expects to break its symmetry.
inline Family family(Kind k) {
    const Property symmetry = output(k) == Output::pooled ? Property{"invariance"} : Property{"equivariance"};
    return make_family(
        name(k), output(k),
        [k]<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) { return build<S>(k, d, draw); },
        {{symmetry, "n", false}});
}

}  // namespace permcheck::mutants
