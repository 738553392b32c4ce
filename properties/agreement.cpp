// Agreement: the layer under audit and a reference implementation (the user's: a library's eager path, a port's
// original) answer the same inputs alike, L(x) = R(x). Nothing is transformed: the layer answers x, the reference
// answers x (the audit's second black box, audit_against in audit/signature_audit.h), and every output is compared
// entry by entry with the tolerance of the precision judged (the coarser of the two sides' when it is inferred from
// their answers), NaN equal only to NaN and an infinity only to itself. A side that raises where the other answers
// is the finding. By default the slots the masks pad are compared too (a fast path's NaN at a fully masked row
// against the reference's 0 is a disagreement); AuditOptions::skip_padded leaves them out, as libraries' own
// eager-against-fused tests do. Cases 1 and 2 take every axis at its longest, so that a disagreement that shows only past a length (a
// relative-position bucket's clamp, a window) is met within the first cases; a failing case shrinks to the shortest
// sequence that still disagrees.
#include "properties/property.h"

namespace permcheck {

namespace {

// Cases 1 .. kLongestCases take every axis at its largest length.
constexpr std::size_t kLongestCases = 2;

class Agreement : public PropertyRules {
public:
    const char* name() const override { return "agreement"; }
    const char* adjective() const override { return "in agreement with the reference"; }
    SideNames sides(bool) const override { return {"L(x)", "R(x)", "|L(x) - R(x)|"}; }
    std::vector<ProfileRowSpec> profile_rows(const Signature&, const PropertyArgs&) const override {
        return {{"agreement", "agrees with the reference (the same input to both)"}};
    }
    const char* meaning() const override {
        return "the layer and a reference implementation answer every input alike: L(x) = R(x)";
    }
    std::string case_text(const Case&) const override { return "the same input to both"; }
    bool permutes() const override { return false; }
    const char* output_claim() const override { return "equal to the reference's answer to the same input"; }
    const char* verdict_meaning(bool holds) const override {
        return holds ? "agrees with the reference" : "disagrees with the reference";
    }
    CallPlan plan() const override {
        return {.against_reference = true, .raising_is_finding = true, .non_finite_is_finding = false};
    }

    PropertyArgs completed_args(const Signature&, PropertyArgs a) const override {
        if (a.white_box)
            throw std::invalid_argument("--property agreement compares a layer with a reference implementation of "
                                        "yours: audit it (permcheck audit --reference-exec), a reference layer has "
                                        "no second implementation to agree with");
        return a;
    }

    LengthSchedule lengths(const Signature& s, const PropertyArgs&, int cases, std::uint64_t seed) const override {
        LengthSchedule l = signature_lengths(s, cases, seed);
        l.longest_at(1, kLongestCases);
        return l;
    }
    void draw(const Signature&, const PropertyArgs&, Case& c, const rc::Random&, int, int) const override {
        c.perms = identities(c.lengths);
    }

    Tensors transformed(const Signature&, const PropertyArgs&, const Case& c) const override { return c.inputs; }
    Tensor expected(const TensorSpec&, const Case&, const Tensor& y) const override { return y; }
};

}  // namespace

const PropertyRules& agreement_rules() {
    static const Agreement rules;
    return rules;
}

}  // namespace permcheck
