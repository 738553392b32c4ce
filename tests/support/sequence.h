// The layers of one sequence (the catalog's families built for any width: x:n,d -> y:n,d, or y:d pooled) as
// functions of matrices, for the tests that compute with them directly (tests/test_layers*.cpp, the properties',
// certificates' and proofs' tests).
#pragma once

#include "layers/catalog.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace permcheck::test {

template <class S> using SequenceFn = std::function<Mat<S>(const Mat<S>&)>;

// The family's layer with the weights of `seed` (and its positions from `offset`): x (n x d) in, y out (a pooled
// layer's as one row).
template <class S>
SequenceFn<S> sequence_layer(const Family& f, int d, std::uint64_t seed, long offset = 0, int weights = kWeightsVersion) {
    const LayerFn<S> layer = seeded_layer<S>(f, d, seed, offset, weights);
    return [layer](const Mat<S>& x) { return as_matrix(layer(NamedTensors<S>{{"x", as_tensor(x)}}).at("y")); };
}

// Whether a family of one sequence pools over its positions (its output has no axis).
inline bool is_pooled(const Family& f) { return f.outputs.at(0).find("n,") == std::string::npos; }

// The catalog's layers of one sequence, in its order.
inline std::vector<std::reference_wrapper<const Family>> sequence_families() {
    std::vector<std::reference_wrapper<const Family>> out;
    for (const Family& f : catalog())
        if (f.takes_width()) out.push_back(std::cref(f));
    return out;
}

}  // namespace permcheck::test
