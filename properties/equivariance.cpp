// Equivariance: L(P x) = P L(x) along every axis an output has, L(P x) = L(x) for the axes it lacks; a permutation
// per axis moves every input along that axis (a pairwise input P B P^T, an index input's values renumbered:
// cases/signature.h). With `positions_stay` the position inputs stay where they are while the rest moves: "holds"
// then says the layer is a bag of tokens. Along one named axis (a row of the verdict table) the others stay.
// proofs-notes/equivariance.md, proofs-notes/signature-audit.md.
#include "properties/equivariance.h"

#include <algorithm>
#include <optional>

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
// order-aware at all (the ids left in place). In a layer the causal row found causal, order reaches the output by
// row index through the mask; whether through the mask alone is what the rows run before checked: the gaps row (the
// ids ignored, so the row index carries the order), a left pad moving every row with the ids kept, a pad between
// tokens changing the distances between rows.
std::vector<ProfileRowSpec> Equivariance::profile_rows(const Signature& s, const PropertyArgs&) const {
    const bool positions = has_position_input(s);
    const auto by_row = [](bool holds, const RowVerdicts& before) -> std::string {
        const auto row = [&](const char* id) {
            const auto it = before.find(id);
            return it == before.end() ? std::optional<bool>() : std::optional<bool>(it->second);
        };
        if (holds || row("causal") != true) return "";
        if (row("padding-left") == false || row("padding-right") == false)
            return "order by row index beyond the causal mask (a pad, every position id kept, changed an output)";
        if (row("position-ids") == true)
            return "order by row index, the position ids ignored (the gaps row held): through the causal mask or an "
                   "encoding of the row";
        if (row("padding-any") == true)
            return "order by row index through the causal mask alone (the causal and padding rows held)";
        if (row("padding-any") == false)
            return "order by the distances between rows beyond the causal mask (a pad between tokens changed an "
                   "output: a sliding window, a bias by row distance)";
        return "order by row index: the causal mask at least (whether alone was not checked: no padding row)";
    };
    std::vector<ProfileRowSpec> rows{{"order-through-positions",
                                      positions ? "order only through position inputs (tokens permuted with them)"
                                                : "equivariance (tokens permuted)",
                                      {}, 2, by_row}};
    if (positions)
        rows.push_back({"order-aware", "order-aware at all (tokens permuted, ids left in place)",
                        {{kKeepPositions.keyword, "true"}}, 2, [](bool holds, const RowVerdicts&) {
                            return std::string(holds ? "a bag of tokens: order reaches it by no route" : "order-aware");
                        }});
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
