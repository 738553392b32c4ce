// Witnesses as data: where a witness came from, and the exact difference of a layer along one axis. Their text is
// describe()'s, so the certificates and the Z3 proofs state a witness in the same words.
#pragma once

#include "cases/permutation.h"
#include "cases/signature.h"
#include "scalars/scalar.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace permcheck {

enum class WitnessSource {
    none,
    exact_search,   // the exact witness search: dyadic weights of a seed, exp (sin, cos) of the double used exactly
    standin_point,  // a Schwartz-Zippel point: the layer with rational stand-ins at random integers
    z3_model,       // a sat model of Z3, confirmed in exact rational arithmetic with the real functions
};
// "exact witness search", "Schwartz-Zippel point", "Z3 model", "none".
const char* witness_source_name(WitnessSource s);

// An exact, nonzero difference of a layer: a generator of one axis (the other axes left alone), an output entry and
// both sides there.
struct Witness {
    WitnessSource source = WitnessSource::exact_search;
    std::string axis{};
    Permutation perm{};
    std::string masks{};             // z3_model with mask inputs: their assignment ("pad=0100")
    std::string output{};
    std::vector<int> where{};        // the entry (exact_search, z3_model)
    std::size_t entry = 0;           // the entry, row-major (standin_point)
    double lhs = 0, rhs = 0;         // both sides there, rounded (exact_search, z3_model)
    double max_abs_diff = 0;         // the largest |difference| of the output (exact_search)
    Rational difference{};           // lhs - rhs, exactly (standin_point)
    std::uint64_t weight_seed = 0;   // exact_search: the dyadic weights of this seed
    // The real inputs, in signature order (exact_search: dyadic, so exactly these values; z3_model: the model's, each
    // rounded to a double and used exactly).
    std::vector<std::pair<std::string, Tensor>> inputs{};
    std::vector<double> weights{};   // z3_model: w0, w1, ... in draw order, every weight the witness needs not 0
};

// "permutation (0 1) of axis m, output y at (0, 1): ... against ... (an exact, nonzero difference...", then on lines of
// their own after `indent` the inputs, every value in full (they replay the witness exactly), and a model's weights.
std::string describe(const Witness& w, const std::string& indent = "");

}  // namespace permcheck
