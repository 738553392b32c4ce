// Tensors as text (cases/signature.h): shapes and positions, a case's lengths and permutations, rows of values cut to
// the terminal's width, a tensor as aligned rows; the one spelling every view (the text, Markdown and HTML reports,
// the audit's messages) writes values with.
#include "cases/signature.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace permcheck {

std::string index_text(const std::vector<int>& where) {
    std::string out = "(";
    for (std::size_t k = 0; k < where.size(); ++k) {
        if (k) out += ", ";
        out += std::to_string(where[k]);
    }
    return out + ")";
}

std::string format_lengths(const Lengths& lengths) {
    std::string out;
    for (const auto& [axis, len] : lengths) out += (out.empty() ? "" : ", ") + axis + "=" + std::to_string(len);
    return out;
}

std::string format_permutations(const Permutations& perms) {
    std::string out;
    for (const auto& [axis, p] : perms) out += (out.empty() ? "" : ", ") + axis + " " + p.cycles();
    return out;
}

std::string format_row(const double* values, std::size_t count, int width, int precision, std::size_t keep) {
    constexpr std::size_t ends = 3;  // values shown at each end of an elided row
    const bool elided = count > kTerminalRowValues;
    std::ostringstream s;
    s << std::setprecision(precision) << "[";
    for (std::size_t j = 0; j < count; ++j) {
        if (elided && j == ends) {  // the middle cut, around the value at `keep` when it is there
            if (keep >= ends && keep < count - ends)
                s << (keep > ends ? " ..." : "") << " " << keep << ": " << std::setw(width) << values[keep]
                  << (keep + 1 < count - ends ? " ..." : "");
            else
                s << " ...";
            j = count - ends;
        }
        s << (j ? " " : "") << std::setw(width) << values[j];
    }
    s << "]";
    if (elided) s << " (" << count << " values)";
    return s.str();
}

std::string format_tensor(const Tensor& t, const std::string& indent, std::size_t keep, int width) {
    std::ostringstream s;
    if (t.shape.empty()) {
        s << indent << (t.values.empty() ? 0.0 : t.values[0]) << "\n";
        return s.str();
    }
    const std::size_t last = static_cast<std::size_t>(std::max(t.shape.back(), 0));
    const std::size_t rows = last == 0 ? 0 : t.size() / last;
    if (rows == 0) s << indent << "(empty, shape " << index_text(t.shape) << ")\n";
    if (width == 0) width = column_width(t.values.data(), t.values.size());
    for (std::size_t r = 0; r < rows; ++r) s << indent << format_row(t.values.data() + r * last, last, width, 6, keep) << "\n";
    return s.str();
}

int column_width(const double* values, std::size_t count, int precision) {
    int width = kTerminalValueWidth;
    std::ostringstream s;
    s << std::setprecision(precision);
    for (std::size_t j = 0; j < count; ++j) {
        s.str("");
        s << values[j];
        width = std::max(width, static_cast<int>(s.tellp()));
    }
    return width;
}

}  // namespace permcheck
