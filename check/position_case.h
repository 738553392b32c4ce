// The position-aware properties of a signature audit as transformations of a case (check/signature_case.h): what
// the layer is asked besides L(x), what its answer is compared with, how the property's part of a case is drawn
// and how it shrinks. proofs-notes/position-aware-audits.md says why these are the questions.
//   - equivariance (and invariance, for outputs without an axis): L(P x) against P L(x), as ever.
//   - shift: the permutations are identities; x_c is x with c >= 1 added to every position input, everything else
//     unchanged; L(x_c) against L(x), every output elementwise: the position encoding is relative. c grows with the
//     case index, from 1 up to the room the position ids leave (P - offset - n), and shrinks toward 1.
//   - padding: the permutations are identities; pad x inserts k >= 1 pads into one axis (Pads, check/signature.h):
//     at the pads every mask over that axis pads, token ids, reals, index rows and the pads' own position ids are
//     the filler's (drawn), pairwise inputs get drawn rows and columns, and index values naming the axis are
//     renumbered to the real positions' new slots; the real positions keep their values, position ids included.
//     L(pad x) at the real positions (real x real for a pairwise output; unchanged for an output without the axis)
//     against L(x). It shrinks toward fewer pads and a shorter sequence.
#pragma once

#include "check/blackbox.h"
#include "check/signature_case.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace permcheck {

// The inputs the property compares x with: P x, x_c (shift) or pad x (padding); and their lengths.
Tensors transformed_inputs(const Signature& s, Property p, const SignatureCase& c);
Lengths transformed_lengths(Property p, const SignatureCase& c);
// The answer for the transformed inputs as it is compared (a padded answer at the real positions), and what it
// must equal: P L(x) along the output's axes (equivariance), L(x) (shift, padding).
Tensor compared_output(const TensorSpec& t, Property p, const SignatureCase& c, const Tensor& answer);
Tensor expected_output(const TensorSpec& t, Property p, const SignatureCase& c, const Tensor& y);

// The axis padding pads: `given` (--padding-axis), which a mask must lie along, or the one axis the masks lie
// along. Throws std::invalid_argument naming the flag when there is no mask, or masks lie along several axes and
// none is given.
std::string padding_axis(const Signature& s, const std::string& given);
// Throws std::invalid_argument naming --property unless the signature can be audited for p: shift needs a position
// input whose axis leaves room for a shift (max_len < P); padding needs a mask over its axis and room for a pad
// (max_len >= min_len + 1, max_len >= 2). reversal and causal-prefix are reference-layer properties.
void validate_property(const Signature& s, Property p, const std::string& axis);

// The property's part of case `c`, drawn from `random`: shift's c for case i of `cases` (log-uniform in [1, top],
// top rising from 1 to the room over the run), or the pads (k in [1, max_len - n], placed as `where` says).
void draw_shift(const Signature& s, SignatureCase& c, const rc::Random& random, int case_index, int cases);
void draw_pads(const Signature& s, SignatureCase& c, const std::string& axis, PadPlacement where,
               const rc::Random& random, int size);

// draw_shift for shift, draw_pads (along `axis`) for padding; nothing for equivariance.
void draw_property_part(const Signature& s, SignatureCase& c, Property p, const std::string& axis, PadPlacement where,
                        const rc::Random& random, int case_index, int cases);

// The lengths of every case of an audit of p (before sharding): signature_lengths, with every length for shift and
// padding (one token shifted already tells an absolute position embedding), and the padded axis one short of its
// MAX (room for a pad).
std::vector<Lengths> property_lengths(const Signature& s, Property p, const std::string& axis, int cases,
                                      std::uint64_t seed);

// The shrinks of a shift case (toward c = 1 first, then the case's own) or of a padding case (fewer pads, fewer
// real positions, simpler values).
rc::Shrinkable<SignatureCase> shrinkable_position_case(const std::shared_ptr<const Signature>& s, Property p,
                                                       SignatureCase c);

// Per axis, which of its slots a mask pads: slot j of axis a is padded when some mask input with a single axis dim
// a pads every one of its entries at j. Axes no such mask lies along are absent.
std::map<std::string, std::vector<bool>> padded_slots(const Signature& s, const Tensors& inputs);
// Whether entry `where` of an output lies at a padded slot along one of its axis dims.
bool at_padded_slot(const TensorSpec& output, const std::vector<int>& where,
                    const std::map<std::string, std::vector<bool>>& padded);

// The entries of an output of case c (of this shape, as compared) that property p leaves out of the comparison:
// for padding, those at slots that x's own masks pad (they are no real tokens, and a padded query's answer may
// change with the pads, as a query that sees no key attends uniformly over every slot when its scores are set to
// the lowest float); none (empty) otherwise.
std::vector<bool> ignored_entries(const Signature& s, Property p, const SignatureCase& c, const TensorSpec& output,
                                  const std::vector<int>& shape);

// The largest |position id| among the inputs (0 without a position input), for the tolerance of rotary angles
// (proofs-notes/position-aware-audits.md).
double largest_position(const Signature& s, const Tensors& inputs);

}  // namespace permcheck
