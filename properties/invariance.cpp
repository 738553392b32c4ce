// Invariance: L(P x) = L(x), for outputs that lack the axes a permutation moves (a pooled layer, a graph readout).
// The same transformation as equivariance, whose expected side is already L(x) for such an output; only the words
// differ.
#include "properties/equivariance.h"

namespace permcheck {

namespace {
class Invariance : public Equivariance {
public:
    const char* name() const override { return "invariance"; }
    const char* adjective() const override { return "invariant"; }
    SideNames sides(bool) const override { return Equivariance::sides(false); }
    const char* meaning() const override { return "L(P x) = L(x): a pooled output ignores the order"; }
    // Its rows are equivariance's, whose audit judges an output without an axis as invariance.
    std::vector<ProfileRowSpec> profile_rows(const Signature&, const PropertyArgs&) const override { return {}; }
};
}  // namespace

const PropertyRules& invariance_rules() {
    static const Invariance rules;
    return rules;
}

}  // namespace permcheck
