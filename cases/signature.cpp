// A signature's rules (validate, and the error each broken rule throws) and what a signature says of its tensors:
// free axes, sorted inputs, shapes, the tensors and their matrices (cases/signature.h). Its grammar is
// cases/signature_grammar.cpp, the moves of its inputs cases/signature_moves.cpp, the text of its values
// cases/tensor_text.cpp.
#include "cases/signature.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

namespace permcheck {

namespace {

// At most this many values in one tensor of one case, at the longest lengths: far beyond any question about order,
// and within what a request and an answer line of the subprocess protocol carry (64 MB) at shortest round-trip
// precision.
constexpr double kMaxValuesPerTensor = 1 << 22;

template <class Named> void require_unique(const std::vector<Named>& items, const char* what) {
    std::set<std::string> seen;
    for (const Named& item : items)
        if (!seen.insert(item.name).second)
            throw std::invalid_argument(std::string("the ") + what + " name '" + item.name + "' is given twice");
}

void validate_tensor(const TensorSpec& t, const std::set<std::string>& axes, const char* flag, bool open_allowed = false) {
    const auto bad = [&](const std::string& why) { return std::invalid_argument(std::string(flag) + " " + t.name + why); };
    for (const Dim& d : t.dims)
        if (!d.is_axis() && !(open_allowed && d.is_open()) && (d.size < 1 || d.size > kMaxFixedSize))
            throw bad(" has the fixed size " + std::to_string(d.size) + "; a fixed size is in [1, " +
                      std::to_string(kMaxFixedSize) + "]");
    for (const Dim& d : t.dims)
        if (d.is_axis() && !axes.count(d.axis)) throw bad(" names the axis '" + d.axis + "', which no --axis declares");
    if (t.kind == TensorKind::index && !axes.count(t.index_axis))
        throw bad(" is an index into the axis '" + t.index_axis + "', which no --axis declares");
    if (is_mask(t.kind) && !has_axis(t)) throw bad(" is a mask with no axis dim: a mask pads positions of an axis");
    if ((t.kind == TensorKind::token || t.kind == TensorKind::position) && (t.limit < 1 || t.limit > kMaxKindLimit))
        throw bad(" needs a V (token=V) or P (position=P) in [1, 2^31)");
}

// A position input lies along exactly one axis, its other dims of size 1, and that axis fits in its P positions.
void validate_position(const Signature& s, const TensorSpec& t) {
    const auto axes = std::count_if(t.dims.begin(), t.dims.end(), [](const Dim& d) { return d.is_axis(); });
    const bool ones = std::all_of(t.dims.begin(), t.dims.end(), [](const Dim& d) { return d.is_axis() || d.size == 1; });
    const bool segment = t.kind == TensorKind::segment;
    if (axes != 1 || !ones)
        throw std::invalid_argument("--input " + format_input(t) + (segment ? ": a segment input" : ": a position input") +
                                    " lies along exactly one axis, every other dim of size 1 " +
                                    (segment ? "(e.g. doc:n:segment or doc:1,n:segment)"
                                             : "(e.g. pos:n:position or pos:1,n:position)"));
    if (segment) return;
    const std::string& axis = position_axis(t);
    for (const Axis& a : s.axes)
        if (a.name == axis && a.max_len > t.limit)
            throw std::invalid_argument("--input " + format_input(t) + ": the axis " + axis + " reaches " +
                                        std::to_string(a.max_len) + " positions, more than its P = " +
                                        std::to_string(t.limit) + " position ids");
}

// Throws naming the flag when a tensor would hold more than kMaxValuesPerTensor values at the longest lengths.
void require_small_enough(const Signature& s, const TensorSpec& t, const char* flag, const std::string& text) {
    double values = 1;
    for (const Dim& d : t.dims) {
        int size = d.size;
        for (const Axis& a : s.axes)
            if (d.is_axis() && a.name == d.axis) size = a.max_len;
        values *= size;
    }
    if (values > kMaxValuesPerTensor)
        throw std::invalid_argument(std::string(flag) + " " + text + " holds up to " +
                                    std::to_string(static_cast<long long>(values)) +
                                    " values at the longest lengths; at most " +
                                    std::to_string(static_cast<long long>(kMaxValuesPerTensor)) +
                                    " are sent or read in one tensor (shorten the axes or the fixed sizes)");
}

}  // namespace

namespace {

// A sorted index input runs along one axis, other than the one it names, its ROW one of its rows; one sorted input an
// axis; and an order puts them all in order (sorted_inputs).
void validate_sorted(const Signature& s) {
    std::set<std::string> along;
    for (const TensorSpec& t : s.inputs) {
        if (t.sorted_row < 0) continue;
        const std::string flag = "--input " + format_input(t);
        if (t.kind != TensorKind::index) throw std::invalid_argument(flag + ": only an index input is kept sorted");
        const auto axes = std::count_if(t.dims.begin(), t.dims.end(), [](const Dim& d) { return d.is_axis(); });
        if (axes != 1)
            throw std::invalid_argument(flag + ": a sorted index input runs along exactly one axis (its other dims "
                                               "fixed sizes), the axis its order is kept along");
        const std::string& axis = sorted_axis(t);
        if (axis == t.index_axis)
            throw std::invalid_argument(flag + ": a sorted index input cannot name the positions of the axis it runs "
                                               "along (sorting it would move what it names)");
        long rows = 1;
        for (const Dim& d : t.dims) rows *= d.is_axis() ? 1 : d.size;
        if (t.sorted_row >= rows)
            throw std::invalid_argument(flag + ": its rows are 0.." + std::to_string(rows - 1) +
                                        " (one per entry at a position of " + axis + "), not " +
                                        std::to_string(t.sorted_row));
        if (!along.insert(axis).second)
            throw std::invalid_argument(flag + ": another sorted index input runs along " + axis +
                                        "; one order per axis can be kept");
    }
    sorted_inputs(s);
}

// A within=INPUT names another index input that runs along the axis this one names, alone (a batch vector).
void validate_within(const Signature& s) {
    for (const TensorSpec& t : s.inputs) {
        if (t.within.empty()) continue;
        const std::string flag = "--input " + format_input(t);
        const auto group = std::find_if(s.inputs.begin(), s.inputs.end(),
                                        [&](const TensorSpec& u) { return u.name == t.within; });
        if (group == s.inputs.end() || group->kind != TensorKind::index || group->dims.size() != 1 ||
            group->dims[0].axis != t.index_axis || !group->within.empty())
            throw std::invalid_argument(flag + ": within=" + t.within + " names an index input along " +
                                        t.index_axis + " alone, whose values group its positions (as " + t.within +
                                        ":" + t.index_axis + ":index=graphs, a batch vector)");
    }
}

}  // namespace

void validate(const Signature& s) {
    if (s.axes.empty()) throw std::invalid_argument("a signature needs at least one --axis");
    if (s.inputs.empty()) throw std::invalid_argument("a signature needs at least one --input");
    if (s.outputs.empty()) throw std::invalid_argument("a signature needs at least one --output");
    require_unique(s.axes, "axis");
    require_unique(s.inputs, "input");
    require_unique(s.outputs, "output");
    std::set<std::string> axes;
    for (const Axis& a : s.axes) {
        if (a.min_len < 0 || a.max_len < a.min_len || a.max_len > kMaxAxisLen || a.max_len < 1)
            throw std::invalid_argument("--axis " + format(a) + ": lengths must satisfy 0 <= MIN <= MAX, 1 <= MAX <= " +
                                        std::to_string(kMaxAxisLen));
        if (a.long_len != 0 && (a.long_len <= a.max_len || a.long_len > kMaxAxisLen))
            throw std::invalid_argument("the axis " + a.name + "'s long cases reach " + std::to_string(a.long_len) +
                                        "; they must be longer than its MAX and at most " + std::to_string(kMaxAxisLen));
        axes.insert(a.name);
    }
    for (const TensorSpec& t : s.inputs) {
        validate_tensor(t, axes, "--input");
        if (t.kind == TensorKind::position || t.kind == TensorKind::segment) validate_position(s, t);
    }
    for (const TensorSpec& t : s.outputs) {
        if (t.kind != TensorKind::real)
            throw std::invalid_argument("--output " + t.name + " must be real: outputs are compared as numbers");
        validate_tensor(t, axes, "--output", true);
    }
    // An axis moves an input it is a dim of, or an index input whose values name its positions (PyG's `batch`
    // vector, batch:nodes:index=graphs: a permutation of the graphs renumbers it).
    for (const Axis& a : s.axes) {
        const bool used = std::any_of(s.inputs.begin(), s.inputs.end(), [&](const TensorSpec& t) {
            return (t.kind == TensorKind::index && t.index_axis == a.name) ||
                   std::any_of(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.axis == a.name; });
        });
        if (!used)
            throw std::invalid_argument("the axis '" + a.name + "' is a dim of no --input, and no index input names "
                                        "its positions: nothing would move");
    }
    for (const TensorSpec& t : s.inputs) require_small_enough(s, t, "--input", format_input(t));
    for (const TensorSpec& t : s.outputs) require_small_enough(s, t, "--output", format_output(t));
    validate_sorted(s);
    validate_within(s);
}

std::vector<std::string> free_axes(const Signature& s) {
    std::vector<std::string> out;
    for (const Axis& a : s.axes)
        if (std::none_of(s.inputs.begin(), s.inputs.end(), [&a](const TensorSpec& t) {
                return std::any_of(t.dims.begin(), t.dims.end(), [&a](const Dim& d) { return d.axis == a.name; });
            }))
            out.push_back(a.name);
    return out;
}

Tensors with_free_lengths(const Signature& s, Tensors inputs, const Lengths& lengths) {
    for (const std::string& axis : free_axes(s))
        if (const auto it = lengths.find(axis); it != lengths.end())
            inputs[kLengthInput + axis] = Tensor{{}, {static_cast<double>(it->second)}};
    return inputs;
}

const std::string& sorted_axis(const TensorSpec& t) {
    for (const Dim& d : t.dims)
        if (d.is_axis()) return d.axis;
    throw std::invalid_argument("--input " + format_input(t) + " runs along no axis");
}

std::vector<const TensorSpec*> sorted_inputs(const Signature& s) {
    std::vector<const TensorSpec*> left, order;
    for (const TensorSpec& t : s.inputs)
        if (t.sorted_row >= 0) left.push_back(&t);
    // Kahn's order: an input goes once no input left runs along the axis its values name.
    while (!left.empty()) {
        const auto ready = std::find_if(left.begin(), left.end(), [&](const TensorSpec* t) {
            return std::none_of(left.begin(), left.end(),
                                [&](const TensorSpec* u) { return u != t && sorted_axis(*u) == t->index_axis; });
        });
        if (ready == left.end()) {
            std::string names;
            for (const TensorSpec* t : left) names += (names.empty() ? "" : ", ") + format_input(*t);
            throw std::invalid_argument("the sorted index inputs " + names + " name each other's axes in a cycle: "
                                        "no order puts them all in order");
        }
        order.push_back(*ready);
        left.erase(ready);
    }
    return order;
}

Permutation sorting_permutation(const TensorSpec& spec, const Tensor& t) {
    std::size_t k = 0;
    while (!spec.dims[k].is_axis()) ++k;
    const std::size_t inner = outer_inner(t.shape, k).second;
    const std::size_t len = static_cast<std::size_t>(t.shape[k]);
    const std::size_t row = static_cast<std::size_t>(spec.sorted_row), o = row / inner, in = row % inner;
    std::vector<int> order(len);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return t.values[(o * len + static_cast<std::size_t>(a)) * inner + in] <
               t.values[(o * len + static_cast<std::size_t>(b)) * inner + in];
    });
    return Permutation(std::move(order));
}

bool covers_free_axes(const Signature& s, const Tensors& inputs, const Lengths& lengths) {
    for (const std::string& axis : free_axes(s))
        for (const TensorSpec& t : s.inputs) {
            if (t.kind != TensorKind::index || t.index_axis != axis) continue;
            std::vector<bool> named(static_cast<std::size_t>(lengths.at(axis)), false);
            for (double v : inputs.at(t.name).values)
                if (v >= 0 && v < static_cast<double>(named.size())) named[static_cast<std::size_t>(v)] = true;
            if (std::find(named.begin(), named.end(), false) != named.end()) return false;
        }
    return true;
}

bool has_axis(const TensorSpec& t) {
    return std::any_of(t.dims.begin(), t.dims.end(), [](const Dim& d) { return d.is_axis(); });
}

Property property_of(const Signature& s) {
    return std::any_of(s.outputs.begin(), s.outputs.end(), has_axis) ? Property{"equivariance"} : Property{"invariance"};
}

// ------------------------------------------------------------------------------------------------- tensors

std::size_t Tensor::size() const {
    std::size_t n = 1;
    for (int s : shape) n *= static_cast<std::size_t>(std::max(s, 0));
    return n;
}

Tensor tensor_matrix::as_tensor(const Mat<double>& m) {
    Tensor t{{static_cast<int>(m.rows()), static_cast<int>(m.cols())}, {}};
    t.values.resize(static_cast<std::size_t>(m.size()));
    Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(t.values.data(), m.rows(), m.cols()) = m;
    return t;
}

Mat<double> tensor_matrix::as_matrix(const Tensor& t) {
    if (t.shape.size() > 2 || t.values.size() != t.size())
        throw std::invalid_argument("a matrix is a tensor of one or two dims, got the shape " + index_text(t.shape));
    const Eigen::Index rows = t.shape.size() == 2 ? t.shape[0] : 1;
    const Eigen::Index cols = t.shape.empty() ? 1 : t.shape.back();
    return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(t.values.data(), rows, cols);
}

std::vector<bool> tensor_matrix::as_mask(const Tensor& t) {
    std::vector<bool> out(t.values.size());
    for (std::size_t e = 0; e < t.values.size(); ++e) out[e] = t.values[e] != 0.0;
    return out;
}

bool has_position_input(const Signature& s) {
    return std::any_of(s.inputs.begin(), s.inputs.end(), [](const TensorSpec& t) { return t.kind == TensorKind::position; });
}

const std::string& position_axis(const TensorSpec& t) {
    for (const Dim& d : t.dims)
        if (d.is_axis()) return d.axis;
    throw std::invalid_argument("the position or segment input " + t.name + " has no axis dim");
}

std::pair<std::size_t, std::size_t> outer_inner(const std::vector<int>& shape, std::size_t k) {
    std::size_t outer = 1, inner = 1;
    for (std::size_t j = 0; j < shape.size(); ++j)
        if (j != k) (j < k ? outer : inner) *= static_cast<std::size_t>(shape[j]);
    return {outer, inner};
}

std::vector<int> shape_of(const TensorSpec& t, const Lengths& lengths) {
    std::vector<int> shape;
    for (const Dim& d : t.dims) {
        if (!d.is_axis()) {
            shape.push_back(d.size);
            continue;
        }
        const auto it = lengths.find(d.axis);
        if (it == lengths.end()) throw std::invalid_argument("no length for the axis '" + d.axis + "' of " + t.name);
        shape.push_back(it->second);
    }
    return shape;
}

}  // namespace permcheck
