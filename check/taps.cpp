// Taps: a counterexample's submodule outputs judged one by one (check/taps.h, proofs-notes/taps.md).
#include "check/taps.h"

#include "check/compare.h"
#include "check/position_case.h"
#include "check/signature_case.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace permcheck {

const char* tap_verdict_name(TapVerdict v) {
    switch (v) {
        case TapVerdict::holds: return "holds";
        case TapVerdict::violated: return "violated";
        case TapVerdict::not_comparable: return "not comparable";
        case TapVerdict::non_finite: return "non-finite";
    }
    return "?";
}

std::string printable_tap_name(const std::string& name) {
    std::string out;
    for (unsigned char ch : name) {
        if (ch == '\n') out += "\\n";
        else if (ch == '\t') out += "\\t";
        else if (ch < 0x20 || ch == 0x7f) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[ch >> 4];
            out += hex[ch & 15];
        } else out += static_cast<char>(ch);
    }
    return out;
}

std::string first_break_sentence(const TapTrace& t) {
    if (t.taps.empty()) return "no taps: " + (t.note.empty() ? std::string("the adapter answered none") : t.note);
    const std::size_t before = t.first_breaking < 0 ? t.taps.size() : static_cast<std::size_t>(t.first_breaking);
    const auto unjudged = std::count_if(t.taps.begin(), t.taps.begin() + static_cast<std::ptrdiff_t>(before),
                                        [](const TapComparison& c) { return c.verdict == TapVerdict::not_comparable; });
    const std::string except = unjudged == 0 ? std::string()
                                             : " but " + std::to_string(unjudged) + " that could not be compared";
    const std::string count = std::to_string(t.taps.size()) + (t.taps.size() == 1 ? " tap" : " taps");
    if (t.first_breaking < 0 && unjudged == static_cast<std::ptrdiff_t>(t.taps.size()))
        return "no tap could be compared (" + count + "): where the symmetry breaks could not be located";
    if (t.first_breaking < 0 && unjudged > 0)
        return "no tap breaks (" + count + ", every one holds" + except +
               "): the symmetry breaks in the layer's own code or in a submodule whose tap could not be compared";
    if (t.first_breaking < 0)
        return "no tap breaks (" + count + ", every one holds): the symmetry breaks in the layer's own code, outside "
               "its submodules";
    const TapComparison& c = t.taps[before];
    std::string s = "symmetry first breaks at " + printable_tap_name(c.name) + " (tap " + std::to_string(before + 1) + " of " +
                    std::to_string(t.taps.size()) + ")";
    if (c.verdict == TapVerdict::non_finite) s += ", which is non-finite";
    if (before == 0) return s + "; it is the first tap";
    return s + "; every tap before it holds" + except;
}

namespace {

std::string axes_text(const std::vector<std::string>& axes) {
    std::string s;
    for (std::size_t k = 0; k < axes.size(); ++k) {
        if (k) s += ',';
        s += axes[k].empty() ? std::string("-") : axes[k];
    }
    return s.empty() ? "(scalar)" : s;
}

std::string shape_text(const std::vector<int>& shape) {
    std::string s = "[";
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (k) s += ", ";
        s += std::to_string(shape[k]);
    }
    return s + "]";
}

// The axes whose probe changed dim k (an axis without a probe is left out).
std::vector<std::string> axes_changing(std::size_t k, const std::vector<int>& shape,
                                       const std::map<std::string, std::optional<std::vector<int>>>& probes) {
    std::vector<std::string> out;
    for (const auto& [axis, probe] : probes) {
        if (!probe) continue;
        if (probe->size() != shape.size())
            throw std::invalid_argument("it has " + std::to_string(probe->size()) + " dims when axis " + axis +
                                        " is one longer, " + std::to_string(shape.size()) + " at x");
        if ((*probe)[k] != shape[k]) out.push_back(axis);
    }
    return out;
}

}  // namespace

std::string describe(const TapTrace& t) {
    std::ostringstream s;
    if (!t.taps.empty()) {
        s << "  taps of the counterexample, in the order the submodules finished (axes: the axis each dim follows):\n";
        std::size_t name_width = 0, shape_width = 0;
        for (const TapComparison& c : t.taps) {
            name_width = std::max(name_width, printable_tap_name(c.name).size());
            shape_width = std::max(shape_width, shape_text(c.shape).size());
        }
        for (std::size_t k = 0; k < t.taps.size(); ++k) {
            const TapComparison& c = t.taps[k];
            s << (static_cast<int>(k) == t.first_breaking ? "  > " : "    ") << std::setw(3) << k + 1 << "  "
              << std::left << std::setw(static_cast<int>(name_width)) << printable_tap_name(c.name) << "  "
              << std::setw(static_cast<int>(shape_width)) << shape_text(c.shape) << "  axes "
              << std::setw(5) << axes_text(c.axes) << std::right << "  " << tap_verdict_name(c.verdict);
            if (c.verdict != TapVerdict::not_comparable)
                s << ", largest difference " << short_number(c.max_abs_diff) << " (tolerance " << short_number(c.tolerance) << ")";
            if (!c.note.empty()) s << ": " << c.note;
            s << "\n";
        }
    }
    s << "  " << first_break_sentence(t) << "\n";
    if (!t.taps.empty() && !t.note.empty()) s << "  (" << t.note << ")\n";
    return s.str();
}

std::vector<std::string> tap_axes(const std::vector<int>& shape, const Lengths& lengths,
                                  const std::map<std::string, std::optional<std::vector<int>>>& probe_shapes) {
    std::vector<std::string> axes(shape.size());
    for (std::size_t k = 0; k < shape.size(); ++k) {
        const std::vector<std::string> moving = axes_changing(k, shape, probe_shapes);
        const std::string dim = "dim " + std::to_string(k) + " (size " + std::to_string(shape[k]) + ")";
        if (moving.size() > 1)
            throw std::invalid_argument(dim + " changes with axes " + moving[0] + " and " + moving[1] +
                                        ": it follows no single axis");
        if (moving.size() == 1) {
            const std::string& a = moving.front();
            const int len = lengths.at(a);
            if (shape[k] != len || (*probe_shapes.at(a))[k] != len + 1)
                throw std::invalid_argument(dim + " changes with axis " + a + " but is not its length (" +
                                            std::to_string(len) + ", then " + std::to_string(len + 1) +
                                            "): no permutation of " + a + " acts on it");
            axes[k] = a;
            continue;
        }
        for (const auto& [axis, probe] : probe_shapes)
            if (!probe && lengths.at(axis) == shape[k])
                throw std::invalid_argument(dim + " has the length of axis " + axis +
                                            ", which could not be probed: whether it follows " + axis +
                                            " cannot be told");
    }
    return axes;
}

namespace {

bool all_finite(const std::vector<double>& values) {
    return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

}  // namespace

TapComparison judge_tap(const std::string& name, const Tensor& at_x, const Tensor& at_px,
                        const std::vector<std::string>& axes, const Permutations& perms, const Lengths& lengths,
                        int widest_fixed, double inputs_magnitude, Arithmetic dtype, double amplification,
                        double positions, const std::vector<bool>& ignored) {
    TapComparison c{name, at_x.shape, axes, TapVerdict::holds, 0.0, 0.0, ""};
    if (at_x.shape != at_px.shape) {
        c.verdict = TapVerdict::not_comparable;
        c.max_abs_diff = std::numeric_limits<double>::infinity();
        c.note = "its shape is " + shape_text(at_x.shape) + " at x and " + shape_text(at_px.shape) + " at P x";
        return c;
    }
    TensorSpec spec{name, {}, TensorKind::real, ""};
    int widest = std::max(widest_fixed, 1);
    for (std::size_t k = 0; k < axes.size(); ++k) {
        spec.dims.push_back(Dim{axes[k], at_x.shape[k]});
        if (axes[k].empty()) widest = std::max(widest, at_x.shape[k]);
    }
    const Tensor rhs = permute_output(spec, perms, at_x);
    const ToleranceModel model = tolerance_model(dtype, amplification);
    const double m = finite_max_abs(rhs.values, finite_max_abs(at_px.values, inputs_magnitude));
    const OutputComparison o =
        compare_tensors(name, at_px, rhs, signature_tolerance(model, lengths, widest, m, positions), ignored);
    c.max_abs_diff = o.max_abs_diff;
    c.tolerance = o.tolerance;
    if (!all_finite(at_x.values) || !all_finite(at_px.values)) {
        c.verdict = TapVerdict::non_finite;
        c.note = "a non-finite entry at " + std::string(all_finite(at_x.values) ? "P x" : "x");
    } else if (!o.holds) {
        c.verdict = TapVerdict::violated;
    }
    return c;
}

namespace {

// t one element longer along dim k: the last slice repeated (zeros when the dim is empty).
Tensor append_along(const Tensor& t, std::size_t k) {
    const auto [outer, inner] = outer_inner(t.shape, k);
    const std::size_t len = static_cast<std::size_t>(t.shape[k]);
    Tensor out{t.shape, {}};
    out.shape[k] += 1;
    out.values.reserve(outer * (len + 1) * inner);
    for (std::size_t o = 0; o < outer; ++o) {
        const auto block = t.values.begin() + static_cast<std::ptrdiff_t>(o * len * inner);
        out.values.insert(out.values.end(), block, block + static_cast<std::ptrdiff_t>(len * inner));
        if (len == 0) out.values.insert(out.values.end(), inner, 0.0);
        else out.values.insert(out.values.end(), block + static_cast<std::ptrdiff_t>((len - 1) * inner),
                               block + static_cast<std::ptrdiff_t>(len * inner));
    }
    return out;
}

// The inputs with axis a one element longer (every dim a names, a pairwise input along both).
Tensors lengthened(const Signature& s, const Tensors& inputs, const std::string& a) {
    Tensors out = inputs;
    for (const TensorSpec& spec : s.inputs) {
        Tensor& t = out.at(spec.name);
        for (std::size_t k = 0; k < spec.dims.size(); ++k)
            if (spec.dims[k].axis == a) t = append_along(t, k);
    }
    return out;
}

using ShapesByName = std::map<std::string, std::vector<int>>;

// Per axis, the taps' shapes with that axis one longer (nullopt when the probe failed, said in `note`); no probe
// at all when every tap declares its dims.
std::map<std::string, std::optional<ShapesByName>> probe(const TapSource& source, const Signature& s,
                                                         const Tensors& inputs, const std::vector<Tap>& taps,
                                                         std::string& note) {
    std::map<std::string, std::optional<ShapesByName>> out;
    if (std::all_of(taps.begin(), taps.end(), [](const Tap& t) { return t.dims.has_value() || !t.unusable.empty(); }))
        return out;
    for (const Axis& a : s.axes) {
        try {
            ShapesByName shapes;
            for (const Tap& t : source(lengthened(s, inputs, a.name))) shapes.emplace(t.name, t.value.shape);
            out[a.name] = std::move(shapes);
        } catch (const std::exception& e) {
            out[a.name] = std::nullopt;
            note += (note.empty() ? "" : "; ") + std::string("the probe with axis ") + a.name + " one longer failed (" +
                    e.what() + ")";
        }
    }
    return out;
}

// A tap's declared dims, checked against the signature's axes and the lengths.
std::vector<std::string> declared_axes(const Tap& t, const Lengths& lengths) {
    const std::vector<std::string>& dims = *t.dims;
    if (dims.size() != t.value.shape.size())
        throw std::invalid_argument("it declares " + std::to_string(dims.size()) + " dims and has " +
                                    std::to_string(t.value.shape.size()));
    for (std::size_t k = 0; k < dims.size(); ++k) {
        if (dims[k].empty()) continue;
        const auto it = lengths.find(dims[k]);
        if (it == lengths.end())
            throw std::invalid_argument("it declares dim " + std::to_string(k) + " as axis " + dims[k] +
                                        ", which the signature does not have");
        if (it->second != t.value.shape[k])
            throw std::invalid_argument("it declares dim " + std::to_string(k) + " as axis " + dims[k] + " (length " +
                                        std::to_string(it->second) + ") but has size " +
                                        std::to_string(t.value.shape[k]));
    }
    return dims;
}

std::vector<std::string> axes_of(const Tap& t, const Lengths& lengths,
                                 const std::map<std::string, std::optional<ShapesByName>>& probes) {
    if (t.dims) return declared_axes(t, lengths);
    std::map<std::string, std::optional<std::vector<int>>> shapes;
    for (const auto& [axis, probe] : probes) {
        const auto it = probe ? probe->find(t.name) : ShapesByName::const_iterator{};
        if (probe && it != probe->end()) shapes[axis] = it->second;
        else shapes[axis] = std::nullopt;
    }
    return tap_axes(t.value.shape, lengths, shapes);
}

TapComparison not_comparable(const Tap& t, const std::string& why) {
    TapComparison c{t.name, t.value.shape, std::vector<std::string>(t.value.shape.size()), TapVerdict::not_comparable,
                    std::numeric_limits<double>::infinity(), 0.0, why};
    return c;
}

}  // namespace

namespace {

// What the taps at x are compared with: the taps at the transformed inputs (P x, x_c or pad x), a tap there taken as
// `compared` says (a padded tap at the real positions), under the permutations `perms` (identities for shift and
// padding), with the tolerance at `lengths` (the padded case's) and of the largest position id.
struct TapCase {
    Property property = Property::equivariance;
    SignatureCase c;
    Tensors transformed;
    Lengths lengths;
    double positions = 0.0;
};

// A tap as an output of these axes.
TensorSpec tap_spec(const std::vector<std::string>& axes) {
    TensorSpec spec{"tap", {}, TensorKind::real, ""};
    for (std::size_t d = 0; d < axes.size(); ++d) spec.dims.push_back(Dim{axes[d], 0});
    return spec;
}

// The tap at the transformed inputs as it is compared with T(x): at the real positions of a padded case along the
// dims that follow the padded axis.
Tensor compared_tap(const TapCase& k, const std::vector<std::string>& axes, const Tensor& at_transformed) {
    if (k.property != Property::padding) return at_transformed;
    return compared_output(tap_spec(axes), k.property, k.c, at_transformed);
}

TapTrace trace(const TapSource& source, const Signature& s, const TapCase& k, Arithmetic dtype, double amplification) {
    TapTrace trace;
    std::vector<Tap> at_x, at_px;
    try {
        at_x = source(k.c.inputs);
        at_px = source(k.transformed);
    } catch (const NoTapsOffered& e) {
        trace.offered = false;
        trace.note = e.what();
        return trace;
    } catch (const std::exception& e) {
        trace.note = std::string("the tap request failed: ") + e.what();
        return trace;
    }
    if (at_x.empty()) {
        trace.note = "the adapter answered no taps";
        return trace;
    }
    const auto probes = probe(source, s, k.c.inputs, at_x, trace.note);
    std::map<std::string, const Tap*> by_name;
    for (const Tap& t : at_px) by_name.emplace(t.name, &t);
    const double magnitude = real_inputs_magnitude(s, k.c.inputs);
    const std::string at = k.property == Property::shift ? "x_c" : k.property == Property::padding ? "pad x" : "P x";
    for (const Tap& t : at_x) {
        const auto other = by_name.find(t.name);
        if (!t.unusable.empty()) {
            trace.taps.push_back(not_comparable(t, t.unusable));
            continue;
        }
        if (other == by_name.end()) {
            trace.taps.push_back(not_comparable(t, "no tap of this name at " + at));
            continue;
        }
        if (!other->second->unusable.empty()) {
            trace.taps.push_back(not_comparable(t, "at " + at + ": " + other->second->unusable));
            continue;
        }
        try {
            const std::vector<std::string> axes = axes_of(t, k.c.lengths, probes);
            trace.taps.push_back(judge_tap(t.name, t.value, compared_tap(k, axes, other->second->value), axes, k.c.perms,
                                           k.lengths, widest_fixed_size(s), magnitude, dtype, amplification, k.positions,
                                           ignored_entries(s, k.property, k.c, tap_spec(axes), t.value.shape)));
        } catch (const std::invalid_argument& e) {
            trace.taps.push_back(not_comparable(t, std::string("which dims follow which axis cannot be told: ") + e.what()));
        }
    }
    for (std::size_t j = 0; j < trace.taps.size() && trace.first_breaking < 0; ++j)
        if (trace.taps[j].verdict == TapVerdict::violated || trace.taps[j].verdict == TapVerdict::non_finite)
            trace.first_breaking = static_cast<int>(j);
    return trace;
}

}  // namespace

TapTrace trace_taps(const TapSource& source, const Signature& s, const Lengths& lengths, const Permutations& perms,
                    const Tensors& inputs, Arithmetic dtype, double amplification) {
    TapCase k{Property::equivariance, SignatureCase{lengths, perms, inputs, 0, std::nullopt}, {}, lengths, 0.0};
    k.transformed = permute_inputs(s, perms, inputs);
    return trace(source, s, k, dtype, amplification);
}

TapTrace trace_taps(const TapSource& source, const Signature& s, const SignatureCounterexample& c, Property p,
                    Arithmetic dtype, double amplification, bool positions_stay) {
    TapCase k{p, SignatureCase{c.lengths, c.perms, c.inputs, c.shift, c.pads}, {}, {}, 0.0};
    k.transformed = transformed_inputs(s, p, k.c);
    if (positions_stay && p == Property::equivariance)
        for (const TensorSpec& t : s.inputs)
            if (t.kind == TensorKind::position) k.transformed[t.name] = c.inputs.at(t.name);
    k.lengths = transformed_lengths(p, k.c);
    k.positions = std::max(largest_position(s, c.inputs), largest_position(s, k.transformed));
    return trace(source, s, k, dtype, amplification);
}

}  // namespace permcheck
