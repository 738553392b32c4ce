// The lengths an audit sends, case by case: permcheck's own schedule, so that an audit tests the lengths it
// announces and reaches long inputs (RapidCheck's size grows only to 100, and this snapshot's larger sizes are
// undefined behaviour).
#pragma once

#include <vector>

namespace permcheck {

struct LengthPlan {
    int min_len = 1, max_len = 8;  // the range every case but the long ones is drawn from
    int long_len = 256;            // the longest of the long cases; <= max_len: none
    int cases = 100;
};

// One length per case of the whole audit (before sharding):
//  - length 1 is left out when the range has longer lengths: one position has only the identity permutation,
//    where neither equivariance nor invariance can fail;
//  - when the range holds at most a quarter as many lengths as there are (short) cases, every length is sent,
//    in rising rounds; otherwise the lengths rise evenly over the range; max_len is always sent;
//  - every tenth case is a long one, with lengths rising geometrically from max_len + 1 to long_len over the
//    audit, so that a layer that mixes only inside windows or blocks of up to long_len - 1 positions is seen.
std::vector<int> audit_lengths(const LengthPlan& plan);

}  // namespace permcheck
