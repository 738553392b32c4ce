// Checking a catalog layer against a property: random search in float, double or exact rationals, the
// shrunk counterexample, and its exact confirmation. The public header of properties/.
#pragma once

#include "catalog.h"
#include "compare.h"
#include "generators.h"
#include "permutation.h"
#include "property.h"
#include "search.h"

#include <cstdint>
#include <optional>
#include <string>

namespace permcheck {

enum class Arithmetic { float32, float64, exact };
const char* arithmetic_name(Arithmetic a);
Arithmetic parse_arithmetic(const std::string& name);  // float32|float64|exact; throws otherwise

struct CheckOptions {
    Arithmetic arithmetic = Arithmetic::float64;
    int cases = 100;
    std::uint64_t seed = 1;
    int min_len = 1;
    int max_len = 8;
    int d = 4;
};

// One counterexample, as data: every view (text, JSON, Markdown, HTML) is made from this record.
struct Counterexample {
    std::string layer, property, dtype;
    Permutation perm;   // the permutation the property applied (acting on rows: (P x)[i] = x[p[i]])
    Mat<double> x;      // the input
    Mat<double> lhs;    // the property's left side, e.g. L(P x)
    Mat<double> rhs;    // its right side, e.g. P L(x)
    Comparison comparison;
    std::uint64_t seed = 0, weight_seed = 0;
    long shift = 0;
    int case_index = -1, shrink_steps = 0;
    bool confirmed_exactly = false;  // the same case, evaluated in rationals, violates with zero tolerance
    std::string replay;              // a command line that re-runs this check

    Eigen::Index n() const { return x.rows(); }
    Eigen::Index d() const { return x.cols(); }
};

struct CheckResult {
    std::string layer, property, dtype;
    bool expected_holds = true;
    bool holds = true;
    int cases_run = 0, evaluations = 0;
    std::optional<Counterexample> counterexample;
    bool as_expected() const { return holds == expected_holds; }
};

// The case generator of a check: n in [min_len, max_len] (shrinking toward min_len), input, permutation,
// weight seed and shift.
rc::Gen<Case> case_generator(const CheckOptions& opts);

// Evaluates one case: does the property hold on it? (both sides in opts.arithmetic)
Sides<double> evaluate_case(const LayerSpec& spec, Property property, const Case& c, Arithmetic arithmetic);

CheckResult check(const LayerSpec& spec, Property property, const CheckOptions& opts);

// The replay command line for a check.
std::string replay_command(const std::string& layer, Property property, const CheckOptions& opts);

// A readable multi-line description, for test failure messages and the terminal.
std::string describe(const Counterexample& c);
std::string format_matrix(const Mat<double>& m, const std::string& indent = "    ");

}  // namespace permcheck
