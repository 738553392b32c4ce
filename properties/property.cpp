// What every property shares.
#include "properties/property.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace permcheck {

LengthSchedule PropertyRules::lengths(const Signature& s, const PropertyArgs&, int cases, std::uint64_t seed) const {
    return signature_lengths(s, cases, seed);
}

void PropertyRules::draw(const Signature&, const PropertyArgs&, Case&, const rc::Random&, int, int) const {}

rc::Shrinkable<Case> PropertyRules::shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs&,
                                               Case c) const {
    return shrinkable_signature_case(s, std::move(c), /*shorter_first=*/true);
}

Case draw_case(const PropertyRules& rules, const Signature& s, const PropertyArgs& a, const Lengths& lengths,
               const rc::Random& random, int index, int cases, bool generic) {
    Case c = draw_signature_case(s, lengths, random, size_for_case(index, cases), generic);
    rules.draw(s, a, c, random, index, cases);
    settle_case(s, c);
    return c;
}

rc::Shrinkable<Case> shrinkable_case(const PropertyRules& rules, const std::shared_ptr<const Signature>& s,
                                     const PropertyArgs& a, Case c) {
    return settled_shrinkable(s, rules.shrinkable(s, a, std::move(c)));
}

std::string PropertyRules::compared_text() const {
    const SideNames s = sides(true);
    return std::string(s.lhs) + " against " + s.rhs;
}

namespace properties {

bool along(const TensorSpec& t, const std::string& axis) {
    return std::any_of(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.axis == axis; });
}

Tensor without_along(const TensorSpec& spec, Tensor t, const std::string& axis, const std::set<int>& gone) {
    for (std::size_t d = 0; d < spec.dims.size() && d < t.shape.size(); ++d)
        if (spec.dims[d].axis == axis) {
            std::set<int> here;
            for (int i : gone)
                if (i >= 0 && i < t.shape[d]) here.insert(i);
            delete_along(t, d, here);
        }
    return t;
}

Tensor span_along(const TensorSpec& spec, const Tensor& t, const std::string& axis, int first, int end) {
    const auto along_axis = [&](const Dim& d) { return d.axis == axis; };
    if (std::count_if(spec.dims.begin(), spec.dims.end(), along_axis) == 1 && spec.dims.size() == t.shape.size()) {
        // One dim along the axis: a copy of the runs [first, end) (the common case, and an audit's every case).
        const auto k = static_cast<std::size_t>(std::find_if(spec.dims.begin(), spec.dims.end(), along_axis) - spec.dims.begin());
        first = std::clamp(first, 0, t.shape[k]);
        end = std::clamp(end, first, t.shape[k]);
        Tensor out{t.shape, {}};
        out.shape[k] = end - first;
        const auto [outer, inner] = outer_inner(t.shape, k);
        out.values.reserve(outer * static_cast<std::size_t>(end - first) * inner);
        for (std::size_t o = 0; o < outer; ++o) {
            const auto from = t.values.begin() + static_cast<std::ptrdiff_t>((o * static_cast<std::size_t>(t.shape[k]) + static_cast<std::size_t>(first)) * inner);
            out.values.insert(out.values.end(), from, from + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(end - first) * inner));
        }
        return out;
    }
    int n = 0;
    for (std::size_t d = 0; d < spec.dims.size() && d < t.shape.size(); ++d)
        if (spec.dims[d].axis == axis) n = std::max(n, t.shape[d]);
    std::set<int> gone;
    for (int i = 0; i < n; ++i)
        if (i < first || i >= end) gone.insert(i);
    return without_along(spec, t, axis, gone);
}

Tensors span_of(const Signature& s, const Tensors& inputs, const std::string& axis, int first, int end) {
    Tensors out;
    for (const TensorSpec& t : s.inputs) out[t.name] = span_along(t, inputs.at(t.name), axis, first, end);
    return out;
}

void require_sequence_axis(const Signature& s, const std::string& axis, const std::string& property) {
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::index && t.index_axis == axis)
            throw std::invalid_argument("--property " + property + ": the index input " + t.name + " names positions of " +
                                        axis + ", which a cut would leave dangling");
    if (std::none_of(s.outputs.begin(), s.outputs.end(), [&](const TensorSpec& t) { return along(t, axis); }))
        throw std::invalid_argument("--property " + property + " compares the outputs along " + axis +
                                    ", and no output has that axis");
    for (const Axis& x : s.axes)
        if (x.name == axis && x.max_len < 2)
            throw std::invalid_argument("--property " + property + ": the axis " + x.name + "=" + std::to_string(x.min_len) +
                                        ".." + std::to_string(x.max_len) + " leaves no room for a cut (MAX >= 2)");
}

std::vector<bool> ignored_off_axis(const Signature& s, const Tensors& layout, const std::string& axis,
                                   const TensorSpec& output, const std::vector<int>& shape) {
    if (along(output, axis)) return entries_at_padded_slots(s, layout, output, shape);
    std::size_t size = 1;
    for (int d : shape) size *= static_cast<std::size_t>(std::max(d, 0));
    return std::vector<bool>(size, true);
}

void refuse_sorted_along(const Signature& s, const std::string& axis, const std::string& property, const char* why) {
    for (const TensorSpec& t : s.inputs)
        if (t.sorted_row >= 0 && (axis.empty() || sorted_axis(t) == axis))
            throw std::invalid_argument("--property " + property + ": the input " + format_input(t) +
                                        " is kept sorted along " + sorted_axis(t) + ", and " + why);
}

LengthSchedule lengths_with_room_to_cut(const Signature& s, const std::string& axis, int cases, std::uint64_t seed) {
    Signature room = s;
    for (Axis& x : room.axes)
        if (x.name == axis) x.min_len = std::max(x.min_len, 2);
    return signature_lengths(room, cases, seed, true);
}

void smaller_numbers(const Case& c, const std::string& key, std::vector<Case>& out) {
    const long v = c.part.number(key);
    for (long to : std::set<long>{1, v / 2, v - 1})
        if (to >= 1 && to < v) {
            out.push_back(c);
            out.back().part.numbers[key] = to;
        }
}

std::vector<int> distinct_ends(gen::Sampler& draw, int n, int m) {
    std::vector<int> ends(static_cast<std::size_t>(std::max(n - 1, 0)));
    for (std::size_t j = 0; j < ends.size(); ++j) ends[j] = static_cast<int>(j) + 1;
    for (int j = 0; j + 1 < m; ++j)
        std::swap(ends[static_cast<std::size_t>(j)], ends[static_cast<std::size_t>(draw.uniform(j, n - 1))]);
    ends.resize(static_cast<std::size_t>(std::max(m - 1, 0)));
    std::sort(ends.begin(), ends.end());
    return ends;
}

bool applies(const PropertyRules& rules, const Signature& s, const PropertyArgs& a) {
    try {
        rules.completed_args(s, a);
        return true;
    } catch (const std::invalid_argument&) {
        return false;
    }
}

const PropertyOption& sequence_axis_option() {
    static const PropertyOption option{"--causal-axis", "causal_axis", "AXIS",
                                       "the sequence axis (default: the signature's one axis; --profile takes it too)", {},
                                       true};
    return option;
}

std::string sequence_axis(const Signature& s, const PropertyArgs& a, const std::string& property) {
    return one_axis(s, a.setting(sequence_axis_option().keyword, a.axis), property);
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

}  // namespace properties

}  // namespace permcheck
