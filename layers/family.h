// A layer family: one layer design, buildable in every arithmetic the project computes in, over named inputs laid
// along named axes (its signature), with what the theory expects of it along each axis. The check (float, double,
// exact), the certificate (degree-tracking, rational stand-ins, exact) and the Z3 prover (symbolic, exact) all build
// layers through the same factories, so the layer they judge is one and the same.
//
// The signature is held as the texts of the audit's flags (`--axis n=1..8`, `--input x:n,{d}`, `--output y:n,{d}`),
// which cases/signature.h parses: one grammar for the command line, the reports and the catalog, and nothing below
// check/ needs to know it. "{d}" stands for a width the check chooses (--dim): a family of the layers that take one
// sequence of n x d (make_family) is written for any d. A tensor of the layer is a shape and its values in row-major
// order, as cases/signature.h's Tensor, in the layer's scalar; a mask holds 0 and 1, an index input integers.
//
// Degree and Symbolic are only declared here: code that checks never calls their factories and so needs neither the
// degree scalar nor Z3's headers. The factories are filled in the translation unit that defines the family
// (layers/make_family.h); a family lacks the scalars it cannot compute in (an edge list in a rational stand-in).
#pragma once

#include "layers/expectation.h"
#include "layers/pooling.h"
#include "scalars/scalar.h"
#include "scalars/weights.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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
template <class S> using LayerFn = std::function<NamedTensors<S>(const NamedTensors<S>&)>;
// Builds the layer with weights from `draw`, in their fixed order (the same weights in every scalar), of width d
// where the family takes any, its positions numbered from `offset` where it numbers its own (the shift property;
// every other layer ignores it).
template <class S> using Factory = std::function<LayerFn<S>(Draw<S>& draw, int d, long offset)>;

struct Family;

// A pooled family that is a pooling of a sequence family, built from that family's own factories with the same
// draws. A certificate relies on it for piecewise pooling (max): equivariance of `inner` and symmetry of the
// pooling give invariance.
struct Composition {
    std::shared_ptr<const Family> inner;
    Pool pooling = Pool::sum;
};

struct Family {
    std::string name;
    std::string description;
    std::vector<std::string> axes, inputs, outputs;  // the flags' texts, "{d}" for the width a check chooses
    // The properties that apply, in the order the verdict table shows them, each along an axis with its verdict.
    std::vector<Expectation> expectations;
    double amplification = 1.0;  // see ToleranceModel
    std::optional<Composition> composition;

    Factory<float> f32;
    Factory<double> f64;
    Factory<long double> f80;
    Factory<Rational> exact;            // with the real exp, sqrt, tanh
    Factory<RationalStandin> standin;   // with their rational stand-ins (certificates)
    Factory<Degree> degree;             // degree-tracking (certificates)
    Factory<Symbolic> symbolic;         // Z3 terms (proofs)

    template <class S> const Factory<S>& factory() const {
        if constexpr (std::is_same_v<S, float>) return f32;
        else if constexpr (std::is_same_v<S, double>) return f64;
        else if constexpr (std::is_same_v<S, long double>) return f80;
        else if constexpr (std::is_same_v<S, Rational>) return exact;
        else if constexpr (std::is_same_v<S, RationalStandin>) return standin;
        else if constexpr (std::is_same_v<S, Degree>) return degree;
        else {
            static_assert(std::is_same_v<S, Symbolic>, "no factory for this scalar");
            return symbolic;
        }
    }
    // A rational function of its real inputs for every value of its masks (no edge list, no max; certificates and Z3
    // proofs): it has the stand-in and degree factories.
    bool rational() const { return static_cast<bool>(standin) && static_cast<bool>(degree); }
    // Built for any width d ("{d}" in its texts).
    bool takes_width() const;
    // The theory's verdict on `p` along `axis` (empty: the family's first expectation of p); a property the family
    // lists no expectation for is expected to hold.
    bool expected_to_hold(Property p, const std::string& axis = "") const;
};

inline bool Family::takes_width() const {
    for (const auto* texts : {&axes, &inputs, &outputs})
        for (const std::string& t : *texts)
            if (t.find("{d}") != std::string::npos) return true;
    return false;
}

inline bool Family::expected_to_hold(Property p, const std::string& axis) const {
    for (const Expectation& e : expectations)
        if (e.property == p && (axis.empty() || e.axis == axis)) return e.holds;
    return true;
}

// The layer whose weights are the dyadic draws of `weight_seed` (scalars/weights.h): the same weights in every
// scalar, which is what a check's weight seed names; `weights` is the draw's version (a report's own).
template <class S>
LayerFn<S> seeded_layer(const Family& family, int d, std::uint64_t weight_seed, long offset = 0,
                        int weights = kWeightsVersion) {
    Draw<S> draw = dyadic_draw<S>(weight_seed, 4, weights);
    return family.factory<S>()(draw, d, offset);
}

// ----------------------------------------------------------------------------- tensors of a layer, as matrices

// A tensor of rank 2 as a matrix (rows x cols), of rank 1 as one row.
template <class S> Mat<S> as_matrix(const NamedTensor<S>& t) {
    if (t.shape.empty() || t.shape.size() > 2)
        throw std::invalid_argument("a reference layer reads tensors of rank 1 or 2, got rank " +
                                    std::to_string(t.shape.size()));
    const Eigen::Index rows = t.shape.size() == 2 ? t.shape[0] : 1;
    const Eigen::Index cols = t.shape.back();
    if (static_cast<std::size_t>(rows * cols) != t.values.size())
        throw std::invalid_argument("a reference layer's tensor holds " + std::to_string(t.values.size()) +
                                    " values for its shape's " + std::to_string(rows * cols));
    return Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(t.values.data(), rows, cols);
}

// A matrix as a tensor of rank 2, or of rank 1 (`flat`: a 1 x k matrix as k values).
template <class S> NamedTensor<S> as_tensor(const Mat<S>& m, bool flat = false) {
    NamedTensor<S> t;
    t.shape = flat ? std::vector<int>{static_cast<int>(m.size())}
                   : std::vector<int>{static_cast<int>(m.rows()), static_cast<int>(m.cols())};
    t.values.resize(static_cast<std::size_t>(m.size()));
    Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(t.values.data(), m.rows(), m.cols()) = m;
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
