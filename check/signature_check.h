// The white-box check of a signature family (layers/signature_family.h), one axis at a time: the rows of the
// verdict table for layers over several named inputs. Cases are the signature audit's (check/signature_case.h:
// lengths per axis, inputs with ties, masks, random graphs) with every axis but the checked one left alone; both
// sides are computed in the arithmetic asked for, float64 with the signature audit's tolerance or exact
// (mpq_rational, exp the exact value of std::exp of the double) with none, and a failure is shrunk with the
// signature case's shrinker (proofs-notes/signature-audit.md).
#pragma once

#include "check/signature.h"
#include "check/vocabulary.h"
#include "layers/signature_family.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace permcheck {

struct SignatureCheckOptions {
    int cases = 100;
    std::uint64_t seed = 1;
    Arithmetic arithmetic = Arithmetic::float64;  // float64 | exact
    int max_shrink_evaluations = 400;
    std::function<bool()> stop_requested;         // asked between cases and shrink steps
};

struct SignatureCheckResult {
    std::string layer, axis;
    // equivariance when the output has the axis, else invariance; or the row's shift or padding
    Property property = Property::equivariance;
    Arithmetic dtype = Arithmetic::float64;
    bool expected_holds = true;
    bool holds = true;
    // cases evaluated (for equivariance, a case whose permutation of the axis is the identity is not one)
    int cases_run = 0;
    bool interrupted = false;
    std::optional<SignatureCounterexample> counterexample;  // shrunk; only `axis` is permuted (shift, padding: none)
    bool as_expected() const { return holds == expected_holds; }
};

// The family's signature, parsed from its flags' texts; validated.
Signature signature_of(const SignatureFamily& family);
// The property along `axis`: equivariance when every output has the axis, invariance when none has it.
Property property_along(const Signature& s, const std::string& axis);
// A row of the verdict table: for equivariance or invariance, searches for a case where permuting `row.axis` alone
// breaks the property; for shift or padding (along `row.axis`), for a shifted or padded case whose outputs differ
// (properties/: the audit's transformations, draws and shrinks, pads placed anywhere); and shrinks it.
// The verdict expected is row.holds.
SignatureCheckResult check_signature(const SignatureFamily& family, const AxisExpectation& row,
                                     const SignatureCheckOptions& opts);
// The row of equivariance (invariance) along `axis`, with the family's expectation.
SignatureCheckResult check_signature(const SignatureFamily& family, const std::string& axis,
                                     const SignatureCheckOptions& opts);

// One case of a signature family in scalar S, the weights the dyadic draws of `weight_seed`: every output's
// L(P x) against P L(x) (L(x) along the axes it lacks), both sides as doubles. Exact for Rational.
template <class S>
std::vector<OutputComparison> compare_signature_case(const SignatureFamily& family, const Signature& s,
                                                     const Lengths& lengths, const Permutations& perms,
                                                     const Tensors& inputs, std::uint64_t weight_seed);

// P y along the output's axes, in any scalar: y's values moved to where permute_output moves their indices.
template <class S>
NamedTensor<S> permuted_output(const TensorSpec& spec, const Permutations& perms, const NamedTensor<S>& y) {
    Tensor where{y.shape, {}};
    for (std::size_t k = 0; k < y.values.size(); ++k) where.values.push_back(static_cast<double>(k));
    const Tensor moved = permute_output(spec, perms, where);
    NamedTensor<S> out{y.shape, {}};
    for (double k : moved.values) out.values.push_back(y.values[static_cast<std::size_t>(k)]);
    return out;
}

// P x for a signature whose inputs are real or masks, in any scalar (the certificates' inputs): permute_inputs on
// the inputs' indices. Throws std::invalid_argument for an index input, whose values are renumbered.
template <class S>
NamedTensors<S> permuted_real_inputs(const Signature& s, const Permutations& perms, const NamedTensors<S>& x) {
    Tensors where;
    for (const TensorSpec& spec : s.inputs) {
        if (spec.kind == TensorKind::index)
            throw std::invalid_argument("input '" + spec.name + "' is an index: its values do not move as positions");
        const NamedTensor<S>& t = x.at(spec.name);
        Tensor& w = where[spec.name];
        w.shape = t.shape;
        for (std::size_t k = 0; k < t.values.size(); ++k) w.values.push_back(static_cast<double>(k));
    }
    NamedTensors<S> out;
    for (const auto& [name, moved] : permute_inputs(s, perms, where)) {
        NamedTensor<S>& o = out[name];
        o.shape = moved.shape;
        for (double k : moved.values) o.values.push_back(x.at(name).values[static_cast<std::size_t>(k)]);
    }
    return out;
}

}  // namespace permcheck
