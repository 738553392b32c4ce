// Small helpers the audit tests share (tests/test_audit_engine.cpp, test_exec_adapter.cpp, test_signature.cpp,
// test_taps.cpp, test_position_audit.cpp): one definition each, since permcheck_audit_tests compiles its files in
// batches (unity builds), where two file-local copies of a name collide.
#pragma once

#include "audit/blackbox.h"
#include "cases/signature.h"
#include "cases/vocabulary.h"
#include "report/text.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace permcheck::test {

// A seeded audit of `cases` cases (seed 3), every other option as a user who sets nothing gets it.
inline AuditOptions seeded(int cases = 100) {
    AuditOptions o;
    o.cases = cases;
    o.seed = 3;
    return o;
}

// A tensor from its shape and row-major values.
inline Tensor tensor(std::vector<int> shape, std::vector<double> values) {
    return Tensor{std::move(shape), std::move(values)};
}

// "verdict: detail error" and the counterexample, as a failed assertion shows an audit's result.
inline std::string finding(const AuditResult& r, const Signature& s) {
    std::string text = std::string(verdict_name(r.verdict)) + ": " + detail_text(r) + r.error + "\n";
    if (r.counterexample) text += describe(*r.counterexample, s, finding_words(r.property, r.verdict, *r.counterexample));
    return text;
}

// The finding of an audit of the one-tensor form (or any audit with a signature of its own), for failure messages.
inline std::string finding(const AuditResult& r) { return std::string(verdict_name(r.verdict)) + ": " + detail_text(r) + r.error + "\n" + describe_finding(r); }

// The largest fraction of its tolerance an output of a counterexample came to (> 1: violated).
inline double margin(const Counterexample& c) {
    double m = 0.0;
    for (const OutputComparison& o : c.outputs)
        m = std::max(m, o.max_abs_diff == 0.0 ? 0.0 : o.tolerance > 0.0 ? o.max_abs_diff / o.tolerance : 1e300);
    return m;
}

// A one-tensor audit's finding as the shorthand's matrices: x, both sides of y (one row for a pooled output), the
// permutation of n.
struct MatrixFinding {
    Mat<double> x, lhs, rhs;
    Permutation perm;
    Eigen::Index n() const { return x.rows(); }
};
inline MatrixFinding matrices(const AuditResult& r) {
    const Counterexample& c = r.counterexample.value();
    const OutputComparison& y = c.outputs.at(0);
    return {tensor_matrix::as_matrix(c.inputs.at("x")), tensor_matrix::as_matrix(y.layer_of_permuted),
            tensor_matrix::as_matrix(y.permuted_layer), c.perms.at("n")};
}

}  // namespace permcheck::test
