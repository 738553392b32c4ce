// Taps: a counterexample's submodule outputs judged one by one (audit/taps.h, proofs-notes/taps.md).
#include "audit/taps.h"

#include "cases/compare.h"
#include "properties/property.h"
#include "cases/signature_case.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
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

bool all_finite(const std::vector<double>& values) {
    return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

// A tap as an output of these axes.
TensorSpec tap_spec(const std::vector<std::string>& axes, const std::string& name = "tap") {
    TensorSpec spec{name, {}, TensorKind::real, ""};
    for (std::size_t d = 0; d < axes.size(); ++d) spec.dims.push_back(Dim{axes[d], 0});
    return spec;
}

// The items' texts, `separator` between them.
template <class T, class Text> std::string joined(const std::vector<T>& items, const char* separator, Text text) {
    std::string s;
    for (std::size_t k = 0; k < items.size(); ++k) {
        if (k) s += separator;  // appends: GCC 12 at -O3 warns falsely (-Wrestrict) on "..." + a temporary
        s += text(items[k]);
    }
    return s;
}

std::string axes_text(const std::vector<std::string>& axes) {
    const auto axis = [](const std::string& a) { return a.empty() ? std::string("-") : a; };
    return axes.empty() ? "(scalar)" : joined(axes, ",", axis);
}

std::string shape_text(const std::vector<int>& shape) {
    return "[" + joined(shape, ", ", [](int size) { return std::to_string(size); }) + "]";
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

// The rows of a table of `count` taps that a view of at most `most` rows shows: all when they fit, else the
// first few, a window around the first breaking tap and the last few.
std::vector<bool> shown_rows(std::size_t count, int first_breaking, std::size_t most) {
    std::vector<bool> shown(count, count <= most);
    if (count <= most) return shown;
    const std::size_t ends = std::min<std::size_t>(5, most / 4);
    for (std::size_t k = 0; k < ends; ++k) shown[k] = shown[count - 1 - k] = true;
    if (first_breaking >= 0) {
        const std::size_t fb = static_cast<std::size_t>(first_breaking), half = (most - 2 * ends) / 2;
        for (std::size_t k = fb > half ? fb - half : 0; k <= std::min(count - 1, fb + half); ++k) shown[k] = true;
    }
    return shown;
}

// "    ... taps 6 to 99990 not shown: 99983 hold, 2 not comparable" for rows [begin, end).
std::string elided_text(const TapTrace& t, std::size_t begin, std::size_t end) {
    std::map<TapVerdict, std::size_t> counts;
    for (std::size_t k = begin; k < end; ++k) ++counts[t.taps[k].verdict];
    std::string s = "    ... " + (end - begin == 1 ? "tap " + std::to_string(begin + 1)
                                                 : "taps " + std::to_string(begin + 1) + " to " + std::to_string(end)) +
                    " not shown:";
    const char* separator = " ";
    for (const auto& [verdict, n] : counts) {
        s += separator + std::to_string(n) + " " +
             (verdict == TapVerdict::holds ? (n == 1 ? "holds" : "hold") : tap_verdict_name(verdict));
        separator = ", ";
    }
    return s + "\n";
}

}  // namespace

std::string describe(const TapTrace& t, std::size_t most_rows) {
    std::ostringstream s;
    const std::vector<bool> shown = shown_rows(t.taps.size(), t.first_breaking, std::max<std::size_t>(most_rows, 8));
    if (!t.taps.empty()) {
        s << "  taps of the counterexample, in the order the submodules finished (axes: the axis each dim follows):\n";
        std::size_t name_width = 0, shape_width = 0;
        for (std::size_t k = 0; k < t.taps.size(); ++k) {
            if (!shown[k]) continue;
            name_width = std::max(name_width, printable_tap_name(t.taps[k].name).size());
            shape_width = std::max(shape_width, shape_text(t.taps[k].shape).size());
        }
        for (std::size_t k = 0; k < t.taps.size(); ++k) {
            if (!shown[k]) {
                std::size_t end = k;
                while (end < t.taps.size() && !shown[end]) ++end;
                s << elided_text(t, k, end);
                k = end - 1;
                continue;
            }
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
    if (std::count(shown.begin(), shown.end(), false) > 0)
        s << "  (" << std::count(shown.begin(), shown.end(), true) << " of the " << t.taps.size()
          << " taps shown; the report, --report DIR, lists every one)\n";
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
    int widest = std::max(widest_fixed, 1);
    for (std::size_t k = 0; k < axes.size(); ++k)
        if (axes[k].empty()) widest = std::max(widest, at_x.shape[k]);
    const Tensor rhs = permute_output(tap_spec(axes, name), perms, at_x);
    const OutputComparison o = compare_sides(name, at_px, rhs, tolerance_model(dtype, amplification), lengths, widest,
                                             inputs_magnitude, positions, ignored);
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

// The inputs with axis a one element longer (every dim a names, a pairwise input along both). `elsewhere`: the
// appended entries of an index input name the next position of the axis they index (v + 1, modulo its length)
// instead of repeating the last slice's, so that a new edge lands on another node. Settled as a case is
// (settle_case): an edge kept inside its graph, a sorted input kept sorted.
Tensors lengthened(const Signature& s, const Tensors& inputs, const Lengths& lengths, const std::string& a,
                   bool elsewhere = false) {
    Tensors out = inputs;
    for (const TensorSpec& spec : s.inputs) {
        Tensor& t = out.at(spec.name);
        for (std::size_t k = 0; k < spec.dims.size(); ++k) {
            if (spec.dims[k].axis != a) continue;
            const int len = t.shape[k];
            t = append_along(t, k);
            const auto named = lengths.find(spec.index_axis);
            if (!elsewhere || spec.kind != TensorKind::index || named == lengths.end() || named->second < 2) continue;
            const auto [outer, inner] = outer_inner(t.shape, k);
            for (std::size_t o = 0; o < outer; ++o)
                for (std::size_t i = 0; i < inner; ++i) {
                    double& v = t.values[(o * static_cast<std::size_t>(len + 1) + static_cast<std::size_t>(len)) * inner + i];
                    v = std::fmod(v + 1, named->second);
                }
        }
    }
    Case settled;
    settled.lengths = lengths;
    settled.lengths[a] += 1;
    settled.perms = identities(settled.lengths);
    settled.inputs = std::move(out);
    settle_case(s, settled);
    return settled.inputs;
}

// Whether lengthening axis a may also be done elsewhere (an index input along it, naming an axis of 2 or more).
bool lengthens_elsewhere(const Signature& s, const Lengths& lengths, const std::string& a) {
    return std::any_of(s.inputs.begin(), s.inputs.end(), [&](const TensorSpec& t) {
        const auto named = lengths.find(t.index_axis);
        return t.kind == TensorKind::index && named != lengths.end() && named->second >= 2 &&
               std::any_of(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.axis == a; });
    });
}

// Which tap of another answer each tap at x is: the one at its position when both answers name their taps in the
// same order (duplicate names included: two submodules may answer as `block`), else the one of its name when
// that name is unique in both answers; nullopt when there is none, or several that cannot be told apart.
std::vector<std::optional<std::size_t>> match_taps(const std::vector<Tap>& at_x, const std::vector<Tap>& other) {
    std::vector<std::optional<std::size_t>> out(at_x.size());
    const bool same_order = at_x.size() == other.size() &&
                            std::equal(at_x.begin(), at_x.end(), other.begin(),
                                       [](const Tap& a, const Tap& b) { return a.name == b.name; });
    if (same_order) {
        for (std::size_t k = 0; k < at_x.size(); ++k) out[k] = k;
        return out;
    }
    std::map<std::string, int> count_x;
    std::map<std::string, std::vector<std::size_t>> where;
    for (const Tap& t : at_x) ++count_x[t.name];
    for (std::size_t k = 0; k < other.size(); ++k) where[other[k].name].push_back(k);
    for (std::size_t k = 0; k < at_x.size(); ++k) {
        const auto it = where.find(at_x[k].name);
        if (it != where.end() && it->second.size() == 1 && count_x[at_x[k].name] == 1) out[k] = it->second.front();
    }
    return out;
}

// Why a tap at x has no match in `other` (match_taps): absent there, or its name shared by several taps.
std::string unmatched_reason(const std::vector<Tap>& at_x, const std::vector<Tap>& other, const std::string& name,
                             const std::string& at) {
    const auto named = [&name](const Tap& t) { return t.name == name; };
    const auto here = std::count_if(at_x.begin(), at_x.end(), named);
    const auto there = std::count_if(other.begin(), other.end(), named);
    if (there == 0) return "no tap of this name at " + at;
    return std::to_string(here) + (here == 1 ? " tap" : " taps") + " at x and " + std::to_string(there) + " at " + at +
           " have this name, and the two answers list their taps in different orders: which is which cannot be told";
}

// Per axis, the taps' shapes at x with that axis one longer (nullopt where the probe failed, said in `note`, or
// where a tap at x has no match in it: match_taps); no probe at all when every tap declares its dims.
using ProbeShapes = std::vector<std::optional<std::vector<int>>>;  // one per tap at x
// A dim that grows with an axis only as the values happen to fall (the largest in-degree of a graph whose edges
// all point at one node grows with each edge appended there) is told apart by a second probe whose appended index
// entries name other positions: a dim follows the axis only when it grows in both.
std::map<std::string, std::optional<ProbeShapes>> probe(const TapSource& source, const Signature& s,
                                                        const Tensors& inputs, const Lengths& lengths,
                                                        const std::vector<Tap>& taps, std::string& note) {
    std::map<std::string, std::optional<ProbeShapes>> out;
    if (std::all_of(taps.begin(), taps.end(), [](const Tap& t) { return t.dims.has_value() || !t.unusable.empty(); }))
        return out;
    const auto shapes_at = [&](const Tensors& asked) {
        const std::vector<Tap> longer = source(asked);
        const std::vector<std::optional<std::size_t>> match = match_taps(taps, longer);
        ProbeShapes shapes(taps.size());
        for (std::size_t k = 0; k < taps.size(); ++k)
            if (match[k]) shapes[k] = longer[*match[k]].value.shape;
        return shapes;
    };
    for (const Axis& a : s.axes) {
        try {
            ProbeShapes shapes = shapes_at(lengthened(s, inputs, lengths, a.name));
            if (lengthens_elsewhere(s, lengths, a.name)) {
                const ProbeShapes other = shapes_at(lengthened(s, inputs, lengths, a.name, /*elsewhere=*/true));
                for (std::size_t k = 0; k < taps.size(); ++k) {
                    if (!shapes[k] || !other[k] || shapes[k]->size() != other[k]->size()) continue;
                    for (std::size_t d = 0; d < shapes[k]->size(); ++d)
                        if ((*shapes[k])[d] != (*other[k])[d]) (*shapes[k])[d] = taps[k].value.shape[d];  // by chance
                }
            }
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

// The axes of tap k at x (t).
std::vector<std::string> axes_of(const Tap& t, std::size_t k, const Lengths& lengths,
                                 const std::map<std::string, std::optional<ProbeShapes>>& probes) {
    if (t.dims) return declared_axes(t, lengths);
    std::map<std::string, std::optional<std::vector<int>>> shapes;
    for (const auto& [axis, probe] : probes) shapes[axis] = probe ? (*probe)[k] : std::nullopt;
    return tap_axes(t.value.shape, lengths, shapes);
}

TapComparison not_comparable(const Tap& t, const std::string& why) {
    return {t.name, t.value.shape, std::vector<std::string>(t.value.shape.size()), TapVerdict::not_comparable,
            std::numeric_limits<double>::infinity(), 0.0, why};
}

// What the taps at x are compared with: the taps at the transformed inputs (P x, x_c or pad x), a tap there taken as
// `compared` says (a padded tap at the real positions), under the permutations `perms` (identities for shift and
// padding), with the tolerance at `lengths` (the padded case's) and of the largest position id.
struct TapCase {
    const PropertyRules& property;
    Case c;
    Tensors transformed;
    Lengths lengths;
    double positions = 0.0;
};

TapTrace trace(const TapSource& source, const Signature& s, const TapCase& k, Arithmetic dtype, double amplification) {
    TapTrace trace;
    std::vector<Tap> at_x, at_px;
    try {
        at_x = source(with_free_lengths(s, k.c.inputs, k.c.lengths));  // a free axis's length travels with them
        at_px = source(with_free_lengths(s, k.transformed, k.lengths));
    } catch (const NoTapsOffered& e) {
        trace.offered = false;
        trace.note = e.what();
        return trace;
    } catch (const NoTapsAnswered& e) {
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
    const auto probes = probe(source, s, k.c.inputs, k.c.lengths, at_x, trace.note);
    const std::vector<std::optional<std::size_t>> match = match_taps(at_x, at_px);
    const double magnitude = real_inputs_magnitude(s, k.c.inputs);
    // "P x", "x_c", "pad x": the argument of the transformed side's name.
    const std::string lhs = k.property.sides(true).lhs, at = lhs.substr(2, lhs.find(')') - 2);
    for (std::size_t j = 0; j < at_x.size(); ++j) {
        const Tap& t = at_x[j];
        const Tap* other = match[j] ? &at_px[*match[j]] : nullptr;
        const std::string why = !t.unusable.empty() ? t.unusable
                                : !other            ? unmatched_reason(at_x, at_px, t.name, at)
                                : other->unusable.empty() ? "" : "at " + at + ": " + other->unusable;
        if (!other || !why.empty()) {
            trace.taps.push_back(not_comparable(t, why));
            continue;
        }
        try {
            // The tap at the transformed inputs as it is compared with T(x): at the real positions of a padded case
            // along the dims that follow the padded axis. The tap at x as the property expects it: moved by the
            // permutations (judge_tap), or, for a property that moves nothing, what it makes of it (a causal
            // case's prefix).
            const std::vector<std::string> axes = axes_of(t, j, k.c.lengths, probes);
            const TensorSpec spec = tap_spec(axes);
            const Tensor at_x = k.property.permutes() ? t.value : k.property.expected(spec, k.c, t.value);
            trace.taps.push_back(judge_tap(t.name, at_x, k.property.compared(spec, k.c, other->value), axes, k.c.perms,
                                           k.lengths, widest_fixed_size(s), magnitude, dtype, amplification, k.positions,
                                           k.property.ignored(s, k.c, spec, at_x.shape)));
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
    TapCase k{rules_of(Property{"equivariance"}), Case{lengths, perms, inputs}, {}, lengths, 0.0};
    k.transformed = permute_inputs(s, perms, inputs);
    return trace(source, s, k, dtype, amplification);
}

TapTrace trace_taps(const TapSource& source, const Signature& s, const Counterexample& c, Property p,
                    Arithmetic dtype, double amplification, const std::map<std::string, std::string>& settings) {
    TapCase k{rules_of(p), c, {}, {}, 0.0};
    if (k.property.chunks_calls()) {  // a chunked request's taps would be the last chunk's alone
        TapTrace none;
        none.note = "taps are not traced for a layer decoded in chunks";
        return none;
    }
    const PropertyArgs args = k.property.completed_args(s, PropertyArgs{.axis = "", .pads = PadPlacement::any,
                                                                 .positions_stay = false, .white_box = false,
                                                                 .settings = settings});
    k.transformed = k.property.transformed(s, args, k.c);
    k.lengths = k.property.transformed_lengths(k.c);
    k.positions = std::max(largest_position(s, c.inputs), largest_position(s, k.transformed));
    return trace(source, s, k, dtype, amplification);
}

}  // namespace permcheck
