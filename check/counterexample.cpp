#include "check/counterexample.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace permcheck {

int column_width(std::initializer_list<const Mat<double>*> matrices) {
    int width = kTerminalValueWidth;
    for (const Mat<double>* m : matrices) {
        const Eigen::MatrixXd values = *m;  // contiguous, whatever the matrix's storage order
        width = std::max(width, column_width(values.data(), static_cast<std::size_t>(values.size())));
    }
    return width;
}

std::string format_matrix(const Mat<double>& m, const std::string& indent, std::size_t keep, int width) {
    if (width == 0) width = column_width({&m});
    std::ostringstream s;
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        const Eigen::RowVectorXd row = m.row(i);  // contiguous, whatever the matrix's storage order
        s << indent << "[" << i << "] " << format_row(row.data(), static_cast<std::size_t>(row.size()), width, 6, keep)
          << '\n';
    }
    return s.str();
}

SignatureCounterexample one_tensor_finding(const Counterexample& c, Property property) {
    SignatureCounterexample f;
    const int n = static_cast<int>(c.n());
    f.lengths = {{"n", n}};
    f.perms = {{"n", c.perm}};
    f.inputs = {{"x", tensor_matrix::as_tensor(c.x)}};
    const Output output = property == Property::invariance ? Output::pooled : Output::sequence;
    OutputComparison y;
    y.name = "y";
    y.layer_of_permuted = tensor_matrix::as_tensor(c.lhs);
    y.permuted_layer = tensor_matrix::as_tensor(c.rhs);
    if (output == Output::pooled) y.layer_of_permuted.shape = y.permuted_layer.shape = {static_cast<int>(c.lhs.size())};
    y.max_abs_diff = c.comparison.max_abs_diff;
    y.tolerance = c.comparison.tolerance;
    y.holds = c.comparison.holds;
    y.shape_mismatch = c.comparison.shape_mismatch;
    if (!y.shape_mismatch) {
        if (output == Output::pooled) y.where = {static_cast<int>(c.comparison.col)};
        else y.where = {static_cast<int>(c.comparison.row), static_cast<int>(c.comparison.col)};
    }
    f.outputs.push_back(std::move(y));
    if (!c.perm.is_identity()) f.axis_at_fault = std::string(1, 'n');  // not = "n": GCC 12 warns falsely (-Wrestrict) at -O3
    f.case_index = c.case_index;
    f.shrink_steps = c.shrink_steps;
    f.replay = c.replay;
    return f;
}

}  // namespace permcheck
