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

std::string describe(const Counterexample& c) {
    std::ostringstream s;
    const SideNames names = side_names(c.property);
    s << property_name(c.property) << " violated by " << c.layer << " (" << arithmetic_name(c.dtype) << "), n = " << c.n()
      << ", d = " << c.d() << "\n";
    if (c.property == Property::shift)
        s << "  every position index shifted by " << c.shift << "\n";
    else
        s << "  permutation " << c.perm.cycles() << " (rows: (P x)[i] = x[p[i]])\n";
    // The feature of the largest difference stays in view when the rows are cut (x's too: often the one at fault).
    const auto keep = static_cast<std::size_t>(c.comparison.col);
    const int width = column_width({&c.x, &c.lhs, &c.rhs});  // the three matrices' columns line up
    s << "  x =\n" << format_matrix(c.x, "    ", keep, width);
    s << "  " << names.lhs << " =\n" << format_matrix(c.lhs, "    ", keep, width);
    s << "  " << names.rhs << " =\n" << format_matrix(c.rhs, "    ", keep, width);
    s << std::setprecision(6) << "  largest |difference| = " << c.comparison.max_abs_diff << " at position "
      << c.comparison.row << ", feature " << c.comparison.col;
    if (c.comparison.tolerance > 0) s << " (tolerance " << c.comparison.tolerance << ", margin " << c.comparison.margin() << ")";
    if (!c.black_box)
        s << "\n  " << (c.confirmed_exactly ? "confirmed in exact rational arithmetic" : "NOT confirmed in exact arithmetic")
          << "\n  weight seed " << c.weight_seed << ",";
    else
        s << "\n ";
    s << " case " << c.case_index << ", " << c.shrink_steps << " shrink steps\n";
    if (!c.replay.empty()) s << "  replay: " << c.replay << "\n";
    return s.str();
}

Counterexample one_tensor_view(const SignatureCounterexample& c, const Signature& s, Property property, Arithmetic dtype) {
    Counterexample ce;
    ce.property = property;
    ce.dtype = dtype;
    ce.x = tensor_matrix::as_matrix(c.inputs.at("x"));
    ce.perm = c.perms.at("n");
    ce.black_box = true;
    ce.case_index = c.case_index;
    ce.shrink_steps = c.shrink_steps;
    ce.replay = c.replay;
    if (c.outputs.empty()) return ce;
    const OutputComparison& y = c.outputs.front();
    const bool pooled = one_tensor_output(s) == Output::pooled;
    ce.lhs = tensor_matrix::as_matrix(y.layer_of_permuted);
    ce.rhs = tensor_matrix::as_matrix(y.permuted_layer);
    ce.comparison.holds = y.holds;
    ce.comparison.shape_mismatch = y.shape_mismatch;
    ce.comparison.max_abs_diff = y.max_abs_diff;
    ce.comparison.tolerance = y.tolerance;
    if (y.where.size() == 2) {
        ce.comparison.row = y.where[0];
        ce.comparison.col = y.where[1];
    } else if (pooled && y.where.size() == 1) {
        ce.comparison.col = y.where[0];
    }
    return ce;
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
    y.layer_of_permuted = one_tensor_answer(c.lhs, output);
    y.permuted_layer = one_tensor_answer(c.rhs, output);
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
