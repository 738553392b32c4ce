// The case's shrinks: deleting elements along any axis (and what references them), putting moved elements back,
// simplifying values and merging index values; and a saved case checked against its signature.
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

bool same_case(const Case& a, const Case& b) {
    const CasePart &p = a.part, &q = b.part;
    const bool same_tensors = p.tensors.size() == q.tensors.size() &&
                              std::equal(p.tensors.begin(), p.tensors.end(), q.tensors.begin(), [](const auto& x, const auto& y) {
                                  return x.first == y.first && same_values(x.second, y.second);
                              });
    const bool same_part = p.numbers == q.numbers && p.names == q.names && p.lists == q.lists && same_tensors;
    return a.lengths == b.lengths && a.perms == b.perms && same_values(a.inputs, b.inputs) &&
           a.weight_seed == b.weight_seed && a.weights == b.weights && same_part;
}

rc::Shrinkable<Case> settled_shrinkable(const std::shared_ptr<const Signature>& s, const rc::Shrinkable<Case>& k) {
    const bool within = std::any_of(s->inputs.begin(), s->inputs.end(), [](const TensorSpec& t) { return !t.within.empty(); });
    if (sorted_inputs(*s).empty() && !within) return k;
    auto value = std::make_shared<Case>(k.value());
    settle_case(*s, *value);
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

rc::Shrinkable<Case> shrinkable_signature_case(const std::shared_ptr<const Signature>& s, Case c, bool shorter_first) {
    rc::Shrinkable<Case> normal =
        rc::shrinkable::shrinkRecur(std::move(c), [s](const Case& k) { return signature_case_shrinks(s, k); });
    if (!shorter_first) return normal;
    // The case cut after its first m elements along each axis, m from the shortest: tried once, before the other
    // shrinks, since single deletions stop at a local minimum where only some lengths fail (every sixteenth).
    return rc::shrinkable::lambda([normal] { return normal.value(); }, [s, normal] {
        const auto shared = std::make_shared<const Case>(normal.value());
        std::vector<std::pair<std::string, int>> cuts;  // (axis, m)
        for (const Axis& a : s->axes)
            for (int m = std::max(a.min_len, 1); m < shared->lengths.at(a.name); ++m) cuts.emplace_back(a.name, m);
        auto shorter = rc::seq::mapMaybe(rc::seq::fromContainer(std::move(cuts)), [s, shared](const auto& cut) {
            std::vector<int> tail(static_cast<std::size_t>(shared->lengths.at(cut.first) - cut.second));
            std::iota(tail.begin(), tail.end(), cut.second);
            std::optional<Case> k = without_elements(*s, *shared, cut.first, tail);
            if (!k || !covers_free_axes(*s, k->inputs, k->lengths)) return rc::Maybe<rc::Shrinkable<Case>>();
            return rc::Maybe<rc::Shrinkable<Case>>(shrinkable_signature_case(s, std::move(*k)));
        });
        return rc::seq::concat(std::move(shorter), normal.shrinks());
    });
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
    settle_case(s, in_order);
    if (!same_case(in_order, c)) {
        for (const TensorSpec& t : s.inputs)
            if (!t.within.empty())
                throw std::invalid_argument("the saved case does not keep the input " + format_input(t) +
                                            " inside the groups of " + t.within + ", or its sorted inputs in order");
        for (const TensorSpec* t : sorted_inputs(s))
            throw std::invalid_argument("the saved case does not keep the input " + format_input(*t) +
                                        " in order, in x or after its permutations (P x)");
    }
}

}  // namespace permcheck
