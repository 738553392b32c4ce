// The case of a signature (cases/signature.h): several named inputs over several axes, how it is drawn and how
// it shrinks.
//
// Drawn: a length per axis (signature_lengths: the length schedule of cases/lengths.h per axis, max_len a hard
// cap, the axes' schedules decorrelated), an independent uniform permutation per axis, real inputs with ties and
// generic values (gen::Sampler::sequence), masks with a realistic share of padding and never a line of an axis
// all padded, index inputs as random graphs with repeated edges and self-loops.
//
// Shrunk: delete elements of any axis (blocks, then single elements; deleting a node deletes the edges that
// reference it and renumbers the rest; an element of x and the element of P x that holds it go together, as
// Permutation::without_row renumbers), put back moved elements of any axis's permutation (toward a single
// transposition on one axis, the identity elsewhere), simplify values (floats as gen::value_shrinks, masks
// toward no padding, index values merged (every v replaced by 0 or v - 1) or one by one toward 0, so that fewer
// nodes are named and can be deleted).
#pragma once

#include "cases/permutation.h"
#include "cases/compare.h"
#include "cases/generators.h"
#include "cases/signature.h"

#include <rapidcheck.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace permcheck {

// The lengths of every case of the whole audit (before sharding): cases/lengths.h's schedule per axis, max_len a
// hard cap; with several axes, lengths 0 and 1 are sent too (the other axes can move). The axes' schedules are
// drawn independently, so a small length of one axis would meet the others' small movable lengths only by chance
// (one edge between two nodes): about a fifth of the cases (at most half) are corners, spread over the audit, in
// which one axis is at 0 or 1 (where its range allows it beside longer lengths) and every other axis at its k-th
// movable length (2, 3, ... in rounds), k = 0 first for every corner. At 0, an index input into the axis is made
// empty with it (its first axis dim at 0). An index input needs an axis to point into: when its index axis drew 0
// and the input would not be empty, the index axis gets length 1.
// `every_length`: lengths 0 and 1 are sent even with one axis (the shift and padding properties, which permute
// nothing: one token shifted already tells an absolute position embedding).
// The schedule keeps one length per case and axis and makes a case's Lengths when asked, so that a check of a
// million cases starts at once.
class LengthSchedule {
public:
    LengthSchedule(const Signature& s, int cases, std::uint64_t seed, bool every_length);
    std::size_t size() const { return size_; }
    Lengths operator[](std::size_t i) const;  // case i's lengths; std::out_of_range past the end
    // Cases [first, first + count) (those the schedule has) take every axis at its largest length, and are drawn
    // generic (draw_signature_case): a bug that shows only past a length is met in the first cases, not hidden by ties.
    void longest_at(std::size_t first, std::size_t count);
    bool at_longest(std::size_t i) const;

private:
    std::shared_ptr<const Signature> signature_;
    std::vector<std::vector<int>> drawn_;                // per axis, the lengths of the cases that are not corners
    std::vector<std::pair<std::size_t, int>> corners_;  // (axis, small length) of each usable corner
    std::vector<std::size_t> corner_slots_;             // ascending: the cases that are corners
    std::size_t longest_first_ = 0, longest_end_ = 0;   // the cases at every axis's largest length
    std::size_t size_ = 0;
};
LengthSchedule signature_lengths(const Signature& s, int cases, std::uint64_t seed, bool every_length = false);

// One case at the given lengths, drawn from `random` at the RapidCheck size `size`. When every permutation
// came out as the identity, a random axis of length >= 2 gets a transposition instead (an identity everywhere
// cannot show a violation). `generic`: at the size 100, its real inputs independent generic values (k / 2^e, no
// palette of rows or values, no multiples of 1/4), so that nothing cancels by a tie.
Case draw_signature_case(const Signature& s, const Lengths& lengths, const rc::Random& random, int size,
                         bool generic = false);

// The inputs with every within=INPUT index input's entries kept inside one group (TensorSpec::within): at each
// position of its axis (an edge), an entry whose position INPUT puts in another group than the first entry's (the
// edge's source) is moved into that group, to the group's member at the entry's value modulo the group's size.
// Idempotent; the same inputs settle alike, so a shrink or a probe stays a case of the signature.
void settle_within(const Signature& s, Tensors& inputs);
// A case settled: its within inputs kept in their groups (settle_within), then its sorted index inputs
// (TensorSpec::sorted_row) put in order, in sorted_inputs' order: x sorted along each
// such input's axis (every input along it moved with it, every index into it renumbered: the same graph, numbered in
// order), then each permutation of such an axis followed by the stable sort of the permuted input, so that P x is in
// order too and its ties keep the order the permutation gives them. The permutation it leaves moves everything along
// the axis, edge features with their edges, outputs with their positions. Idempotent; a case without sorted or
// within inputs is left as it is.
void settle_case(const Signature& s, Case& c);
// Whether two cases are the same case (lengths, permutations, inputs and every property's part).
bool same_case(const Case& a, const Case& b);

// c without the elements `positions` of `axis`, and without what depends on them (the elements of the axes an
// index input runs along whose values name a deleted element); nothing when that would take an axis below its
// min_len, leave a mask line all padded, or delete an element an index input without an axis dim names.
std::optional<Case> without_elements(const Signature& s, const Case& c, const std::string& axis,
                                              const std::vector<int>& positions);

// Throws std::invalid_argument unless c has a length and a permutation of that length for every axis of s, every
// input in the shape the lengths give it, and every index, token and position value an integer in its range: a case
// read back from a report (untrusted) that fits the signature.
void require_case_fits(const Signature& s, const Case& c);

// t without the elements `gone` along dim k.
void delete_along(Tensor& t, std::size_t k, const std::set<int>& gone);

// True when no line of a mask along any of its axis dims is all padding.
bool masks_keep_a_position(const Signature& s, const Tensors& inputs);

// A drawn case or a shrink is settled (settle_case: within inputs in their groups, sorted inputs in order) before
// it is asked; a shrink that comes out the same case as the one it shrinks is dropped.
rc::Shrinkable<Case> settled_shrinkable(const std::shared_ptr<const Signature>& s, const rc::Shrinkable<Case>& k);

// The shrinks of a case, one step: deletions, permutations put back, index and token merges, position offsets,
// simpler values (the padding and shift properties build theirs on these, properties/).
rc::Seq<Case> signature_case_shrinks(const std::shared_ptr<const Signature>& s, const Case& c);
// `shorter_first`: the case cut to each shorter length of each axis (shortest first) tried before those, once, so
// that a finding that shows at some lengths only shrinks to the shortest of them.
rc::Shrinkable<Case> shrinkable_signature_case(const std::shared_ptr<const Signature>& s, Case c,
                                               bool shorter_first = false);

// What every comparison of named tensors shares (the audit's, the white-box check's, the taps'): the widest fixed
// size of the signature's inputs and outputs (1 when none; an open size is not counted), the largest finite |value|
// (at least `start`), the multi-index of element e of a tensor of this shape, and the tolerance at these lengths:
// reductions as long as every axis together plus the widest fixed size (proofs-notes/signature-audit.md).
int widest_fixed_size(const Signature& s);
double finite_max_abs(const std::vector<double>& values, double start = 0.0);
std::vector<int> position_of(std::size_t e, const std::vector<int>& shape);
// `positions`: the largest |position id| of the inputs, whose rounding in rotary angles (position * inv_freq in
// float32) costs `kPositionRoundingTerms * |position| u` (proofs-notes/position-aware-audits.md).
inline constexpr double kPositionRoundingTerms = 8.0;
double signature_tolerance(const ToleranceModel& m, const Lengths& lengths, int widest, double magnitude,
                           double positions = 0.0);
// compare_tensors (below) with the signature_tolerance for the largest finite |value| of a, b and `inputs_magnitude`.
OutputComparison compare_sides(const std::string& name, const Tensor& a, const Tensor& b, const ToleranceModel& m,
                               const Lengths& lengths, int widest, double inputs_magnitude, double positions,
                               const std::vector<bool>& ignored = {});
// The largest finite |value| of the real inputs (masks and indices are not scaled by the layer).
double real_inputs_magnitude(const Signature& s, const Tensors& inputs);
// A difference, a tolerance or a value in the audit's and the taps' messages: three significant digits.
std::string short_number(double v);

// The row-major successor of a multi-index in a tensor of this shape (the last dim fastest), and the row-major
// offset of a multi-index.
void advance(std::vector<int>& where, const std::vector<int>& shape);
std::size_t flat_index(const std::vector<int>& where, const std::vector<int>& shape);
// Whether two sets of named tensors hold the same shapes and values.
bool same_values(const Tensors& a, const Tensors& b);

// Per axis, which of its slots a mask pads: slot j of axis a is padded when some mask input with a single axis dim
// a pads every one of its entries at j. Axes no such mask lies along are absent.
std::map<std::string, std::vector<bool>> padded_slots(const Signature& s, const Tensors& inputs);
// Whether entry `where` of an output lies at a padded slot along one of its axis dims.
bool at_padded_slot(const TensorSpec& output, const std::vector<int>& where,
                    const std::map<std::string, std::vector<bool>>& padded);
// The entries of an output of this shape that lie at a slot `inputs`' masks pad (padded_slots), flat, row-major;
// empty when none does.
std::vector<bool> entries_at_padded_slots(const Signature& s, const Tensors& inputs, const TensorSpec& output,
                                          const std::vector<int>& shape);
// The largest |position id| among the inputs (0 without a position input), for the tolerance of rotary angles
// (proofs-notes/position-aware-audits.md).
double largest_position(const Signature& s, const Tensors& inputs);

// a against b entry by entry (a non-finite entry equals only the same value): the largest difference, where it is,
// and whether it is within `tolerance`; both sides are left out. Shapes that differ make an infinite difference
// (shape_mismatch). The one comparison of the audit, the taps and the white-box check. `ignored`: entries (flat,
// row-major) left out of the comparison, none when empty. `exact_diff`: each entry's |a - b| computed exactly and
// rounded once (the check's in exact arithmetic, where two values closer than the doubles resolve still differ),
// in place of the difference of the doubles.
OutputComparison compare_tensors(const std::string& name, const Tensor& a, const Tensor& b, double tolerance,
                                 const std::vector<bool>& ignored = {}, const std::vector<double>& exact_diff = {});

}  // namespace permcheck
