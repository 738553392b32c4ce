#include "check/position_case.h"

#include "check/search.h"

#include <algorithm>
#include <optional>
#include <cmath>
#include <set>
#include <stdexcept>

namespace permcheck {

namespace {

bool along(const TensorSpec& t, const std::string& axis) {
    return std::any_of(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.axis == axis; });
}

// Row-major offset of a multi-index in a tensor of this shape.
std::size_t flat(const std::vector<int>& where, const std::vector<int>& shape) {
    std::size_t e = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) e = e * static_cast<std::size_t>(shape[k]) + static_cast<std::size_t>(where[k]);
    return e;
}

// The row-major successor of a multi-index in a tensor of this shape (the last dim fastest).
void advance(std::vector<int>& where, const std::vector<int>& shape) {
    for (std::size_t k = shape.size(); k-- > 0;) {
        if (++where[k] < shape[k]) return;
        where[k] = 0;
    }
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
        v = x.values[flat(src, x.shape)];
        if (spec.kind == TensorKind::index && spec.index_axis == p.axis) v = m.slot_of[static_cast<std::size_t>(v)];
        if (spec.kind == TensorKind::position && bug == test_only::HarnessBug::pads_move_positions && along(spec, p.axis))
            v = x.values.front() + slot;
    }
    return out;
}

// The entries of a padded answer at the real positions along every dim of the padded axis.
Tensor unpadded(const TensorSpec& spec, const Tensor& answer, const Pads& p, const SlotMap& m) {
    if (!along(spec, p.axis) || answer.shape.size() != spec.dims.size()) return answer;
    Tensor out{answer.shape, {}};
    for (std::size_t k = 0; k < spec.dims.size(); ++k)
        if (spec.dims[k].axis == p.axis) out.shape[k] = static_cast<int>(m.slot_of.size());
    out.values.resize(out.size());
    std::vector<int> src(spec.dims.size()), where(out.shape.size(), 0);
    for (std::size_t e = 0; e < out.values.size(); advance(where, out.shape), ++e) {
        for (std::size_t k = 0; k < spec.dims.size(); ++k)
            src[k] = spec.dims[k].axis == p.axis ? m.slot_of[static_cast<std::size_t>(where[k])] : where[k];
        out.values[e] = answer.values[flat(src, answer.shape)];
    }
    return out;
}

// The room a shift has: P - (the largest position id + 1), over every position input.
long shift_room(const Signature& s, const Tensors& inputs) {
    long room = -1;
    for (const TensorSpec& t : s.inputs) {
        if (t.kind != TensorKind::position) continue;
        const std::vector<double>& v = inputs.at(t.name).values;
        const long top = v.empty() ? 0 : static_cast<long>(*std::max_element(v.begin(), v.end())) + 1;
        const long r = t.limit - top;
        room = room < 0 ? r : std::min(room, r);
    }
    return room;
}

}  // namespace

Tensors transformed_inputs(const Signature& s, Property p, const SignatureCase& c) {
    if (p == Property::shift) {
        const bool tokens_too = test_only::planted_harness_bug() == test_only::HarnessBug::shift_tokens;
        Tensors out = c.inputs;
        for (const TensorSpec& t : s.inputs) {
            if (t.kind == TensorKind::position)
                for (double& v : out.at(t.name).values) v += static_cast<double>(c.shift);
            if (t.kind == TensorKind::token && tokens_too)
                for (double& v : out.at(t.name).values) v = std::fmod(v + static_cast<double>(c.shift), t.limit);
        }
        return out;
    }
    if (p == Property::padding) {
        if (!c.pads) throw std::invalid_argument("a padding case without its pads");
        const SlotMap m(*c.pads, c.lengths.at(c.pads->axis));
        Tensors out;
        for (const TensorSpec& t : s.inputs)
            out[t.name] = padded_input(t, c.inputs.at(t.name), c.pads->filler.at(t.name), *c.pads, m);
        return out;
    }
    return permute_inputs(s, c.perms, c.inputs);
}

Lengths transformed_lengths(Property p, const SignatureCase& c) {
    Lengths l = c.lengths;
    if (p == Property::padding && c.pads) l[c.pads->axis] += static_cast<int>(c.pads->slots.size());
    return l;
}

Tensor compared_output(const TensorSpec& t, Property p, const SignatureCase& c, const Tensor& answer) {
    if (p != Property::padding || !c.pads) return answer;
    return unpadded(t, answer, *c.pads, SlotMap(*c.pads, c.lengths.at(c.pads->axis)));
}

Tensor expected_output(const TensorSpec& t, Property p, const SignatureCase& c, const Tensor& y) {
    return p == Property::shift || p == Property::padding ? y : permute_output(t, c.perms, y);
}

std::string padding_axis(const Signature& s, const std::string& given) {
    std::set<std::string> masked;
    for (const TensorSpec& t : s.inputs)
        if (is_mask(t.kind))
            for (const Dim& d : t.dims)
                if (d.is_axis()) masked.insert(d.axis);
    if (masked.empty())
        throw std::invalid_argument("--property padding needs a mask input (KIND mask or mask=keep) over the axis it pads");
    if (!given.empty()) {
        if (!masked.count(given))
            throw std::invalid_argument("--padding-axis " + given + ": no mask input lies along that axis");
        return given;
    }
    if (masked.size() > 1)
        throw std::invalid_argument("the masks lie along several axes: --padding-axis NAME says which one --property padding pads");
    return *masked.begin();
}

void validate_property(const Signature& s, Property p, const std::string& axis) {
    if (p == Property::reversal || p == Property::causal_prefix)
        throw std::invalid_argument(std::string("--property ") + property_name(p) +
                                    " is a property of the reference layers (permcheck check); audits take "
                                    "equivariance (invariance for outputs without an axis), shift or padding");
    if (p == Property::shift) {
        bool any = false;
        for (const TensorSpec& t : s.inputs) {
            if (t.kind != TensorKind::position) continue;
            any = true;
            for (const Axis& a : s.axes)
                if (a.name == position_axis(t) && a.max_len >= t.limit)
                    throw std::invalid_argument("--property shift: the axis " + a.name + " reaches " + std::to_string(a.max_len) +
                                                " positions, which leaves no room to shift " + t.name + "'s P = " +
                                                std::to_string(t.limit) + " position ids (a smaller MAX, or position=P)");
        }
        if (!any) throw std::invalid_argument("--property shift needs a position input (--input NAME:DIMS:position)");
    }
    if (p == Property::padding) {
        const std::string pads = padding_axis(s, axis);
        for (const Axis& a : s.axes)
            if (a.name == pads && (a.max_len < 2 || a.max_len <= a.min_len))
                throw std::invalid_argument("--property padding: the axis " + a.name + "=" + std::to_string(a.min_len) + ".." +
                                            std::to_string(a.max_len) + " leaves no room for a pad (MAX >= 2, MAX > MIN)");
    }
}

void draw_shift(const Signature& s, SignatureCase& c, const rc::Random& random, int case_index, int cases) {
    rc::Random own(random);
    own.split();
    gen::Sampler draw(own.split(), 100);
    for (auto& [axis, p] : c.perms) p = Permutation::identity(c.lengths.at(axis));
    long room = shift_room(s, c.inputs);
    if (room < 1) {  // the offset left no room: position ids from 0
        for (const TensorSpec& t : s.inputs)
            if (std::vector<double>& v = c.inputs.at(t.name).values; t.kind == TensorKind::position && !v.empty()) {
                const double offset = v.front();
                for (double& id : v) id -= offset;
            }
        room = std::max(1L, shift_room(s, c.inputs));
    }
    const double top = std::pow(static_cast<double>(room), static_cast<double>(case_index + 1) / std::max(cases, 1));
    const double u = draw.uniform(0, 1 << 20) / static_cast<double>(1 << 20);
    c.shift = std::clamp(static_cast<long>(std::exp(u * std::log(std::max(top, 1.0)))), 1L, room);
}

void draw_pads(const Signature& s, SignatureCase& c, const std::string& axis, PadPlacement where,
               const rc::Random& random, int size) {
    rc::Random own(random);
    own.split();
    gen::Sampler draw(own.split(), size);
    for (auto& [a, p] : c.perms) p = Permutation::identity(c.lengths.at(a));
    const int n = c.lengths.at(axis);
    int max_len = n + 1;
    for (const Axis& a : s.axes)
        if (a.name == axis) max_len = std::max(max_len, a.max_len);
    const int room = max_len - n;
    const int k = draw.uniform(0, 4) == 0 ? draw.uniform(1, room + 1) : draw.uniform(1, std::min(room, 3) + 1);
    Pads pads{axis, {}, {}};
    if (where == PadPlacement::left || where == PadPlacement::right)
        for (int j = 0; j < k; ++j) pads.slots.push_back(where == PadPlacement::left ? j : n + j);
    else {
        std::vector<int> all(static_cast<std::size_t>(n + k));
        for (std::size_t j = 0; j < all.size(); ++j) all[j] = static_cast<int>(j);
        for (int j = 0; j < k; ++j) {  // a partial Fisher-Yates: k distinct slots
            const int pick = draw.uniform(j, n + k);
            std::swap(all[static_cast<std::size_t>(j)], all[static_cast<std::size_t>(pick)]);
        }
        pads.slots.assign(all.begin(), all.begin() + k);
        std::sort(pads.slots.begin(), pads.slots.end());
    }
    Lengths padded = c.lengths;
    padded[axis] += k;
    pads.filler = draw_signature_case(s, padded, own.split(), size).inputs;
    for (const TensorSpec& t : s.inputs)  // the pads' own position ids: anything the model takes
        if (t.kind == TensorKind::position)
            for (double& v : pads.filler.at(t.name).values) v = draw.uniform(0, t.limit);
    c.pads = std::move(pads);
}

void draw_property_part(const Signature& s, SignatureCase& c, Property p, const std::string& axis, PadPlacement where,
                        const rc::Random& random, int case_index, int cases) {
    if (p == Property::shift) draw_shift(s, c, random, case_index, cases);
    if (p == Property::padding) draw_pads(s, c, axis, where, random, size_for_case(case_index, cases));
}

std::vector<Lengths> property_lengths(const Signature& s, Property p, const std::string& axis, int cases,
                                      std::uint64_t seed) {
    if (p != Property::padding) return signature_lengths(s, cases, seed, p == Property::shift);
    Signature room = s;
    for (Axis& a : room.axes)
        if (a.name == axis) a.max_len -= 1;
    return signature_lengths(room, cases, seed, true);
}

namespace {

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

std::optional<SignatureCase> without_pad(const Signature& s, const SignatureCase& c, std::size_t i) {
    if (c.pads->slots.size() < 2) return std::nullopt;
    SignatureCase out = c;
    const int j = out.pads->slots[i];
    out.pads->slots.erase(out.pads->slots.begin() + static_cast<std::ptrdiff_t>(i));
    drop_slot(s, *out.pads, j);
    return out;
}

// Real position r gone (and its slot), when nothing on another axis depended on it.
std::optional<SignatureCase> without_real(const Signature& s, const SignatureCase& c, int r) {
    SignatureCase base{c.lengths, c.perms, c.inputs, 0, std::nullopt};
    std::optional<SignatureCase> smaller = without_elements(s, base, c.pads->axis, {r});
    if (!smaller) return std::nullopt;
    for (const auto& [axis, len] : smaller->lengths)
        if (axis != c.pads->axis && len != c.lengths.at(axis)) return std::nullopt;
    smaller->pads = c.pads;
    drop_slot(s, *smaller->pads, SlotMap(*c.pads, c.lengths.at(c.pads->axis)).slot_of[static_cast<std::size_t>(r)]);
    return smaller;
}

rc::Seq<SignatureCase> padding_shrinks(const std::shared_ptr<const Signature>& s, const SignatureCase& c) {
    const auto shared = std::make_shared<const SignatureCase>(c);
    std::vector<std::size_t> pads(c.pads->slots.size());
    for (std::size_t i = 0; i < pads.size(); ++i) pads[i] = i;
    std::vector<int> reals(static_cast<std::size_t>(c.lengths.at(c.pads->axis)));
    for (std::size_t r = 0; r < reals.size(); ++r) reals[r] = static_cast<int>(r);
    const auto maybe = [](std::optional<SignatureCase> k) {
        return k ? rc::Maybe<SignatureCase>(std::move(*k)) : rc::Maybe<SignatureCase>();
    };
    auto fewer_pads = rc::seq::mapMaybe(rc::seq::fromContainer(pads),
                                        [s, shared, maybe](std::size_t i) { return maybe(without_pad(*s, *shared, i)); });
    auto fewer_reals = rc::seq::mapMaybe(rc::seq::fromContainer(reals),
                                         [s, shared, maybe](int r) { return maybe(without_real(*s, *shared, r)); });
    auto simpler = rc::seq::filter(signature_case_shrinks(s, c),
                                   [shared](const SignatureCase& k) { return k.lengths == shared->lengths; });
    return rc::seq::concat(std::move(fewer_pads), std::move(fewer_reals), std::move(simpler));
}

rc::Seq<SignatureCase> shift_shrinks(const std::shared_ptr<const Signature>& s, const SignatureCase& c) {
    std::vector<SignatureCase> smaller_c;
    for (long to : std::set<long>{1, c.shift / 2, c.shift - 1})
        if (to >= 1 && to < c.shift) {
            smaller_c.push_back(c);
            smaller_c.back().shift = to;
        }
    return rc::seq::concat(rc::seq::fromContainer(std::move(smaller_c)), signature_case_shrinks(s, c));
}

}  // namespace

rc::Shrinkable<SignatureCase> shrinkable_position_case(const std::shared_ptr<const Signature>& s, Property p,
                                                       SignatureCase c) {
    if (p == Property::padding)
        return rc::shrinkable::shrinkRecur(std::move(c), [s](const SignatureCase& k) { return padding_shrinks(s, k); });
    if (p == Property::shift)
        return rc::shrinkable::shrinkRecur(std::move(c), [s](const SignatureCase& k) { return shift_shrinks(s, k); });
    return shrinkable_signature_case(s, std::move(c));
}

std::map<std::string, std::vector<bool>> padded_slots(const Signature& s, const Tensors& inputs) {
    std::map<std::string, std::vector<bool>> out;
    for (const TensorSpec& t : s.inputs) {
        if (!is_mask(t.kind)) continue;
        std::size_t k = 0, axes = 0;
        for (std::size_t d = 0; d < t.dims.size(); ++d)
            if (t.dims[d].is_axis()) k = d, ++axes;
        if (axes != 1) continue;
        const Tensor& m = inputs.at(t.name);
        const auto [outer, inner] = outer_inner(m.shape, k);
        const auto len = static_cast<std::size_t>(m.shape[k]);
        std::vector<bool> pads(len, true);
        for (std::size_t o = 0; o < outer; ++o)
            for (std::size_t j = 0; j < len; ++j)
                for (std::size_t i = 0; i < inner; ++i) {
                    const double v = m.values[(o * len + j) * inner + i];
                    if ((t.kind == TensorKind::mask) != (v != 0.0)) pads[j] = false;
                }
        std::vector<bool>& slots = out[t.dims[k].axis];
        if (slots.size() != len) slots.assign(len, false);
        for (std::size_t j = 0; j < len; ++j) slots[j] = slots[j] || pads[j];
    }
    return out;
}

bool at_padded_slot(const TensorSpec& output, const std::vector<int>& where,
                    const std::map<std::string, std::vector<bool>>& padded) {
    for (std::size_t k = 0; k < output.dims.size() && k < where.size(); ++k) {
        const auto it = padded.find(output.dims[k].axis);
        if (it != padded.end() && static_cast<std::size_t>(where[k]) < it->second.size() &&
            it->second[static_cast<std::size_t>(where[k])])
            return true;
    }
    return false;
}

std::vector<bool> ignored_entries(const Signature& s, Property p, const SignatureCase& c, const TensorSpec& output,
                                  const std::vector<int>& shape) {
    if (p != Property::padding || shape.size() != output.dims.size()) return {};
    const std::map<std::string, std::vector<bool>> padded = padded_slots(s, c.inputs);
    // Per dim, the padded slots of the axis it follows (null for none): no lookup per entry, on a hot path.
    std::vector<const std::vector<bool>*> along(shape.size(), nullptr);
    bool any = false;
    for (std::size_t k = 0; k < shape.size(); ++k)
        if (const auto it = padded.find(output.dims[k].axis); it != padded.end() && it->second.size() == static_cast<std::size_t>(shape[k])) {
            along[k] = &it->second;
            any = any || std::find(it->second.begin(), it->second.end(), true) != it->second.end();
        }
    if (!any) return {};
    std::size_t size = 1;
    for (int k : shape) size *= static_cast<std::size_t>(k);
    std::vector<bool> out(size, false);
    std::vector<int> where(shape.size(), 0);
    for (std::size_t e = 0; e < size; advance(where, shape), ++e)
        for (std::size_t k = 0; k < shape.size(); ++k)
            if (along[k] && (*along[k])[static_cast<std::size_t>(where[k])]) {
                out[e] = true;
                break;
            }
    return out;
}

double largest_position(const Signature& s, const Tensors& inputs) {
    double m = 0.0;
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::position)
            if (const auto it = inputs.find(t.name); it != inputs.end())
                m = finite_max_abs(it->second.values, m);
    return m;
}

}  // namespace permcheck
