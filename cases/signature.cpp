#include "cases/signature.h"

#include <algorithm>
#include <atomic>
#include <iomanip>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

namespace permcheck {

namespace {

constexpr int kMaxFixedSize = 1 << 20;
// At most this many values in one tensor of one case, at the longest lengths: far beyond any question about order,
// and within what a request and an answer line of the subprocess protocol carry (64 MB) at shortest round-trip
// precision.
constexpr double kMaxValuesPerTensor = 1 << 22;
constexpr long long kMaxKindLimit = (1LL << 31) - 1;  // a token's V and a position's P fit an int32 id

std::atomic<test_only::HarnessBug> planted{test_only::HarnessBug::none};

bool is_name(const std::string& s) {
    if (s.empty() || s.size() > 64) return false;
    const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (!letter(s[0])) return false;
    return std::all_of(s.begin(), s.end(), [&](char c) { return letter(c) || digit(c) || c == '-'; });
}

// A non-negative decimal integer of at most 9 digits, or -1.
int number(const std::string& s) {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return -1;
    return std::stoi(s);
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> parts;
    std::string::size_type start = 0;
    for (;;) {
        const auto at = text.find(sep, start);
        parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos) return parts;
        start = at + 1;
    }
}

std::invalid_argument bad_flag(const char* flag, const std::string& text, const std::string& expected) {
    return std::invalid_argument(std::string(flag) + " expects " + expected + ", got '" + text + "'");
}

std::vector<Dim> parse_dims(const char* flag, const std::string& text, const std::string& dims_text,
                            const std::string& expected) {
    std::vector<Dim> dims;
    if (dims_text.empty()) return dims;  // a scalar
    for (const std::string& part : split(dims_text, ',')) {
        if (is_name(part)) {
            dims.push_back(Dim{part, 0});
            continue;
        }
        const int size = number(part);
        if (size < 1 || size > kMaxFixedSize)
            throw bad_flag(flag, text, expected + "; each dim is an axis name or a fixed size in [1, " +
                                           std::to_string(kMaxFixedSize) + "], not '" + part + "'");
        dims.push_back(Dim{"", size});
    }
    return dims;
}

std::string format_dims(const std::vector<Dim>& dims) {
    std::string out;
    for (const Dim& d : dims) {
        if (!out.empty()) out += ',';
        out += d.is_axis() ? d.axis : std::to_string(d.size);
    }
    return out;
}

// The V of token=V or the P of position=P: an integer in [1, 2^31).
int kind_limit(const std::string& text, const std::string& value, const std::string& expected) {
    const bool digits = !value.empty() && value.size() <= 10 &&
                        std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long long v = digits ? std::stoll(value) : 0;
    if (v < 1 || v > kMaxKindLimit)
        throw bad_flag("--input", text, expected + "; the V of token=V and the P of position=P are integers in [1, 2^31), not '" +
                                            value + "'");
    return static_cast<int>(v);
}

void parse_kind(TensorSpec& t, const std::string& text, const std::string& kind, const std::string& expected) {
    const auto eq = kind.find('=');
    const std::string word = kind.substr(0, eq), value = eq == std::string::npos ? "" : kind.substr(eq + 1);
    const auto is = [&](TensorKind k) { return word == tensor_kind_name(k); };
    if (eq == std::string::npos && is(TensorKind::real)) return;
    if (eq == std::string::npos && is(TensorKind::mask)) {
        t.kind = TensorKind::mask;
        return;
    }
    if (kind == tensor_kind_name(TensorKind::mask_keep)) {
        t.kind = TensorKind::mask_keep;
        return;
    }
    if (is(TensorKind::index)) {
        // index=AXIS or index=AXIS,sorted[=ROW]
        const auto comma = value.find(',');
        const std::string axis = value.substr(0, comma), order = comma == std::string::npos ? "" : value.substr(comma + 1);
        const bool digits = order.size() > 7 && order.size() <= 14 &&
                            std::all_of(order.begin() + 7, order.end(), [](char c) { return c >= '0' && c <= '9'; });
        const bool sorted = order == "sorted" || (order.rfind("sorted=", 0) == 0 && digits);
        if (is_name(axis) && (comma == std::string::npos || sorted)) {
            t.kind = TensorKind::index;
            t.index_axis = axis;
            if (sorted) t.sorted_row = order == "sorted" ? 0 : std::stoi(order.substr(7));
            return;
        }
        if (is_name(axis))
            throw bad_flag("--input", text, expected + "; after index=AXIS only ',sorted' or ',sorted=ROW' (ROW a row "
                                                       "number: the input kept in ascending order of that row), not '" +
                                                       order + "'");
    }
    if (is(TensorKind::token) && eq != std::string::npos) {
        t.kind = TensorKind::token;
        t.limit = kind_limit(text, value, expected);
        return;
    }
    if (kind == tensor_kind_name(TensorKind::segment)) {
        t.kind = TensorKind::segment;
        return;
    }
    if (is(TensorKind::position)) {
        t.kind = TensorKind::position;
        t.limit = eq == std::string::npos ? kDefaultPositions : kind_limit(text, value, expected);
        return;
    }
    throw bad_flag("--input", text, expected + "; KIND is float, mask, mask=keep, index=AXIS, token=V, position[=P] or segment, not '" +
                                        kind + "'");
}

}  // namespace

// ------------------------------------------------------------------------------------------------- grammar

Axis parse_axis(const std::string& text) {
    const std::string expected = "NAME=MIN..MAX (e.g. n=1..8, edges=0..16)";
    const auto eq = text.find('=');
    const auto dots = text.find("..");
    if (eq == std::string::npos || dots == std::string::npos || dots < eq) throw bad_flag("--axis", text, expected);
    Axis a{text.substr(0, eq), number(text.substr(eq + 1, dots - eq - 1)), number(text.substr(dots + 2))};
    if (!is_name(a.name)) throw bad_flag("--axis", text, expected + "; NAME starts with a letter");
    if (a.min_len < 0 || a.max_len < 0) throw bad_flag("--axis", text, expected + "; MIN and MAX are integers >= 0");
    if (a.max_len < a.min_len || a.max_len > kMaxAxisLen || a.max_len < 1)
        throw bad_flag("--axis", text, expected + " with MIN <= MAX and 1 <= MAX <= " + std::to_string(kMaxAxisLen));
    return a;
}

TensorSpec parse_input(const std::string& text) {
    const std::string expected =
        "NAME:DIMS[:KIND] (e.g. q:n,8  pad:n:mask  edge_index:2,edges:index=nodes  ids:n:token=50000  pos:n:position)";
    const std::vector<std::string> parts = split(text, ':');
    if (parts.size() < 2 || parts.size() > 3 || !is_name(parts[0])) throw bad_flag("--input", text, expected);
    TensorSpec t{parts[0], parse_dims("--input", text, parts[1], expected), TensorKind::real, ""};
    if (parts.size() == 3) parse_kind(t, text, parts[2], expected);
    return t;
}

TensorSpec parse_output(const std::string& text) {
    const std::string expected = "NAME:DIMS with every fixed size written out (e.g. y:n,8  g:4)";
    const std::vector<std::string> parts = split(text, ':');
    if (parts.size() != 2 || !is_name(parts[0])) throw bad_flag("--output", text, expected);
    return {parts[0], parse_dims("--output", text, parts[1], expected), TensorKind::real, ""};
}

std::string format(const Axis& a) { return a.name + "=" + std::to_string(a.min_len) + ".." + std::to_string(a.max_len); }

std::string format_input(const TensorSpec& t) {
    std::string out = format_output(t);
    // Appends, not "=" + ...: GCC 12 warns falsely (-Wrestrict) on a literal plus a string at -O3.
    if (t.kind != TensorKind::real) {
        out += ':';
        out += tensor_kind_name(t.kind);
    }
    if (t.kind == TensorKind::index) {
        out += '=';
        out += t.index_axis;
        if (t.sorted_row == 0) out += ",sorted";
        if (t.sorted_row > 0) out += ",sorted=" + std::to_string(t.sorted_row);
    }
    if (t.kind == TensorKind::token || (t.kind == TensorKind::position && t.limit != kDefaultPositions)) {
        out += '=';
        out += std::to_string(t.limit);
    }
    return out;
}

std::string format_output(const TensorSpec& t) { return t.name + ":" + format_dims(t.dims); }

namespace {

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

Signature one_tensor_signature(int d, Output output, int min_len, int max_len, int long_len) {
    Signature s;
    s.axes.push_back(Axis{"n", min_len, max_len, long_len > max_len ? long_len : 0});
    s.inputs.push_back(TensorSpec{"x", {Dim{"n", 0}, Dim{"", d}}, TensorKind::real, ""});
    std::vector<Dim> y{Dim{"", 0}};
    if (output == Output::sequence) y.insert(y.begin(), Dim{"n", 0});
    s.outputs.push_back(TensorSpec{"y", y, TensorKind::real, ""});
    s.one_tensor = true;
    return s;
}

Output one_tensor_output(const Signature& s) {
    return s.outputs.at(0).dims.size() == 2 ? Output::sequence : Output::pooled;
}

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

Tensor one_tensor_answer(const Mat<double>& y, Output output, int n) {
    const bool sequence = output == Output::sequence;
    if (sequence ? y.rows() != n : y.rows() != 1) {
        const std::string answered = "the layer answered " + std::to_string(y.rows()) + (y.rows() == 1 ? " row" : " rows") +
                                     " for a request of n=" + std::to_string(n);
        if (sequence)
            throw AdapterError(answered + "; a sequence layer answers one row per position (a pooled layer: --output pooled)");
        throw AdapterError(answered + "; a pooled layer answers one vector");
    }
    if (y.cols() < 1) throw AdapterError("the layer answered rows of width 0 for a request of n=" + std::to_string(n));
    Tensor t = tensor_matrix::as_tensor(y);
    if (!sequence) t.shape = {static_cast<int>(y.cols())};
    return t;
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

namespace {

// `in`, of this shape, moved along dim k by p into a new vector: out[.., i, ..] = in[.., p[i], ..].
std::vector<double> permuted_along(const std::vector<int>& shape, const std::vector<double>& in, std::size_t k,
                                   const Permutation& p) {
    const auto len = static_cast<std::size_t>(shape[k]);
    if (static_cast<std::size_t>(p.size()) != len)
        throw std::invalid_argument("a permutation of " + std::to_string(p.size()) + " positions applied to a dim of " +
                                    std::to_string(len));
    const auto [outer, inner] = outer_inner(shape, k);
    std::vector<double> out(in.size());
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < len; ++i) {
            const std::size_t from = (o * len + static_cast<std::size_t>(p[static_cast<int>(i)])) * inner;
            std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(from), inner,
                        out.begin() + static_cast<std::ptrdiff_t>((o * len + i) * inner));
        }
    return out;
}

// t moved along every dim named by an axis, each value copied once per dim that moves (none: t as it is); with
// `first_only`, only along the first dim of each axis (the planted pairwise bug).
Tensor moved(const TensorSpec& spec, const Permutations& perms, const Tensor& t, bool first_only) {
    if (t.shape.size() != spec.dims.size())
        throw std::invalid_argument(spec.name + " has " + std::to_string(t.shape.size()) + " dims, its spec " +
                                    std::to_string(spec.dims.size()));
    Tensor out{t.shape, {}};
    const std::vector<double>* from = &t.values;
    std::set<std::string> seen;
    for (std::size_t k = 0; k < spec.dims.size(); ++k) {
        const Dim& d = spec.dims[k];
        if (!d.is_axis()) continue;
        if (first_only && !seen.insert(d.axis).second) continue;
        const auto it = perms.find(d.axis);
        if (it == perms.end() || it->second.is_identity()) continue;
        out.values = permuted_along(t.shape, *from, k, it->second);
        from = &out.values;
    }
    if (from == &t.values) out.values = t.values;
    return out;
}

// Every value v of an index tensor becomes the new position of v: q[v], with q = p^-1 (p under the planted bug).
void renumber(Tensor& t, const Permutation& p, bool with_p) {
    const Permutation q = with_p ? p : p.inverse();
    for (double& v : t.values) {
        const auto i = static_cast<long>(v);
        if (static_cast<double>(i) != v || i < 0 || i >= q.size())
            throw std::invalid_argument("index value " + std::to_string(v) + " is outside [0, " +
                                        std::to_string(q.size()) + ")");
        v = q[static_cast<int>(i)];
    }
}

}  // namespace

Permutations identities(const Lengths& lengths) {
    Permutations perms;
    for (const auto& [axis, len] : lengths) perms[axis] = Permutation::identity(len);
    return perms;
}

Tensors permute_inputs(const Signature& s, const Permutations& perms, const Tensors& inputs) {
    const test_only::HarnessBug bug = planted.load();
    Tensors out;
    // Tensors the signature does not name go along as they are. (A named pair, not a structured binding: clang 14,
    // which builds the fuzzers, cannot capture a binding in a lambda.)
    for (const auto& entry : inputs) {
        const std::string& name = entry.first;
        if (std::none_of(s.inputs.begin(), s.inputs.end(), [&name](const TensorSpec& spec) { return spec.name == name; }))
            out.emplace(name, entry.second);
    }
    for (const TensorSpec& spec : s.inputs) {
        const auto it = inputs.find(spec.name);
        if (it == inputs.end()) throw std::invalid_argument("no input named '" + spec.name + "'");
        const bool left = (is_mask(spec.kind) && bug == test_only::HarnessBug::mask_wrong_axis) ||
                          (spec.kind == TensorKind::position && bug == test_only::HarnessBug::positions_kept);
        Tensor t = left ? it->second : moved(spec, perms, it->second, bug == test_only::HarnessBug::pairwise_without_transpose);
        if (spec.kind == TensorKind::index) {
            const auto p = perms.find(spec.index_axis);
            if (p != perms.end()) renumber(t, p->second, bug == test_only::HarnessBug::index_with_p);
        }
        out[spec.name] = std::move(t);
    }
    return out;
}

Tensor permute_output(const TensorSpec& t, const Permutations& perms, const Tensor& y) { return moved(t, perms, y, false); }

void test_only::plant_harness_bug(HarnessBug bug) { planted.store(bug); }
test_only::HarnessBug test_only::planted_harness_bug() { return planted.load(); }

// -------------------------------------------------------------------------------------------------- describe

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
