// A layer family: one layer design, buildable in every arithmetic the project computes in, together with what
// the theory expects of it. The check (float, double, exact), the certificate (degree-tracking, rational
// stand-ins, exact) and the Z3 prover (symbolic, exact) all build layers through the same factories, so the
// layer they judge is one and the same.
//
// Degree and Symbolic are only declared here: code that checks (check/, <permcheck/audit.h>) never calls their
// factories and so needs neither the degree scalar nor Z3's headers. The factories are filled by make_family
// (layers/make_family.h), in the translation unit that defines the family.
#pragma once

#include "layers/expectation.h"
#include "layers/pooling.h"
#include "scalars/scalar.h"
#include "scalars/weights.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace permcheck {

class Degree;
class Symbolic;

template <class S> using LayerFn = std::function<Mat<S>(const Mat<S>&)>;

// Builds the layer of width d with weights from `draw`, in their fixed order. `offset` is the index of the
// first position (for the shift property); layers without a position signal ignore it.
template <class S> using Factory = std::function<LayerFn<S>(Eigen::Index d, Draw<S>& draw, long offset)>;

struct LayerFamily;

// A pooled family that is a pooling of a sequence family, built from that family's own factories with the same
// draws. A certificate relies on it for piecewise pooling (max): equivariance of `inner` and symmetry of the
// pooling give invariance.
struct Composition {
    std::shared_ptr<const LayerFamily> inner;
    Pool pooling = Pool::sum;
};

struct LayerFamily {
    std::string name;
    std::string description;
    Output output = Output::sequence;
    double amplification = 1.0;  // see ToleranceModel
    // The properties that apply, in the order the verdict table shows them, each with its expected verdict.
    std::vector<Expectation> expectations;
    std::optional<Composition> composition;

    Factory<float> f32;
    Factory<double> f64;
    Factory<long double> f80;
    Factory<Rational> exact;              // with the real exp, sqrt, tanh
    Factory<RationalStandin> standin;     // with their rational stand-ins (certificates)
    Factory<Degree> degree;               // degree-tracking (certificates)
    Factory<Symbolic> symbolic;           // Z3 terms (proofs)

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

    // Equivariance for sequence outputs, invariance for pooled ones.
    Property symmetry() const { return output == Output::pooled ? Property::invariance : Property::equivariance; }
    // The theory's verdict on `p`; a property the family lists no expectation for is expected to hold.
    bool expected_to_hold(Property p) const {
        for (const Expectation& e : expectations)
            if (e.property == p) return e.holds;
        return true;
    }
    bool expected_symmetric() const { return expected_to_hold(symmetry()); }
};

// The layer whose weights are the dyadic draws of `weight_seed` (scalars/weights.h): the same weights in every
// scalar, which is what a check's weight seed names; `weights` is the draw's version (a report's own).
template <class S>
LayerFn<S> seeded_layer(const LayerFamily& family, Eigen::Index d, std::uint64_t weight_seed, long offset = 0,
                        int weights = kWeightsVersion) {
    Draw<S> draw = dyadic_draw<S>(weight_seed, 4, weights);
    return family.factory<S>()(d, draw, offset);
}

}  // namespace permcheck
