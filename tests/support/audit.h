// Small helpers the audit tests share (tests/test_audit_engine.cpp, test_exec_adapter.cpp, test_signature.cpp,
// test_taps.cpp, test_position_audit.cpp): one definition each, since permcheck_audit_tests compiles its files in
// batches (unity builds), where two file-local copies of a name collide.
#pragma once

#include "check/blackbox.h"
#include "check/signature.h"
#include "check/vocabulary.h"

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
    std::string text = std::string(verdict_name(r.verdict)) + ": " + r.detail + r.error + "\n";
    if (r.signature_counterexample) text += describe(*r.signature_counterexample, s);
    return text;
}

}  // namespace permcheck::test
