// The pieces layers/catalog.cpp assembles the catalog from, shared by the translation units that define them
// (layers/catalog_*.cpp). Split so that each scalar's instantiations of a group of layers compile on their own:
// the catalog in one translation unit was the longest compile of the build (92 CPU-seconds at -O3, over 300 with
// the sanitizers), and every library after it waited for it. Internal: not installed.
#pragma once

#include "layers/catalog.h"
#include "layers/make_family.h"

#include <string>
#include <type_traits>
#include <vector>

namespace permcheck::catalog_parts {

// What the theory says of a layer, from which the properties that apply follow.
struct Theory {
    bool symmetric = true;            // equivariant (sequence output) or invariant (pooled output)
    bool relative = false;            // position enters only through offsets: shifting all positions changes nothing
    bool reversal_symmetric = false;  // relative layers whose bias is symmetric in the offset (ALiBi)
    bool absolute = false;            // an absolute position signal: shifting every position changes the output
    bool causal = false;              // causal mask, no position signal: output i ignores the order before i
};

inline std::vector<Expectation> expectations_of(Output output, const Theory& t) {
    if (output == Output::pooled) return {{Property::invariance, t.symmetric}};
    std::vector<Expectation> e{{Property::equivariance, t.symmetric}};
    if (t.relative) {
        e.push_back({Property::shift, true});
        e.push_back({Property::reversal, t.reversal_symmetric});
    }
    if (t.absolute) e.push_back({Property::shift, false});
    if (t.causal) e.push_back({Property::causal_prefix, true});
    return e;
}

// LayerNorm divides by a row's standard deviation, at least sqrt(eps) = 2^-8 (proofs-notes/float-tolerance.md).
constexpr double kLayerNormGrowth = 256.0;

template <class Make>
LayerFamily family(std::string name, std::string description, Output output, const Theory& theory, Make make,
                   double amplification = 1.0) {
    LayerFamily f = make_family(std::move(name), output, std::move(make), expectations_of(output, theory), amplification);
    f.description = std::move(description);
    return f;
}

enum class Signal { none, sinusoidal, learned, rope, alibi, t5 };

struct AttentionDesign {
    Eigen::Index heads = 1;
    bool causal = false;
    Signal signal = Signal::none;
};

LayerFamily attention(std::string name, std::string description, AttentionDesign design, const Theory& theory);

// The one-tensor rows, in the verdict table's order: make_catalog() calls them in turn.
// add_attention and attention() are in catalog_attention.cpp, the other two in catalog_sequence.cpp.
void add_per_position(std::vector<LayerFamily>& c);
void add_attention(std::vector<LayerFamily>& c, const LayerFamily& attn, const LayerFamily& sinusoidal);
void add_recurrent_and_pooled(std::vector<LayerFamily>& c, const LayerFamily& attn, const LayerFamily& sinusoidal);

// The texts of a signature's flags and the theory along each axis.
struct SignatureText {
    std::vector<std::string> axes, inputs, outputs;
    std::vector<AxisExpectation> expectations;
};

template <class S, class Make> SignatureFactory<S> signature_factory(const Make& make) {
    return [make](Draw<S>& draw) { return SignatureLayerFn<S>(make(std::type_identity<S>{}, draw)); };
}

// make(std::type_identity<S>{}, draw) -> a layer over named tensors of S, for double and Rational; families that
// are rational functions of their real inputs for every value of their masks (no edge_index, no max) also for the rational stand-in, the degree scalar (certificates) and the
// symbolic scalar (Z3 proofs).
template <bool RationalFunction, class Make>
SignatureFamily signature_family(std::string name, std::string description, SignatureText text, Make make) {
    SignatureFamily f;
    f.name = std::move(name);
    f.description = std::move(description);
    f.axes = std::move(text.axes);
    f.inputs = std::move(text.inputs);
    f.outputs = std::move(text.outputs);
    f.expectations = std::move(text.expectations);
    f.f64 = signature_factory<double>(make);
    f.exact = signature_factory<Rational>(make);
    if constexpr (RationalFunction) {
        f.standin = signature_factory<RationalStandin>(make);
        f.degree = signature_factory<Degree>(make);
        f.symbolic = signature_factory<Symbolic>(make);
    }
    return f;
}

constexpr Eigen::Index kWidth = 4;  // the features of every signature row (the `4` of its texts)

// The rows over named inputs: make_signature_catalog() calls them in turn.
// In catalog_signature_attention.cpp and catalog_signature_graphs.cpp.
void add_signature_attention(std::vector<SignatureFamily>& c);
void add_signature_graphs(std::vector<SignatureFamily>& c);

}  // namespace permcheck::catalog_parts
