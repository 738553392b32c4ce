// Window: output i depends only on the positions [i - W + 1, i + R] of the sequence axis (--window W, and
// --window-right R for a bidirectional local window; R = 0 by default: a causal sliding window). A case picks one
// output position i and redraws every input entry that lies at a position outside that window (real values and
// token ids, drawn from a seed of the case's own; masks, position ids, segment ids and indices stay: they say where
// a token is, not what it is); the outputs at i must not change, L(x')[i] = L(x)[i]. Of an output with several dims
// along the axis, the entries whose first such dim is at i are compared; outputs without the axis are not. A stack
// of L layers each of window W has the receptive field L (W - 1) + 1: audit it with that W. The property's part of
// a case (Case::part) holds all it needs: "at" (i), "left" (W), "right" (R), "axis" (its index in the signature)
// and "seed"; a failure shrinks to the shortest sequence, then the smallest i, so a window one position too wide
// shrinks to n = W + 1, i = W.
#include "properties/property.h"

#include <algorithm>
#include <set>

namespace permcheck {

namespace {

const PropertyOption kWindow{"--window", "window", "W",
                             "output i may depend on the W positions up to and including i (for a stack of L "
                             "windowed layers, the receptive field L (W - 1) + 1)", {}};
const PropertyOption kRight{"--window-right", "window_right", "R",
                            "and on the R positions after i (a bidirectional local window; default 0)", {}};

long part_of(const Case& c, const char* name) {
    return c.part.number(name, -1);
}
const std::string& axis_of(const Signature& s, const Case& c) {
    return s.axes.at(static_cast<std::size_t>(part_of(c, "axis"))).name;
}
// Whether position p of the axis lies outside case c's window.
bool outside(const Case& c, int p) { return p < part_of(c, "at") - part_of(c, "left") + 1 || p > part_of(c, "at") + part_of(c, "right"); }

// x with every real and token entry at a position outside the window redrawn.
Tensors redrawn(const Signature& s, const Case& c) {
    const std::string& axis = axis_of(s, c);
    gen::Sampler draw(rc::Random(static_cast<std::uint64_t>(part_of(c, "seed"))), 100);
    Tensors out = c.inputs;
    for (const TensorSpec& t : s.inputs) {
        if (t.kind != TensorKind::real && t.kind != TensorKind::token) continue;
        Tensor& x = out.at(t.name);
        for (std::size_t e = 0; e < x.values.size(); ++e) {
            const std::vector<int> where = position_of(e, x.shape);
            bool away = false;
            for (std::size_t d = 0; d < t.dims.size() && d < where.size(); ++d)
                away = away || (t.dims[d].axis == axis && outside(c, where[d]));
            if (away) x.values[e] = t.kind == TensorKind::real ? draw.value() : draw.uniform(0, t.limit);
        }
    }
    return out;
}

// One step: a shorter sequence (i moved inside it), then a smaller i.
rc::Seq<Case> window_shrinks(const std::shared_ptr<const Signature>& s, const Case& c) {
    const std::string axis = axis_of(*s, c);
    auto shorter = rc::seq::mapMaybe(signature_case_shrinks(s, c), [axis](Case m) {
        const int n = m.lengths.at(axis);
        if (n < 1) return rc::Maybe<Case>();
        m.perms = identities(m.lengths);
        m.part.numbers["at"] = std::min<long>(m.part.numbers["at"], n - 1);
        return rc::Maybe<Case>(std::move(m));
    });
    std::vector<Case> earlier;
    for (long to : std::set<long>{0, part_of(c, "at") / 2, part_of(c, "at") - 1})
        if (to >= 0 && to < part_of(c, "at")) {
            earlier.push_back(c);
            earlier.back().part.numbers["at"] = to;
        }
    return rc::seq::concat(std::move(shorter), rc::seq::fromContainer(std::move(earlier)));
}

class Window : public PropertyRules {
public:
    const char* name() const override { return "window"; }
    const char* adjective() const override { return "local to its window"; }
    std::vector<PropertyOption> options() const override { return {kWindow, kRight, properties::sequence_axis_option()}; }
    SideNames sides(bool) const override { return {"L(x')[i]", "L(x)[i]", "|L(x')[i] - L(x)[i]|"}; }
    const char* meaning() const override {
        return "output i depends only on the positions [i - W + 1, i + R]: redrawing the inputs elsewhere leaves it "
               "unchanged";
    }
    std::string case_text(const Case& c) const override {
        const long at = part_of(c, "at");
        return "output i = " + std::to_string(at) + ", every input outside [" + std::to_string(at - part_of(c, "left") + 1) +
               ", " + std::to_string(at + part_of(c, "right")) + "] redrawn";
    }
    bool permutes() const override { return false; }
    CallPlan plan() const override { return {.judges_outputs_without_axes = false}; }
    const char* output_claim() const override { return "unchanged at position i when every input outside its window is redrawn"; }
    std::string compared_text() const override { return "L(x') against L(x) at position i"; }
    const char* verdict_meaning(bool holds) const override { return holds ? "within its window" : "sees beyond its window"; }

    PropertyArgs completed_args(const Signature& s, PropertyArgs a) const override {
        if (setting_in(a, kWindow, 1, kMaxAxisLen, 0) == 0)
            throw std::invalid_argument("--property window needs the window's width: --window W");
        setting_in(a, kRight, 0, kMaxAxisLen, 0);
        a.axis = properties::sequence_axis(s, a, "window");
        if (std::none_of(s.outputs.begin(), s.outputs.end(), [&](const TensorSpec& t) { return properties::along(t, a.axis); }))
            throw std::invalid_argument("--property window compares the outputs at a position of " + a.axis +
                                        ", and no output has that axis");
        return a;
    }

    void draw(const Signature& s, const PropertyArgs& a, Case& c, const rc::Random& random, int, int) const override {
        rc::Random own(random);
        own.split();
        gen::Sampler draw(own.split(), 100);
        c.perms = identities(c.lengths);
        const auto axis = std::find_if(s.axes.begin(), s.axes.end(), [&](const Axis& x) { return x.name == a.axis; });
        c.part.numbers = {{"at", draw.uniform(0, std::max(c.lengths.at(a.axis), 1))},
                  {"left", setting_in(a, kWindow, 1, kMaxAxisLen, 1)},
                  {"right", setting_in(a, kRight, 0, kMaxAxisLen, 0)},
                  {"axis", axis - s.axes.begin()},
                  {"seed", draw.uniform(0, 1 << 30)}};
    }

    Tensors transformed(const Signature& s, const PropertyArgs&, const Case& c) const override { return redrawn(s, c); }
    Tensor expected(const TensorSpec&, const Case&, const Tensor& y) const override { return y; }
    // Every entry but those at i along the output's first dim of the axis, and the slots the masks pad.
    std::vector<bool> ignored(const Signature& s, const Case& c, const TensorSpec& output,
                              const std::vector<int>& shape) const override {
        const std::string& axis = axis_of(s, c);
        std::vector<bool> out = properties::ignored_off_axis(s, c.inputs, axis, output, shape);
        const auto first = std::find_if(output.dims.begin(), output.dims.end(), [&](const Dim& d) { return d.axis == axis; });
        if (first == output.dims.end()) return out;
        std::size_t size = 1;
        for (int d : shape) size *= static_cast<std::size_t>(std::max(d, 0));
        out.resize(size, false);
        for (std::size_t e = 0; e < size; ++e)
            out[e] = out[e] || position_of(e, shape)[static_cast<std::size_t>(first - output.dims.begin())] != part_of(c, "at");
        return out;
    }

    rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs&, Case c) const override {
        if (c.part.empty()) return shrinkable_signature_case(s, std::move(c));  // an input answered twice: no window
        return rc::shrinkable::shrinkRecur(std::move(c), [s](const Case& k) { return window_shrinks(s, k); });
    }
    void validate_saved(const Signature& s, const Case& c) const override {
        for (const char* name : {"at", "left", "right", "axis", "seed"})
            if (part_of(c, name) < 0) throw std::invalid_argument(std::string("the saved window case has no ") + name);
        if (part_of(c, "axis") >= static_cast<long>(s.axes.size()) || part_of(c, "left") < 1)
            throw std::invalid_argument("the saved window case names no axis of the signature, or no window");
        if (part_of(c, "at") >= c.lengths.at(axis_of(s, c)))
            throw std::invalid_argument("the saved window case's position i is past its sequence");
    }
};

}  // namespace

const PropertyRules& window_rules() {
    static const Window rules;
    return rules;
}

}  // namespace permcheck
