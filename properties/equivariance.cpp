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

namespace {
const PropertyOption kAlong{"--along", "along", "AXIS",
                            "this axis alone moves, every other axis left in place (an axis a sorted index input runs "
                            "along moves only as its re-sort says: --along nodes keeps each neighbourhood's edges in "
                            "their order); default: every axis moves",
                            {}};
const PropertyOption kKeepPositions{"--keep-positions", "keep_positions", "",
                                    "the position inputs left in place while the tokens move: holds when the layer "
                                    "is a bag of tokens, violated when it sees order (the profile's order-aware row)",
                                    {}};
}  // namespace

std::vector<PropertyOption> Equivariance::options() const { return {kAlong, kKeepPositions}; }

// Order only through the position inputs (every input moves, the ids with the tokens), and with a position input
// order-aware at all (the ids left in place).
std::vector<ProfileRowSpec> Equivariance::profile_rows(const Signature& s, const PropertyArgs&) const {
    const bool positions = std::any_of(s.inputs.begin(), s.inputs.end(),
                                       [](const TensorSpec& t) { return t.kind == TensorKind::position; });
    std::vector<ProfileRowSpec> rows{{"order-through-positions",
                                      positions ? "order only through the position inputs" : "equivariance (no position input)",
                                      {}, false, true, "", ""}};
    if (positions)
        rows.push_back({"order-aware", "order-aware at all (positions left in place)", {{kKeepPositions.keyword, "true"}},
                        false, false, "a bag of tokens: order reaches it by no route", "order-aware"});
    return rows;
}

PropertyArgs Equivariance::completed_args(const Signature& s, PropertyArgs a) const {
    a.axis = a.setting(kAlong.keyword, a.axis);
    if (a.setting(kKeepPositions.keyword) == "true") a.positions_stay = true;
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
