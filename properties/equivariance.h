// Equivariance (and invariance, its outputs without an axis): the permuting property the others build on.
#pragma once

#include "properties/property.h"

namespace permcheck {

class Equivariance : public PropertyRules {
public:
    const char* name() const override { return "equivariance"; }
    const char* adjective() const override { return "equivariant"; }
    SideNames sides(bool moves) const override;
    const char* meaning() const override { return "L(P x) = P L(x): reordering the input reorders the output"; }
    std::string case_text(const Case& c) const override;
    Property recorded_as(const Signature& s, const PropertyArgs& a) const override;
    PropertyArgs completed_args(const Signature& s, PropertyArgs a) const override;
    void draw(const Signature& s, const PropertyArgs& a, Case& c, const rc::Random& random, int index,
              int cases) const override;
    Tensors transformed(const Signature& s, const PropertyArgs& a, const Case& c) const override;
    Tensor expected(const TensorSpec& t, const Case& c, const Tensor& y) const override;
    bool decided_by_generators() const override { return true; }
    std::string compared_text() const override { return "L(P x) against P L(x) (L(x) for the axes an output lacks)"; }
    const char* verdict_meaning(bool holds) const override {
        return holds ? "order only through the data" : "order by another route";
    }
    std::vector<PropertyOption> options() const override;
    std::vector<ProfileRowSpec> profile_rows(const Signature& s, const PropertyArgs& a) const override;
};

// A permuting property of the reference layers only, along one axis, whose permutations are one or a subgroup of
// their own (reversal, causal prefix): the generators of the symmetric group decide nothing of it.
class OneAxisEquivariance : public Equivariance {
public:
    bool decided_by_generators() const override { return false; }
    bool audits_black_boxes() const override { return false; }
    std::vector<PropertyOption> options() const override { return {}; }
    std::vector<ProfileRowSpec> profile_rows(const Signature&, const PropertyArgs&) const override { return {}; }
    PropertyArgs completed_args(const Signature& s, PropertyArgs a) const override;
};

}  // namespace permcheck
