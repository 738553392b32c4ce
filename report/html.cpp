// The record as one self-contained HTML page: no script, no network; the permutation drawn as arrows and the
// difference of the two sides as a heatmap over positions x features, both inline SVG.
#include "report/views.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace permcheck::report {

using namespace detail;
using nlohmann::json;

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

std::string heatmap_svg(const Counterexample& c, Property property) {
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
        if (property == Property::causal_prefix) row_label = "n-1 = " + std::to_string(c.n() - 1);
        if (property == Property::invariance) row_label = "pooled";
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
    const SideNames names = shown_sides(r);
    s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      << "<title>permcheck: " << html_escape(headline(r)) << "</title><style>" << kStyle << "</style></head><body>\n";
    s << "<h1>permcheck: " << html_escape(r.layer) << " &mdash; " << property_name(r.property) << " <span class=\"verdict "
      << verdict_name(r.verdict) << "\">" << verdict_name(r.verdict) << "</span></h1>\n";
    s << "<table class=\"summary\"><tr><th>dtype</th><td>" << arithmetic_name(r.dtype) << "</td></tr><tr><th>cases</th><td>"
      << r.cases << "</td></tr><tr><th>seed</th><td>" << r.seed << "</td></tr></table>\n";
    if (!r.error.empty()) s << "<h2>Error</h2><pre>" << html_escape(r.error) << "</pre>\n";
    if (const auto& c = r.counterexample) {
        const Comparison& cmp = c->comparison;
        const bool twice = r.verdict == Verdict::nondeterministic;
        s << "<h2>" << (twice ? "One input answered twice" : "Counterexample") << ": n = " << c->n() << ", d = "
          << c->d() << "</h2>\n<p>Largest " << html_escape(names.diff) << " = <b>" << text(cmp.max_abs_diff) << "</b>";
        if (!cmp.shape_mismatch) s << " at position " << cmp.row << ", feature " << cmp.col;
        s << "; tolerance " << text(cmp.tolerance) << ", margin " << text(cmp.margin()) << ". ";
        // A black box has no weights and no exact evaluation: those words would only read as warnings.
        if (!c->black_box)
            s << (c->confirmed_exactly ? "Confirmed in exact rational arithmetic."
                                       : "<b>Not</b> confirmed in exact rational arithmetic.")
              << " Weight seed " << c->weight_seed << ", found";
        else
            s << "Found";
        s << " at case " << c->case_index << ", " << c->shrink_steps << " shrink steps.</p>\n";
        if (twice) {
            s << "<p class=\"note\">The layer answered the same input x twice with different results; no permutation "
              << "plays a part.</p>\n";
        } else if (r.property == Property::shift) {
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
    if (const std::string again = case_replay(r); !again.empty())
        s << "<p>or re-evaluate this exact case:</p><pre>" << html_escape(again) << "</pre>\n";
    s << "</body></html>\n";
    return s.str();
}

}  // namespace permcheck::report
