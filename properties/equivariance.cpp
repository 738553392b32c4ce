// Equivariance: L(P x) = P L(x) along every axis an output has, L(P x) = L(x) for the axes it lacks; a permutation
// per axis moves every input along that axis (a pairwise input P B P^T, an index input's values renumbered:
// cases/signature.h). With `positions_stay` the position inputs stay where they are while the rest moves: "holds"
// then says the layer is a bag of tokens. Along one named axis (a row of the verdict table) the others stay.
// proofs-notes/equivariance.md, proofs-notes/signature-audit.md.
#include "properties/equivariance.h"

#include <algorithm>

namespace permcheck {

SideNames Equivariance::sides(bool moves) const {
    if (!moves) return {"L(P x)", "L(x)", "|L(P x) - L(x)|"};
    return {"L(P x)", "P L(x)", "|L(P x) - P L(x)|"};
}

std::string Equivariance::case_text(const Case& c) const { return "permutations " + format_permutations(c.perms); }

Property Equivariance::recorded_as(const Signature& s, const PropertyArgs& a) const {
    const auto moves = [&](const TensorSpec& t) {
        return std::any_of(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.is_axis() && (a.axis.empty() || d.axis == a.axis); });
    };
    return std::any_of(s.outputs.begin(), s.outputs.end(), moves) ? Property{"equivariance"} : Property{"invariance"};
}

PropertyArgs Equivariance::completed_args(const Signature& s, PropertyArgs a) const {
    if (a.pads != PadPlacement::any) throw std::invalid_argument("--padding and --padding-axis go with --property padding");
    if (!a.axis.empty()) a.axis = properties::one_axis(s, a.axis, property_name(id()));
    return a;
}

void Equivariance::draw(const Signature&, const PropertyArgs& a, Case& c, const rc::Random&, int, int) const {
    if (a.axis.empty()) return;
    for (auto& [axis, p] : c.perms)
        if (axis != a.axis) p = Permutation::identity(p.size());
}

PropertyArgs OneAxisEquivariance::completed_args(const Signature& s, PropertyArgs a) const {
    if (!a.white_box)
        throw std::invalid_argument(std::string("--property ") + property_name(id()) +
                                    " is a property of the reference layers (permcheck check); audits take "
                                    "equivariance (invariance for outputs without an axis), shift or padding");
    a.axis = properties::one_axis(s, a.axis, property_name(id()));
    properties::refuse_sorted_along(s, "", property_name(id()), "this property moves positions in a fixed pattern");
    return a;
}

Tensors Equivariance::transformed(const Signature& s, const PropertyArgs& a, const Case& c) const {
    Tensors px = permute_inputs(s, c.perms, c.inputs);
    if (a.positions_stay)
        for (const TensorSpec& t : s.inputs)
            if (t.kind == TensorKind::position) px[t.name] = c.inputs.at(t.name);
    return px;
}

Tensor Equivariance::expected(const TensorSpec& t, const Case& c, const Tensor& y) const {
    return permute_output(t, c.perms, y);
}

const PropertyRules& equivariance_rules() {
    static const Equivariance rules;
    return rules;
}

}  // namespace permcheck
