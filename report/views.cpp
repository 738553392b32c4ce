#include "report/views.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace permcheck::report::detail {

// Shortest text that reads back as the same double: for the human views.
std::string text(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string one_line_text(const Permutation& p) { return where_text(p.one_line()); }

std::string headline(const Record& r) {
    std::string s = r.layer + ": " + property_name(r.property) + " " + verdict_name(r.verdict);
    s += " (" + std::string(arithmetic_name(r.dtype)) + ")";
    return s;
}

std::string matrix_text(const Mat<double>& m) {
    std::ostringstream s;
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        s << "[" << i << "]";
        for (Eigen::Index j = 0; j < m.cols(); ++j) s << "  " << text(m(i, j));
        s << "\n";
    }
    return s.str();
}

std::string html_escape(const std::string& in) {
    std::string out;
    for (char ch : in) {
        switch (ch) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += ch;
        }
    }
    return out;
}

// Markdown inline code that survives backticks in the content.
std::string md_code(const std::string& s) {
    const std::string fence = s.find('`') == std::string::npos ? "`" : "`` ";
    return fence + s + (fence == "`" ? "`" : " ``");
}

namespace {
void append_tensor(std::string& s, const Tensor& t, std::size_t dim, std::size_t& at) {
    if (dim == t.shape.size()) {
        s += at < t.values.size() ? text(t.values[at++]) : std::string("?");
        return;
    }
    s += '[';
    for (int k = 0; k < t.shape[dim]; ++k) {
        if (k) s += ", ";
        append_tensor(s, t, dim + 1, at);
    }
    s += ']';
}
}  // namespace

std::string tensor_text(const Tensor& t) {
    std::string s;
    std::size_t at = 0;
    append_tensor(s, t, 0, at);
    return s;
}

std::string lengths_text(const Lengths& lengths) {
    std::string s;
    for (const auto& [axis, n] : lengths) {
        if (!s.empty()) s += ", ";
        s += axis + " = " + std::to_string(n);
    }
    return s;
}

std::string output_claim(const TensorSpec& t, const Signature& s) {
    std::string along, to;
    for (const Axis& a : s.axes) {
        const bool has = std::any_of(t.dims.begin(), t.dims.end(), [&a](const Dim& d) { return d.axis == a.name; });
        std::string& list = has ? along : to;
        if (!list.empty()) list += ", ";
        list += a.name;
    }
    std::string claim = along.empty() ? "" : "equivariant along " + along;
    if (!along.empty() && !to.empty()) claim += ", ";
    if (!to.empty()) claim += "invariant to " + to;
    return claim;
}

const TensorSpec* spec_named(const std::vector<TensorSpec>& specs, const std::string& name) {
    for (const TensorSpec& t : specs)
        if (t.name == name) return &t;
    return nullptr;
}

std::string where_text(const std::vector<int>& where) {
    std::string s = "[";
    for (std::size_t k = 0; k < where.size(); ++k) {
        if (k) s += ", ";
        s += std::to_string(where[k]);
    }
    return s + "]";
}

std::string cycles_text(const Permutation& p) { return p.is_identity() ? "(identity)" : p.cycles(); }

std::string case_replay(const Record& r) {
    if (r.counterexample) return "permcheck replay report.json";  // a reference layer's: no program to name
    if (!r.signature_counterexample) return "";
    const auto audit = r.details.find("audit");  // an audit through a program (audit-torch's have none to name)
    if (audit == r.details.end() || !audit->is_object()) return "";
    if (audit->value("served_in_process", false)) return "";  // its replay line names permcheck.replay already
    const auto command = audit->find("command");
    if (command == audit->end() || !command->is_string()) return "";
    std::string quoted = "'";
    for (char c : command->get<std::string>()) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return "permcheck replay report.json --exec " + quoted + "'";
}

SideNames shown_sides(const Record& r) {
    if (r.verdict == Verdict::nondeterministic) return {"first answer", "second answer", "|first answer - second answer|"};
    if (r.verdict == Verdict::batch_dependent) return {"answer in a batch", "answer alone", "|in a batch - alone|"};
    return side_names(r.property);
}

std::string axes_text(const std::vector<std::string>& axes) {
    std::string s;
    for (std::size_t k = 0; k < axes.size(); ++k) {
        if (k) s += ", ";
        s += axes[k].empty() ? std::string("-") : axes[k];
    }
    return s;
}

}  // namespace permcheck::report::detail
