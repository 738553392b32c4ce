#include "check/counterexample.h"

#include <iomanip>
#include <sstream>

namespace permcheck {

std::string format_matrix(const Mat<double>& m, const std::string& indent) {
    std::ostringstream s;
    s << std::setprecision(6);
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        s << indent << "[" << i << "]";
        for (Eigen::Index j = 0; j < m.cols(); ++j) s << ' ' << std::setw(11) << m(i, j);
        s << '\n';
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
    s << "  x =\n" << format_matrix(c.x);
    s << "  " << names.lhs << " =\n" << format_matrix(c.lhs);
    s << "  " << names.rhs << " =\n" << format_matrix(c.rhs);
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

}  // namespace permcheck
