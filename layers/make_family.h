// Families from generic builders. Including this header instantiates a builder in every scalar it is built for,
// Degree and Symbolic (Z3) among them, so only the translation units that define families include it.
#pragma once

#include "layers/family.h"
#include "scalars/degree.h"
#include "scalars/symbolic.h"

#include <type_traits>
#include <utility>

namespace permcheck {

namespace detail {
// make(std::type_identity<S>{}, d, draw, offset) -> a layer of one n x d matrix, as a layer of x:n,d -> y.
template <class S, class Make> Factory<S> sequence_factory(const Make& make, bool pooled) {
    return [make, pooled](Draw<S>& draw, int d, long offset) {
        return LayerFn<S>([m = make(std::type_identity<S>{}, d, draw, offset), pooled](const NamedTensors<S>& in) {
            return NamedTensors<S>{{"y", as_tensor<S>(Mat<S>(m(as_matrix(in.at("x")))), pooled)}};
        });
    };
}
// make(std::type_identity<S>{}, draw) -> a layer over named tensors of S.
template <class S, class Make> Factory<S> named_factory(const Make& make) {
    return [make](Draw<S>& draw, int, long) { return LayerFn<S>(make(std::type_identity<S>{}, draw)); };
}
}  // namespace detail

// A layer of one sequence, x:n,d -> y:n,d (or y:d pooled), for any width d: make(std::type_identity<S>{}, d, draw,
// offset) returns anything a std::function<Mat<S>(const Mat<S>&)> can hold, for every scalar. Without expectations
// the family is expected to be symmetric along n: equivariant, or invariant if pooled.
template <class Make>
Family make_family(std::string name, Output output, Make make, std::vector<Expectation> expectations = {},
                   double amplification = 1.0) {
    const bool pooled = output == Output::pooled;
    Family f;
    f.name = std::move(name);
    f.axes = {"n=1..8"};
    f.inputs = {"x:n,{d}"};
    f.outputs = {pooled ? "y:{d}" : "y:n,{d}"};
    f.expectations = std::move(expectations);
    if (f.expectations.empty()) f.expectations.push_back({pooled ? Property{"invariance"} : Property{"equivariance"}, "n", true});
    f.amplification = amplification;
    f.f32 = detail::sequence_factory<float>(make, pooled);
    f.f64 = detail::sequence_factory<double>(make, pooled);
    f.f80 = detail::sequence_factory<long double>(make, pooled);
    f.exact = detail::sequence_factory<Rational>(make, pooled);
    f.standin = detail::sequence_factory<RationalStandin>(make, pooled);
    f.degree = detail::sequence_factory<Degree>(make, pooled);
    f.symbolic = detail::sequence_factory<Symbolic>(make, pooled);
    return f;
}

// A layer over named inputs (the flags' texts in f, its weights from the draw): make(std::type_identity<S>{}, draw)
// returns a layer over named tensors of S, for double and Rational; a family that is a rational function of its real
// inputs for every value of its masks (no edge_index, no max) also for the rational stand-in, the degree scalar
// (certificates) and the symbolic scalar (Z3 proofs).
template <bool RationalFunction, class Make> Family named_family(Family f, Make make) {
    f.f64 = detail::named_factory<double>(make);
    f.exact = detail::named_factory<Rational>(make);
    if constexpr (RationalFunction) {
        f.standin = detail::named_factory<RationalStandin>(make);
        f.degree = detail::named_factory<Degree>(make);
        f.symbolic = detail::named_factory<Symbolic>(make);
    }
    return f;
}

}  // namespace permcheck
