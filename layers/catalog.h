// The reference layers by name, with what the theory says of each: the rows of the verdict matrix.
#pragma once

#include "layers/layers.h"

#include <functional>
#include <string>
#include <vector>

namespace permcheck {

template <class S> using LayerFn = std::function<Mat<S>(const Mat<S>&)>;

enum class Output { sequence, pooled };

struct LayerSpec {
    std::string name;
    std::string description;
    Output output = Output::sequence;
    bool symmetric = true;     // expected: equivariant (sequence output) or invariant (pooled output)
    bool relative = false;     // position enters only through offsets: shifting all positions changes nothing
    bool causal = false;       // causal mask, no position signal: output i ignores the order before i
    bool reversal_symmetric = false;  // relative layers whose bias is symmetric in the offset (ALiBi)
    double amplification = 1.0;       // see ToleranceModel
    Eigen::Index heads = 1;
};

// Every reference layer, in the order the verdict table shows them.
const std::vector<LayerSpec>& catalog();
// The entry of that name; throws std::invalid_argument listing the valid names otherwise.
const LayerSpec& find_layer(const std::string& name);
std::string layer_names(const char* separator = ", ");

// Builds the named layer of width d with weights from `draw`. `offset` is the index of the first position
// (for the shift property); it is ignored by layers without a position signal.
template <class S> LayerFn<S> build_layer(const std::string& name, Eigen::Index d, Draw<S>& draw, long offset = 0);

// The same layer for a weight seed: the weights are the dyadic draws of that seed, identical in every scalar.
template <class S> LayerFn<S> build_layer(const std::string& name, Eigen::Index d, std::uint64_t weight_seed, long offset = 0) {
    Draw<S> draw = dyadic_draw<S>(weight_seed);
    return build_layer<S>(name, d, draw, offset);
}

extern template LayerFn<float> build_layer<float>(const std::string&, Eigen::Index, Draw<float>&, long);
extern template LayerFn<double> build_layer<double>(const std::string&, Eigen::Index, Draw<double>&, long);
extern template LayerFn<long double> build_layer<long double>(const std::string&, Eigen::Index, Draw<long double>&, long);
extern template LayerFn<Rational> build_layer<Rational>(const std::string&, Eigen::Index, Draw<Rational>&, long);
extern template LayerFn<RationalStandin> build_layer<RationalStandin>(const std::string&, Eigen::Index,
                                                                      Draw<RationalStandin>&, long);

}  // namespace permcheck
