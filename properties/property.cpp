// What every property shares, and the one map from a property to its object.
#include "properties/property.h"

#include <algorithm>
#include <stdexcept>

namespace permcheck {

std::vector<Lengths> PropertyRules::lengths(const Signature& s, const PropertyArgs&, int cases, std::uint64_t seed) const {
    return signature_lengths(s, cases, seed);
}

void PropertyRules::draw(const Signature&, const PropertyArgs&, Case&, const rc::Random&, int, int) const {}

rc::Shrinkable<Case> PropertyRules::shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs&,
                                               Case c) const {
    return shrinkable_signature_case(s, std::move(c));
}

std::string PropertyRules::compared_text() const {
    const SideNames s = sides(true);
    return std::string(s.lhs) + " against " + s.rhs;
}

const PropertyRules& rules_of(Property p) {
    switch (p) {
        case Property::equivariance: return equivariance_rules();
        case Property::invariance: return invariance_rules();
        case Property::shift: return shift_rules();
        case Property::padding: return padding_rules();
        case Property::reversal: return reversal_rules();
        case Property::causal_prefix: return causal_prefix_rules();
        case Property::causal: return causal_rules();
    }
    throw std::invalid_argument("no such property");
}

namespace properties {

bool along(const TensorSpec& t, const std::string& axis) {
    return std::any_of(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.axis == axis; });
}

Permutations identities(const Lengths& lengths) {
    Permutations perms;
    for (const auto& [axis, len] : lengths) perms[axis] = Permutation::identity(len);
    return perms;
}

std::string one_axis(const Signature& s, const std::string& given, const std::string& property) {
    for (const Axis& a : s.axes)
        if (a.name == given) return given;
    if (!given.empty()) throw std::invalid_argument("--property " + property + ": the signature has no axis '" + given + "'");
    if (s.axes.size() != 1)
        throw std::invalid_argument("--property " + property + " acts along one axis, and the signature has " +
                                    std::to_string(s.axes.size()) + ": name it");
    return s.axes.front().name;
}

Output one_tensor_output(Property p) { return p == Property::invariance ? Output::pooled : Output::sequence; }

}  // namespace properties

}  // namespace permcheck
