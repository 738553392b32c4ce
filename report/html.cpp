// The record as one self-contained HTML page: no script, no network; the permutation drawn as arrows and the
// difference of the two sides as a heatmap over positions x features, both inline SVG.
#include "report/views.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>
#include <sstream>

namespace permcheck::report {

using namespace detail;

namespace {

// An arrowhead for marker-end="url(#ID)", filled with `colour`.
std::string arrowhead(const std::string& id, const char* colour) {
    return "<marker id=\"" + id + "\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
           "orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"" + colour + "\"/></marker>";
}

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
      << "<defs>" << arrowhead("head-moved", "#b3261e") << arrowhead("head-fixed", "#9aa3ad") << "</defs>"
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

// What the heatmap's rows and columns are: a check's positions and features, or a signature output's dims; `id`
// names its colour scale's gradient, unique in the page; `diff` what its cells are (the scale's caption).
struct HeatmapAxes {
    std::string rows = "position", cols = "feature";
    std::string id = "scale", diff = "|difference|";
    double scale_top = 0.0;  // the scale reaches at least this: a holding case's tolerance, so rounding is pale
};

// The heatmap's colour scale: a bar from the lightest tint to dark red with its two ends' values (0 and the largest
// difference), white for an exact zero and black for a non-finite difference beside it. One-sided: the cells are
// absolute differences, never negative, so the scale runs from 0 up and is not symmetric about 0.
void scale_svg(std::ostringstream& s, double x, double y, double largest, bool non_finite, const HeatmapAxes& axes) {
    const double bar = 200, zero = x + bar + 16;
    const std::string id = html_escape(axes.id);
    s << "<g class=\"scale\" data-min=\"0\" data-max=\"" << text(largest) << "\" data-symmetric=\"false\">"
      << "<defs><linearGradient id=\"" << id << "\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\"><stop offset=\"0\" stop-color=\""
      << cell_colour(std::numeric_limits<double>::min(), 1.0) << "\"/><stop offset=\"1\" stop-color=\""
      << cell_colour(1.0, 1.0) << "\"/></linearGradient></defs>"
      << "<text x=\"" << x << "\" y=\"" << y << "\" class=\"axis\">scale: " << html_escape(axes.diff)
      << " from 0 to the largest, one-sided (not symmetric about 0)</text>"
      << "<rect class=\"scale-bar\" x=\"" << x << "\" y=\"" << y + 8 << "\" width=\"" << bar
      << "\" height=\"14\" fill=\"url(#" << id << ")\" stroke=\"#c8c8c8\"/>"
      << "<text x=\"" << x << "\" y=\"" << y + 36 << "\" class=\"label scale-min\">0</text>"
      << "<text x=\"" << x + bar << "\" y=\"" << y + 36 << "\" text-anchor=\"end\" class=\"label scale-max\">"
      << text(largest) << "</text>"
      << "<rect class=\"scale-zero\" x=\"" << zero << "\" y=\"" << y + 8
      << "\" width=\"14\" height=\"14\" fill=\"#ffffff\" stroke=\"#c8c8c8\"/><text x=\"" << zero + 18 << "\" y=\""
      << y + 19 << "\" class=\"label\">exactly 0</text>";
    if (non_finite)
        s << "<rect class=\"scale-non-finite\" x=\"" << zero + 90 << "\" y=\"" << y + 8
          << "\" width=\"14\" height=\"14\" fill=\"#111111\"/><text x=\"" << zero + 108 << "\" y=\"" << y + 19
          << "\" class=\"label\">non-finite</text>";
    s << "</g>";
}

// The heatmap of |a - b| of two matrices (an output's two sides, its dims of size 1 squeezed).
std::string heatmap_svg(const Mat<double>& a, const Mat<double>& b, const HeatmapAxes& axes) {
    Mat<double> diff(a.rows(), a.cols());
    double largest = 0.0;
    bool non_finite = false;
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j) {
            const double x = a(i, j), y = b(i, j);
            const bool same = (std::isnan(x) && std::isnan(y)) || x == y;
            diff(i, j) = same ? 0.0 : std::abs(x - y);
            if (std::isnan(diff(i, j))) diff(i, j) = std::numeric_limits<double>::infinity();
            if (std::isfinite(diff(i, j))) largest = std::max(largest, diff(i, j));
            else non_finite = true;
        }
    largest = std::max(largest, axes.scale_top);
    const double cell = std::clamp(560.0 / std::max<double>(1.0, static_cast<double>(std::max(a.rows(), a.cols()))),
                                   8.0, 48.0);
    const double left = 110, top = 40;
    const double width = std::max(left + cell * static_cast<double>(a.cols()) + 20, 620.0);
    const double grid_bottom = top + cell * static_cast<double>(a.rows());
    const double height = grid_bottom + 70;
    std::ostringstream s;
    s << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\" aria-label=\"heatmap of differences\">"
      << "<text x=\"" << left << "\" y=\"16\" class=\"axis\">" << html_escape(axes.cols) << " &#8594;</text>";
    if (!axes.rows.empty()) s << "<text x=\"4\" y=\"16\" class=\"axis\">" << html_escape(axes.rows) << " &#8595;</text>";
    const bool labels = cell >= 14;
    for (Eigen::Index j = 0; j < a.cols() && labels; ++j)
        s << "<text x=\"" << left + cell * static_cast<double>(j) + cell / 2 << "\" y=\"" << top - 6
          << "\" text-anchor=\"middle\" class=\"label\">" << j << "</text>";
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
        if ((labels || a.rows() == 1) && !axes.rows.empty())
            s << "<text x=\"" << left - 8 << "\" y=\"" << top + cell * static_cast<double>(i) + cell / 2 + 4
              << "\" text-anchor=\"end\" class=\"label\">" << i << "</text>";
        for (Eigen::Index j = 0; j < a.cols(); ++j)
            s << "<rect class=\"cell\" x=\"" << left + cell * static_cast<double>(j) << "\" y=\""
              << top + cell * static_cast<double>(i) << "\" width=\"" << cell << "\" height=\"" << cell
              << "\" fill=\"" << cell_colour(diff(i, j), largest) << "\" data-value=\"" << text(diff(i, j))
              << "\"><title>" << (axes.rows.empty() ? "" : html_escape(axes.rows) + " " + std::to_string(i) + ", ")
              << html_escape(axes.cols) << " " << j << ": " << text(diff(i, j)) << "</title></rect>";
    }
    scale_svg(s, 10, grid_bottom + 24, largest, non_finite, axes);
    s << "</svg>";
    return s.str();
}

// ---- a signature audit ------------------------------------------------------------------------------------

// An index input that is an edge list: two dims, the fixed size 2 and an axis (edges), its values naming
// positions of its index axis (nodes). edge(e) is {source, target} of edge e.
struct EdgeList {
    const TensorSpec* spec = nullptr;
    int nodes = 0, edges = 0;
    bool pairs_outer = true;  // dims (2, edges); else (edges, 2)
    const Tensor* values = nullptr;
    std::pair<int, int> edge(int e) const {
        const auto at = [this](std::size_t k) { return static_cast<int>(values->values[k]); };
        const auto E = static_cast<std::size_t>(edges), i = static_cast<std::size_t>(e);
        return pairs_outer ? std::pair{at(i), at(E + i)} : std::pair{at(2 * i), at(2 * i + 1)};
    }
};

// The edge list `t` among `inputs` at `lengths` (x's, or the transformed side's), when it is one to draw.
std::optional<EdgeList> edge_list(const TensorSpec& t, const Tensors& inputs, const Lengths& lengths) {
    if (t.kind != TensorKind::index || t.dims.size() != 2) return std::nullopt;
    const Dim& a = t.dims[0];
    const Dim& b = t.dims[1];
    const bool outer = !a.is_axis() && a.size == 2 && b.is_axis();
    const bool inner = a.is_axis() && !b.is_axis() && b.size == 2;
    const auto values = inputs.find(t.name);
    const auto nodes = lengths.find(t.index_axis);
    if (!(outer || inner) || values == inputs.end() || nodes == lengths.end()) return std::nullopt;
    EdgeList g{&t, nodes->second, values->second.shape[outer ? 1 : 0], outer, &values->second};
    if (values->second.values.size() != 2 * static_cast<std::size_t>(g.edges) || g.nodes > 64) return std::nullopt;
    for (double v : values->second.values)
        if (v < 0 || v >= g.nodes) return std::nullopt;
    return g;
}

bool moved_in(const Permutations& perms, const std::string& axis, int i) {
    const auto p = perms.find(axis);
    return p != perms.end() && i < p->second.size() && p->second[i] != i;
}

// One directed edge: a curve from source to target (the k-th of the same pair bends further, so repeated edges
// stay apart), or a loop for a self-loop, turned away from the circle's centre (cx, cy) into the margin, where no
// other edge runs (the k-th turned further round). Returns where its label goes: beyond a loop's far end.
std::pair<double, double> edge_path(std::ostringstream& s, const std::vector<std::pair<double, double>>& at, int from,
                                    int to, int k, double cx, double cy) {
    const double r = 14;
    // Plain variables, not structured bindings: clang 14 (the fuzzers' compiler) cannot capture a binding.
    const double x0 = at[static_cast<std::size_t>(from)].first, y0 = at[static_cast<std::size_t>(from)].second;
    const double x1 = at[static_cast<std::size_t>(to)].first, y1 = at[static_cast<std::size_t>(to)].second;
    if (from == to) {
        const double outward = std::hypot(x0 - cx, y0 - cy) < 1 ? -1.5707963 : std::atan2(y0 - cy, x0 - cx);
        const double a = outward + (k % 2 ? 1 : -1) * ((k + 1) / 2) * 0.9, reach = 44 + 6 * (k / 2);
        const auto point = [&](double angle, double dist) { return std::pair{x0 + dist * std::cos(angle), y0 + dist * std::sin(angle)}; };
        const auto [sx, sy] = point(a - 0.4, r);
        const auto [c1x, c1y] = point(a - 0.45, reach);
        const auto [c2x, c2y] = point(a + 0.45, reach);
        const auto [ex, ey] = point(a + 0.4, r + 3);
        s << "M" << sx << "," << sy << " C" << c1x << "," << c1y << " " << c2x << "," << c2y << " " << ex << "," << ey;
        return point(a, reach + 6);  // the loop's far end is at about 0.75 reach
    }
    const double dx = x1 - x0, dy = y1 - y0, len = std::max(1.0, std::hypot(dx, dy));
    const double ux = dx / len, uy = dy / len, bend = 14.0 * (k + 1);
    const double mx = (x0 + x1) / 2 - uy * bend, my = (y0 + y1) / 2 + ux * bend;
    s << "M" << x0 + ux * r << "," << y0 + uy * r << " Q" << mx << "," << my << " " << x1 - ux * (r + 3) << ","
      << y1 - uy * (r + 3);
    return {(x0 + x1) / 4 + mx / 2 - uy * 8, (y0 + y1) / 4 + my / 2 + ux * 8};
}

// The counterexample's graph: nodes on a circle, directed edges as arrows; moved nodes and edges (those the
// nodes' or edges' permutation moves) in red. The panel is sized to the graph: about 48 px of the circle a node (at
// least a radius of 60), and a margin for self-loops and edge labels, so that 3 nodes are not lost in an empty
// panel and 40 are not cramped.
double graph_radius(int nodes) { return nodes <= 1 ? 0.0 : std::max(60.0, 48.0 * nodes / (2 * 3.14159265358979)); }

// Whether edge e of g is one the case moves: the edges' permutation moves it, or the nodes' permutation renumbers
// one of its ends (a node it moves).
bool edge_moved(const EdgeList& g, const Counterexample& c, const std::string& edge_axis, int e) {
    const auto [from, to] = g.edge(e);
    return moved_in(c.perms, edge_axis, e) || moved_in(c.perms, g.spec->index_axis, from) ||
           moved_in(c.perms, g.spec->index_axis, to);
}

// `after`: the graph of the transformed side (P x), its node i x's node p[i], its edges renumbered and reordered.
std::string graph_svg(const EdgeList& g, const Counterexample& c, bool after) {
    const double radius = graph_radius(g.nodes), size = 2 * (radius + 70), centre = size / 2;
    std::vector<std::pair<double, double>> at;
    for (int i = 0; i < g.nodes; ++i) {
        const double angle = 2 * 3.14159265358979 * i / std::max(1, g.nodes) - 3.14159265358979 / 2;
        at.emplace_back(centre + radius * std::cos(angle), centre + radius * std::sin(angle));
    }
    const std::string edge_axis = g.spec->dims[g.pairs_outer ? 1 : 0].axis;
    std::ostringstream s;
    s << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"graph\" width=\"" << size << "\" height=\"" << size
      << "\" viewBox=\"0 0 " << size << " " << size << "\" role=\"img\" aria-label=\"graph of "
      << html_escape(g.spec->name) << (after ? " in P x" : " in x") << "\"><defs>" << arrowhead("edge-head-moved", "#b3261e")
      << arrowhead("edge-head-fixed", "#4a5a70") << "</defs>";
    std::map<std::pair<int, int>, int> seen;
    for (int e = 0; e < g.edges; ++e) {
        const auto [from, to] = g.edge(e);
        const bool moved = edge_moved(g, c, edge_axis, e);
        s << "<path class=\"edge " << (moved ? "moved" : "fixed") << "\" fill=\"none\" d=\"";
        const auto [lx, ly] = edge_path(s, at, from, to, seen[{from, to}]++, centre, centre);
        s << "\" marker-end=\"url(#edge-head-" << (moved ? "moved" : "fixed") << ")\"><title>edge " << e << ": " << from
          << " &#8594; " << to << (moved ? " (moved)" : "") << "</title></path><text class=\"elabel\" x=\"" << lx
          << "\" y=\"" << ly + 4 << "\" text-anchor=\"middle\">e" << e << "</text>";
    }
    for (int i = 0; i < g.nodes; ++i) {
        const bool moved = moved_in(c.perms, g.spec->index_axis, i);
        const auto [x, y] = at[static_cast<std::size_t>(i)];
        s << "<circle class=\"gnode " << (moved ? "moved" : "fixed") << "\" cx=\"" << x << "\" cy=\"" << y
          << "\" r=\"14\"><title>node " << i << (moved ? " (moved)" : "") << "</title></circle><text x=\"" << x
          << "\" y=\"" << y + 4 << "\" text-anchor=\"middle\" class=\"label\">" << i << "</text>";
    }
    s << "</svg>";
    return s.str();
}

std::string axes_html(const Counterexample& c) {
    std::ostringstream s;
    s << "<h2>Permutations</h2><p class=\"note\">one per axis: (P t)[.., i, ..] = t[.., p[i], ..] along every dim "
         "the axis names; an index input's values are renumbered.</p>\n<table class=\"summary\"><tr><th>axis</th>"
         "<th>length</th><th>permutation</th><th>one-line</th></tr>";
    for (const auto& [axis, p] : c.perms)
        s << "<tr class=\"axis" << (axis == c.axis_at_fault ? " at-fault" : "") << "\"><td>" << html_escape(axis)
          << (axis == c.axis_at_fault ? " <b>(at fault)</b>" : "") << "</td><td>" << p.size() << "</td><td>"
          << html_escape(cycles_text(p)) << "</td><td>" << html_escape(one_line_text(p)) << "</td></tr>";
    s << "</table>\n";
    if (!c.axis_at_fault.empty())
        s << "<p>The axis at fault: <b>" << html_escape(c.axis_at_fault) << "</b> (the only axis permuted).</p>\n";
    for (const auto& [axis, p] : c.perms)
        if (p.size() > 0 && p.size() <= 64)
            s << "<h3>" << html_escape(axis) << ": " << html_escape(cycles_text(p)) << "</h3>\n" << permutation_svg(p)
              << "\n";
    return s.str();
}

// A dim of an output as the heatmap labels it: its axis's name, or "dim k" for a fixed size.
std::string dim_label(const TensorSpec* t, std::size_t k) {
    if (t && k < t->dims.size() && t->dims[k].is_axis()) return t->dims[k].axis;
    if (t && k + 1 == t->dims.size()) return "feature";  // an output's last dim, a fixed size: its features
    return "dim " + std::to_string(k);
}

// The heatmap of an output that differs: its dims of size 1 squeezed out (a batch dim of 1, `y:1,n,d`), what is left
// drawn when it is at most two dims (rows the outer, columns the inner), labelled with the output's dims; the
// caption names the squeezed dims. `id`: unique in the page, for its colour scale. `closest`: the case of a run that
// held closest to its tolerance, drawn though it holds, under its own heading.
std::string output_heatmap(const OutputComparison& o, const TensorSpec* spec, const SideNames& sides, const std::string& id,
                           bool closest = false) {
    const Tensor& a = o.layer_of_permuted;
    const Tensor& b = o.permuted_layer;
    if ((o.holds && !closest) || o.shape_mismatch || a.shape != b.shape || a.values.size() != b.values.size()) return "";
    std::vector<std::size_t> kept, squeezed;
    for (std::size_t k = 0; k < a.shape.size(); ++k) (a.shape[k] == 1 ? squeezed : kept).push_back(k);
    const std::string head = "<h3>" + std::string(closest ? "Closest case, output " : "Output ") + html_escape(o.name) +
                             ": heatmap of " + html_escape(sides.diff) + "</h3>\n";
    if (kept.size() > 2)
        return head + "<p class=\"note\">" + std::to_string(kept.size()) +
               " dims of size above 1: no heatmap (its values are in the inputs and outputs below).</p>\n";
    const Eigen::Index rows = kept.size() == 2 ? a.shape[kept[0]] : 1;
    const Eigen::Index cols = kept.empty() ? 1 : a.shape[kept.back()];
    if (rows * cols != static_cast<Eigen::Index>(a.values.size()) || rows * cols == 0) return "";
    Mat<double> lhs(rows, cols), rhs(rows, cols);
    for (Eigen::Index i = 0; i < rows * cols; ++i) {  // row-major: squeezing dims of size 1 keeps the order
        lhs(i / cols, i % cols) = a.values[static_cast<std::size_t>(i)];
        rhs(i / cols, i % cols) = b.values[static_cast<std::size_t>(i)];
    }
    // A holding case's scale runs up to its tolerance: rounding within it is drawn pale, not in a violation's red.
    const HeatmapAxes axes{kept.size() == 2 ? dim_label(spec, kept[0]) : "",
                           kept.empty() ? "value" : dim_label(spec, kept.back()), id, sides.diff,
                           o.holds ? o.tolerance : 0.0};
    std::string caption;
    if (!squeezed.empty()) {
        caption = "<p class=\"note squeezed\">squeezed: ";
        for (std::size_t k = 0; k < squeezed.size(); ++k) {
            const std::string label = dim_label(spec, squeezed[k]), dim = "dim " + std::to_string(squeezed[k]);
            caption += (k ? ", " : "") + html_escape(label) + (label == dim ? "" : " (" + dim + ")");
        }
        caption += squeezed.size() == 1 ? " has size 1 and is left out" : " have size 1 and are left out";
        caption += "; the heatmap shows the " + std::to_string(rows) + " x " + std::to_string(cols) + " that remains.</p>\n";
    }
    return head + caption + heatmap_svg(lhs, rhs, axes) + "\n";
}

std::string signature_html(const Counterexample& c, const Signature& sig, const Record& r) {
    std::ostringstream s;
    s << "<h2>" << html_escape(counterexample_heading(r)) << ": " << html_escape(lengths_text(c.lengths)) << "</h2>\n<p>"
      << html_escape(found_text(r, c)) << "</p>\n";
    s << (answered_twice(r) ? "<p class=\"note\">" + html_escape(answered_twice_note(r)) + "</p>\n" : axes_html(c));
    for (const TensorSpec& t : sig.inputs)
        if (const auto g = edge_list(t, c.inputs, c.lengths)) {
            s << "<h2>Graph " << html_escape(t.name) << "</h2><p class=\"note\">" << g->nodes << (g->nodes == 1 ? " node, " : " nodes, ")
              << g->edges << (g->edges == 1 ? " directed edge" : " directed edges")
              << " (source &#8594; target, labelled e0, e1, ...); red: a node the permutation of "
              << html_escape(t.index_axis) << " moves, an edge the permutation of the edges moves or whose ends it "
              << "renumbers.</p>\n<div class=\"graphs\"><figure>" << graph_svg(*g, c, false)
              << "<figcaption>x</figcaption></figure>";
            const bool permuted = std::any_of(c.perms.begin(), c.perms.end(),
                                              [](const auto& p) { return !p.second.is_identity(); });
            const auto after = permuted ? edge_list(t, c.transformed, c.transformed_lengths) : std::nullopt;
            if (after && after->nodes == g->nodes)
                s << "<figure>" << graph_svg(*after, c, true) << "<figcaption>P x: node i is x's node p[i], every edge "
                  << "renumbered</figcaption></figure>";
            s << "</div>\n";
        }
    if (!c.outputs.empty())
        s << "<h2>Outputs</h2>\n<table class=\"summary\"><tr><th>output</th><th>must be</th><th>largest difference"
          << "</th><th>where</th><th>tolerance</th><th></th></tr>";
    for (const OutputComparison& o : c.outputs) {
        const TensorSpec* t = spec_named(sig.outputs, o.name);
        s << "<tr><td>" << html_escape(o.name) << "</td><td>" << html_escape(t ? claim_text(r, *t, sig) : "")
          << "</td><td>" << (o.shape_mismatch ? std::string("not taken") : difference_cell(o.max_abs_diff)) << "</td><td>"
          << (o.shape_mismatch || o.where.empty() ? "shapes differ" : where_text(o.where)) << "</td><td>"
          << text(o.tolerance) << "</td><td>" << (o.holds ? "holds" : "<b>violated</b>") << "</td></tr>";
    }
    if (!c.outputs.empty()) s << "</table>\n";
    for (std::size_t k = 0; k < c.outputs.size(); ++k) {
        const TensorSpec* t = spec_named(sig.outputs, c.outputs[k].name);
        s << output_heatmap(c.outputs[k], t, output_sides(r, t), "scale-" + std::to_string(k));
    }
    s << "<h2>Inputs and outputs</h2>\n<div class=\"matrices\">";
    for (const auto& [label, t] : tensors_shown(r, c, sig))
        s << "<pre class=\"tensor\">" << html_escape(label) << " = " << html_escape(tensor_text(*t)) << "</pre>";
    s << "</div>\n";
    return s.str();
}

// The taps in the order the submodules finished, the first breaking one marked (row class first-break).
std::string taps_html(const TapTrace& t) {
    std::ostringstream s;
    s << "<h2>Taps: where symmetry first breaks</h2>\n<p>" << html_escape(first_break_sentence(t)) << ".</p>\n";
    if (t.taps.empty()) return s.str();
    s << "<p class=\"note\">the outputs of the layer's submodules at x and P x, in the order they finished (a child "
         "before its parent); axes: the axis each dim follows.</p>\n<table class=\"summary taps\"><tr><th>#</th>"
         "<th>tap</th><th>shape</th><th>axes</th><th>verdict</th><th>largest difference</th><th>tolerance</th><th>note</th></tr>\n";
    for (std::size_t k = 0; k < t.taps.size(); ++k) {
        const TapComparison& c = t.taps[k];
        const bool first = static_cast<int>(k) == t.first_breaking;
        s << "<tr" << (first ? " class=\"first-break\"" : "") << "><td>" << k + 1 << (first ? " &#9664; first break" : "")
          << "</td><td><code>" << html_escape(c.name) << "</code></td><td>" << where_text(c.shape) << "</td><td>"
          << html_escape(axes_text(c.axes)) << "</td><td>" << tap_verdict_name(c.verdict) << "</td><td>"
          << text(c.max_abs_diff) << "</td><td>" << text(c.tolerance) << "</td><td>" << html_escape(c.note) << "</td></tr>\n";
    }
    s << "</table>\n";
    if (!t.note.empty()) s << "<p class=\"note\">" << html_escape(t.note) << "</p>\n";
    return s.str();
}

// What the audit checked, one row per output and axis (checked_rows): the lengths the run sent on that axis, the
// cases, the largest difference with its case's tolerance, the largest fraction of its own tolerance any case came
// to, the range of the tolerances; the output that broke marked (row class broke), then how the tolerance is made.
std::string checked_html(const Record& r) {
    const std::vector<CheckedRow> rows = checked_rows(r);
    if (rows.empty()) return "";
    std::ostringstream s;
    s << "<h2>What was checked</h2>\n<p class=\"note\">" << html_escape(checked_intro(r))
      << "</p>\n<table class=\"checked\"><tr><th>output</th><th>axis</th><th>must be</th><th>lengths covered</th>"
         "<th>cases</th><th>compared</th><th>largest difference</th><th>its tolerance</th><th>largest fraction of "
         "tolerance</th><th>tolerances</th><th>result</th></tr>\n";
    for (const CheckedRow& row : rows) {
        s << "<tr class=\"checked-row" << (row.broke ? " broke" : "") << "\">";
        const std::string span = row.span > 1 ? " rowspan=\"" + std::to_string(row.span) + "\"" : "";
        if (row.first) s << "<td" << span << "><code>" << html_escape(row.output) << "</code></td>";
        s << "<td>" << html_escape(row.axis) << "</td><td>" << html_escape(row.claim) << "</td><td>"
          << html_escape(row.lengths) << "</td>";
        if (row.first) {
            const OutputCheck* c = row.check;
            const auto cell = [&](const std::string& v) { s << "<td" << span << " class=\"number\">" << v << "</td>"; };
            cell(c ? std::to_string(c->cases) : "&#8211;");
            s << "<td" << span << ">" << (*row.sides.diff ? html_escape(row.sides.diff) : "&#8211;") << "</td>";
            cell(c ? difference_cell(c->max_abs_diff) : "&#8211;");
            cell(c ? text(c->tolerance_at_max) : "&#8211;");
            cell(c ? difference_cell(c->largest_fraction) : "&#8211;");
            cell(c ? text(c->min_tolerance) + " &#8211; " + text(c->max_tolerance) : "&#8211;");
            s << "<td" << span << ">" << (row.broke ? "<b>violated</b> &#9664;" : html_escape(row_result(row))) << "</td>";
        }
        s << "</tr>\n";
    }
    s << "</table>\n";
    if (std::any_of(rows.begin(), rows.end(), [](const CheckedRow& row) {
            return row.first && row.check && !std::isfinite(row.check->max_abs_diff);
        }))
        s << "<p class=\"note\">" << untaken_note << "</p>\n";
    s << "<p class=\"note tolerance\">Tolerance: " << html_escape(tolerance_text(r)) << "</p>\n";
    return s.str();
}

// A run that held: for each output, the case that came closest to its tolerance, its heatmap drawn (none when no
// case showed any difference).
std::string closest_html(const Record& r) {
    if (!r.checked || !r.signature || r.counterexample) return "";
    std::ostringstream s;
    for (std::size_t k = 0; k < r.checked->outputs.size(); ++k) {
        const OutputCheck& o = r.checked->outputs[k];
        if (o.closest_case < 0) continue;
        const TensorSpec* t = spec_named(r.signature->outputs, o.name);
        const OutputComparison& c = o.closest;
        if (c.max_abs_diff == 0.0) {
            s << "<p class=\"note closest\">Output <code>" << html_escape(o.name) << "</code>: no case showed any "
              << "difference; both sides were equal in every case.</p>\n";
            continue;
        }
        s << output_heatmap(c, t, output_sides(r, t), "closest-" + std::to_string(k), true)
          << "<p class=\"note closest\">Case " << o.closest_case << " (" << html_escape(lengths_text(o.closest_lengths))
          << ") came closest to its tolerance: largest difference " << text(c.max_abs_diff);
        if (!c.where.empty()) s << " at " << where_text(c.where);
        s << ", " << text(c.tolerance > 0 ? c.max_abs_diff / c.tolerance : 0.0) << " of its tolerance " << text(c.tolerance)
          << ".</p>\n";
    }
    const std::string body = s.str();
    return body.empty() ? "" : "<h2>The case closest to its tolerance</h2>\n" + body;
}

// The record's details as a table of plain values; report.json holds them all (the signature, every length).
std::string details_html(const Record& r) {
    const auto lines = detail_lines(r);
    std::ostringstream s;
    s << "<h2>Details</h2>\n";
    if (!lines.empty()) {
        s << "<table class=\"summary details\">";
        for (const auto& [key, value] : lines)
            s << "<tr><th>" << html_escape(key) << "</th><td>" << html_escape(value) << "</td></tr>";
        s << "</table>\n";
    }
    s << "<p class=\"note\">Every field, at full precision: <a href=\"report.json\">report.json</a>.</p>\n";
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
svg circle.gnode { fill: #eef2f7; stroke: #4a5a70; stroke-width: 1.5; } svg circle.gnode.moved { fill: #f9dedc; stroke: #b3261e; stroke-width: 3; }
svg path.edge { stroke-width: 2; } svg path.edge.fixed { stroke: #4a5a70; } svg path.edge.moved { stroke: #b3261e; }
tr.at-fault td { background: #f9dedc; }
table.checked { border-collapse: collapse; margin: .5em 0; }
table.checked td, table.checked th { border: 1px solid #ddd; padding: .15em .5em; text-align: left; vertical-align: top; }
table.checked td.number { text-align: right; font-family: monospace; }
tr.broke td { background: #f9dedc; }
tr.first-break td { background: #f9dedc; font-weight: bold; }
svg text.elabel { font: 11px monospace; fill: #555; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
div.graphs { display: flex; flex-wrap: wrap; gap: 1.5em; } div.graphs figure { margin: 0; }
div.graphs figcaption { text-align: center; color: #555; }
pre { background: #f4f4f4; padding: .6em; overflow-x: auto; }
div.matrices { overflow-x: auto; }
.note { color: #555; }
)";

}  // namespace

std::string to_html(const Record& r) {
    std::ostringstream s;
    s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      << "<title>permcheck: " << html_escape(headline(r)) << "</title><style>" << kStyle << "</style></head><body>\n";
    s << "<h1>permcheck: " << html_escape(r.layer) << " &mdash; " << property_name(r.property) << " <span class=\"verdict "
      << verdict_name(r.verdict) << "\">" << verdict_name(r.verdict) << "</span></h1>\n";
    if (!r.repro.empty())
        s << "<p class=\"note\"><b>Reproduce without permcheck:</b> <code>python3 " << html_escape(r.repro)
          << "</code> (beside this report; it exits 1 while the bug is there).</p>\n";
    s << "<table class=\"summary\"><tr><th>dtype</th><td>" << arithmetic_name(r.dtype) << "</td></tr><tr><th>cases</th><td>"
      << r.cases << "</td></tr><tr><th>seed</th><td>" << r.seed << "</td></tr></table>\n";
    if (!r.error.empty()) s << "<h2>Error</h2><pre>" << html_escape(r.error) << "</pre>\n";
    s << checked_html(r) << closest_html(r);
    if (r.counterexample && r.signature) s << signature_html(*r.counterexample, *r.signature, r);
    if (r.taps) s << taps_html(*r.taps);
    s << details_html(r);
    if (!r.replay.empty()) s << "<h2>Replay</h2><pre>" << html_escape(r.replay) << "</pre>\n";
    if (const std::string again = case_replay(r); !again.empty())
        s << "<p>or re-evaluate this exact case:</p><pre>" << html_escape(again) << "</pre>\n";
    s << "</body></html>\n";
    return s.str();
}

}  // namespace permcheck::report
