// Reversal: L(R x) = R L(x) for the reversal R of the sequence axis, what a relative position signal symmetric in
// the offset keeps (ALiBi's |i - j|) and one that is not breaks (RoPE, T5 buckets). A property of the reference
// layers: their verdict table asks it. proofs-notes/relative-position.md.
#include "properties/equivariance.h"

namespace permcheck {

namespace {

// The case with its axis reversed and every other axis left alone.
Case reversed(Case c, const std::string& axis) {
    for (auto& [name, p] : c.perms)
        p = name == axis ? Permutation::reversal(c.lengths.at(name)) : Permutation::identity(c.lengths.at(name));
    return c;
}

class Reversal : public OneAxisEquivariance {
public:
    const char* name() const override { return "reversal"; }
    const char* adjective() const override { return "reversal-equivariant"; }
    const char* meaning() const override { return "L(R x) = R L(x) for the reversal R"; }
    void draw(const Signature&, const PropertyArgs& a, Case& c, const rc::Random&, int, int) const override {
        c = reversed(std::move(c), a.axis);
    }
    // Shorter and simpler cases, each reversed again; moving a position back would only undo the reversal.
    rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs& a, Case c) const override {
        return rc::shrinkable::shrinkRecur(std::move(c), [s, axis = a.axis](const Case& k) {
            const auto shared = std::make_shared<const Case>(k);
            auto changed = rc::seq::filter(signature_case_shrinks(s, k), [shared](const Case& m) {
                return m.lengths != shared->lengths || !same_values(m.inputs, shared->inputs);
            });
            return rc::seq::map(std::move(changed), [axis](Case m) { return reversed(std::move(m), axis); });
        });
    }
};

}  // namespace

const PropertyRules& reversal_rules() {
    static const Reversal rules;
    return rules;
}

}  // namespace permcheck
