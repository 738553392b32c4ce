// Gaps: widening a gap between the position ids changes nothing, L(x_g) = L(x). x_g is x with every position id from
// the k-th smallest distinct id on moved up by g >= 1 (over every position input, so equal ids stay equal and the
// ids keep their order); everything else unchanged. A layer holds when its position ids do not reach its output
// but through their order (it ignores them: a variant that applies its rotary phases at the row index); it is
// violated at n = 2 when they do (relative or absolute), so the profile's row tells "the position ids reach the
// output" from "they are ignored", which shift alone cannot (an ignored id shifts for free). k is drawn over the
// distinct ids, g log-uniform up to the room the ids leave below P; both shrink toward 1.
#include "properties/property.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace permcheck {

namespace {

long gap_of(const Case& c) { return c.part.number("gap"); }
long rank_of(const Case& c) { return c.part.number("gap_rank", 1); }

// The distinct position ids of every position input, ascending.
std::vector<double> distinct_ids(const Signature& s, const Tensors& inputs) {
    std::set<double> ids;
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::position) ids.insert(inputs.at(t.name).values.begin(), inputs.at(t.name).values.end());
    return {ids.begin(), ids.end()};
}

// How far the largest id may move up: P - 1 - (the largest id), the least over the position inputs.
long room_above(const Signature& s, const Tensors& inputs) {
    const std::vector<double> ids = distinct_ids(s, inputs);
    long room = -1;
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::position) {
            const long r = t.limit - 1 - (ids.empty() ? 0 : static_cast<long>(ids.back()));
            room = room < 0 ? r : std::min(room, r);
        }
    return room;
}

const std::string& first_position_axis(const Signature& s) {
    static const std::string none;
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::position) return position_axis(t);
    return none;
}

rc::Seq<Case> gap_shrinks(const std::shared_ptr<const Signature>& s, const Case& c) {
    std::vector<Case> smaller;
    properties::smaller_numbers(c, "gap", smaller);
    properties::smaller_numbers(c, "gap_rank", smaller);
    return rc::seq::concat(rc::seq::fromContainer(std::move(smaller)), signature_case_shrinks(s, c));
}

std::string ordinal(long k) {
    const long tens = k % 100, ones = k % 10;
    const char* suffix = tens >= 11 && tens <= 13 ? "th" : ones == 1 ? "st" : ones == 2 ? "nd" : ones == 3 ? "rd" : "th";
    return std::to_string(k) + suffix;
}

class Gaps : public PropertyRules {
public:
    const char* name() const override { return "gaps"; }
    const char* adjective() const override { return "blind to the gaps between its position ids"; }
    SideNames sides(bool) const override { return {"L(x_g)", "L(x)", "|L(x_g) - L(x)|"}; }
    const char* meaning() const override { return "widening a gap between the position ids changes nothing"; }
    std::string case_text(const Case& c) const override {
        return "every position id from the " + ordinal(rank_of(c) + 1) + " smallest on + " + std::to_string(gap_of(c));
    }
    bool permutes() const override { return false; }
    const char* output_claim() const override { return "unchanged when a gap between the position ids widens"; }
    const char* verdict_meaning(bool holds) const override {
        return holds ? "position ids ignored (but for their order)" : "the position ids reach the output";
    }

    std::vector<ProfileRowSpec> profile_rows(const Signature& s, const PropertyArgs& a) const override {
        if (!properties::applies(*this, s, a)) return {};
        return {{"position-ids", "position ids reach the output (a gap widened)", {}, 1}};
    }

    PropertyArgs completed_args(const Signature& s, PropertyArgs a) const override {
        if (!has_position_input(s))
            throw std::invalid_argument("--property gaps needs a position input (--input NAME:DIMS:position)");
        a.axis = first_position_axis(s);
        for (const TensorSpec& t : s.inputs)
            for (const Axis& x : s.axes)
                if (t.kind == TensorKind::position && x.name == position_axis(t) && x.max_len >= t.limit)
                    throw std::invalid_argument("--property gaps: the axis " + x.name + " reaches " +
                                                std::to_string(x.max_len) + " positions, which leaves no room to "
                                                "widen a gap between " + t.name + "'s P = " +
                                                std::to_string(t.limit) + " position ids (a smaller MAX, or position=P)");
        return a;
    }

    // Two positions at least: one id has no gap.
    LengthSchedule lengths(const Signature& s, const PropertyArgs& a, int cases, std::uint64_t seed) const override {
        return properties::lengths_with_room_to_cut(s, a.axis, cases, seed);
    }

    void draw(const Signature& s, const PropertyArgs&, Case& c, const rc::Random& random, int index,
              int cases) const override {
        rc::Random own(random);
        own.split();
        gen::Sampler draw(own.split(), 100);
        c.perms = identities(c.lengths);
        const long distinct = static_cast<long>(distinct_ids(s, c.inputs).size());
        const long room = room_above(s, c.inputs);
        c.part.numbers["gap_rank"] = distinct < 2 ? 1 : draw.uniform(1, static_cast<int>(distinct));
        if (room < 1 || distinct < 2) {  // nothing to widen: the case tests nothing
            c.part.numbers["gap"] = 0;
            return;
        }
        const double top = std::pow(static_cast<double>(room), static_cast<double>(index + 1) / std::max(cases, 1));
        const double u = draw.uniform(0, 1 << 20) / static_cast<double>(1 << 20);
        c.part.numbers["gap"] = std::clamp(static_cast<long>(std::exp(u * std::log(std::max(top, 1.0)))), 1L, room);
    }

    Tensors transformed(const Signature& s, const PropertyArgs&, const Case& c) const override {
        Tensors out = c.inputs;
        const std::vector<double> ids = distinct_ids(s, c.inputs);
        const long gap = std::min(gap_of(c), room_above(s, c.inputs));  // a shrunk case's ids may leave less room
        if (ids.size() < 2 || gap < 1) return out;
        const double from = ids[static_cast<std::size_t>(std::clamp<long>(rank_of(c), 1, static_cast<long>(ids.size()) - 1))];
        for (const TensorSpec& t : s.inputs)
            if (t.kind == TensorKind::position)
                for (double& v : out.at(t.name).values)
                    if (v >= from) v += static_cast<double>(gap);
        return out;
    }
    Tensor expected(const TensorSpec&, const Case&, const Tensor& y) const override { return y; }

    rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs&, Case c) const override {
        if (gap_of(c) < 1) return shrinkable_signature_case(s, std::move(c));
        return rc::shrinkable::shrinkRecur(std::move(c), [s](const Case& k) { return gap_shrinks(s, k); });
    }
    void validate_saved(const Signature&, const Case& c) const override {
        if (gap_of(c) < 1 || rank_of(c) < 1) throw std::invalid_argument("the saved gaps case has no gap g >= 1 at a rank k >= 1");
    }
};

}  // namespace

const PropertyRules& gaps_rules() {
    static const Gaps rules;
    return rules;
}

}  // namespace permcheck
