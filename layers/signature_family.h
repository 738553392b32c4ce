// A signature family (issue 12): a reference layer over several named inputs and outputs, in every arithmetic
// the project checks with, and what the theory expects of it along each axis. The counterpart of LayerFamily
// (layers/family.h) for layers such as cross-attention or message passing; the catalog lists both kinds
// (layers/catalog.h), so no user of LayerFamily sees a change.
//
// The signature is held as the texts of the audit's flags (`--axis n=1..6`, `--input q:n,4`, `--output y:n,4`),
// which check/signature.h parses: one grammar for the command line, the reports and the catalog, and nothing
// below check/ needs to know it. A tensor of the layer is a shape and its values in row-major order (the order of
// the dims, the last fastest), as check/signature.h's Tensor, in the layer's scalar. A mask holds 0 and 1, an
// index input integers.
#pragma once

#include "layers/expectation.h"
#include "scalars/scalar.h"
#include "scalars/weights.h"

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace permcheck {

class Degree;
class Symbolic;

template <class S> struct NamedTensor {
    std::vector<int> shape;
    std::vector<S> values;
};
template <class S> using NamedTensors = std::map<std::string, NamedTensor<S>>;
template <class S> using SignatureLayerFn = std::function<NamedTensors<S>(const NamedTensors<S>&)>;
// Builds the layer with weights from `draw`, in their fixed order (the same weights in every scalar).
template <class S> using SignatureFactory = std::function<SignatureLayerFn<S>(Draw<S>&)>;

// What the theory expects along one axis: equivariance when the family's output has the axis, invariance when
// it lacks it (the property follows from the dims, as in an audit); or, for a family with position ids or a mask,
// shift (axis: the position ids') or padding (axis: the padded one).
struct AxisExpectation {
    std::string axis;
    Property property = Property::equivariance;
    bool holds = true;
};

struct SignatureFamily {
    std::string name;
    std::string description;
    std::vector<std::string> axes, inputs, outputs;  // the flags' texts
    std::vector<AxisExpectation> expectations;        // one per axis, in the order the verdict table shows them
    double amplification = 1.0;                       // see ToleranceModel

    SignatureFactory<double> f64;
    SignatureFactory<Rational> exact;                // with the real exp
    // Rational functions of their real inputs for every value of their masks (certificates): empty for a family
    // that is not one (an edge_index, max aggregation).
    SignatureFactory<RationalStandin> standin;
    SignatureFactory<Degree> degree;
    SignatureFactory<Symbolic> symbolic;             // Z3 terms (proofs), for the same rational families

    template <class S> const SignatureFactory<S>& factory() const {
        if constexpr (std::is_same_v<S, double>) return f64;
        else if constexpr (std::is_same_v<S, Rational>) return exact;
        else if constexpr (std::is_same_v<S, RationalStandin>) return standin;
        else if constexpr (std::is_same_v<S, Degree>) return degree;
        else {
            static_assert(std::is_same_v<S, Symbolic>, "no signature factory for this scalar");
            return symbolic;
        }
    }
    bool rational() const { return static_cast<bool>(standin) && static_cast<bool>(degree); }
    // The theory's verdict of equivariance (or invariance) along `axis`; an axis the family lists no expectation
    // for is expected to hold. The position-aware rows (shift, padding) are not read here.
    bool expected_to_hold(const std::string& axis) const {
        for (const AxisExpectation& e : expectations)
            if (e.axis == axis && (e.property == Property::equivariance || e.property == Property::invariance))
                return e.holds;
        return true;
    }
};

// ----------------------------------------------------------------------------- tensors of a layer, as matrices

// A tensor of rank 2 as a matrix (rows x cols), of rank 1 as one row.
template <class S> Mat<S> as_matrix(const NamedTensor<S>& t) {
    if (t.shape.empty() || t.shape.size() > 2)
        throw std::invalid_argument("a reference layer reads tensors of rank 1 or 2, got rank " +
                                    std::to_string(t.shape.size()));
    const Eigen::Index rows = t.shape.size() == 2 ? t.shape[0] : 1;
    const Eigen::Index cols = t.shape.back();
    Mat<S> m(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = t.values[static_cast<std::size_t>(i * cols + j)];
    return m;
}

// A matrix as a tensor of rank 2, or of rank 1 (`flat`: a 1 x k matrix as k values).
template <class S> NamedTensor<S> as_tensor(const Mat<S>& m, bool flat = false) {
    NamedTensor<S> t;
    t.shape = flat ? std::vector<int>{static_cast<int>(m.size())}
                   : std::vector<int>{static_cast<int>(m.rows()), static_cast<int>(m.cols())};
    t.values.reserve(static_cast<std::size_t>(m.size()));
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) t.values.push_back(m(i, j));
    return t;
}

// A mask tensor (0 / 1 values) as flags, true = padding; `keep`: a mask=keep tensor (1 = a real position).
template <class S> std::vector<bool> as_mask(const NamedTensor<S>& t, bool keep = false) {
    std::vector<bool> padded;
    for (const S& v : t.values) padded.push_back((v == S(0)) == keep);
    return padded;
}

// Row r of an index tensor of shape (2, edges) as integers.
template <class S> std::vector<int> index_row(const NamedTensor<S>& t, int r) {
    if (t.shape.size() != 2 || t.shape[0] != 2) throw std::invalid_argument("an edge list has shape (2, edges)");
    std::vector<int> out;
    for (int e = 0; e < t.shape[1]; ++e)
        out.push_back(static_cast<int>(sc::to_double(t.values[static_cast<std::size_t>(r * t.shape[1] + e)])));
    return out;
}

}  // namespace permcheck
