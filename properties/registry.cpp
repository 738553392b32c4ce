// The one registration of every property: the list below, in the order `permcheck list`, the --property choices
// and `permcheck describe` show. Each object is a static of its own file in this folder; a new property adds its
// file and one line here (docs/ARCHITECTURE.md, "A new property").
#include "properties/property.h"

#include <stdexcept>

namespace permcheck {

const PropertyRules& equivariance_rules();
const PropertyRules& invariance_rules();
const PropertyRules& shift_rules();
const PropertyRules& reversal_rules();
const PropertyRules& causal_prefix_rules();
const PropertyRules& padding_rules();
const PropertyRules& causal_rules();
const PropertyRules& packing_rules();
const PropertyRules& incremental_rules();
const PropertyRules& agreement_rules();
const PropertyRules& window_rules();
const PropertyRules& gaps_rules();

const std::vector<const PropertyRules*>& registered_properties() {
    static const std::vector<const PropertyRules*> all{
        &equivariance_rules(), &invariance_rules(), &shift_rules(),       &reversal_rules(),
        &causal_prefix_rules(), &padding_rules(),   &causal_rules(),      &packing_rules(),
        &incremental_rules(),  &agreement_rules(),  &window_rules(),     &gaps_rules()};
    return all;
}

std::vector<Property> all_properties() {
    std::vector<Property> all;
    for (const PropertyRules* p : registered_properties()) all.push_back(p->id());
    return all;
}

Property parse_property(const std::string& name) {
    std::string names;
    for (const PropertyRules* p : registered_properties()) {
        if (name == p->name()) return p->id();
        names += (names.empty() ? "" : ", ") + std::string(p->name());
    }
    throw std::invalid_argument("unknown property '" + name + "'; valid properties: " + names);
}

const PropertyRules& rules_of(const Property& p) {
    for (const PropertyRules* r : registered_properties())
        if (p.name() == r->name()) return *r;
    return rules_of(parse_property(p.name()));  // throws, naming the valid ones
}

const char* property_adjective(const Property& p) { return rules_of(p).adjective(); }

long setting_in(const PropertyArgs& a, const PropertyOption& option, long low, long high, long fallback) {
    const auto given = a.settings.find(option.keyword);
    if (given == a.settings.end()) return fallback;
    const std::string bad = std::string(option.flag) + " takes an integer in [" + std::to_string(low) + ", " +
                            std::to_string(high) + "], got '" + given->second + "'";
    std::size_t used = 0;
    long v = 0;
    try {
        v = std::stol(given->second, &used);
    } catch (const std::exception&) {
        throw std::invalid_argument(bad);
    }
    if (used != given->second.size() || v < low || v > high) throw std::invalid_argument(bad);
    return v;
}

}  // namespace permcheck
