// make_family: a LayerFamily from one generic builder. Including this header instantiates the builder in every
// scalar, Degree and Symbolic (Z3) among them, so only the translation units that define families include it.
#pragma once

#include "layers/family.h"
#include "scalars/degree.h"
#include "scalars/symbolic.h"

#include <type_traits>
#include <utility>

namespace permcheck {

namespace detail {
template <class S, class Make> Factory<S> factory_of(const Make& make) {
    return [make](Eigen::Index d, Draw<S>& draw, long offset) {
        return LayerFn<S>(make(std::type_identity<S>{}, d, draw, offset));
    };
}
}  // namespace detail

// make(std::type_identity<S>{}, d, draw, offset) -> a layer (anything a LayerFn<S> can hold), for every scalar.
// Without expectations the family is expected to be symmetric: equivariant, or invariant if pooled.
template <class Make>
LayerFamily make_family(std::string name, Output output, Make make, std::vector<Expectation> expectations = {},
                        double amplification = 1.0) {
    LayerFamily f;
    f.name = std::move(name);
    f.output = output;
    f.expectations = std::move(expectations);
    if (f.expectations.empty()) f.expectations.push_back({f.symmetry(), true});
    f.amplification = amplification;
    f.f32 = detail::factory_of<float>(make);
    f.f64 = detail::factory_of<double>(make);
    f.f80 = detail::factory_of<long double>(make);
    f.exact = detail::factory_of<Rational>(make);
    f.standin = detail::factory_of<RationalStandin>(make);
    f.degree = detail::factory_of<Degree>(make);
    f.symbolic = detail::factory_of<Symbolic>(make);
    return f;
}

}  // namespace permcheck
