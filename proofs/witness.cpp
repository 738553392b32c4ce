#include "proofs/witness.h"

#include "check/signature_case.h"

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

std::string number_list(const std::vector<double>& values) {
    std::string s;
    for (double v : values) s += (s.empty() ? "" : ", ") + num(v);
    return "[" + s + "]";
}

std::string both_sides(const SignatureWitness& w) {
    return "output " + w.output + " at " + index_text(w.where) + ": " + num(w.lhs) + " against " + num(w.rhs) +
           " (an exact, nonzero difference";
}
}  // namespace

std::string describe(const SignatureWitness& w) {
    std::string text = "permutation " + w.perm.cycles() + " of axis " + w.axis;
    switch (w.source) {
        case WitnessSource::standin_point:
            return text + ", output " + w.output + " entry " + std::to_string(w.entry) + ": exact difference " +
                   w.difference.str() + " of the stand-in layer at a random integer point";
        case WitnessSource::z3_model:
            if (!w.masks.empty()) text += ", masks " + w.masks;
            text += ", " + both_sides(w) + "); the Z3 model replayed in exact rationals (exp: std::exp of the double, "
                                           "used exactly)";
            for (const auto& [name, values] : w.inputs) text += ", " + name + " = " + number_list(values);
            return text + ", weights w0.. = " + number_list(w.weights);
        default:
            return text + ", " + both_sides(w) + "; ~" + num(w.max_abs_diff) + "), dyadic weights of seed " +
                   std::to_string(w.weight_seed) + ", exact rationals with exp evaluated in double and used exactly";
    }
}

}  // namespace permcheck
