// Causal: no output sees a later token. The sequence cut after k positions (1 <= k < n) leaves the first k outputs
// alone, L(x[:k]) = L(x)[:k]: every input along the sequence axis is truncated to its first k positions (masks,
// token ids, position ids and reals; a pairwise input in both dims), every output along the axis compared at
// [0, k), outputs without the axis not compared. Slots the case's own masks pad are left out (a query that sees no
// key attends uniformly, later keys included). A failure shrinks to the shortest sequence, then the smallest k: a
// layer that sees the next token shrinks to n = 2, k = 1. proofs-notes/causality.md.
#include "properties/cuts.h"
#include "properties/property.h"

#include <algorithm>
#include <set>

namespace permcheck {

namespace {

using properties::cuts_of;

// The case's inputs cut to the prefix [0, k) (a planted harness bug keeps position k, a later token, in place of
// k - 1).
Tensors cut_inputs(const Signature& s, const Tensors& inputs, const std::string& axis, int k) {
    if (test_only::planted_harness_bug() != test_only::HarnessBug::cut_keeps_later)
        return properties::span_of(s, inputs, axis, 0, k);
    Tensors out;
    for (const TensorSpec& t : s.inputs) {
        const Tensor& x = inputs.at(t.name);
        std::set<int> gone{k - 1};
        for (int i = k + 1; i < kMaxAxisLen; ++i) gone.insert(i);
        out[t.name] = properties::without_along(t, x, axis, gone);
    }
    return out;
}

int cut_of(const Case& c) {
    const auto cuts = cuts_of(c);
    return cuts && !cuts->at.empty() ? cuts->at.front() : 0;
}

Case with_cut(Case c, const std::string& axis, int k) {
    properties::put_cuts(c, {axis, {k}});
    return c;
}

// One step: a shorter sequence (its cut moved inside it), then a smaller cut.
rc::Seq<Case> causal_shrinks(const std::shared_ptr<const Signature>& s, const Case& c) {
    const std::string axis = cuts_of(c)->axis;
    const int k = cut_of(c);
    auto shorter = rc::seq::mapMaybe(signature_case_shrinks(s, c), [axis, k](Case m) {
        const int n = m.lengths.at(axis);
        if (n < 2) return rc::Maybe<Case>();
        m.perms = identities(m.lengths);
        return rc::Maybe<Case>(with_cut(std::move(m), axis, std::min(k, n - 1)));
    });
    std::vector<Case> smaller_cut;
    for (int to : std::set<int>{1, k / 2, k - 1})
        if (to >= 1 && to < k) smaller_cut.push_back(with_cut(c, axis, to));
    return rc::seq::concat(std::move(shorter), rc::seq::fromContainer(std::move(smaller_cut)));
}

class Causal : public PropertyRules {
public:
    const char* name() const override { return "causal"; }
    const char* adjective() const override { return "causal"; }
    SideNames sides(bool) const override { return {"L(x[:k])", "L(x)[:k]", "|L(x[:k]) - L(x)[:k]|"}; }
    const char* meaning() const override {
        return "no output sees a later token: cutting the sequence after k positions leaves the first k outputs unchanged";
    }
    std::string case_text(const Case& c) const override {
        const auto cuts = cuts_of(c);
        if (!cuts) return "no cut";
        return "cut " + cuts->axis + " after k = " + std::to_string(cut_of(c)) + " of " +
               std::to_string(c.lengths.at(cuts->axis)) + " positions";
    }
    bool permutes() const override { return false; }
    std::vector<PropertyOption> options() const override { return {properties::sequence_axis_option()}; }
    std::vector<ProfileRowSpec> profile_rows(const Signature& s, const PropertyArgs& a) const override {
        if (!properties::applies(*this, s, a)) return {};
        return {{"causal", "causal (tokens after a cut redrawn)", a.settings, 0}};
    }
    CallPlan plan() const override { return {.judges_outputs_without_axes = false}; }
    const char* output_claim() const override { return "unchanged at its first k positions when the sequence is cut after k"; }
    std::string compared_text() const override { return "L(x[:k]) against the first k positions of L(x)"; }
    const char* verdict_meaning(bool holds) const override { return holds ? "causal" : "sees later tokens"; }

    PropertyArgs completed_args(const Signature& s, PropertyArgs a) const override {
        a.axis = properties::sequence_axis(s, a, "causal");
        properties::require_sequence_axis(s, a.axis, "causal");
        return a;
    }

    // Every length with the sequence axis at 2 or more (room for a cut).
    LengthSchedule lengths(const Signature& s, const PropertyArgs& a, int cases, std::uint64_t seed) const override {
        return properties::lengths_with_room_to_cut(s, a.axis, cases, seed);
    }

    // k uniform in [1, n - 1], moved up to the first cut whose prefix keeps a real position when the masks pad the
    // start (left padding).
    void draw(const Signature& s, const PropertyArgs& a, Case& c, const rc::Random& random, int, int) const override {
        rc::Random own(random);
        own.split();
        gen::Sampler draw(own.split(), 100);
        c.perms = identities(c.lengths);
        const int n = c.lengths.at(a.axis);
        int k = draw.uniform(1, std::max(n, 2));
        while (k + 1 < n && !masks_keep_a_position(s, cut_inputs(s, c.inputs, a.axis, k))) ++k;
        properties::put_cuts(c, {a.axis, {k}});
    }

    Tensors transformed(const Signature& s, const PropertyArgs&, const Case& c) const override {
        const auto cuts = cuts_of(c);
        if (!cuts) throw std::invalid_argument("a causal case without its cut");
        return cut_inputs(s, c.inputs, cuts->axis, cut_of(c));
    }
    Lengths transformed_lengths(const Case& c) const override {
        Lengths l = c.lengths;
        if (const auto cuts = cuts_of(c)) l[cuts->axis] = cut_of(c);
        return l;
    }
    Tensor expected(const TensorSpec& t, const Case& c, const Tensor& y) const override {
        const auto cuts = cuts_of(c);
        return cuts ? properties::span_along(t, y, cuts->axis, 0, cut_of(c)) : y;
    }
    // Outputs without the sequence axis, and the slots the prefix's masks pad.
    std::vector<bool> ignored(const Signature& s, const Case& c, const TensorSpec& output,
                              const std::vector<int>& shape) const override {
        const auto cuts = cuts_of(c);
        if (!cuts) return {};
        return properties::ignored_off_axis(s, cut_inputs(s, c.inputs, cuts->axis, cut_of(c)), cuts->axis, output, shape);
    }

    rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs&, Case c) const override {
        if (!cuts_of(c)) return shrinkable_signature_case(s, std::move(c));  // an input answered twice: no cut
        return rc::shrinkable::shrinkRecur(std::move(c), [s](const Case& k) { return causal_shrinks(s, k); });
    }
    void validate_saved(const Signature& s, const Case& c) const override {
        const auto cuts = cuts_of(c);
        if (!cuts || cuts->at.size() != 1) throw std::invalid_argument("the saved causal case has no cut");
        const auto n = c.lengths.find(cuts->axis);
        if (n == c.lengths.end() || std::none_of(s.axes.begin(), s.axes.end(), [&](const Axis& x) { return x.name == cuts->axis; }))
            throw std::invalid_argument("the saved cut names no axis of the signature");
        if (cut_of(c) < 1 || cut_of(c) >= n->second)
            throw std::invalid_argument("the saved cut k = " + std::to_string(cut_of(c)) + " is not in [1, n - 1] for n = " +
                                        std::to_string(n->second));
    }
};

}  // namespace

const PropertyRules& causal_rules() {
    static const Causal rules;
    return rules;
}

}  // namespace permcheck
