// One counterexample as data, and its text. A header of its own, free of RapidCheck and of the layer catalog, so
// that the public API (<permcheck/audit.h>) can hand users the record and describe() without the search's
// headers: the check (check/engine.h) and the audit (check/blackbox.h) both build on it.
#pragma once

#include "check/comparison.h"
#include "check/permutation.h"
#include "check/signature.h"
#include "check/vocabulary.h"
#include "scalars/weights_version.h"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace permcheck {

// One counterexample, as data: every view (text, JSON, Markdown, HTML) is made from this record.
struct Counterexample {
    std::string layer;
    Property property = Property::equivariance;
    Arithmetic dtype = Arithmetic::float64;
    Permutation perm;   // the permutation the property applied (acting on rows: (P x)[i] = x[p[i]])
    Mat<double> x;      // the input
    Mat<double> lhs;    // the property's left side, e.g. L(P x)
    Mat<double> rhs;    // its right side, e.g. P L(x)
    Comparison comparison;
    std::uint64_t seed = 0, weight_seed = 0;
    int weights = kWeightsVersion;  // the version of the draw that weight_seed names (scalars/weights_version.h)
    long shift = 0;
    int case_index = -1, shrink_steps = 0;
    bool confirmed_exactly = false;  // the same case, evaluated in rationals, violates with zero tolerance
    bool black_box = false;          // an audited layer: no weight seed, no exact re-evaluation possible
    std::string replay;              // a command line that re-runs this check

    Eigen::Index n() const { return x.rows(); }
    Eigen::Index d() const { return x.cols(); }
};

// A matrix a row a line ("[i] " and the row as format_row shows it); `keep`: a column each cut row shows; `width`:
// each value's (0: the matrix's own column_width).
std::string format_matrix(const Mat<double>& m, const std::string& indent = "    ", std::size_t keep = kNoColumn,
                          int width = 0);
// The column_width of matrices shown one under the other, so that their columns line up.
int column_width(std::initializer_list<const Mat<double>*> matrices);

// A report's one-tensor finding (read back from the shorthand's fields) as the one-tensor signature's: input x,
// output y.
SignatureCounterexample one_tensor_finding(const Counterexample& c, Property property);

}  // namespace permcheck
