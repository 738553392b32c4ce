// Padding: pads inserted and masked change nothing at the real positions, L(pad x) = L(x) there. pad x inserts k >= 1
// pads into one axis (Pads, below): at the pads every mask over that axis pads, token ids (or the --pad-id given),
// reals, index rows and the pads' own position ids are the filler's (drawn), pairwise inputs get drawn rows and columns, and
// index values naming the axis are renumbered to the real positions' new slots; the real positions keep their
// values, position ids included. L(pad x) is compared at the real positions (real x real for a pairwise output;
// unchanged for an output without the axis), leaving out the slots x's own masks pad. It shrinks toward fewer pads
// and a shorter sequence. proofs-notes/position-aware-audits.md.
#include "properties/property.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

namespace permcheck {

namespace {

// What a case of the padding property inserts, its part: k pads into the axis `axis` (names "axis") at `slots`
// (lists "slots", ascending, in [0, n + k)); `filler` (tensors "filler") holds every input at the padded lengths,
// whose entries at the pads are the pads' values (its entries at the real slots are not used: the real positions
// keep the case's values).
struct Pads {
    std::string axis;
    std::vector<int> slots;
    Tensors filler;
};

// The case's pads; none when its part has none (an input answered twice). With `s`, each filler in its padded
// shape: a report's is read back as nested arrays, which do not tell an empty dim's inner sizes.
std::optional<Pads> pads_of(const Case& c, const Signature* s = nullptr) {
    const auto axis = c.part.names.find("axis");
    const auto slots = c.part.lists.find("slots");
    const auto filler = c.part.tensors.find("filler");
    if (axis == c.part.names.end() || slots == c.part.lists.end()) return std::nullopt;
    Pads p{axis->second, slots->second, filler == c.part.tensors.end() ? Tensors{} : filler->second};
    const auto n = c.lengths.find(p.axis);
    if (!s || n == c.lengths.end()) return p;
    Lengths padded = c.lengths;
    padded[p.axis] = n->second + static_cast<int>(p.slots.size());
    for (const TensorSpec& t : s->inputs)
        if (auto f = p.filler.find(t.name); f != p.filler.end() && f->second.values.size() == Tensor{shape_of(t, padded), {}}.size())
            f->second.shape = shape_of(t, padded);
    return p;
}

void put_pads(Case& c, Pads p) {
    c.part = {};
    c.part.names["axis"] = std::move(p.axis);
    c.part.lists["slots"] = std::move(p.slots);
    c.part.tensors["filler"] = std::move(p.filler);
}

// The slots of a padded axis: which are pads, and where each real position went.
struct SlotMap {
    std::vector<bool> pad;
    std::vector<int> real_of;  // slot -> real position (-1 at a pad)
    std::vector<int> slot_of;  // real position -> slot
    explicit SlotMap(const Pads& p, int n) : pad(static_cast<std::size_t>(n) + p.slots.size(), false) {
        for (int s : p.slots) pad[static_cast<std::size_t>(s)] = true;
        for (std::size_t s = 0; s < pad.size(); ++s) {
            real_of.push_back(pad[s] ? -1 : static_cast<int>(slot_of.size()));
            if (!pad[s]) slot_of.push_back(static_cast<int>(s));
        }
    }
    static SlotMap of(const Case& c, const Pads& p) { return SlotMap(p, c.lengths.at(p.axis)); }
};

// One input padded: the filler at the pads, the case's values (index values renumbered) at the real positions.
Tensor padded_input(const TensorSpec& spec, const Tensor& x, const Tensor& filler, const Pads& p, const SlotMap& m) {
    const test_only::HarnessBug bug = test_only::planted_harness_bug();
    Tensor out = filler;
    std::vector<int> src(spec.dims.size()), where(out.shape.size(), 0);
    for (std::size_t e = 0; e < out.values.size(); advance(where, out.shape), ++e) {
        bool at_pad = false;
        int slot = 0;
        for (std::size_t k = 0; k < spec.dims.size(); ++k) {
            src[k] = where[k];
            if (spec.dims[k].axis != p.axis) continue;
            slot = where[k];
            if (m.pad[static_cast<std::size_t>(where[k])]) at_pad = true;
            else src[k] = m.real_of[static_cast<std::size_t>(where[k])];
        }
        double& v = out.values[e];
        if (at_pad) {
            const bool pads = bug != test_only::HarnessBug::pads_unmasked;
            if (is_mask(spec.kind)) v = (spec.kind == TensorKind::mask) == pads ? 1.0 : 0.0;
            continue;
        }
        v = x.values[flat_index(src, x.shape)];
        if (spec.kind == TensorKind::index && spec.index_axis == p.axis) v = m.slot_of[static_cast<std::size_t>(v)];
        if (spec.kind == TensorKind::position && bug == test_only::HarnessBug::pads_move_positions && properties::along(spec, p.axis))
            v = x.values.front() + slot;
    }
    return out;
}

// The entries of a padded answer at the real positions along every dim of the padded axis.
Tensor unpadded(const TensorSpec& spec, const Tensor& answer, const Pads& p, const SlotMap& m) {
    if (!properties::along(spec, p.axis) || answer.shape.size() != spec.dims.size()) return answer;
    Tensor out{answer.shape, {}};
    for (std::size_t k = 0; k < spec.dims.size(); ++k)
        if (spec.dims[k].axis == p.axis) out.shape[k] = static_cast<int>(m.slot_of.size());
    out.values.resize(out.size());
    std::vector<int> src(spec.dims.size()), where(out.shape.size(), 0);
    for (std::size_t e = 0; e < out.values.size(); advance(where, out.shape), ++e) {
        for (std::size_t k = 0; k < spec.dims.size(); ++k)
            src[k] = spec.dims[k].axis == p.axis ? m.slot_of[static_cast<std::size_t>(where[k])] : where[k];
        out.values[e] = answer.values[flat_index(src, answer.shape)];
    }
    return out;
}

// The slots the pads take: k of them, left, right or anywhere.
std::vector<int> pad_slots(gen::Sampler& draw, int n, int k, PadPlacement where) {
    std::vector<int> slots;
    if (where == PadPlacement::left || where == PadPlacement::right) {
        for (int j = 0; j < k; ++j) slots.push_back(where == PadPlacement::left ? j : n + j);
        return slots;
    }
    std::vector<int> all(static_cast<std::size_t>(n + k));
    for (std::size_t j = 0; j < all.size(); ++j) all[j] = static_cast<int>(j);
    for (int j = 0; j < k; ++j) {  // a partial Fisher-Yates: k distinct slots
        const int pick = draw.uniform(j, n + k);
        std::swap(all[static_cast<std::size_t>(j)], all[static_cast<std::size_t>(pick)]);
    }
    slots.assign(all.begin(), all.begin() + k);
    std::sort(slots.begin(), slots.end());
    return slots;
}

// The filler without slot j of the padded axis; its index values naming the axis follow their slots (one that
// named j names slot 0).
void drop_slot(const Signature& s, Pads& p, int j) {
    for (const TensorSpec& t : s.inputs) {
        Tensor& f = p.filler.at(t.name);
        for (std::size_t k = 0; k < t.dims.size(); ++k)
            if (t.dims[k].axis == p.axis) delete_along(f, k, {j});
        if (t.kind == TensorKind::index && t.index_axis == p.axis)
            for (double& v : f.values) v = v > j ? v - 1 : v == j ? 0 : v;
    }
    for (int& slot : p.slots)
        if (slot > j) --slot;
}

std::optional<Case> without_pad(const Signature& s, const Case& c, std::size_t i) {
    Pads p = *pads_of(c);
    if (p.slots.size() < 2) return std::nullopt;
    Case out = c;
    const int j = p.slots[i];
    p.slots.erase(p.slots.begin() + static_cast<std::ptrdiff_t>(i));
    drop_slot(s, p, j);
    put_pads(out, std::move(p));
    return out;
}

// Real position r gone (and its slot), when nothing on another axis depended on it.
std::optional<Case> without_real(const Signature& s, const Case& c, int r) {
    Pads p = *pads_of(c);
    Case base = c;
    base.part = {};
    std::optional<Case> smaller = without_elements(s, base, p.axis, {r});
    if (!smaller) return std::nullopt;
    for (const auto& [axis, len] : smaller->lengths)
        if (axis != p.axis && len != c.lengths.at(axis)) return std::nullopt;
    drop_slot(s, p, SlotMap::of(c, p).slot_of[static_cast<std::size_t>(r)]);
    put_pads(*smaller, std::move(p));
    return smaller;
}

rc::Seq<Case> padding_shrinks(const std::shared_ptr<const Signature>& s, const Case& c) {
    const auto shared = std::make_shared<const Case>(c);
    const auto maybe = [](std::optional<Case> k) { return k ? rc::Maybe<Case>(std::move(*k)) : rc::Maybe<Case>(); };
    const Pads p = *pads_of(c);
    auto fewer_pads = rc::seq::mapMaybe(rc::seq::range<std::size_t>(0, p.slots.size()),
                                        [s, shared, maybe](std::size_t i) { return maybe(without_pad(*s, *shared, i)); });
    auto fewer_reals = rc::seq::mapMaybe(rc::seq::range<int>(0, c.lengths.at(p.axis)),
                                         [s, shared, maybe](int r) { return maybe(without_real(*s, *shared, r)); });
    auto simpler = rc::seq::filter(signature_case_shrinks(s, c),
                                   [shared](const Case& k) { return k.lengths == shared->lengths; });
    return rc::seq::concat(std::move(fewer_pads), std::move(fewer_reals), std::move(simpler));
}

// Where the pads go, as --padding names it.
PadPlacement placement(const std::string& word) {
    for (PadPlacement p : {PadPlacement::any, PadPlacement::left, PadPlacement::right})
        if (word == pad_placement_name(p)) return p;
    throw std::invalid_argument("--padding takes any, left or right, got '" + word + "'");
}

// The axis the masks lie along: `given`, which a mask must lie along, or the one axis they lie along.
std::string masked_axis(const Signature& s, const std::string& given) {
    std::set<std::string> masked;
    for (const TensorSpec& t : s.inputs)
        if (is_mask(t.kind))
            for (const Dim& d : t.dims)
                if (d.is_axis()) masked.insert(d.axis);
    if (masked.empty())
        throw std::invalid_argument("--property padding needs a mask input (KIND mask or mask=keep) over the axis it pads");
    if (!given.empty() && !masked.count(given))
        throw std::invalid_argument("--padding-axis " + given + ": no mask input lies along that axis");
    if (!given.empty()) return given;
    if (masked.size() > 1)
        throw std::invalid_argument("the masks lie along several axes: --padding-axis NAME says which one --property padding pads");
    return *masked.begin();
}

const PropertyOption kPlacement{"--padding", "padding", "WHERE",
                                "where the pads go: any (each at a random slot, default), left (before the real "
                                "positions) or right (after them)",
                                {"any", "left", "right"}};
const PropertyOption kPaddedAxis{"--padding-axis", "padding_axis", "AXIS",
                                 "the axis to pad, when masks lie along several (default: the masks' axis)", {}};
const PropertyOption kPadId{"--pad-id", "pad_id", "ID",
                            "the token id at every pad, as a tokenizer pads (a model that finds its pads by id); "
                            "default: drawn, any id; --profile takes it too", {}, true};

// The --pad-id given, checked against every token input's vocabulary; -1 when not given (the pads' ids drawn).
long pad_id(const Signature& s, const PropertyArgs& a) {
    int vocabulary = 0;
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::token) vocabulary = vocabulary == 0 ? t.limit : std::min(vocabulary, t.limit);
    if (vocabulary == 0 && a.settings.count(kPadId.keyword))
        throw std::invalid_argument("--pad-id needs a token input (--input NAME:DIMS:token=V) whose pads it names");
    return setting_in(a, kPadId, 0, vocabulary - 1, -1);
}

class Padding : public PropertyRules {
public:
    const char* name() const override { return "padding"; }
    const char* adjective() const override { return "padding-invariant"; }
    SideNames sides(bool) const override { return {"L(pad x)", "L(x)", "|L(pad x) - L(x)|"}; }
    const char* meaning() const override {
        return "inserting masked pads leaves the outputs at the real positions unchanged";
    }
    bool permutes() const override { return false; }
    const char* output_claim() const override { return "unchanged at its real positions when masked pads are inserted"; }
    std::string compared_text() const override { return "L(pad x) at the real positions against L(x)"; }
    const char* verdict_meaning(bool holds) const override { return holds ? "padding invisible" : "padding leaks"; }
    std::vector<PropertyOption> options() const override { return {kPlacement, kPaddedAxis, kPadId}; }
    // Pads left, right and anywhere, with a mask input.
    std::vector<ProfileRowSpec> profile_rows(const Signature& s, const PropertyArgs&) const override {
        if (std::none_of(s.inputs.begin(), s.inputs.end(), [](const TensorSpec& t) { return is_mask(t.kind); })) return {};
        std::vector<ProfileRowSpec> rows;
        for (const std::string& where : kPlacement.choices)
            if (where != "any")
                rows.push_back({"padding-" + where,
                                "padding " + where + " (masked pads " + (where == "left" ? "before" : "after") +
                                    " the tokens, ids kept)",
                                {{kPlacement.keyword, where}}, 1});
        rows.push_back({"padding-any", "padding any (masked pads anywhere, ids kept)", {{kPlacement.keyword, "any"}}, 1});
        return rows;
    }

    // "2 pads into n at slots 0, 3".
    std::string case_text(const Case& c) const override {
        const auto pads = pads_of(c);
        if (!pads) return "no pads";
        const Pads& p = *pads;
        std::string out = std::to_string(p.slots.size()) + (p.slots.size() == 1 ? " pad" : " pads") + " into " + p.axis +
                          (p.slots.size() == 1 ? " at slot " : " at slots ");
        for (std::size_t k = 0; k < p.slots.size(); ++k) out += (k ? ", " : "") + std::to_string(p.slots[k]);
        // What the pads carry, of each input with one integer a slot (token ids, position ids, masks): "(ids 7;
        // pos 40; keep 0)", so that a reader sees a pad's id.
        const std::size_t slots = static_cast<std::size_t>(c.lengths.at(p.axis)) + p.slots.size();
        if (p.slots.empty()) return out;
        std::string carried;
        for (const auto& [name, t] : p.filler) {
            if (t.values.size() != slots || p.slots.back() >= static_cast<int>(slots) ||
                !std::all_of(t.values.begin(), t.values.end(), [](double v) { return v == std::floor(v); }))
                continue;
            carried += (carried.empty() ? " (" : "; ") + name + " ";
            for (std::size_t k = 0; k < p.slots.size(); ++k)
                carried += (k ? ", " : "") + std::to_string(static_cast<long long>(t.values[static_cast<std::size_t>(p.slots[k])]));
        }
        return out + (carried.empty() ? "" : carried + ")");
    }

    PropertyArgs completed_args(const Signature& s, PropertyArgs a) const override {
        if (a.settings.count(kPlacement.keyword)) a.pads = placement(a.setting(kPlacement.keyword));
        a.axis = masked_axis(s, a.setting(kPaddedAxis.keyword, a.axis));
        properties::refuse_sorted_along(s, a.axis, "padding", "a pad inserted into it would break its order");
        pad_id(s, a);
        for (const Axis& x : s.axes)
            if (x.name == a.axis && (x.max_len < 2 || x.max_len <= x.min_len))
                throw std::invalid_argument("--property padding: the axis " + x.name + "=" + std::to_string(x.min_len) +
                                            ".." + std::to_string(x.max_len) +
                                            " leaves no room for a pad (MAX >= 2, MAX > MIN)");
        return a;
    }

    // Every length, the padded axis one short of its MAX (room for a pad).
    LengthSchedule lengths(const Signature& s, const PropertyArgs& a, int cases, std::uint64_t seed) const override {
        Signature room = s;
        for (Axis& x : room.axes)
            if (x.name == a.axis) x.max_len -= 1;
        return signature_lengths(room, cases, seed, true);
    }

    // k in [1, MAX - n] pads (usually at most 3), placed as `a.pads` says; the filler drawn at the padded lengths,
    // the pads' own position ids anything the model takes.
    void draw(const Signature& s, const PropertyArgs& a, Case& c, const rc::Random& random, int index,
              int cases) const override {
        const int size = size_for_case(index, cases);
        rc::Random own(random);
        own.split();
        gen::Sampler draw(own.split(), size);
        c.perms = identities(c.lengths);
        const int n = c.lengths.at(a.axis);
        int max_len = n + 1;
        for (const Axis& x : s.axes)
            if (x.name == a.axis) max_len = std::max(max_len, x.max_len);
        const int room = max_len - n;
        const int k = draw.uniform(0, 4) == 0 ? draw.uniform(1, room + 1) : draw.uniform(1, std::min(room, 3) + 1);
        Pads pads{a.axis, pad_slots(draw, n, k, a.pads), {}};
        Lengths padded = c.lengths;
        padded[a.axis] += k;
        pads.filler = draw_signature_case(s, padded, own.split(), size).inputs;
        const long id = pad_id(s, a);
        for (const TensorSpec& t : s.inputs) {
            if (t.kind == TensorKind::position)
                for (double& v : pads.filler.at(t.name).values) v = draw.uniform(0, t.limit);
            if (t.kind == TensorKind::token && id >= 0)
                for (double& v : pads.filler.at(t.name).values) v = static_cast<double>(id);
        }
        const SlotMap m = SlotMap::of(c, pads);  // the masks as sent, so that the case's words show what a pad carries
        for (const TensorSpec& t : s.inputs)
            if (is_mask(t.kind)) pads.filler.at(t.name) = padded_input(t, c.inputs.at(t.name), pads.filler.at(t.name), pads, m);
        put_pads(c, std::move(pads));
    }

    Tensors transformed(const Signature& s, const PropertyArgs&, const Case& c) const override {
        const auto p = pads_of(c, &s);
        if (!p) throw std::invalid_argument("a padding case without its pads");
        const SlotMap m = SlotMap::of(c, *p);
        Tensors out;
        for (const TensorSpec& t : s.inputs) out[t.name] = padded_input(t, c.inputs.at(t.name), p->filler.at(t.name), *p, m);
        return out;
    }
    Lengths transformed_lengths(const Case& c) const override {
        Lengths l = c.lengths;
        if (const auto p = pads_of(c)) l[p->axis] += static_cast<int>(p->slots.size());
        return l;
    }
    Lengths compared_lengths(const Case& c) const override { return c.lengths; }
    Tensor compared(const TensorSpec& t, const Case& c, const Tensor& answer) const override {
        const auto p = pads_of(c);
        return p ? unpadded(t, answer, *p, SlotMap::of(c, *p)) : answer;
    }
    Tensor expected(const TensorSpec&, const Case&, const Tensor& y) const override { return y; }
    // Only real tokens are compared: a slot x's own masks pad may answer anything (a query that sees no key attends
    // uniformly over every slot, pads included, when its scores are set to the lowest float).
    std::vector<bool> ignored(const Signature& s, const Case& c, const TensorSpec& output,
                              const std::vector<int>& shape) const override {
        return entries_at_padded_slots(s, c.inputs, output, shape);
    }
    const Tensors& compared_layout(const Case& c, const Tensors&) const override { return c.inputs; }

    rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs&, Case c) const override {
        if (!pads_of(c)) return shrinkable_signature_case(s, std::move(c));  // an input answered twice: no pads
        return rc::shrinkable::shrinkRecur(std::move(c), [s](const Case& k) { return padding_shrinks(s, k); });
    }

    void validate_saved(const Signature& s, const Case& c) const override {
        const auto p = pads_of(c, &s);
        if (!p || p->slots.empty()) throw std::invalid_argument("the saved padding case has no pads");
        if (!c.lengths.count(p->axis)) throw std::invalid_argument("the saved pads name no axis of the signature");
        const Lengths padded = transformed_lengths(c);
        const std::vector<int>& slots = p->slots;
        for (std::size_t k = 0; k < slots.size(); ++k)
            if (slots[k] < 0 || slots[k] >= padded.at(p->axis) || (k && slots[k] <= slots[k - 1]))
                throw std::invalid_argument("the saved pads' slots are not ascending slots of the padded axis");
        for (const TensorSpec& t : s.inputs) {
            const auto f = p->filler.find(t.name);
            if (f == p->filler.end() || f->second.shape != shape_of(t, padded) || f->second.values.size() != f->second.size())
                throw std::invalid_argument("the saved pads have no filler '" + t.name + "' of the padded shape " +
                                            index_text(shape_of(t, padded)));
        }
    }
};

}  // namespace

const PropertyRules& padding_rules() {
    static const Padding rules;
    return rules;
}

}  // namespace permcheck
