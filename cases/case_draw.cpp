// The case's draw: the length schedule, the inputs of each kind (reals with ties, masks that never pad a whole
// line, token and position ids, graphs), and the sorted index inputs settled in order.
#include "cases/signature_case.h"

#include "cases/case_lines.h"
#include "cases/lengths.h"

#include <algorithm>
#include <numeric>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>


namespace permcheck {

using namespace case_lines;

namespace {

Tensor zeros(std::vector<int> shape) {
    Tensor t{std::move(shape), {}};
    t.values.resize(t.size());
    return t;
}

// Real values with ties and generic values, as rows of the last dim (a one-tensor input's rows), drawn in place.
Tensor draw_real(gen::Sampler& draw, std::vector<int> shape, bool generic) {
    Tensor t = zeros(std::move(shape));
    const int last = t.shape.empty() ? 1 : t.shape.back();
    if (!t.values.empty()) draw.sequence_rows(t.values.data(), static_cast<int>(t.values.size()) / last, last, generic);
    return t;
}
// Unpads one element of every all-padded line along every axis dim (a mask in padding polarity, 1 = padding).
void keep_a_position(const TensorSpec& spec, Tensor& t, gen::Sampler& draw) {
    each_padded_line(spec, t, 1.0, [&](const Lines& lines, std::size_t o, std::size_t r) {
        t.values[lines.at(o, static_cast<std::size_t>(draw.uniform(0, static_cast<int>(lines.len))), r)] = 0.0;
        return true;
    });
}

// A quarter of the masks pad nothing, a quarter pad a suffix of their first axis (PyTorch's usual batch
// padding), half pad each position with probability 1/2; then no line is left all padded.
Tensor draw_mask(gen::Sampler& draw, const TensorSpec& spec, std::vector<int> shape) {
    Tensor t = zeros(std::move(shape));
    const int mode = draw.uniform(0, 4);
    const std::size_t k = *first_axis_dim(spec);
    const Lines lines(t.shape, k);
    if (mode == 1 && lines.len > 0) {
        const auto keep = static_cast<std::size_t>(draw.uniform(1, static_cast<int>(lines.len) + 1));
        for (std::size_t o = 0; o < lines.outer; ++o)
            for (std::size_t i = keep; i < lines.len; ++i)
                for (std::size_t r = 0; r < lines.inner; ++r) t.values[lines.at(o, i, r)] = 1.0;
    } else if (mode >= 2) {
        for (double& v : t.values) v = draw.uniform(0, 2);
    }
    keep_a_position(spec, t, draw);
    if (spec.kind == TensorKind::mask_keep)
        for (double& v : t.values) v = 1.0 - v;
    return t;
}

// Ids with repeats, as a sentence has: a few distinct ids (at most the vocabulary), each entry one of them, and
// id 0 among them now and then (the shrink target).
Tensor draw_tokens(gen::Sampler& draw, const TensorSpec& spec, std::vector<int> shape) {
    Tensor t = zeros(std::move(shape));
    if (t.values.empty()) return t;
    const int distinct = draw.uniform(1, static_cast<int>(std::min<std::size_t>(t.values.size(), 8)) + 1);
    std::vector<double> ids;
    for (int k = 0; k < distinct; ++k) {
        const int small = draw.uniform(0, std::min(spec.limit, 16));
        ids.push_back(draw.uniform(0, 4) == 0 ? small : draw.uniform(0, spec.limit));
    }
    for (double& v : t.values) v = ids[static_cast<std::size_t>(draw.uniform(0, distinct))];
    return t;
}

// offset + 0 .. n-1 along the position input's axis: offset 0 in three cases of four, else up to P - n.
Tensor draw_positions(gen::Sampler& draw, const TensorSpec& spec, std::vector<int> shape, int n) {
    const int room = spec.limit - n;
    const long offset = room > 0 && draw.uniform(0, 4) == 0 ? draw.uniform(1, room + 1) : 0;
    Tensor t = zeros(std::move(shape));
    for (std::size_t i = 0; i < t.values.size(); ++i) t.values[i] = static_cast<double>(offset + static_cast<long>(i));
    return t;
}

// Values uniform over the index axis; along the input's first axis dim (the edges), a quarter of the slices
// repeat an earlier one (repeated edges) and an eighth are self-loops (every value of the slice the same).
// An index input over a free axis (cases/signature.h) with each of the axis's `targets` positions at a distinct
// random entry, where it has as many entries (a batch vector in which every graph has a node).
void name_every_position(gen::Sampler& draw, Tensor& t, int targets) {
    if (targets < 1 || t.values.size() < static_cast<std::size_t>(targets)) return;
    std::vector<std::size_t> slots(t.values.size());
    std::iota(slots.begin(), slots.end(), std::size_t{0});
    for (int k = 0; k < targets; ++k) {  // a partial Fisher-Yates: slot k's entry names position k
        const auto pick = static_cast<std::size_t>(draw.uniform(k, static_cast<int>(slots.size())));
        std::swap(slots[static_cast<std::size_t>(k)], slots[pick]);
        t.values[slots[static_cast<std::size_t>(k)]] = k;
    }
}

Tensor draw_index(gen::Sampler& draw, const TensorSpec& spec, std::vector<int> shape, int targets) {
    Tensor t = zeros(std::move(shape));
    if (t.values.empty()) return t;
    for (double& v : t.values) v = draw.uniform(0, targets);
    const std::optional<std::size_t> k = first_axis_dim(spec);
    if (!k) return t;
    const Lines lines(t.shape, *k);
    for (std::size_t i = 1; i < lines.len; ++i) {
        const int kind = draw.uniform(0, 8);
        const auto from = static_cast<std::size_t>(draw.uniform(0, static_cast<int>(i)));
        for (std::size_t o = 0; o < lines.outer; ++o)
            for (std::size_t r = 0; r < lines.inner; ++r) {
                if (kind < 2) t.values[lines.at(o, i, r)] = t.values[lines.at(o, from, r)];
                if (kind == 2) t.values[lines.at(o, i, r)] = t.values[lines.at(0, i, 0)];
            }
    }
    return t;
}

// A small length (0 or 1) of one axis, to be sent while the other axes move.
struct Corner {
    std::size_t axis = 0;
    int len = 0;
};

// Every axis's small lengths that its range allows beside a longer one, when some other axis can move.
std::vector<Corner> corners_of(const Signature& s) {
    std::vector<Corner> out;
    for (std::size_t a = 0; a < s.axes.size(); ++a) {
        const bool others_move = std::any_of(s.axes.begin(), s.axes.end(),
                                             [&](const Axis& b) { return &b != &s.axes[a] && b.max_len >= 2; });
        for (int len = 0; len <= 1 && others_move; ++len)
            if (s.axes[a].min_len <= len && len < s.axes[a].max_len) out.push_back({a, len});
    }
    return out;
}

// Corner c at step k: its axis at its small length, every other axis at its k-th length that can move (2, 3, ...
// up to MAX, in rounds; MAX when that is below 2). At length 0 an index input into the axis must be empty: its
// first axis dim is 0 too (nothing when that axis cannot be 0).
std::optional<Lengths> corner_lengths(const Signature& s, const Corner& c, int k) {
    const std::string& name = s.axes[c.axis].name;
    Lengths l;
    for (const Axis& b : s.axes) {
        const int lo = std::min(std::max(b.min_len, 2), b.max_len);
        l[b.name] = lo + k % (b.max_len - lo + 1);
    }
    l[name] = c.len;
    for (const TensorSpec& t : s.inputs) {
        if (c.len != 0 || t.kind != TensorKind::index || t.index_axis != name) continue;
        if (Tensor{shape_of(t, l), {}}.size() == 0) continue;
        const std::optional<std::size_t> d = first_axis_dim(t);
        if (!d || axis_named(s, t.dims[*d].axis).min_len > 0) return std::nullopt;
        l[t.dims[*d].axis] = 0;
    }
    return l;
}

// The usable corners and how many corner cases there are: every corner at step 0, then every corner at step 1,
// and so on, about a fifth of the cases (at most half of them). Whether a corner is usable does not depend on its
// step (the other axes are then at lengths >= 1 whenever they can be), so corner case j is usable corner
// j mod U at step j / U.
std::pair<std::vector<Corner>, std::size_t> corner_plan(const Signature& s, int cases) {
    const std::vector<Corner> corners = corners_of(s);
    if (corners.empty() || cases < 2) return {{}, 0};
    const int groups = static_cast<int>(corners.size());
    const int steps = std::max(1, cases / (5 * groups));
    const auto most = static_cast<std::size_t>(std::min(groups * steps, cases / 2));
    std::vector<Corner> usable;
    for (const Corner& c : corners)
        if (corner_lengths(s, c, 0)) usable.push_back(c);
    return {usable, std::min(usable.size() * static_cast<std::size_t>(steps), most)};
}

// The per-axis schedules of `cases` cases (cases/lengths.h's, decorrelated), one vector of lengths per axis.
std::vector<std::vector<int>> axis_schedules(const Signature& s, int cases, std::uint64_t seed, bool every_length) {
    std::vector<std::vector<int>> out;
    SplitMix64 shuffle(seed ^ 0x5157a7u);
    for (std::size_t a = 0; a < s.axes.size(); ++a) {
        const Axis& axis = s.axes[a];
        // With one axis, lengths 0 and 1 leave only the identity and are skipped (cases/lengths.h). With several,
        // an empty or single-element axis still makes a case the other axes can fail (a graph without edges),
        // so every length of [min_len, max_len] is in the schedule: audit_lengths over the range shifted by 2.
        const int shift = (every_length || s.axes.size() > 1) && axis.min_len < 2 ? 2 : 0;
        std::vector<int> lengths = audit_lengths({axis.min_len + shift, axis.max_len + shift, shift ? 0 : axis.long_len, cases});
        for (int& len : lengths) len -= shift;
        // Each axis covers its lengths as cases/lengths.h says; the later axes' schedules are shuffled, so that
        // axes of the same range do not always have the same length.
        for (std::size_t i = lengths.size(); a > 0 && i > 1; --i) std::swap(lengths[i - 1], lengths[shuffle.below(i)]);
        lengths.resize(static_cast<std::size_t>(std::max(cases, 0)));
        out.push_back(std::move(lengths));
    }
    return out;
}

}  // namespace

LengthSchedule::LengthSchedule(const Signature& s, int cases, std::uint64_t seed, bool every_length)
    : signature_(std::make_shared<const Signature>(s)) {
    auto [corners, count] = corner_plan(s, cases);
    for (const Corner& c : corners) corners_.emplace_back(c.axis, c.len);
    drawn_ = axis_schedules(s, cases - static_cast<int>(count), seed, every_length);
    // Corner j at slot (2j + 1) N / 2C of the N cases: spread over the audit, so that every shard and every
    // stretch of it has some.
    size_ = static_cast<std::size_t>(std::max(cases, 0));
    for (std::size_t j = 0; j < count; ++j) corner_slots_.push_back((2 * j + 1) * size_ / (2 * count));
}

Lengths LengthSchedule::operator[](std::size_t i) const {
    if (i >= size_) throw std::out_of_range("case " + std::to_string(i) + " of a schedule of " + std::to_string(size_));
    const Signature& s = *signature_;
    const auto slot = std::lower_bound(corner_slots_.begin(), corner_slots_.end(), i);
    const auto before = static_cast<std::size_t>(slot - corner_slots_.begin());
    Lengths l;
    if (at_longest(i)) {
        for (const Axis& a : s.axes) l[a.name] = a.max_len;
    } else if (slot != corner_slots_.end() && *slot == i) {
        const auto& [axis, len] = corners_[before % corners_.size()];
        l = *corner_lengths(s, Corner{axis, len}, static_cast<int>(before / corners_.size()));
    } else {
        for (std::size_t a = 0; a < s.axes.size(); ++a) l[s.axes[a].name] = drawn_[a][i - before];
    }
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::index && l[t.index_axis] == 0 && Tensor{shape_of(t, l), {}}.size() > 0)
            l[t.index_axis] = 1;
    // A free axis no longer than the entries of an index input naming it, so that each of its positions is named
    // (a batch of graphs has no more graphs than nodes), unless its MIN asks for more.
    for (const std::string& axis : free_axes(s))
        for (const TensorSpec& t : s.inputs)
            if (t.kind == TensorKind::index && t.index_axis == axis)
                l[axis] = std::max(axis_named(s, axis).min_len,
                                   std::min(l[axis], static_cast<int>(Tensor{shape_of(t, l), {}}.size())));
    return l;
}

bool LengthSchedule::at_longest(std::size_t i) const { return i >= longest_first_ && i < longest_end_; }

void LengthSchedule::longest_at(std::size_t first, std::size_t count) {
    longest_first_ = std::min(first, size_);
    longest_end_ = std::min(first + count, size_);
}

LengthSchedule signature_lengths(const Signature& s, int cases, std::uint64_t seed, bool every_length) {
    return LengthSchedule(s, cases, seed, every_length);
}

Case draw_signature_case(const Signature& s, const Lengths& lengths, const rc::Random& random, int size, bool generic) {
    gen::Sampler draw(random, generic ? 100 : size);
    Case c;
    c.lengths = lengths;
    for (const TensorSpec& spec : s.inputs) {
        std::vector<int> shape = shape_of(spec, lengths);
        switch (spec.kind) {
            case TensorKind::mask:
            case TensorKind::mask_keep: c.inputs[spec.name] = draw_mask(draw, spec, std::move(shape)); break;
            case TensorKind::index:
                c.inputs[spec.name] = draw_index(draw, spec, std::move(shape), lengths.at(spec.index_axis));
                break;
            case TensorKind::token: c.inputs[spec.name] = draw_tokens(draw, spec, std::move(shape)); break;
            case TensorKind::position:
                c.inputs[spec.name] = draw_positions(draw, spec, std::move(shape), lengths.at(position_axis(spec)));
                break;
            case TensorKind::segment: {  // one sequence (the packing property numbers its sequences)
                Tensor t{std::move(shape), {}};
                t.values.assign(t.size(), 0.0);
                c.inputs[spec.name] = std::move(t);
                break;
            }
            case TensorKind::real: c.inputs[spec.name] = draw_real(draw, std::move(shape), generic);
        }
    }
    for (const std::string& axis : free_axes(s))
        for (const TensorSpec& spec : s.inputs)
            if (spec.kind == TensorKind::index && spec.index_axis == axis)
                name_every_position(draw, c.inputs[spec.name], lengths.at(axis));
    std::vector<std::string> movable;
    for (const Axis& a : s.axes) {
        c.perms[a.name] = draw.permutation(lengths.at(a.name));
        if (lengths.at(a.name) >= 2) movable.push_back(a.name);
    }
    const bool none_moved = std::all_of(c.perms.begin(), c.perms.end(), [](const auto& p) { return p.second.is_identity(); });
    if (none_moved && !movable.empty()) {
        const std::string& a = movable[static_cast<std::size_t>(draw.uniform(0, static_cast<int>(movable.size())))];
        c.perms[a] = Permutation::transposition(lengths.at(a), 0, 1);
    }
    return c;
}

void settle_within(const Signature& s, Tensors& inputs) {
    for (const TensorSpec& t : s.inputs) {
        const std::optional<std::size_t> k = first_axis_dim(t);
        if (t.within.empty() || !k) continue;
        const Tensor& group = inputs.at(t.within);
        std::map<double, std::vector<double>> members;  // each group's positions, ascending
        for (std::size_t v = 0; v < group.values.size(); ++v) members[group.values[v]].push_back(static_cast<double>(v));
        const auto group_of = [&](double v) { return group.values.at(static_cast<std::size_t>(v)); };
        Tensor& x = inputs.at(t.name);
        const Lines lines(x.shape, *k);
        for (std::size_t i = 0; i < lines.len; ++i) {
            const double first = x.values[lines.at(0, i, 0)];
            const std::vector<double>& own = members.at(group_of(first));
            for (std::size_t o = 0; o < lines.outer; ++o)
                for (std::size_t r = 0; r < lines.inner; ++r) {
                    double& v = x.values[lines.at(o, i, r)];
                    if (group_of(v) != group_of(first)) v = own[static_cast<std::size_t>(v) % own.size()];
                }
        }
    }
}

void settle_case(const Signature& s, Case& c) {
    settle_within(s, c.inputs);
    const std::vector<const TensorSpec*> sorted = sorted_inputs(s);
    if (sorted.empty()) return;
    for (const TensorSpec* t : sorted) {
        const Permutation order = sorting_permutation(*t, c.inputs.at(t->name));
        if (order.is_identity()) continue;
        Permutations moved = identities(c.lengths);
        moved[sorted_axis(*t)] = order;
        c.inputs = permute_inputs(s, moved, c.inputs);
    }
    for (const TensorSpec* t : sorted) {
        const Permutation order = sorting_permutation(*t, permute_inputs(s, c.perms, c.inputs).at(t->name));
        Permutation& p = c.perms.at(sorted_axis(*t));
        p = p.then(order);
    }
}

}  // namespace permcheck
