// The report record and its views. JSON is the record; Markdown and HTML are made from the same fields.
#include "report/report.h"

#include "io/json_limits.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <unistd.h>
#include <vector>

namespace permcheck::report {

using nlohmann::json;

namespace {

// ---- numbers ---------------------------------------------------------------------------------------------
// JSON has no NaN or infinity; they are written as the strings "NaN", "Infinity" and "-Infinity" (the names
// JavaScript and Python's json module use). Finite numbers are written by nlohmann's shortest round-trip
// formatting, so every double reads back bit for bit.
json number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
}

double number_from(const json& j, const std::string& field) {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
        const std::string s = j.get<std::string>();
        if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
        if (s == "Infinity") return std::numeric_limits<double>::infinity();
        if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    }
    throw std::invalid_argument("field '" + field + "' must be a number or one of \"NaN\", \"Infinity\", " +
                                "\"-Infinity\", got " + j.dump());
}

// Shortest text that reads back as the same double: for the human views.
std::string text(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

json matrix(const Mat<double>& m) {
    json rows = json::array();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        json row = json::array();
        for (Eigen::Index j = 0; j < m.cols(); ++j) row.push_back(number(m(i, j)));
        rows.push_back(std::move(row));
    }
    return rows;
}

Mat<double> matrix_from(const json& j, const std::string& field) {
    if (!j.is_array()) throw std::invalid_argument("field '" + field + "' must be an array of rows");
    const auto rows = static_cast<Eigen::Index>(j.size());
    const Eigen::Index cols = rows == 0 ? 0 : (j[0].is_array() ? static_cast<Eigen::Index>(j[0].size()) : -1);
    Mat<double> m(rows, std::max<Eigen::Index>(cols, 0));
    for (Eigen::Index i = 0; i < rows; ++i) {
        const json& row = j[static_cast<std::size_t>(i)];
        if (!row.is_array() || static_cast<Eigen::Index>(row.size()) != cols)
            throw std::invalid_argument("field '" + field + "': row " + std::to_string(i) +
                                        " must be an array of " + std::to_string(cols) + " numbers, like row 0");
        for (Eigen::Index c = 0; c < cols; ++c)
            m(i, c) = number_from(row[static_cast<std::size_t>(c)],
                                  field + "[" + std::to_string(i) + "][" + std::to_string(c) + "]");
    }
    return m;
}

const json& required(const json& j, const char* field, const std::string& where = "") {
    const auto it = j.find(field);
    if (it == j.end()) throw std::invalid_argument("missing field '" + where + field + "'");
    return *it;
}

// Whether v is an integer that T holds: get<T>() would wrap an out-of-range integer silently, and convert a
// float outside T's range with undefined behaviour (found by fuzz/fuzz_report).
template <class T> bool integer_fits(const json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    if (!v.is_number_integer()) return false;
    const std::int64_t x = v.get<std::int64_t>();
    if (x >= 0) return static_cast<std::uint64_t>(x) <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    return std::is_signed_v<T> && x >= static_cast<std::int64_t>(std::numeric_limits<T>::min());
}
template <class T> struct is_integer_vector : std::false_type {};
template <class E> struct is_integer_vector<std::vector<E>> : std::is_integral<E> {};

template <class T> T get_as(const json& j, const char* field, const std::string& where = "") {
    const json& v = required(j, field, where);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (v.is_number() && !integer_fits<T>(v))
            throw std::invalid_argument("field '" + where + field + "' must be an integer in [" +
                                        std::to_string(std::numeric_limits<T>::min()) + ", " +
                                        std::to_string(std::numeric_limits<T>::max()) + "], got " + v.dump());
    } else if constexpr (is_integer_vector<T>::value) {
        if (v.is_array())
            for (const json& e : v)
                if (e.is_number() && !integer_fits<typename T::value_type>(e))
                    throw std::invalid_argument("field '" + where + field + "' must hold integers in range, got " +
                                                e.dump());
    }
    try {
        return v.get<T>();
    } catch (const json::exception&) {
        throw std::invalid_argument("field '" + where + field + "' has the wrong type: " + v.dump());
    }
}

template <class T> T get_or(const json& j, const char* field, T fallback, const std::string& where = "") {
    return j.contains(field) && !j[field].is_null() ? get_as<T>(j, field, where) : fallback;
}

// ---- the counterexample ----------------------------------------------------------------------------------
json counterexample_json(const Counterexample& c) {
    json where = json::object();
    where["position"] = c.comparison.row;
    where["feature"] = c.comparison.col;
    return json{{"n", c.n()},
                {"d", c.d()},
                {"permutation", c.perm.one_line()},
                {"cycles", c.perm.cycles()},
                {"x", matrix(c.x)},
                {"layer_of_permuted", matrix(c.lhs)},
                {"permuted_layer", matrix(c.rhs)},
                {"max_abs_diff", number(c.comparison.max_abs_diff)},
                {"where", where},
                {"tolerance", number(c.comparison.tolerance)},
                {"margin", number(c.comparison.margin())},
                {"shape_mismatch", c.comparison.shape_mismatch},
                {"case_index", c.case_index},
                {"shrink_steps", c.shrink_steps},
                {"weight_seed", c.weight_seed},
                {"shift", c.shift},
                {"confirmed_exactly", c.confirmed_exactly},
                {"black_box", c.black_box}};
}

Counterexample counterexample_from(const json& j, const Record& r) {
    const std::string at = "counterexample.";
    if (!j.is_object()) throw std::invalid_argument("field 'counterexample' must be an object or null");
    Counterexample c;
    c.layer = r.layer;
    c.property = r.property;
    c.dtype = r.dtype;
    c.seed = r.seed;
    c.replay = r.replay;
    c.x = matrix_from(required(j, "x", at), at + "x");
    c.lhs = matrix_from(required(j, "layer_of_permuted", at), at + "layer_of_permuted");
    c.rhs = matrix_from(required(j, "permuted_layer", at), at + "permuted_layer");
    const auto one_line = get_as<std::vector<int>>(j, "permutation", at);
    try {
        c.perm = Permutation(one_line);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("field 'counterexample.permutation': " + std::string(e.what()));
    }
    if (c.perm.size() != c.x.rows())
        throw std::invalid_argument("field 'counterexample.permutation' has " + std::to_string(c.perm.size()) +
                                    " entries but x has " + std::to_string(c.x.rows()) + " rows (positions)");
    if (j.contains("n") && get_as<long>(j, "n", at) != c.x.rows())
        throw std::invalid_argument("field 'counterexample.n' disagrees with the rows of x");
    if (j.contains("d") && get_as<long>(j, "d", at) != c.x.cols())
        throw std::invalid_argument("field 'counterexample.d' disagrees with the columns of x");
    c.comparison.holds = false;
    c.comparison.max_abs_diff = number_from(required(j, "max_abs_diff", at), at + "max_abs_diff");
    c.comparison.tolerance = number_from(required(j, "tolerance", at), at + "tolerance");
    const json& where = required(j, "where", at);
    c.comparison.row = get_as<Eigen::Index>(where, "position", at + "where.");
    c.comparison.col = get_as<Eigen::Index>(where, "feature", at + "where.");
    c.comparison.shape_mismatch = get_or<bool>(j, "shape_mismatch", false, at);
    c.case_index = get_or<int>(j, "case_index", -1, at);
    c.shrink_steps = get_or<int>(j, "shrink_steps", 0, at);
    c.weight_seed = get_or<std::uint64_t>(j, "weight_seed", 0, at);
    c.shift = get_or<long>(j, "shift", 0, at);
    c.confirmed_exactly = get_or<bool>(j, "confirmed_exactly", false, at);
    c.black_box = get_or<bool>(j, "black_box", false, at);
    return c;
}

const char* const kVerdicts[] = {"holds", "violated", "nondeterministic", "non-finite", "error"};

// ---- shared by the human views ---------------------------------------------------------------------------
struct SideNames {
    std::string lhs, rhs, diff;
};
SideNames side_names(const std::string& property) {
    if (property == "shift") return {"L_shifted(x)", "L(x)", "|L_shifted(x) - L(x)|"};
    if (property == "invariance") return {"L(P x)", "L(x)", "|L(P x) - L(x)|"};
    if (property == "causal-prefix") return {"L(P x)[n-1]", "L(x)[n-1]", "|L(P x)[n-1] - L(x)[n-1]|"};
    return {"L(P x)", "P L(x)", "|L(P x) - P L(x)|"};
}

std::string one_line_text(const Permutation& p) {
    std::string s = "[";
    for (int i = 0; i < p.size(); ++i) s += (i ? ", " : "") + std::to_string(p[i]);
    return s + "]";
}

std::string headline(const Record& r) {
    std::string s = r.layer + ": " + r.property + " " + r.verdict;
    if (!r.dtype.empty()) s += " (" + r.dtype + ")";
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

}  // namespace

// ---- JSON ------------------------------------------------------------------------------------------------
json to_json(const Record& r) {
    json j = json::object();
    j["schema"] = kSchema;
    j["verdict"] = r.verdict;
    j["layer"] = r.layer;
    j["property"] = r.property;
    j["dtype"] = r.dtype;
    j["cases"] = r.cases;
    j["seed"] = r.seed;
    j["counterexample"] = r.counterexample ? counterexample_json(*r.counterexample) : json(nullptr);
    j["error"] = r.error;
    j["replay"] = r.replay;
    j["details"] = r.details.is_null() ? json::object() : r.details;
    return j;
}

Record from_json(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("a report must be a JSON object, got " + std::string(j.type_name()));
    const std::string schema = get_as<std::string>(j, "schema");
    if (schema != kSchema)
        throw std::invalid_argument("unsupported schema '" + schema + "'; this permcheck reads '" + kSchema + "'");
    Record r;
    r.verdict = get_as<std::string>(j, "verdict");
    if (std::find(std::begin(kVerdicts), std::end(kVerdicts), r.verdict) == std::end(kVerdicts))
        throw std::invalid_argument("field 'verdict' is '" + r.verdict +
                                    "'; expected holds, violated, nondeterministic, non-finite or error");
    r.layer = get_as<std::string>(j, "layer");
    r.property = get_as<std::string>(j, "property");
    r.dtype = get_as<std::string>(j, "dtype");
    r.cases = get_as<int>(j, "cases");
    if (r.cases < 0) throw std::invalid_argument("field 'cases' must not be negative, got " + std::to_string(r.cases));
    r.seed = get_as<std::uint64_t>(j, "seed");
    r.error = get_or<std::string>(j, "error", "");
    r.replay = get_or<std::string>(j, "replay", "");
    if (j.contains("details") && !j["details"].is_null()) {
        if (!j["details"].is_object()) throw std::invalid_argument("field 'details' must be an object");
        r.details = j["details"];
    }
    if (j.contains("counterexample") && !j["counterexample"].is_null())
        r.counterexample = counterexample_from(j["counterexample"], r);
    return r;
}

Record record_of(const CheckResult& result, const CheckOptions& opts) {
    Record r;
    r.verdict = result.holds ? "holds" : "violated";
    r.layer = result.layer;
    r.property = result.property;
    r.dtype = result.dtype;
    r.cases = result.cases_run;
    r.seed = opts.seed;
    r.counterexample = result.counterexample;
    r.replay = replay_command(result.layer, parse_property(result.property), opts);
    r.details["check"] = {{"cases", opts.cases},     {"min_len", opts.min_len}, {"max_len", opts.max_len},
                          {"d", opts.d},             {"evaluations", result.evaluations},
                          {"expected", result.expected_holds ? "holds" : "violated"}};
    return r;
}

Record record_of(const AuditResult& result, const std::string& layer, const std::string& property,
                 const std::string& dtype, std::uint64_t seed, const std::string& replay) {
    Record r;
    r.verdict = verdict_name(result.verdict);
    r.layer = layer;
    r.property = result.property.empty() ? property : result.property;
    r.dtype = result.dtype.empty() ? dtype : result.dtype;
    r.cases = result.cases;
    r.seed = seed;
    r.counterexample = result.counterexample;
    r.replay = replay;
    if (r.counterexample) r.counterexample->replay = replay;
    r.error = result.error;
    return r;
}

// ---- Markdown --------------------------------------------------------------------------------------------
std::string to_markdown(const Record& r) {
    std::ostringstream s;
    const SideNames names = side_names(r.property);
    s << "### permcheck: " << headline(r) << "\n\n";
    s << "| field | value |\n| --- | --- |\n";
    s << "| verdict | **" << r.verdict << "** |\n";
    s << "| layer | " << md_code(r.layer) << " |\n";
    s << "| property | " << r.property << " |\n";
    s << "| dtype | " << r.dtype << " |\n";
    s << "| cases | " << r.cases << " |\n";
    s << "| seed | " << r.seed << " |\n";
    if (!r.error.empty()) s << "\n**Error:**\n\n```text\n" << r.error << "\n```\n";
    if (const auto& c = r.counterexample) {
        const Comparison& cmp = c->comparison;
        s << "\n#### Counterexample: n = " << c->n() << ", d = " << c->d() << "\n\n";
        if (r.property == "shift")
            s << "Every position index shifted by " << c->shift << ".\n\n";
        else
            s << "Permutation " << md_code(c->perm.cycles()) << " (one-line " << md_code(one_line_text(c->perm))
              << ", acting on rows: (P x)[i] = x[p[i]]).\n\n";
        s << "Largest " << names.diff << " = " << text(cmp.max_abs_diff);
        if (cmp.shape_mismatch)
            s << " (the two sides have different shapes)";
        else
            s << " at position " << cmp.row << ", feature " << cmp.col;
        s << "; tolerance " << text(cmp.tolerance) << ", margin " << text(cmp.margin()) << ".\n";
        s << (c->confirmed_exactly ? "Confirmed in exact rational arithmetic.\n"
                                   : "**Not** confirmed in exact rational arithmetic.\n");
        s << "Weight seed " << c->weight_seed << ", found at case " << c->case_index << ", " << c->shrink_steps
          << " shrink steps.\n\n";
        s << "<details><summary>matrices</summary>\n\n```text\nx =\n" << matrix_text(c->x) << names.lhs << " =\n"
          << matrix_text(c->lhs) << names.rhs << " =\n" << matrix_text(c->rhs) << "```\n\n</details>\n";
    }
    if (!r.details.empty()) s << "\n<details><summary>details</summary>\n\n```json\n" << r.details.dump(2, ' ', false, json::error_handler_t::replace) << "\n```\n\n</details>\n";
    if (!r.replay.empty()) s << "\n**Replay:**\n\n```sh\n" << r.replay << "\n```\n";
    if (r.counterexample) s << "or re-evaluate this exact case: `permcheck replay report.json`\n";
    return s.str();
}

// ---- HTML ------------------------------------------------------------------------------------------------
namespace {

// The permutation as arrows: top row the positions of x, bottom row the positions of P x; an arrow from x[p[i]]
// to (P x)[i]. Moved positions are red, fixed ones grey.
std::string permutation_svg(const Permutation& p) {
    const int n = p.size();
    const double step = n <= 16 ? 56.0 : std::max(12.0, 900.0 / n);
    const double left = 70, top = 30, bottom = 150, width = left + step * std::max(n, 1) + 20;
    std::ostringstream s;
    s << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"permutation\" width=\"" << width
      << "\" height=\"190\" viewBox=\"0 0 " << width << " 190\" role=\"img\" aria-label=\"permutation "
      << html_escape(p.cycles()) << "\">"
      << "<defs>"
      << "<marker id=\"head-moved\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
         "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#b3261e\"/></marker>"
      << "<marker id=\"head-fixed\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
         "markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#9aa3ad\"/></marker>"
      << "</defs>"
      << "<text x=\"4\" y=\"" << top + 5 << "\" class=\"axis\">x</text>"
      << "<text x=\"4\" y=\"" << bottom + 5 << "\" class=\"axis\">P x</text>";
    const bool labels = n <= 32;
    for (int i = 0; i < n; ++i) {
        const double cx = left + step * i + step / 2;
        for (double cy : {top, bottom}) {
            s << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"" << std::min(12.0, step / 3)
              << "\" class=\"node\"/>";
            if (labels)
                s << "<text x=\"" << cx << "\" y=\"" << cy + 4 << "\" text-anchor=\"middle\" class=\"label\">" << i
                  << "</text>";
        }
    }
    for (int i = 0; i < n; ++i) {
        const double from = left + step * p[i] + step / 2, to = left + step * i + step / 2;
        const bool moved = p[i] != i;
        s << "<line class=\"arrow " << (moved ? "moved" : "fixed") << "\" x1=\"" << from << "\" y1=\"" << top + 14
          << "\" x2=\"" << to << "\" y2=\"" << bottom - 15 << "\" marker-end=\"url(#head-"
          << (moved ? "moved" : "fixed") << ")\"><title>(P x)[" << i
          << "] = x[" << p[i] << "]</title></line>";
    }
    s << "</svg>";
    return s.str();
}

// White for an exact zero, a visible tint for anything above, dark red at the largest finite difference,
// black for a non-finite one.
std::string cell_colour(double v, double largest) {
    if (!std::isfinite(v)) return "#111111";
    if (v == 0.0) return "#ffffff";
    const double t = largest > 0 ? std::clamp(0.12 + 0.88 * v / largest, 0.0, 1.0) : 1.0;
    const auto mix = [t](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * t)); };
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", mix(255, 165), mix(255, 0), mix(255, 38));
    return buf;
}

std::string heatmap_svg(const Counterexample& c, const std::string& property) {
    const Mat<double>& a = c.lhs;
    const Mat<double>& b = c.rhs;
    if (a.rows() != b.rows() || a.cols() != b.cols())
        return "<p class=\"note\">The two sides have different shapes (" + std::to_string(a.rows()) + "x" +
               std::to_string(a.cols()) + " and " + std::to_string(b.rows()) + "x" + std::to_string(b.cols()) +
               "): no heatmap.</p>";
    Mat<double> diff(a.rows(), a.cols());
    double largest = 0.0;
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j) {
            const double x = a(i, j), y = b(i, j);
            const bool same = (std::isnan(x) && std::isnan(y)) || x == y;
            diff(i, j) = same ? 0.0 : std::abs(x - y);
            if (std::isnan(diff(i, j))) diff(i, j) = std::numeric_limits<double>::infinity();
            if (std::isfinite(diff(i, j))) largest = std::max(largest, diff(i, j));
        }
    const double cell = std::clamp(560.0 / std::max<double>(1.0, static_cast<double>(std::max(a.rows(), a.cols()))),
                                   8.0, 48.0);
    const double left = 110, top = 40;
    const double width = left + cell * static_cast<double>(a.cols()) + 20;
    const double height = top + cell * static_cast<double>(a.rows()) + 20;
    std::ostringstream s;
    s << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\" aria-label=\"heatmap of differences\">"
      << "<text x=\"" << left << "\" y=\"16\" class=\"axis\">feature &#8594;</text>"
      << "<text x=\"4\" y=\"16\" class=\"axis\">position &#8595;</text>";
    const bool labels = cell >= 14;
    for (Eigen::Index j = 0; j < a.cols() && labels; ++j)
        s << "<text x=\"" << left + cell * static_cast<double>(j) + cell / 2 << "\" y=\"" << top - 6
          << "\" text-anchor=\"middle\" class=\"label\">" << j << "</text>";
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
        std::string row_label = std::to_string(i);
        if (property == "causal-prefix") row_label = "n-1 = " + std::to_string(c.n() - 1);
        if (property == "invariance") row_label = "pooled";
        if (labels || a.rows() == 1)
            s << "<text x=\"" << left - 8 << "\" y=\"" << top + cell * static_cast<double>(i) + cell / 2 + 4
              << "\" text-anchor=\"end\" class=\"label\">" << html_escape(row_label) << "</text>";
        for (Eigen::Index j = 0; j < a.cols(); ++j)
            s << "<rect class=\"cell\" x=\"" << left + cell * static_cast<double>(j) << "\" y=\""
              << top + cell * static_cast<double>(i) << "\" width=\"" << cell << "\" height=\"" << cell
              << "\" fill=\"" << cell_colour(diff(i, j), largest) << "\" data-value=\"" << text(diff(i, j))
              << "\"><title>position " << i << ", feature " << j << ": " << text(diff(i, j)) << "</title></rect>";
    }
    s << "</svg>";
    return s.str();
}

std::string matrix_table(const Mat<double>& m, const std::string& caption) {
    std::ostringstream s;
    s << "<table class=\"matrix\"><caption>" << html_escape(caption) << "</caption>";
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        s << "<tr><th>" << i << "</th>";
        // Six digits to read, every digit on hover (and in report.json).
        for (Eigen::Index j = 0; j < m.cols(); ++j) {
            char shown[32];
            std::snprintf(shown, sizeof shown, "%.6g", m(i, j));
            s << "<td title=\"" << text(m(i, j)) << "\">" << shown << "</td>";
        }
        s << "</tr>";
    }
    s << "</table>";
    return s.str();
}

const char* kStyle = R"(
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #1b1b1b; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.verdict { display: inline-block; padding: .15em .6em; border-radius: .3em; color: #fff; background: #555; }
.verdict.holds { background: #1e7b34; } .verdict.violated, .verdict.non-finite { background: #b3261e; }
.verdict.error, .verdict.nondeterministic { background: #8a5a00; }
table.summary td, table.summary th { text-align: left; padding: .1em .8em .1em 0; }
table.matrix { border-collapse: collapse; margin: .5em 1.5em .5em 0; display: inline-table; font: 13px monospace; }
table.matrix caption { font: bold 13px system-ui, sans-serif; text-align: left; }
table.matrix td, table.matrix th { border: 1px solid #ddd; padding: .1em .4em; text-align: right; }
svg text.axis { font: italic 13px system-ui, sans-serif; fill: #444; }
svg text.label { font: 12px monospace; fill: #222; }
svg circle.node { fill: #eef2f7; stroke: #4a5a70; }
svg line.arrow { stroke-width: 2; } svg line.moved { stroke: #b3261e; } svg line.fixed { stroke: #9aa3ad; }
svg rect.cell { stroke: #c8c8c8; stroke-width: .5; }
pre { background: #f4f4f4; padding: .6em; overflow-x: auto; }
div.matrices { overflow-x: auto; }
.note { color: #555; }
)";

}  // namespace

std::string to_html(const Record& r) {
    std::ostringstream s;
    const SideNames names = side_names(r.property);
    s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      << "<title>permcheck: " << html_escape(headline(r)) << "</title><style>" << kStyle << "</style></head><body>\n";
    s << "<h1>permcheck: " << html_escape(r.layer) << " &mdash; " << html_escape(r.property) << " <span class=\"verdict "
      << html_escape(r.verdict) << "\">" << html_escape(r.verdict) << "</span></h1>\n";
    s << "<table class=\"summary\"><tr><th>dtype</th><td>" << html_escape(r.dtype) << "</td></tr><tr><th>cases</th><td>"
      << r.cases << "</td></tr><tr><th>seed</th><td>" << r.seed << "</td></tr></table>\n";
    if (!r.error.empty()) s << "<h2>Error</h2><pre>" << html_escape(r.error) << "</pre>\n";
    if (const auto& c = r.counterexample) {
        const Comparison& cmp = c->comparison;
        s << "<h2>Counterexample: n = " << c->n() << ", d = " << c->d() << "</h2>\n<p>Largest "
          << html_escape(names.diff) << " = <b>" << text(cmp.max_abs_diff) << "</b>";
        if (!cmp.shape_mismatch) s << " at position " << cmp.row << ", feature " << cmp.col;
        s << "; tolerance " << text(cmp.tolerance) << ", margin " << text(cmp.margin()) << ". "
          << (c->confirmed_exactly ? "Confirmed in exact rational arithmetic."
                                   : "<b>Not</b> confirmed in exact rational arithmetic.")
          << " Weight seed " << c->weight_seed << ", found at case " << c->case_index << ", " << c->shrink_steps
          << " shrink steps.</p>\n";
        if (r.property == "shift") {
            s << "<h2>Shift</h2><p>Every position index shifted by " << c->shift
              << "; the permutation plays no part.</p>\n";
        } else {
            s << "<h2>Permutation " << html_escape(c->perm.cycles()) << "</h2><p class=\"note\">one-line "
              << html_escape(one_line_text(c->perm)) << "; an arrow runs from x[p[i]] to (P x)[i].</p>\n"
              << permutation_svg(c->perm) << "\n";
        }
        s << "<h2>Heatmap of " << html_escape(names.diff) << "</h2><p class=\"note\">rows are positions, columns "
          << "features; white is an exact zero, darker red a larger difference, black a non-finite one.</p>\n"
          << heatmap_svg(*c, r.property) << "\n";
        s << "<h2>Matrices</h2>\n<div class=\"matrices\">" << matrix_table(c->x, "x")
          << matrix_table(c->lhs, names.lhs) << matrix_table(c->rhs, names.rhs) << "</div>\n";
    }
    if (!r.details.empty())
        s << "<h2>Details</h2><pre>" << html_escape(r.details.dump(2, ' ', false, json::error_handler_t::replace))
          << "</pre>\n";
    if (!r.replay.empty()) s << "<h2>Replay</h2><pre>" << html_escape(r.replay) << "</pre>\n";
    s << "</body></html>\n";
    return s.str();
}

// ---- files -----------------------------------------------------------------------------------------------
void write_atomically(const std::filesystem::path& file, const std::string& content) {
    static std::atomic<unsigned> counter{0};
    const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
    const std::filesystem::path tmp =
        dir / ("." + file.filename().string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++));
    const auto fail = [&](const std::string& what) {
        const std::string reason = std::strerror(errno);
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot write " + file.string() + ": " + what + ": " + reason);
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot write " + file.string() + ": cannot create " + tmp.string() + ": " +
                                         std::strerror(errno));
    std::size_t done = 0;
    while (done < content.size()) {
        const ssize_t w = ::write(fd, content.data() + done, content.size() - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            ::close(fd);
            fail("write failed");
        }
        done += static_cast<std::size_t>(w);
    }
    if (::fsync(fd) != 0) {
        ::close(fd);
        fail("fsync failed");
    }
    if (::close(fd) != 0) fail("close failed");
    if (std::rename(tmp.c_str(), file.c_str()) != 0) fail("rename failed");
}

void prepare_directory(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create report directory " + dir.string() + ": " + ec.message());
}

void write(const std::filesystem::path& dir, const Record& r) {
    prepare_directory(dir);
    // "schema" first, so a reader of the file (or `head`) sees what it is; the other keys in alphabetical order.
    const json j = to_json(r);
    nlohmann::ordered_json file = {{"schema", j.at("schema")}};
    for (const auto& [key, value] : j.items())
        if (key != "schema") file[key] = value;
    write_atomically(dir / "report.json", file.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    write_atomically(dir / "report.md", to_markdown(r));
    write_atomically(dir / "report.html", to_html(r));
}

Record read(const std::filesystem::path& path) {
    std::error_code ec;
    const std::filesystem::path file = std::filesystem::is_directory(path, ec) ? path / "report.json" : path;
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + file.string() + ": " + std::strerror(errno));
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw std::runtime_error("cannot read " + file.string() + ": " + std::strerror(errno));
    json j;
    try {
        json_limits::require_shallow(text, file.string());
        j = json::parse(text);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers beyond double (1e400)
        throw std::invalid_argument(file.string() + " is not valid JSON: " + e.what());
    }
    try {
        return from_json(j);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(file.string() + " is not a permcheck report: " + e.what());
    }
}

}  // namespace permcheck::report
