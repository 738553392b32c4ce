// Packing: sequences packed into one row stay apart. A case is m >= 2 sequences packed along the sequence axis (its
// length the packed total, within the axis's range): each sequence's position ids start at 0 (libraries find a
// sequence's start where its position id is 0) and a segment input holds the index of each position's sequence;
// masks, token ids and reals are the case's. One sequence, `piece`, is also run alone (its position ids as packed, its
// segment 0), and its outputs must equal the packed row's at its positions: L(s_j) = L(pack)[s_j]. Over the cases
// every sequence of a packing is compared (the piece is drawn). Outputs without the axis are not compared, nor the
// slots the case's own masks pad. Refused without a position or segment input along the axis (nothing would tell
// the model where a sequence starts), and for pairwise inputs over it. Shrunk to the fewest sequences, then the
// shortest: two one-token sequences where one token is enough. proofs-notes/packing.md.
#include "properties/cuts.h"
#include "properties/property.h"

#include <algorithm>

namespace permcheck {

namespace {

using properties::Cuts;
using properties::cuts_of;

// Where each sequence starts, and the packed length: {0, at..., n}.
std::vector<int> bounds(const Cuts& c, int n) {
    std::vector<int> b{0};
    b.insert(b.end(), c.at.begin(), c.at.end());
    b.push_back(n);
    return b;
}

// The position ids from 0 in each sequence (a planted harness bug numbers the whole row), the segment ids the index
// of each position's sequence.
void number_sequences(const Signature& s, Case& c) {
    const Cuts cuts = *cuts_of(c);
    const std::vector<int> b = bounds(cuts, c.lengths.at(cuts.axis));
    const bool restart = test_only::planted_harness_bug() != test_only::HarnessBug::packing_without_restart;
    for (const TensorSpec& t : s.inputs) {
        if ((t.kind != TensorKind::position && t.kind != TensorKind::segment) || position_axis(t) != cuts.axis) continue;
        std::vector<double>& v = c.inputs.at(t.name).values;
        for (std::size_t piece = 0; piece + 1 < b.size(); ++piece)
            for (int i = b[piece]; i < b[piece + 1] && static_cast<std::size_t>(i) < v.size(); ++i)
                v[static_cast<std::size_t>(i)] = t.kind == TensorKind::segment ? static_cast<double>(piece)
                                                 : restart                      ? static_cast<double>(i - b[piece])
                                                                                : static_cast<double>(i);
    }
}

Case with_sequences(const Signature& s, Case c, std::vector<int> at, int piece) {
    properties::put_cuts(c, {cuts_of(c)->axis, std::move(at), piece, false});
    c.perms = identities(c.lengths);
    number_sequences(s, c);
    return c;
}

// c without the positions `gone` (ascending) of the axis, its sequences' ends moved with them, or nothing when a
// sequence would be left empty or the deletion is refused (an axis below its MIN, a mask line all padded).
std::optional<Case> without(const Signature& s, const Case& c, const std::vector<int>& gone, int piece) {
    const Cuts cuts = *cuts_of(c);
    std::optional<Case> smaller = without_elements(s, c, cuts.axis, gone);
    if (!smaller) return std::nullopt;
    std::vector<int> at;
    for (int end : cuts.at) {
        const int moved = end - static_cast<int>(std::count_if(gone.begin(), gone.end(), [end](int g) { return g < end; }));
        if (moved <= (at.empty() ? 0 : at.back()) || moved >= smaller->lengths.at(cuts.axis)) continue;
        at.push_back(moved);
    }
    if (at.size() + 1 < 2) return std::nullopt;
    if (static_cast<std::size_t>(piece) > at.size()) return std::nullopt;
    return with_sequences(s, std::move(*smaller), std::move(at), piece);
}

std::vector<Case> structural_shrinks(const Signature& s, const Case& c) {
    std::vector<Case> out;
    const Cuts cuts = *cuts_of(c);
    const std::vector<int> b = bounds(cuts, c.lengths.at(cuts.axis));
    const int m = static_cast<int>(b.size()) - 1, piece = cuts.piece;
    // Fewer sequences: one other than the compared piece gone whole (when at least two stay).
    for (int j = 0; j < m && m > 2; ++j) {
        if (j == piece) continue;
        std::vector<int> gone;
        for (int i = b[static_cast<std::size_t>(j)]; i < b[static_cast<std::size_t>(j) + 1]; ++i) gone.push_back(i);
        if (auto k = without(s, c, gone, j < piece ? piece - 1 : piece)) out.push_back(std::move(*k));
    }
    // Shorter sequences: one position of a sequence longer than one gone.
    for (int j = 0; j < m; ++j)
        if (b[static_cast<std::size_t>(j) + 1] - b[static_cast<std::size_t>(j)] > 1)
            for (int i = b[static_cast<std::size_t>(j)]; i < b[static_cast<std::size_t>(j) + 1]; ++i)
                if (auto k = without(s, c, {i}, piece)) out.push_back(std::move(*k));
    return out;
}

rc::Seq<Case> packing_shrinks(const std::shared_ptr<const Signature>& s, const Case& c) {
    const auto shared = std::make_shared<const Case>(c);
    // Simpler values at the same lengths, numbered again (a shrink that moved the position ids is undone).
    auto simpler = rc::seq::mapMaybe(signature_case_shrinks(s, c), [s, shared](Case k) {
        if (k.lengths != shared->lengths) return rc::Maybe<Case>();
        k.part = shared->part;
        const Cuts cuts = *cuts_of(k);
        k = with_sequences(*s, std::move(k), cuts.at, cuts.piece);
        if (same_values(k.inputs, shared->inputs)) return rc::Maybe<Case>();
        return rc::Maybe<Case>(std::move(k));
    });
    return rc::seq::concat(rc::seq::fromContainer(structural_shrinks(*s, c)), std::move(simpler));
}

bool starts_told(const Signature& s, const std::string& axis) {
    return std::any_of(s.inputs.begin(), s.inputs.end(), [&](const TensorSpec& t) {
        return (t.kind == TensorKind::position || t.kind == TensorKind::segment) && position_axis(t) == axis;
    });
}

class Packing : public PropertyRules {
public:
    const char* name() const override { return "packing"; }
    const char* adjective() const override { return "packing-invariant"; }
    SideNames sides(bool) const override { return {"L(s_j)", "L(pack)[s_j]", "|L(s_j) - L(pack)[s_j]|"}; }
    const char* meaning() const override {
        return "sequences packed into one row stay apart: each sequence's outputs equal its own run's";
    }
    std::string case_text(const Case& c) const override {
        const auto cuts = cuts_of(c);
        if (!cuts) return "no packing";
        const std::vector<int> b = bounds(*cuts, c.lengths.at(cuts->axis));
        std::string lengths;
        for (std::size_t j = 0; j + 1 < b.size(); ++j) lengths += (j ? ", " : "") + std::to_string(b[j + 1] - b[j]);
        const auto [first, end] = cuts->span(c.lengths.at(cuts->axis));
        return std::to_string(b.size() - 1) + " sequences packed along " + cuts->axis + " (lengths " + lengths +
               "); sequence " + std::to_string(cuts->piece) + " (positions " + std::to_string(first) + ".." +
               std::to_string(end - 1) + ") alone";
    }
    bool permutes() const override { return false; }
    std::vector<PropertyOption> options() const override { return {properties::sequence_axis_option()}; }
    std::vector<ProfileRowSpec> profile_rows(const Signature& s, const PropertyArgs& a) const override {
        if (!properties::applies(*this, s, a)) return {};
        return {{"packing", "packed sequences stay apart", a.settings}};
    }
    CallPlan plan() const override { return {.judges_outputs_without_axes = false}; }
    const char* output_claim() const override { return "at each packed sequence's positions equal to its own run's"; }
    std::string compared_text() const override { return "L(s_j) against the packed row's outputs at s_j"; }
    const char* verdict_meaning(bool holds) const override { return holds ? "sequences stay apart" : "packed sequences leak"; }

    PropertyArgs completed_args(const Signature& s, PropertyArgs a) const override {
        a.axis = properties::sequence_axis(s, a, "packing");
        properties::require_sequence_axis(s, a.axis, "packing");
        if (!starts_told(s, a.axis))
            throw std::invalid_argument("--property packing: nothing along " + a.axis +
                                        " tells the model where a packed sequence starts: give it a position input "
                                        "(its ids restart at 0 in each sequence) or a segment input (doc:" + a.axis +
                                        ":segment)");
        for (const TensorSpec& t : s.inputs)
            if (std::count_if(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.axis == a.axis; }) > 1)
                throw std::invalid_argument("--property packing: the input " + t.name + " is pairwise over " + a.axis +
                                            ": what it holds between two packed sequences has no own run to come from");
        return a;
    }

    // Every length with the sequence axis at 2 or more (room for two sequences).
    LengthSchedule lengths(const Signature& s, const PropertyArgs& a, int cases, std::uint64_t seed) const override {
        return properties::lengths_with_room_to_cut(s, a.axis, cases, seed);
    }

    // m in [2, min(n, 4)] sequences, their ends distinct positions of (0, n), the piece run alone uniform.
    void draw(const Signature& s, const PropertyArgs& a, Case& c, const rc::Random& random, int, int) const override {
        rc::Random own(random);
        own.split();
        gen::Sampler draw(own.split(), 100);
        const int n = c.lengths.at(a.axis);
        const int m = n < 2 ? 1 : draw.uniform(2, std::min(n, 4) + 1);
        std::vector<int> ends = properties::distinct_ends(draw, n, m);
        properties::put_cuts(c, {a.axis, {}, -1, false});
        c = with_sequences(s, std::move(c), std::move(ends), draw.uniform(0, m));
    }

    // The piece alone: its positions of every input, its segment 0.
    Tensors transformed(const Signature& s, const PropertyArgs&, const Case& c) const override {
        const auto cuts = cuts_of(c);
        if (!cuts || cuts->piece < 0) throw std::invalid_argument("a packing case without its sequences");
        const auto [first, end] = cuts->span(c.lengths.at(cuts->axis));
        Tensors alone = properties::span_of(s, c.inputs, cuts->axis, first, end);
        for (const TensorSpec& t : s.inputs)
            if (t.kind == TensorKind::segment) std::fill(alone.at(t.name).values.begin(), alone.at(t.name).values.end(), 0.0);
        return alone;
    }
    Lengths transformed_lengths(const Case& c) const override {
        const auto cuts = cuts_of(c);
        Lengths l = c.lengths;
        if (cuts) {
            const auto [first, end] = cuts->span(l.at(cuts->axis));
            l[cuts->axis] = end - first;
        }
        return l;
    }
    Tensor expected(const TensorSpec& t, const Case& c, const Tensor& y) const override {
        const auto cuts = cuts_of(c);
        if (!cuts) return y;
        const auto [first, end] = cuts->span(c.lengths.at(cuts->axis));
        return properties::span_along(t, y, cuts->axis, first, end);
    }
    std::vector<bool> ignored(const Signature& s, const Case& c, const TensorSpec& output,
                              const std::vector<int>& shape) const override {
        const auto cuts = cuts_of(c);
        if (!cuts) return {};
        return properties::ignored_off_axis(s, transformed(s, {}, c), cuts->axis, output, shape);
    }

    rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs&, Case c) const override {
        if (!cuts_of(c)) return shrinkable_signature_case(s, std::move(c));  // an input answered twice: no packing
        return rc::shrinkable::shrinkRecur(std::move(c), [s](const Case& k) { return packing_shrinks(s, k); });
    }
    void validate_saved(const Signature&, const Case& c) const override {
        const auto cuts = cuts_of(c);
        if (!cuts || cuts->at.empty()) throw std::invalid_argument("the saved packing case has no sequences");
        const auto n = c.lengths.find(cuts->axis);
        if (n == c.lengths.end()) throw std::invalid_argument("the saved packing names no axis of the signature");
        const std::vector<int> b = bounds(*cuts, n->second);
        for (std::size_t j = 0; j + 1 < b.size(); ++j)
            if (b[j] >= b[j + 1]) throw std::invalid_argument("the saved sequences' ends are not ascending positions in (0, n)");
        if (cuts->piece < 0 || static_cast<std::size_t>(cuts->piece) > cuts->at.size())
            throw std::invalid_argument("the saved packing runs no sequence alone");
    }
};

}  // namespace

const PropertyRules& packing_rules() {
    static const Packing rules;
    return rules;
}

}  // namespace permcheck
