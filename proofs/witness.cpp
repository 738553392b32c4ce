#include "proofs/witness.h"

#include "cases/signature_case.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace permcheck {

const char* witness_source_name(WitnessSource s) {
    switch (s) {
        case WitnessSource::none: return "none";
        case WitnessSource::exact_search: return "exact witness search";
        case WitnessSource::standin_point: return "Schwartz-Zippel point";
        case WitnessSource::z3_model: return "Z3 model";
    }
    return "?";
}

namespace {
std::string num(double v) {
    std::ostringstream s;
    s << std::setprecision(17) << v;
    return s.str();
}

// Every value of t in full, a row of its last dim a line after `indent`.
std::string tensor_lines(const Tensor& t, const std::string& indent) {
    const std::size_t last = t.shape.empty() ? 1 : static_cast<std::size_t>(std::max(t.shape.back(), 1));
    std::string s;
    for (std::size_t k = 0; k < t.values.size(); ++k)
        s += (k % last == 0 ? "\n" + indent + "[" : " ") + num(t.values[k]) + (k % last == last - 1 ? "]" : "");
    return s;
}

// "w1 = 0.5, w3 = -2 (those not listed are 0)": a model's weights, only those the witness needs.
std::string nonzero_weights(const std::vector<double>& weights) {
    std::string s;
    for (std::size_t k = 0; k < weights.size(); ++k)
        if (weights[k] != 0) s += (s.empty() ? "w" : ", w") + std::to_string(k) + " = " + num(weights[k]);
    return (s.empty() ? std::string("all 0") : s) + " (those not listed are 0)";
}

std::string both_sides(const Witness& w) {
    return "output " + w.output + " at " + index_text(w.where) + ": " + num(w.lhs) + " against " + num(w.rhs) +
           " (an exact, nonzero difference";
}
}  // namespace

std::string describe(const Witness& w, const std::string& indent) {
    std::string text = "permutation " + w.perm.cycles() + " of axis " + w.axis;
    std::string inputs;
    for (const auto& [name, t] : w.inputs)
        inputs += "\n" + indent + "  " + name + " " + index_text(t.shape) + " =" + tensor_lines(t, indent + "    ");
    switch (w.source) {
        case WitnessSource::standin_point:
            return text + ", output " + w.output + " entry " + std::to_string(w.entry) + ": exact difference " +
                   w.difference.str() + " of the stand-in layer at a random integer point";
        case WitnessSource::z3_model:
            if (!w.masks.empty()) text += ", masks " + w.masks;
            return text + ", " + both_sides(w) + "); the Z3 model replayed in exact rationals (exp: std::exp of the " +
                   "double, used exactly), at" + inputs + "\n" + indent + "  weights " + nonzero_weights(w.weights);
        default:
            return text + ", " + both_sides(w) + "; ~" + num(w.max_abs_diff) + "), dyadic weights of seed " +
                   std::to_string(w.weight_seed) + ", exact rationals with exp evaluated in double and used exactly, at" +
                   inputs;
    }
}

}  // namespace permcheck
