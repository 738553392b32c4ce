// The case of a check and of an audit, how it is drawn and how it shrinks. One type and one shrinker for both:
// the white-box check reads every field, a black-box audit has no weights or positions to shift and leaves the
// weight seed at 0 and the shift at 1, where the shrinker leaves them alone.
#pragma once

#include "check/generators.h"
#include "check/permutation.h"

#include <rapidcheck.h>

#include <cstdint>

namespace permcheck {

// One case: an input, a permutation of its positions, the weights' seed and a position shift.
struct MatrixCase {
    Mat<double> x;
    Permutation perm;
    std::uint64_t weight_seed = 0;
    long shift = 1;
    int weights = kWeightsVersion;  // how weight_seed draws the weights (scalars/weights.h); a report's own on replay
};

// Where cases are drawn from.
struct CaseSpace {
    int min_len = 1, max_len = 8;  // n in [min_len, max_len], shrinking toward min_len
    int d = 4;
    bool white_box = true;  // also draw a weight seed and a shift (a black box has neither)
};

// c without position k: row k of x goes, and so does the row of P x that holds it ((P x)[i] = x[k]); every
// other row keeps the output row it is sent to, renumbered. Not the other rule, taking k out of its cycle (its
// predecessor then receiving p[k]): that one also sends row p[k] to a new output row, breaking a second pair
// (output row, row it receives) and making one the case never had, so a violation carried by the moved row p[k]
// is lost. Here x and P x lose one and the same row and keep the others in order: only a violation that needs
// the deleted row itself can disappear.
MatrixCase without_position(const MatrixCase& c, int k);

// c without positions k, k+1, ..., k+count-1 (without_position, count times).
MatrixCase without_positions(const MatrixCase& c, int k, int count);

// The shrinks of a case, most radical first: delete a block of positions (halves, then quarters, ...), delete a
// position (down to min_len), fix a moved position of the
// permutation (gen::permutation_shrinks), simplify one input value (gen::value_shrinks), then weights' seed 0
// and shift 1. Deletion keeps the rest of the case, so a violation that needs two positions keeps failing as
// the others go: shrinking reaches the shortest failing length directly, not by luck of regeneration.
rc::Seq<MatrixCase> case_shrinks(const MatrixCase& c, int min_len);  // lazy: a large case has many

// A case with its shrinks (case_shrinks, recursively).
rc::Shrinkable<MatrixCase> shrinkable_case(MatrixCase c, int min_len);

// n in [min_len, max_len] (as rc::gen::inRange draws it at the size), the input, a permutation uniform over S_n,
// then (white box) the weights' seed and the shift. Throws std::invalid_argument for impossible lengths or d.
rc::Gen<MatrixCase> case_generator(const CaseSpace& space);

}  // namespace permcheck
