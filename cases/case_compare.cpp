// The comparison of a case's two sides: the tolerance of a signature's case, one loop over the entries, the
// slots the masks pad, the largest position id.
#include "cases/signature_case.h"

#include "cases/case_lines.h"
#include "cases/lengths.h"

#include <Eigen/Core>

#include <algorithm>
#include <numeric>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>


namespace permcheck {

using case_lines::Lines;

int widest_fixed_size(const Signature& s) {
    int widest = 1;
    for (const auto* list : {&s.inputs, &s.outputs})
        for (const TensorSpec& t : *list)
            for (const Dim& d : t.dims)
                if (!d.is_axis()) widest = std::max(widest, d.size);
    return widest;
}

double finite_max_abs(const std::vector<double>& values, double start) {
    if (values.empty()) return start;
    // Vectorized where every value is finite (the common case); else one value at a time.
    const double m = Eigen::Map<const Eigen::ArrayXd>(values.data(), static_cast<Eigen::Index>(values.size()))
                         .abs()
                         .maxCoeff<Eigen::PropagateNaN>();
    if (std::isfinite(m)) return std::max(start, m);
    for (double v : values)
        if (std::isfinite(v)) start = std::max(start, std::abs(v));
    return start;
}

std::vector<int> position_of(std::size_t e, const std::vector<int>& shape) {
    std::vector<int> where(shape.size());
    for (std::size_t k = shape.size(); k-- > 0;) {
        where[k] = static_cast<int>(e % static_cast<std::size_t>(shape[k]));
        e /= static_cast<std::size_t>(shape[k]);
    }
    return where;
}

double signature_tolerance(const ToleranceModel& m, const Lengths& lengths, int widest, double magnitude,
                           double positions) {
    long total = 0;
    for (const auto& [axis, len] : lengths) total += len;
    total += static_cast<long>(std::ceil(kPositionRoundingTerms * positions));
    return float_tolerance(m, total, widest, magnitude);
}

OutputComparison compare_sides(const std::string& name, const Tensor& a, const Tensor& b, const ToleranceModel& m,
                               const Lengths& lengths, int widest, double inputs_magnitude, double positions,
                               const std::vector<bool>& ignored) {
    const double magnitude = finite_max_abs(b.values, finite_max_abs(a.values, inputs_magnitude));
    return compare_tensors(name, a, b, signature_tolerance(m, lengths, widest, magnitude, positions), ignored);
}

double real_inputs_magnitude(const Signature& s, const Tensors& inputs) {
    double m = 0.0;
    for (const TensorSpec& spec : s.inputs)
        if (spec.kind == TensorKind::real) m = finite_max_abs(inputs.at(spec.name).values, m);
    return m;
}

std::string short_number(double v) {
    std::ostringstream s;
    s.precision(3);
    s << v;
    return s.str();
}

// The two sides are left out (filled in by the caller when the comparison is kept): a passing case copies nothing.
OutputComparison compare_tensors(const std::string& name, const Tensor& a, const Tensor& b, double tolerance,
                                 const std::vector<bool>& ignored, const std::vector<double>& exact_diff) {
    OutputComparison c{name, {}, {}, 0.0, tolerance, {}, true, false};
    if (a.shape != b.shape || a.values.size() != b.values.size()) {
        c.holds = false;
        c.shape_mismatch = true;
        c.max_abs_diff = std::numeric_limits<double>::infinity();
        return c;
    }
    std::size_t worst = 0;
    for (std::size_t e = 0; e < a.values.size(); ++e) {
        if (e < ignored.size() && ignored[e]) continue;
        const double x = a.values[e], y = b.values[e];
        double diff;
        if (!exact_diff.empty())
            diff = exact_diff[e];
        else if (!std::isfinite(x) || !std::isfinite(y))
            diff = (std::isnan(x) && std::isnan(y)) || x == y ? 0.0 : std::numeric_limits<double>::infinity();
        else
            diff = std::abs(x - y);
        if (diff > tolerance) c.holds = false;
        if (diff > c.max_abs_diff) {
            c.max_abs_diff = diff;
            worst = e;
        }
    }
    if (!a.values.empty()) c.where = position_of(worst, a.shape);
    return c;
}

void advance(std::vector<int>& where, const std::vector<int>& shape) {
    for (std::size_t k = shape.size(); k-- > 0;) {
        if (++where[k] < shape[k]) return;
        where[k] = 0;
    }
}

std::size_t flat_index(const std::vector<int>& where, const std::vector<int>& shape) {
    std::size_t e = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) e = e * static_cast<std::size_t>(shape[k]) + static_cast<std::size_t>(where[k]);
    return e;
}

bool same_values(const Tensors& a, const Tensors& b) {
    if (a.size() != b.size()) return false;
    for (const auto& [name, t] : a) {
        const auto it = b.find(name);
        if (it == b.end() || it->second.shape != t.shape || it->second.values != t.values) return false;
    }
    return true;
}

std::map<std::string, std::vector<bool>> padded_slots(const Signature& s, const Tensors& inputs) {
    std::map<std::string, std::vector<bool>> out;
    for (const TensorSpec& t : s.inputs) {
        if (!is_mask(t.kind)) continue;
        std::size_t k = 0, axes = 0;
        for (std::size_t d = 0; d < t.dims.size(); ++d)
            if (t.dims[d].is_axis()) k = d, ++axes;
        if (axes != 1) continue;
        const Tensor& m = inputs.at(t.name);
        const Lines lines(m.shape, k);
        std::vector<bool> pads(lines.len, true);
        for (std::size_t o = 0; o < lines.outer; ++o)
            for (std::size_t j = 0; j < lines.len; ++j)
                for (std::size_t i = 0; i < lines.inner; ++i)
                    if ((t.kind == TensorKind::mask) != (m.values[lines.at(o, j, i)] != 0.0)) pads[j] = false;
        std::vector<bool>& slots = out[t.dims[k].axis];
        if (slots.size() != lines.len) slots.assign(lines.len, false);
        for (std::size_t j = 0; j < lines.len; ++j) slots[j] = slots[j] || pads[j];
    }
    return out;
}

bool at_padded_slot(const TensorSpec& output, const std::vector<int>& where,
                    const std::map<std::string, std::vector<bool>>& padded) {
    for (std::size_t k = 0; k < output.dims.size() && k < where.size(); ++k) {
        const auto it = padded.find(output.dims[k].axis);
        if (it != padded.end() && static_cast<std::size_t>(where[k]) < it->second.size() &&
            it->second[static_cast<std::size_t>(where[k])])
            return true;
    }
    return false;
}

std::vector<bool> entries_at_padded_slots(const Signature& s, const Tensors& inputs, const TensorSpec& output,
                                          const std::vector<int>& shape) {
    if (shape.size() != output.dims.size()) return {};
    const std::map<std::string, std::vector<bool>> padded = padded_slots(s, inputs);
    // Per dim, the padded slots of the axis it follows (null for none): no lookup per entry, on a hot path.
    std::vector<const std::vector<bool>*> along(shape.size(), nullptr);
    bool any = false;
    for (std::size_t k = 0; k < shape.size(); ++k)
        if (const auto it = padded.find(output.dims[k].axis); it != padded.end() && it->second.size() == static_cast<std::size_t>(shape[k])) {
            along[k] = &it->second;
            any = any || std::find(it->second.begin(), it->second.end(), true) != it->second.end();
        }
    if (!any) return {};
    const std::size_t size = Tensor{shape, {}}.size();
    std::vector<bool> out(size, false);
    std::vector<int> where(shape.size(), 0);
    for (std::size_t e = 0; e < size; advance(where, shape), ++e)
        for (std::size_t k = 0; k < shape.size(); ++k)
            if (along[k] && (*along[k])[static_cast<std::size_t>(where[k])]) {
                out[e] = true;
                break;
            }
    return out;
}

double largest_position(const Signature& s, const Tensors& inputs) {
    double m = 0.0;
    for (const TensorSpec& t : s.inputs)
        if (t.kind == TensorKind::position)
            if (const auto it = inputs.find(t.name); it != inputs.end())
                m = finite_max_abs(it->second.values, m);
    return m;
}

}  // namespace permcheck
