// Shift: every position id + c changes nothing, L(x_c) = L(x): the encoding sees only offsets (RoPE, ALiBi, a
// relative bias). x_c is x with c >= 1 added to every position input, everything else unchanged; a reference layer
// that numbers its positions itself is built with its positions starting at c (offset()). c grows with the case
// index, log-uniform from 1 up to the room the position ids leave (cases 1 and 2 near that room's top), and shrinks
// toward 1.
// proofs-notes/position-aware-audits.md, proofs-notes/relative-position.md.
#include "properties/property.h"

#include <algorithm>
#include <cmath>

namespace permcheck {

namespace {

// The largest offset of a reference layer that numbers its own positions (no position input): a learned table of
// 128 rows keeps room for 64 positions.
constexpr long kMaxOffset = 64;

// Cases 1 .. kFarCases shift to within an eighth of the room's top: rotary phases computed in a low precision go
// wrong only far out (bfloat16 past a few thousand), and a short audit's log-uniform rise would not get there.
constexpr int kFarCases = 2;

// The case's c, its part's "shift" (0: none, as a case answered twice has).
long shift_of(const Case& c) { return c.part.number("shift"); }

// The room a shift has: P - (the largest position id + 1), over every position input; kMaxOffset without one.
long shift_room(const Signature& s, const Tensors& inputs) {
    long room = -1;
    for (const TensorSpec& t : s.inputs) {
        if (t.kind != TensorKind::position) continue;
        const std::vector<double>& v = inputs.at(t.name).values;
        const long top = v.empty() ? 0 : static_cast<long>(*std::max_element(v.begin(), v.end())) + 1;
        room = room < 0 ? t.limit - top : std::min(room, t.limit - top);
    }
    return room < 0 && !has_position_input(s) ? kMaxOffset : room;
}

// Position ids from 0 again, when their offset left no room to shift.
void positions_from_zero(const Signature& s, Case& c) {
    for (const TensorSpec& t : s.inputs)
        if (std::vector<double>& v = c.inputs.at(t.name).values; t.kind == TensorKind::position && !v.empty()) {
            const double offset = v.front();
            for (double& id : v) id -= offset;
        }
}

rc::Seq<Case> shift_shrinks(const std::shared_ptr<const Signature>& s, const Case& c) {
    std::vector<Case> smaller_c;
    properties::smaller_numbers(c, "shift", smaller_c);
    return rc::seq::concat(rc::seq::fromContainer(std::move(smaller_c)), signature_case_shrinks(s, c));
}

class Shift : public PropertyRules {
public:
    const char* name() const override { return "shift"; }
    const char* adjective() const override { return "shift-invariant"; }
    SideNames sides(bool) const override { return {"L(x_c)", "L(x)", "|L(x_c) - L(x)|"}; }
    const char* meaning() const override { return "moving every position index by a constant changes nothing"; }
    std::string case_text(const Case& c) const override { return "every position id + " + std::to_string(shift_of(c)); }
    bool permutes() const override { return false; }
    const char* output_claim() const override { return "unchanged when every position id moves by the same c"; }
    const char* verdict_meaning(bool holds) const override {
        return holds ? "relative" : "not relative (absolute positions)";
    }

    std::vector<ProfileRowSpec> profile_rows(const Signature& s, const PropertyArgs&) const override {
        if (!has_position_input(s)) return {};
        // Relative where the ids reach the output; where the gaps row found them ignored, trivially so.
        return {{"relative", "relative (every position id + c)", {}, 2, [](bool holds, const RowVerdicts& before) {
                     const auto gaps = before.find("position-ids");
                     return holds && gaps != before.end() && gaps->second
                                ? std::string("relative only as ids ignored are (the gaps row held)")
                                : std::string();
                 }}};
    }

    PropertyArgs completed_args(const Signature& s, PropertyArgs a) const override {
        if (!has_position_input(s) && !a.white_box)
            throw std::invalid_argument("--property shift needs a position input (--input NAME:DIMS:position)");
        for (const TensorSpec& t : s.inputs)
            for (const Axis& x : s.axes)
                if (t.kind == TensorKind::position && x.name == position_axis(t) && x.max_len >= t.limit)
                    throw std::invalid_argument("--property shift: the axis " + x.name + " reaches " +
                                                std::to_string(x.max_len) + " positions, which leaves no room to shift " +
                                                t.name + "'s P = " + std::to_string(t.limit) +
                                                " position ids (a smaller MAX, or position=P)");
        return a;
    }

    // Every length, n = 1 included: one token shifted already tells an absolute position embedding.
    LengthSchedule lengths(const Signature& s, const PropertyArgs&, int cases, std::uint64_t seed) const override {
        return signature_lengths(s, cases, seed, true);
    }

    void draw(const Signature& s, const PropertyArgs&, Case& c, const rc::Random& random, int index,
              int cases) const override {
        rc::Random own(random);
        own.split();
        gen::Sampler draw(own.split(), 100);
        c.perms = identities(c.lengths);
        long room = shift_room(s, c.inputs);
        if (room < 1) {
            positions_from_zero(s, c);
            room = std::max(1L, shift_room(s, c.inputs));
        }
        if (index >= 1 && index <= kFarCases) {  // near the top of the range, whatever the number of cases
            c.part.numbers["shift"] = std::max(1L, room - draw.uniform(0, static_cast<int>(std::min<long>(room / 8, 1L << 30)) + 1));
            return;
        }
        const double top = std::pow(static_cast<double>(room), static_cast<double>(index + 1) / std::max(cases, 1));
        const double u = draw.uniform(0, 1 << 20) / static_cast<double>(1 << 20);
        c.part.numbers["shift"] = std::clamp(static_cast<long>(std::exp(u * std::log(std::max(top, 1.0)))), 1L, room);
    }

    Tensors transformed(const Signature& s, const PropertyArgs&, const Case& c) const override {
        const bool tokens_too = test_only::planted_harness_bug() == test_only::HarnessBug::shift_tokens;
        Tensors out = c.inputs;
        for (const TensorSpec& t : s.inputs) {
            if (t.kind == TensorKind::position)
                for (double& v : out.at(t.name).values) v += static_cast<double>(shift_of(c));
            if (t.kind == TensorKind::token && tokens_too)
                for (double& v : out.at(t.name).values) v = std::fmod(v + static_cast<double>(shift_of(c)), t.limit);
        }
        return out;
    }
    long offset(const Case& c) const override { return shift_of(c); }
    Tensor expected(const TensorSpec&, const Case&, const Tensor& y) const override { return y; }

    rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs&, Case c) const override {
        if (shift_of(c) < 1) return shrinkable_signature_case(s, std::move(c));  // an input answered twice: no shift
        return rc::shrinkable::shrinkRecur(std::move(c), [s](const Case& k) { return shift_shrinks(s, k); });
    }
    void validate_saved(const Signature&, const Case& c) const override {
        if (shift_of(c) < 1) throw std::invalid_argument("the saved shift case has no shift c >= 1");
    }
};

}  // namespace

const PropertyRules& shift_rules() {
    static const Shift rules;
    return rules;
}

}  // namespace permcheck
