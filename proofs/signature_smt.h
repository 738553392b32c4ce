// Z3 proofs for the rational reference layers over named inputs (layers/signature_family.h): for each axis,
// "is some entry of L(g x) != g L(x) satisfiable?" (L(x) for an axis the output lacks) for the generators (0 1)
// and (0 1 ... len-1) of that axis acting alone, on symbolic inputs and weights with uninterpreted exp. unsat for
// both generators of every axis proves the property for the product of the axes' symmetric groups at those
// lengths (proofs-notes/generators.md, proofs-notes/smt-proofs.md). The exact witness search runs first, as for
// one-tensor layers; an axis it refutes is not sent to Z3. A sat answer is reported, not confirmed: for these
// layers a model is not turned into a witness (the exact witness search is what refutes them).
#pragma once

#include "layers/signature_family.h"
#include "proofs/smt.h"

#include <string>
#include <vector>

namespace permcheck {

struct AxisProof {
    std::string axis;
    Property property = Property::equivariance;
    bool expected_holds = true;
    SmtVerdict verdict = SmtVerdict::unknown;
    std::vector<SmtQuery> queries;  // the axis's generators, in order, until one is not unsat
    std::string witness;            // when the exact witness search refuted the axis
    bool as_expected() const {
        return expected_holds ? verdict == SmtVerdict::proved : verdict == SmtVerdict::violated;
    }
};

struct SignatureSmtResult {
    std::string layer;
    std::map<std::string, int> lengths;
    std::vector<AxisProof> axes;
    double seconds = 0;
    bool as_expected() const;
};

// Every axis at `length` (2 to 8). Throws std::invalid_argument for a family that is not rational or has a mask.
SignatureSmtResult smt_prove_signature(const SignatureFamily& family, int length, const SmtOptions& opts = {});
std::string describe(const SignatureSmtResult& r);

}  // namespace permcheck
