// A property's name and what the theory expects of it for a layer family: the columns of the verdict matrix. Here,
// below check/, because a catalog entry states its own expectations.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace permcheck {

// A property, by its written name ("equivariance", "causal-prefix", "window"): how layers/ and cases/, below
// properties/, name one (a catalog row's expectation, a record). Which properties exist, what each does and says,
// is properties/' alone (properties/registry.cpp; rules_of, parse_property): nothing here lists them.
class Property {
public:
    explicit Property(std::string name) : name_(std::move(name)) {}
    const std::string& name() const { return name_; }
    friend bool operator==(const Property& a, const Property& b) { return a.name_ == b.name_; }
    friend bool operator!=(const Property& a, const Property& b) { return a.name_ != b.name_; }
    friend bool operator<(const Property& a, const Property& b) { return a.name_ < b.name_; }

private:
    std::string name_;
};
inline const char* property_name(const Property& p) { return p.name().c_str(); }
// Compiled with properties/ (registry.cpp), declared here for the public headers, which include no RapidCheck:
// every registered property in `permcheck list` order; the property named `name` (std::invalid_argument listing
// the valid names otherwise); the word a message uses for it ("permutation-equivariant", "window-limited").
std::vector<Property> all_properties();
Property parse_property(const std::string& name);
const char* property_adjective(const Property& p);

// A chunked request (the incremental property): besides the signature's inputs, an entry named kChunksInput + AXIS
// whose values are the ends of the chunks along AXIS (ascending, the last the axis's length); a layer that decoded the
// request chunk by chunk, in order, answers besides its outputs an entry named kChunkedAnswer (an adapter says
// "chunked": true). No name of a signature starts with '#'.
inline const std::string kChunksInput = "#chunks:";
inline const std::string kChunkedAnswer = "#chunked";

// What a layer answers: n rows, one per position (a sequence layer), or one vector (a pooled layer).
enum class Output { sequence, pooled };

// A property that applies to a layer family along one of its axes (equivariance when the family's outputs have the
// axis, invariance when they lack it; for shift, the axis of the positions; for padding, the padded one), with the
// verdict the theory expects (true = holds): a row of the verdict table.
struct Expectation {
    Property property;
    std::string axis;
    bool holds = true;
};

}  // namespace permcheck
