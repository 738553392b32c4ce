// Z3 proofs for the rational reference layers over named inputs (layers/signature_family.h): for each axis, "is
// some entry of L(g x) != g L(x) satisfiable?" (L(x) for an axis the output lacks) for the generators (0 1) and
// (0 1 ... len-1) of that axis acting alone, on symbolic inputs and weights with uninterpreted exp. unsat for both
// generators of every axis proves the property for the product of the axes' symmetric groups at those lengths
// (proofs-notes/generators.md, proofs-notes/smt-proofs.md). A layer with mask inputs gets one query per generator
// and per mask assignment that pads no line entirely (the masks concrete, moved with the tokens; the real inputs
// and weights symbolic): the axis is proved only when every one is unsat (proofs-notes/signature-layers.md). As
// for one-tensor layers (proofs/smt.h), the exact witness search runs first (an axis it refutes is not sent to
// Z3), and a sat model becomes the axis's witness when it violates in exact arithmetic with the real exp.
#pragma once

#include "layers/signature_family.h"
#include "proofs/smt.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace permcheck {

inline constexpr int kMaxProofLength = 8;  // of an axis

struct AxisProof {
    std::string axis;
    Property property = Property::equivariance;
    bool expected_holds = true;
    SmtVerdict verdict = SmtVerdict::unknown;
    // The axis's generators in order (with masks, each generator over every mask assignment), until one is not
    // unsat; with SmtOptions::keep_smtlib every query, those not sent to Z3 marked `asked = false`.
    std::vector<SmtQuery> queries;
    // When the exact witness search or a confirmed Z3 model (source z3_model) refuted the axis.
    std::optional<SignatureWitness> witness;
    bool as_expected() const { return verdict == (expected_holds ? SmtVerdict::proved : SmtVerdict::violated); }
};

struct SignatureSmtResult {
    std::string layer;
    std::map<std::string, int> lengths;
    std::vector<AxisProof> axes;
    int mask_assignments = 0;  // the mask assignments each generator is asked for (0: no mask input)
    double seconds = 0;
    bool as_expected() const { return !axes.empty() && std::ranges::all_of(axes, &AxisProof::as_expected); }
};

// Every axis at `length` (2 to 8). Throws std::invalid_argument for a family that is not rational (an edge_index,
// max aggregation) or with more than 12 mask entries.
SignatureSmtResult smt_prove_signature(const SignatureFamily& family, int length, const SmtOptions& opts = {});
std::string describe(const SignatureSmtResult& r);

}  // namespace permcheck
