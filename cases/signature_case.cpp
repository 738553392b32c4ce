#include "cases/signature_case.h"

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

namespace {

// A tensor's elements seen along one dim: `outer` blocks of `len` slices of `inner` consecutive values.
struct Lines {
    std::size_t outer = 1, len = 0, inner = 1;
    Lines(const std::vector<int>& shape, std::size_t k) : len(static_cast<std::size_t>(shape[k])) {
        std::tie(outer, inner) = outer_inner(shape, k);
    }
    std::size_t at(std::size_t o, std::size_t i, std::size_t r) const { return (o * len + i) * inner + r; }
};

std::optional<std::size_t> first_axis_dim(const TensorSpec& t) {
    for (std::size_t k = 0; k < t.dims.size(); ++k)
        if (t.dims[k].is_axis()) return k;
    return std::nullopt;
}

const Axis& axis_named(const Signature& s, const std::string& name) {
    for (const Axis& a : s.axes)
        if (a.name == name) return a;
    throw std::invalid_argument("no axis named '" + name + "'");
}

Tensor zeros(std::vector<int> shape) {
    Tensor t{std::move(shape), {}};
    t.values.resize(t.size());
    return t;
}

// Real values with ties and generic values, as rows of the last dim (a one-tensor input's rows), drawn in place.
Tensor draw_real(gen::Sampler& draw, std::vector<int> shape) {
    Tensor t = zeros(std::move(shape));
    const int last = t.shape.empty() ? 1 : t.shape.back();
    if (!t.values.empty()) draw.sequence_rows(t.values.data(), static_cast<int>(t.values.size()) / last, last);
    return t;
}

// The value of a mask entry that pads, in the mask's polarity.
double pad_value(const TensorSpec& spec) { return spec.kind == TensorKind::mask_keep ? 0.0 : 1.0; }

// Calls padded(lines, o, r) for every non-empty line (o, r) along an axis dim of t whose entries all equal `pads`,
// until it returns false; false then.
template <class F> bool each_padded_line(const TensorSpec& spec, const Tensor& t, double pads, F padded) {
    for (std::size_t k = 0; k < spec.dims.size(); ++k) {
        if (!spec.dims[k].is_axis()) continue;
        const Lines lines(t.shape, k);
        for (std::size_t o = 0; o < lines.outer && lines.len > 0; ++o)
            for (std::size_t r = 0; r < lines.inner; ++r) {
                bool all = true;
                for (std::size_t i = 0; i < lines.len && all; ++i) all = t.values[lines.at(o, i, r)] == pads;
                if (all && !padded(lines, o, r)) return false;
            }
    }
    return true;
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
    if (i >= longest_first_ && i < longest_end_) {
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

void LengthSchedule::longest_at(std::size_t first, std::size_t count) {
    longest_first_ = std::min(first, size_);
    longest_end_ = std::min(first + count, size_);
}

LengthSchedule signature_lengths(const Signature& s, int cases, std::uint64_t seed, bool every_length) {
    return LengthSchedule(s, cases, seed, every_length);
}

Case draw_signature_case(const Signature& s, const Lengths& lengths, const rc::Random& random, int size) {
    gen::Sampler draw(random, size);
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
            case TensorKind::real: c.inputs[spec.name] = draw_real(draw, std::move(shape));
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

void settle_sorted(const Signature& s, Case& c) {
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

bool same_case(const Case& a, const Case& b) {
    const bool pads = a.pads.has_value() == b.pads.has_value() &&
                      (!a.pads || (a.pads->axis == b.pads->axis && a.pads->slots == b.pads->slots &&
                                   same_values(a.pads->filler, b.pads->filler)));
    const bool cuts = a.cuts.has_value() == b.cuts.has_value() &&
                      (!a.cuts || (a.cuts->axis == b.cuts->axis && a.cuts->at == b.cuts->at &&
                                   a.cuts->piece == b.cuts->piece && a.cuts->chunked == b.cuts->chunked));
    return a.lengths == b.lengths && a.perms == b.perms && same_values(a.inputs, b.inputs) && a.shift == b.shift &&
           a.weight_seed == b.weight_seed && a.weights == b.weights && pads && cuts && a.part == b.part;
}

rc::Shrinkable<Case> settled_shrinkable(const std::shared_ptr<const Signature>& s, const rc::Shrinkable<Case>& k) {
    if (sorted_inputs(*s).empty()) return k;
    auto value = std::make_shared<Case>(k.value());
    settle_sorted(*s, *value);
    return rc::shrinkable::lambda([value] { return *value; }, [s, k, value] {
        auto settled = rc::seq::map(k.shrinks(), [s](const rc::Shrinkable<Case>& m) { return settled_shrinkable(s, m); });
        return rc::seq::filter(std::move(settled),
                               [value](const rc::Shrinkable<Case>& m) { return !same_case(m.value(), *value); });
    });
}

bool masks_keep_a_position(const Signature& s, const Tensors& inputs) {
    const auto none = [](const Lines&, std::size_t, std::size_t) { return false; };
    return std::all_of(s.inputs.begin(), s.inputs.end(), [&](const TensorSpec& spec) {
        return !is_mask(spec.kind) || each_padded_line(spec, inputs.at(spec.name), pad_value(spec), none);
    });
}

void delete_along(Tensor& t, std::size_t k, const std::set<int>& gone) {
    const Lines lines(t.shape, k);
    std::vector<double> kept;
    kept.reserve(t.values.size());
    for (std::size_t o = 0; o < lines.outer; ++o)
        for (std::size_t i = 0; i < lines.len; ++i)
            if (!gone.count(static_cast<int>(i)))
                for (std::size_t r = 0; r < lines.inner; ++r) kept.push_back(t.values[lines.at(o, i, r)]);
    t.values = std::move(kept);
    t.shape[k] -= static_cast<int>(gone.size());
}

namespace {

using Deletions = std::map<std::string, std::set<int>>;  // axis -> elements to delete

// Adds to `del` the elements of the axes index inputs run along whose values name a deleted element, until
// nothing changes. False when an index input without an axis dim names a deleted element.
bool close_deletions(const Signature& s, const Case& c, Deletions& del) {
    for (bool changed = true; changed;) {
        changed = false;
        for (const TensorSpec& spec : s.inputs) {
            if (spec.kind != TensorKind::index || del[spec.index_axis].empty()) continue;
            const std::set<int>& gone = del[spec.index_axis];
            const Tensor& t = c.inputs.at(spec.name);
            const std::optional<std::size_t> k = first_axis_dim(spec);
            if (!k) {
                for (double v : t.values)
                    if (gone.count(static_cast<int>(v))) return false;
                continue;
            }
            const Lines lines(t.shape, *k);
            std::set<int>& along = del[spec.dims[*k].axis];
            for (std::size_t o = 0; o < lines.outer; ++o)
                for (std::size_t i = 0; i < lines.len; ++i)
                    for (std::size_t r = 0; r < lines.inner; ++r)
                        if (gone.count(static_cast<int>(t.values[lines.at(o, i, r)])))
                            changed = along.insert(static_cast<int>(i)).second || changed;
        }
    }
    return true;
}

void apply_deletions(const Signature& s, Case& c, const Deletions& del) {
    std::map<std::string, double> offsets;
    for (const TensorSpec& spec : s.inputs)
        if (const std::vector<double>& v = c.inputs.at(spec.name).values; spec.kind == TensorKind::position && !v.empty())
            offsets[spec.name] = *std::min_element(v.begin(), v.end());
    for (const TensorSpec& spec : s.inputs) {
        Tensor& t = c.inputs.at(spec.name);
        for (std::size_t k = 0; k < spec.dims.size(); ++k) {
            const auto d = spec.dims[k].is_axis() ? del.find(spec.dims[k].axis) : del.end();
            if (d != del.end() && !d->second.empty()) delete_along(t, k, d->second);
        }
        const auto renumbered = spec.kind == TensorKind::index ? del.find(spec.index_axis) : del.end();
        if (renumbered == del.end()) continue;
        const std::set<int>& gone = renumbered->second;
        for (double& v : t.values)
            v -= static_cast<double>(std::distance(gone.begin(), gone.lower_bound(static_cast<int>(v))));
    }
    for (const auto& [axis, gone] : del) {
        for (auto k = gone.rbegin(); k != gone.rend(); ++k) c.perms[axis] = c.perms[axis].without_row(*k);
        c.lengths[axis] -= static_cast<int>(gone.size());
    }
    // A shorter sequence's position ids: from the same offset, one apart (a deleted token's successors move up).
    for (const TensorSpec& spec : s.inputs)
        if (std::vector<double>& v = c.inputs.at(spec.name).values; spec.kind == TensorKind::position)
            for (std::size_t i = 0; i < v.size(); ++i) v[i] = offsets[spec.name] + static_cast<double>(i);
}

}  // namespace

std::optional<Case> without_elements(const Signature& s, const Case& c, const std::string& axis,
                                              const std::vector<int>& positions) {
    Deletions del;
    del[axis].insert(positions.begin(), positions.end());
    if (!close_deletions(s, c, del)) return std::nullopt;
    for (const auto& [a, gone] : del)
        if (c.lengths.at(a) - static_cast<int>(gone.size()) < axis_named(s, a).min_len) return std::nullopt;
    Case smaller = c;
    apply_deletions(s, smaller, del);
    if (!masks_keep_a_position(s, smaller.inputs)) return std::nullopt;
    return smaller;
}

namespace {

// Blocks of elements to delete, halves first, then single elements: (axis, first, count).
struct Block {
    std::string axis;
    int first, count;
};

std::vector<Block> deletable_blocks(const Signature& s, const Case& c) {
    std::vector<Block> blocks;
    for (const Axis& a : s.axes) {
        const int n = c.lengths.at(a.name);
        for (int size = n / 2; size >= 2; size /= 2)
            for (int k = 0; k + size <= n && n - size >= a.min_len; k += size) blocks.push_back({a.name, k, size});
    }
    for (const Axis& a : s.axes)
        for (int k = 0; c.lengths.at(a.name) > a.min_len && k < c.lengths.at(a.name); ++k) blocks.push_back({a.name, k, 1});
    return blocks;
}

// The value an entry of this kind shrinks to: 0 (no padding, node 0, token 0), 1 for a mask=keep (no padding).
double simplest(const TensorSpec& spec) { return spec.kind == TensorKind::mask_keep ? 1.0 : 0.0; }

// (input, element) pairs of the values that can be simplified: real values, padded mask entries (toward no
// padding), index values other than 0 (toward node 0, which leaves the other nodes free to be deleted) and token
// ids other than 0. Position ids shrink as a whole (offset_shrinks).
std::vector<std::pair<std::string, std::size_t>> simplifiable(const Signature& s, const Case& c) {
    std::vector<std::pair<std::string, std::size_t>> out;
    for (const TensorSpec& spec : s.inputs) {
        const Tensor& t = c.inputs.at(spec.name);
        if (spec.kind == TensorKind::position) continue;
        for (std::size_t e = 0; e < t.values.size(); ++e)
            if (spec.kind == TensorKind::real || t.values[e] != simplest(spec)) out.emplace_back(spec.name, e);
    }
    return out;
}

// Every position input's offset toward 0: 0, half of it, one less.
std::vector<Case> offset_shrinks(const Signature& s, const Case& c) {
    std::vector<Case> out;
    for (const TensorSpec& spec : s.inputs) {
        const std::vector<double>& v = c.inputs.at(spec.name).values;
        if (spec.kind != TensorKind::position || v.empty() || v.front() == 0.0) continue;
        const double offset = v.front();
        for (double to : std::set<double>{0.0, std::floor(offset / 2), offset - 1}) {
            Case smaller = c;
            for (double& p : smaller.inputs.at(spec.name).values) p -= offset - to;
            out.push_back(std::move(smaller));
        }
    }
    return out;
}

// Merges of index values: every value v of the index inputs over an axis replaced by u < v (u = 0, u = v - 1), so
// that node v, no longer named, can be deleted. Two edges into one node are one merge away from two self-loops.
struct Merge {
    std::string axis;
    int from, to;
};

// Token ids merge the same way, per token input (its name in `axis`): fewer distinct ids.
std::vector<Merge> index_merges(const Signature& s, const Case& c) {
    std::map<std::string, std::set<int>> named;  // index axis (a token input's name) -> the values it holds
    for (const TensorSpec& spec : s.inputs)
        if (spec.kind == TensorKind::index || spec.kind == TensorKind::token)
            for (double v : c.inputs.at(spec.name).values)
                named[spec.kind == TensorKind::index ? spec.index_axis : spec.name].insert(static_cast<int>(v));
    std::vector<Merge> merges;
    for (const auto& [axis, values] : named)
        for (int v : values) {
            if (v > 0) merges.push_back({axis, v, 0});
            if (v > 1) merges.push_back({axis, v, v - 1});
        }
    return merges;
}

Case merged(const Signature& s, const Case& c, const Merge& m) {
    Case out = c;
    for (const TensorSpec& spec : s.inputs)
        if ((spec.kind == TensorKind::index && spec.index_axis == m.axis) || (spec.kind == TensorKind::token && spec.name == m.axis))
            for (double& v : out.inputs.at(spec.name).values)
                if (static_cast<int>(v) == m.from) v = m.to;
    return out;
}

}  // namespace

rc::Seq<Case> signature_case_shrinks(const std::shared_ptr<const Signature>& s, const Case& c) {
    const auto shared = std::make_shared<const Case>(c);
    auto deletions = rc::seq::mapMaybe(rc::seq::fromContainer(deletable_blocks(*s, c)), [s, shared](const Block& b) {
        std::vector<int> positions;
        for (int k = b.first; k < b.first + b.count; ++k) positions.push_back(k);
        std::optional<Case> smaller = without_elements(*s, *shared, b.axis, positions);
        return smaller ? rc::Maybe<Case>(std::move(*smaller)) : rc::Maybe<Case>();
    });
    auto perms = rc::seq::mapcat(rc::seq::fromContainer(s->axes), [shared](const Axis& a) {
        return rc::seq::map(gen::permutation_shrinks(shared->perms.at(a.name)), [shared, axis = a.name](Permutation p) {
            Case fewer = *shared;
            fewer.perms[axis] = std::move(p);
            return fewer;
        });
    });
    auto values = rc::seq::mapcat(rc::seq::fromContainer(simplifiable(*s, c)), [s, shared](const auto& at) {
        const double v = shared->inputs.at(at.first).values[at.second];
        const TensorSpec& spec = *std::find_if(s->inputs.begin(), s->inputs.end(),
                                               [&](const TensorSpec& t) { return t.name == at.first; });
        return rc::seq::map(rc::seq::fromContainer(spec.kind == TensorKind::real ? gen::simpler_values(v)
                                                                                 : std::vector<double>{simplest(spec)}),
                            [shared, at](double simpler) {
                                Case simpler_case = *shared;
                                simpler_case.inputs[at.first].values[at.second] = simpler;
                                return simpler_case;
                            });
    });
    auto merges = rc::seq::map(rc::seq::fromContainer(index_merges(*s, c)),
                               [s, shared](const Merge& m) { return merged(*s, *shared, m); });
    rc::Seq<Case> all = rc::seq::concat(std::move(deletions), std::move(perms), std::move(merges),
                                        rc::seq::fromContainer(offset_shrinks(*s, c)), std::move(values));
    if (free_axes(*s).empty()) return all;
    // A batch vector keeps naming every graph: no shrink leaves a graph without a node.
    return rc::seq::filter(std::move(all), [s](const Case& k) { return covers_free_axes(*s, k.inputs, k.lengths); });
}

rc::Shrinkable<Case> shrinkable_signature_case(const std::shared_ptr<const Signature>& s, Case c) {
    return rc::shrinkable::shrinkRecur(std::move(c),
                                       [s](const Case& k) { return signature_case_shrinks(s, k); });
}

void require_case_fits(const Signature& s, const Case& c) {
    for (const Axis& a : s.axes) {
        const auto len = c.lengths.find(a.name);
        const auto p = c.perms.find(a.name);
        if (len == c.lengths.end() || len->second < 0 || p == c.perms.end() || p->second.size() != len->second)
            throw std::invalid_argument("the saved case has no length and permutation of that length for the axis '" +
                                        a.name + "'");
    }
    for (const TensorSpec& t : s.inputs) {
        const auto x = c.inputs.find(t.name);
        if (x == c.inputs.end() || x->second.shape != shape_of(t, c.lengths) || x->second.values.size() != x->second.size())
            throw std::invalid_argument("the saved case has no input '" + t.name + "' of the shape " +
                                        index_text(shape_of(t, c.lengths)) + " its lengths give it");
        if (t.kind != TensorKind::index && t.kind != TensorKind::token && t.kind != TensorKind::position) continue;
        const int targets = t.kind == TensorKind::index ? c.lengths.at(t.index_axis) : t.limit;
        for (double v : x->second.values)
            if (!(v >= 0 && v < targets) || v != std::floor(v))
                throw std::invalid_argument("the saved " + std::string(tensor_kind_name(t.kind)) + " input '" + t.name +
                                            "' holds " + short_number(v) + ", not an integer in [0, " + std::to_string(targets) + ")");
    }
    Case in_order = c;
    settle_sorted(s, in_order);
    if (!same_case(in_order, c))
        for (const TensorSpec* t : sorted_inputs(s))
            throw std::invalid_argument("the saved case does not keep the input " + format_input(*t) +
                                        " in order, in x or after its permutations (P x)");
}

int widest_fixed_size(const Signature& s) {
    int widest = 1;
    for (const auto* list : {&s.inputs, &s.outputs})
        for (const TensorSpec& t : *list)
            for (const Dim& d : t.dims)
                if (!d.is_axis()) widest = std::max(widest, d.size);
    return widest;
}

double finite_max_abs(const std::vector<double>& values, double start) {
    for (double v : values)
        if (std::isfinite(v)) start = std::max(start, std::abs(v));
    return start;
}

std::vector<int> position_of(std::size_t e, const std::vector<int>& shape) {
    std::vector<int> where(shape.size());
    for (std::size_t k = shape.size(); k-- > 0;) {
        where[k] = static_cast<int>(e % static_cast<std::size_t>(shape[k]));
        e /= static_cast<std::size_t>(shape[k]);
    }
    return where;
}

double signature_tolerance(const ToleranceModel& m, const Lengths& lengths, int widest, double magnitude,
                           double positions) {
    long total = 0;
    for (const auto& [axis, len] : lengths) total += len;
    total += static_cast<long>(std::ceil(kPositionRoundingTerms * positions));
    return float_tolerance(m, total, widest, magnitude);
}

OutputComparison compare_sides(const std::string& name, const Tensor& a, const Tensor& b, const ToleranceModel& m,
                               const Lengths& lengths, int widest, double inputs_magnitude, double positions,
                               const std::vector<bool>& ignored) {
    const double magnitude = finite_max_abs(b.values, finite_max_abs(a.values, inputs_magnitude));
    return compare_tensors(name, a, b, signature_tolerance(m, lengths, widest, magnitude, positions), ignored);
}

double real_inputs_magnitude(const Signature& s, const Tensors& inputs) {
    double m = 0.0;
    for (const TensorSpec& spec : s.inputs)
        if (spec.kind == TensorKind::real) m = finite_max_abs(inputs.at(spec.name).values, m);
    return m;
}

std::string short_number(double v) {
    std::ostringstream s;
    s.precision(3);
    s << v;
    return s.str();
}

// The two sides are left out (filled in by the caller when the comparison is kept): a passing case copies nothing.
OutputComparison compare_tensors(const std::string& name, const Tensor& a, const Tensor& b, double tolerance,
                                 const std::vector<bool>& ignored, const std::vector<double>& exact_diff) {
    OutputComparison c{name, {}, {}, 0.0, tolerance, {}, true, false};
    if (a.shape != b.shape || a.values.size() != b.values.size()) {
        c.holds = false;
        c.shape_mismatch = true;
        c.max_abs_diff = std::numeric_limits<double>::infinity();
        return c;
    }
    std::size_t worst = 0;
    for (std::size_t e = 0; e < a.values.size(); ++e) {
        if (e < ignored.size() && ignored[e]) continue;
        const double x = a.values[e], y = b.values[e];
        double diff;
        if (!exact_diff.empty())
            diff = exact_diff[e];
        else if (!std::isfinite(x) || !std::isfinite(y))
            diff = (std::isnan(x) && std::isnan(y)) || x == y ? 0.0 : std::numeric_limits<double>::infinity();
        else
            diff = std::abs(x - y);
        if (diff > tolerance) c.holds = false;
        if (diff > c.max_abs_diff) {
            c.max_abs_diff = diff;
            worst = e;
        }
    }
    if (!a.values.empty()) c.where = position_of(worst, a.shape);
    return c;
}

void advance(std::vector<int>& where, const std::vector<int>& shape) {
    for (std::size_t k = shape.size(); k-- > 0;) {
        if (++where[k] < shape[k]) return;
        where[k] = 0;
    }
}

std::size_t flat_index(const std::vector<int>& where, const std::vector<int>& shape) {
    std::size_t e = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) e = e * static_cast<std::size_t>(shape[k]) + static_cast<std::size_t>(where[k]);
    return e;
}

bool same_values(const Tensors& a, const Tensors& b) {
    if (a.size() != b.size()) return false;
    for (const auto& [name, t] : a) {
        const auto it = b.find(name);
        if (it == b.end() || it->second.shape != t.shape || it->second.values != t.values) return false;
    }
    return true;
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
        const Lines lines(m.shape, k);
        std::vector<bool> pads(lines.len, true);
        for (std::size_t o = 0; o < lines.outer; ++o)
            for (std::size_t j = 0; j < lines.len; ++j)
                for (std::size_t i = 0; i < lines.inner; ++i)
                    if ((t.kind == TensorKind::mask) != (m.values[lines.at(o, j, i)] != 0.0)) pads[j] = false;
        std::vector<bool>& slots = out[t.dims[k].axis];
        if (slots.size() != lines.len) slots.assign(lines.len, false);
        for (std::size_t j = 0; j < lines.len; ++j) slots[j] = slots[j] || pads[j];
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

std::vector<bool> entries_at_padded_slots(const Signature& s, const Tensors& inputs, const TensorSpec& output,
                                          const std::vector<int>& shape) {
    if (shape.size() != output.dims.size()) return {};
    const std::map<std::string, std::vector<bool>> padded = padded_slots(s, inputs);
    // Per dim, the padded slots of the axis it follows (null for none): no lookup per entry, on a hot path.
    std::vector<const std::vector<bool>*> along(shape.size(), nullptr);
    bool any = false;
    for (std::size_t k = 0; k < shape.size(); ++k)
        if (const auto it = padded.find(output.dims[k].axis); it != padded.end() && it->second.size() == static_cast<std::size_t>(shape[k])) {
            along[k] = &it->second;
            any = any || std::find(it->second.begin(), it->second.end(), true) != it->second.end();
        }
    if (!any) return {};
    const std::size_t size = Tensor{shape, {}}.size();
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
