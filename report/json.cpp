// The record as JSON, schema permcheck.report/1 (docs/reports.md, "report.json"): written here, and read back with every field
// checked, since a report is untrusted input to `permcheck replay` and the failure database.
#include "report/report.h"

#include "report/json_fields.h"
#include "properties/property.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace permcheck::report {

namespace {

// ---- tensors and signatures ------------------------------------------------------------------------------
// A tensor as nested arrays in the order of its dims (a scalar as a bare number), row-major.
json nested(const std::vector<int>& shape, const std::vector<double>& values, std::size_t dim, std::size_t& at) {
    if (dim == shape.size()) return at < values.size() ? number(values[at++]) : json(nullptr);
    json a = json::array();
    for (int k = 0; k < shape[dim]; ++k) a.push_back(nested(shape, values, dim + 1, at));
    return a;
}
json nested(const Tensor& t) {
    std::size_t at = 0;
    return nested(t.shape, t.values, 0, at);
}

// An input's values as its kind is sent: integers for the integer kinds (ids, positions, index, mask=keep).
json nested_input(const Tensor& t, const Signature* s, const std::string& name) {
    json j = nested(t);
    const auto spec = s ? std::find_if(s->inputs.begin(), s->inputs.end(), [&](const TensorSpec& x) { return x.name == name; })
                        : std::vector<TensorSpec>::const_iterator{};
    if (!s || spec == s->inputs.end() || !is_integer(spec->kind)) return j;
    const auto as_int = [](auto& self, json& v) -> void {
        if (v.is_array())
            for (json& e : v) self(self, e);
        else if (v.is_number() && std::isfinite(v.get<double>()))
            v = static_cast<long long>(v.get<double>());
    };
    as_int(as_int, j);
    return j;
}

// Tensors by input name, each as nested_input writes it.
json inputs_json(const Tensors& tensors, const Signature* s) {
    json j = json::object();
    for (const auto& [name, t] : tensors) j[name] = nested_input(t, s, name);
    return j;
}

// The shape of nested arrays, read along their first elements (an empty array ends it).
std::vector<int> inferred_shape(const json& j) {
    std::vector<int> shape;
    for (const json* v = &j; v->is_array(); v = &(*v)[0]) {
        shape.push_back(static_cast<int>(std::min<std::size_t>(v->size(), 1u << 30)));
        if (v->empty()) break;
    }
    return shape;
}

void read_nested(const json& j, const std::vector<int>& shape, std::size_t dim, const std::string& field,
                 std::vector<double>& values) {
    if (dim == shape.size()) {
        values.push_back(number_from(j, field));
        return;
    }
    if (!j.is_array() || j.size() != static_cast<std::size_t>(std::max(shape[dim], 0)))
        throw std::invalid_argument("field '" + field + "' must be an array of " + std::to_string(shape[dim]) +
                                    " entries (dim " + std::to_string(dim) + " of its shape)");
    for (std::size_t k = 0; k < j.size(); ++k) read_nested(j[k], shape, dim + 1, field + "[" + std::to_string(k) + "]", values);
}

// Nested arrays of the given shape, or (without one) of the shape they show.
Tensor tensor_from(const json& j, const std::string& field, std::optional<std::vector<int>> shape) {
    Tensor t;
    t.shape = shape ? *shape : inferred_shape(j);
    read_nested(j, t.shape, 0, field, t.values);
    return t;
}

// The signature's inputs of `j` (at `at`, "counterexample.inputs."), each in its shape at `lengths`: every input, or
// (`all` false) those `j` holds.
Tensors inputs_from(const json& j, const Signature& s, const Lengths& lengths, const std::string& at, bool all = true) {
    Tensors out;
    for (const TensorSpec& t : s.inputs)
        if (all || j.contains(t.name))
            out[t.name] = tensor_from(required(j, t.name.c_str(), at), at + t.name, shape_of(t, lengths));
    return out;
}

// The signature as its flags' texts, each read by its parser, the whole validated; or the --dim shorthand's
// (`one_tensor` set).
Signature signature_from(const json& j, bool& one_tensor) {
    object_at(j, "signature");
    one_tensor = j.contains("one_tensor");
    if (one_tensor) return one_tensor_from(j["one_tensor"]);
    Signature s;
    const auto texts = [&j](const char* field, auto parse, auto& into) {
        const json& list = required(j, field, "signature.");
        if (!list.is_array()) throw std::invalid_argument("field 'signature." + std::string(field) + "' must be an array");
        for (const json& t : list) {
            if (!t.is_string())
                throw std::invalid_argument("field 'signature." + std::string(field) + "' must hold strings, got " +
                                            std::string(t.type_name()));
            try {
                into.push_back(parse(t.get<std::string>()));
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument("field 'signature." + std::string(field) + "': " + e.what());
            }
        }
    };
    texts("axes", parse_axis, s.axes);
    texts("inputs", parse_input, s.inputs);
    texts("outputs", parse_output, s.outputs);
    try {
        validate(s);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("field 'signature': " + std::string(e.what()));
    }
    return s;
}

json comparison_json(const OutputComparison& o) {
    json j{{"layer_of_permuted", nested(o.layer_of_permuted)},
           {"permuted_layer", nested(o.permuted_layer)},
           {"max_abs_diff", number(o.max_abs_diff)},
           {"where", o.where},
           {"tolerance", number(o.tolerance)},
           {"holds", o.holds},
           {"shape_mismatch", o.shape_mismatch}};
    if (!o.sides.empty())
        j["repro"] = {{"compared_from", o.compared_from}, {"expected_from", o.expected_from}, {"ignored", o.ignored_at},
                      {"sides", o.sides}, {"shape", o.layer_of_permuted.shape}};
    return j;
}

// The property's part entry by entry: a number, an axis name, a list of positions, or a set of tensors named by
// the inputs they stand for (in their kinds, as the inputs are written).
json part_json(const CasePart& part, const Signature* s) {
    json j = json::object();
    for (const auto& [key, v] : part.numbers) j[key] = v;
    for (const auto& [key, v] : part.names) j[key] = v;
    for (const auto& [key, v] : part.lists) j[key] = v;
    for (const auto& [key, set] : part.tensors) j[key] = inputs_json(set, s);
    return j;
}

// The finding by name: lengths, permutations (one-line and cycles), inputs, every output's comparison, the case's
// place, the property's part; a reference layer's weight seed and exact confirmation (`white_box`).
json counterexample_json(const Counterexample& c, const Signature* s, bool white_box) {
    json perms = json::object(), cycles = json::object(), outputs = json::object();
    for (const auto& [axis, p] : c.perms) {
        perms[axis] = p.one_line();
        cycles[axis] = p.cycles();
    }
    for (const OutputComparison& o : c.outputs) outputs[o.name] = comparison_json(o);
    json j{{"lengths", c.lengths},         {"permutations", perms},   {"cycles", cycles},
           {"axis_at_fault", c.axis_at_fault}, {"inputs", inputs_json(c.inputs, s)},    {"outputs", outputs},
           {"case_index", c.case_index},   {"shrink_steps", c.shrink_steps}, {"black_box", !white_box}};
    if (c.shrink_cut_short > 0) j["shrink_cut_short_seconds"] = c.shrink_cut_short;
    if (!c.part.empty()) j["part"] = part_json(c.part, s);
    j["kind"] = finding_kind_name(c.kind);
    if (const PriorRequest* before = c.asked_before())
        j["asked_before"] = {{"lengths", before->lengths}, {"inputs", inputs_json(before->inputs, s)}};
    if (!c.raised().empty()) j["raised"] = c.raised();
    if (const auto* e = c.as<found::Erred>()) {
        j["erred"] = true;
        for (auto [key, value] : {std::pair{"erred_side", &e->side}, std::pair{"erred_type", &e->type},
                                  std::pair{"erred_where", &e->where}})
            if (!value->empty()) j[key] = *value;
        if (e->by_reference) j["erred_by_reference"] = true;
    }
    if (c.raised_by_reference()) j["raised_by_reference"] = true;
    if (!c.transformed.empty())
        j["transformed"] = {{"lengths", c.transformed_lengths}, {"inputs", inputs_json(c.transformed, s)}};
    if (!c.batches().empty()) {
        json batches = json::array();
        for (const BatchedRequest& b : c.batches()) {
            json items = json::array();
            for (const Tensors& item : b.items) items.push_back(inputs_json(item, s));
            batches.push_back({{"side", b.transformed_side ? "transformed" : "x"}, {"by_reference", b.by_reference},
                               {"stacked", b.stacked}, {"lengths", b.lengths}, {"at", b.at}, {"items", items}});
        }
        j["batches"] = std::move(batches);
    }
    if (white_box) {
        j["weight_seed"] = c.weight_seed;
        j["confirmed_exactly"] = c.confirmed_exactly;
    }
    return j;
}

// The members of `j` (counterexample.part, or an older report's pads or cuts object) into `part`: an integer (or a
// yes/no, as 1 or 0) a number, a string an axis name, an array a list of positions, an object a set of tensors by
// input name, each in the shape its nested arrays give (the property puts them in its own shapes).
void read_part(const json& j, const std::string& at, CasePart& part) {
    for (const auto& [key, v] : object_at(j, at).items()) {
        const std::string field = at + "." + key;
        if (v.is_number_integer() || v.is_boolean()) part.numbers[key] = v.is_boolean() ? long{v.get<bool>()} : v.get<long>();
        else if (v.is_string()) part.names[key] = v.get<std::string>();
        else if (v.is_array()) part.lists[key] = get_as<std::vector<int>>(j, key.c_str(), at + ".");
        else if (v.is_object())
            for (const auto& [name, t] : v.items()) part.tensors[key][name] = tensor_from(t, field + "." + name, std::nullopt);
        else throw std::invalid_argument("field '" + field + "' must be an integer, a string, an array or an object");
    }
}

// counterexample.part; an older report's shift, pads and cuts, which held the same entries.
CasePart part_from(const json& j) {
    CasePart part;
    for (const char* key : {"part", "pads", "cuts"})
        if (j.contains(key) && !j[key].is_null()) read_part(j[key], std::string("counterexample.") + key, part);
    if (const long shift = get_or<long>(j, "shift", 0, "counterexample."); shift != 0) part.numbers["shift"] = shift;
    return part;
}

std::map<std::string, int> lengths_from(const json& j, const Signature& s);

// A history-dependent finding's earlier request: its lengths and inputs, in the shapes they give.
std::optional<PriorRequest> asked_before_from(const json& j, const Signature& s) {
    const std::string at = "counterexample.asked_before.";
    if (!j.contains("asked_before") || j["asked_before"].is_null()) return std::nullopt;
    const json& a = object_at(j["asked_before"], "counterexample.asked_before");
    PriorRequest r;
    r.lengths = lengths_from(a, s);
    r.inputs = inputs_from(required(a, "inputs", at), s, r.lengths, at + "inputs.");
    return r;
}

std::map<std::string, int> lengths_from(const json& j, const Signature& s) {
    const std::string at = "counterexample.";
    const json& lengths = object_at(required(j, "lengths", at), "counterexample.lengths");
    std::map<std::string, int> out;
    for (const Axis& a : s.axes) {
        const int n = get_as<int>(lengths, a.name.c_str(), at + "lengths.");
        if (n < 0 || n > (1 << 20))
            throw std::invalid_argument("field 'counterexample.lengths." + a.name + "' must be in [0, 2^20], got " +
                                        std::to_string(n));
        out[a.name] = n;
    }
    return out;
}

Permutations permutations_from(const json& j, const Signature& s, const Lengths& lengths) {
    const std::string at = "counterexample.permutations.";
    const json& perms = object_at(required(j, "permutations", "counterexample."), "counterexample.permutations");
    Permutations out;
    for (const Axis& a : s.axes) {
        const auto one_line = get_as<std::vector<int>>(perms, a.name.c_str(), at);
        try {
            out[a.name] = Permutation(one_line);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("field '" + at + a.name + "': " + e.what());
        }
        if (out[a.name].size() != lengths.at(a.name))
            throw std::invalid_argument("field '" + at + a.name + "' has " + std::to_string(out[a.name].size()) +
                                        " entries but axis " + a.name + " has length " +
                                        std::to_string(lengths.at(a.name)));
    }
    return out;
}

// An output's comparison at `at` ("counterexample.outputs.y."): both sides of `shape` unless they differ (without one,
// of the shape they show). The case closest to its tolerance of a run that held (`closest`): both sides of one shape,
// the tolerance required, holding unless it says otherwise.
OutputComparison comparison_from(const json& j, const std::string& name, const std::string& at,
                                 std::optional<std::vector<int>> shape, bool closest = false) {
    object_at(j, at.substr(0, at.size() - 1));
    OutputComparison o;
    o.name = name;
    o.shape_mismatch = get_or<bool>(j, "shape_mismatch", false, at);
    if (o.shape_mismatch) shape.reset();
    o.layer_of_permuted = tensor_from(required(j, "layer_of_permuted", at), at + "layer_of_permuted", shape);
    if (closest) shape = o.layer_of_permuted.shape;
    o.permuted_layer = tensor_from(required(j, "permuted_layer", at), at + "permuted_layer", shape);
    o.max_abs_diff = number_at(j, "max_abs_diff", at);
    o.tolerance = closest || j.contains("tolerance") ? number_at(j, "tolerance", at) : 0.0;
    o.where = get_or<std::vector<int>>(j, "where", {}, at);
    o.holds = get_or<bool>(j, "holds", closest, at);
    if (j.contains("repro")) {
        const json& plan = object_at(j["repro"], at + "repro");
        const std::string in = at + "repro.";

        o.compared_from = get_as<std::vector<int>>(plan, "compared_from", in);
        o.expected_from = get_as<std::vector<int>>(plan, "expected_from", in);
        o.ignored_at = get_or<std::vector<int>>(plan, "ignored", {}, in);
        o.sides = get_as<std::vector<std::string>>(plan, "sides", in);
        if (o.sides.size() != 2) throw std::invalid_argument("field '" + in + "sides' must name the two sides");
    }
    return o;
}

// Refuses `lengths` (read at `field`) unless it holds a length of every axis of s.
void every_axis(const Lengths& lengths, const Signature& s, const std::string& field) {
    for (const Axis& a : s.axes)
        if (!lengths.count(a.name) || lengths.at(a.name) < 0)
            throw std::invalid_argument("field '" + field + "' has no length of the axis " + a.name);
}

// counterexample.transformed (j the counterexample): the inputs of the transformed side, at their own lengths (an old report has none).
void transformed_from(const json& j, const Signature& s, Counterexample& c) {
    const std::string at = "counterexample.";
    const json& t = j["transformed"];
    c.transformed_lengths = get_or<Lengths>(t, "lengths", {}, at + "transformed.");
    every_axis(c.transformed_lengths, s, "counterexample.transformed.lengths");
    c.transformed = inputs_from(required(t, "inputs", at + "transformed."), s, c.transformed_lengths,
                                at + "transformed.inputs.", false);
}

// counterexample.batches (j the counterexample): the batched requests a batch-dependent case was answered in.
std::vector<BatchedRequest> batches_from(const json& j, const Signature& s) {
    const std::string at = "counterexample.";
    std::vector<BatchedRequest> out;
    const json& batches = j["batches"];
    if (!batches.is_array()) throw std::invalid_argument("field 'counterexample.batches' must be an array");
    for (std::size_t k = 0; k < batches.size(); ++k) {
        const std::string in = at + "batches[" + std::to_string(k) + "].";
        const json& one = object_at(batches[k], in.substr(0, in.size() - 1));
        BatchedRequest b;
        const std::string side = get_as<std::string>(one, "side", in);
        if (side != "x" && side != "transformed")
            throw std::invalid_argument("field '" + in + "side' must be \"x\" or \"transformed\"");
        b.transformed_side = side == "transformed";
        b.by_reference = get_or<bool>(one, "by_reference", false, in);
        b.stacked = get_or<bool>(one, "stacked", false, in);
        b.lengths = get_as<Lengths>(one, "lengths", in);
        every_axis(b.lengths, s, in + "lengths");
        const json& items = required(one, "items", in);
        if (!items.is_array() || items.empty())
            throw std::invalid_argument("field '" + in + "items' must be an array of the batch's items");
        for (std::size_t i = 0; i < items.size(); ++i) {
            const std::string item = in + "items[" + std::to_string(i) + "]";
            b.items.push_back(inputs_from(object_at(items[i], item), s, b.lengths, item + "."));
        }
        b.at = get_as<std::size_t>(one, "at", in);
        if (b.at >= b.items.size())
            throw std::invalid_argument("field '" + in + "at' must be the place of an item of the batch");
        out.push_back(std::move(b));
    }
    return out;
}

// The finding's kind: counterexample.kind, or, in a report written before it was recorded, what the verdict and the
// fields say (a non-finite entry's place and a batch's place in the run were not recorded: the report's
// details.*.finding says them).
FindingKind kind_from(const json& j, const Signature& s, Verdict v) {
    const std::string at = "counterexample.";
    const std::string raised = j.contains("raised") && !j["raised"].is_null() ? get_as<std::string>(j, "raised", at) : "";
    const bool by_reference = get_or<bool>(j, "raised_by_reference", false, at);
    const std::string kind = j.contains("kind") ? get_as<std::string>(j, "kind", at)
                             : get_or<bool>(j, "erred", false, at) ? "erred"
                             : v == Verdict::violated && !raised.empty() ? "raised"
                             : v == Verdict::error || v == Verdict::interrupted || v == Verdict::holds ? "violated"
                                                                                                       : verdict_name(v);
    if (kind == "raised") return found::Raised{raised, by_reference, false};
    if (kind == "non-finite") return found::NonFinite{};
    if (kind == "nondeterministic") return found::Nondeterministic{"", raised, by_reference, false, ""};
    if (kind == "history-dependent") return found::HistoryDependent{asked_before_from(j, s)};
    if (kind == "batch-dependent")
        return found::BatchDependent{.batches = j.contains("batches") ? batches_from(j, s) : std::vector<BatchedRequest>{}};
    if (kind == "erred")
        return found::Erred{get_or<std::string>(j, "erred_side", "", at), get_or<bool>(j, "erred_by_reference", false, at),
                            get_or<std::string>(j, "erred_type", "", at), get_or<std::string>(j, "erred_where", "", at)};
    if (kind == "violated") return found::Violated{};
    throw std::invalid_argument("field 'counterexample.kind' must be one of violated, raised, non-finite, "
                                "nondeterministic, history-dependent, batch-dependent or erred, got '" + kind + "'");
}

Counterexample counterexample_from(const json& j, const Signature& s, Verdict v, const PropertyRules& rules) {
    const std::string at = "counterexample.";
    Counterexample c;  // j is an object: read_counterexample, the one caller, has checked
    c.lengths = lengths_from(j, s);
    c.perms = permutations_from(j, s, c.lengths);
    const json& inputs = required(j, "inputs", at);
    const json& outputs = required(j, "outputs", at);
    if (!inputs.is_object() || !outputs.is_object())
        throw std::invalid_argument("fields 'counterexample.inputs' and 'counterexample.outputs' must be objects");
    c.inputs = inputs_from(inputs, s, c.lengths, at + "inputs.");
    c.part = part_from(j);
    c.kind = kind_from(j, s, v);
    if (j.contains("transformed")) transformed_from(j, s, c);
    Lengths compared = rules.compared_lengths(c);  // a causal case compares its prefix, a packing case one sequence
    for (auto& [axis, n] : compared)
        if (n < 0 || n > c.lengths.at(axis)) n = c.lengths.at(axis);  // a part that names no such span
    for (const TensorSpec& t : s.outputs)
        if (outputs.contains(t.name))
            c.outputs.push_back(
                comparison_from(outputs[t.name], t.name, at + "outputs." + t.name + ".", shape_of(t, compared)));
    c.axis_at_fault = get_or<std::string>(j, "axis_at_fault", "", at);
    c.case_index = get_or<int>(j, "case_index", -1, at);
    c.shrink_steps = get_or<int>(j, "shrink_steps", 0, at);
    c.shrink_cut_short = get_or<double>(j, "shrink_cut_short_seconds", 0.0, at);
    c.weight_seed = get_or<std::uint64_t>(j, "weight_seed", 0, at);
    c.confirmed_exactly = get_or<bool>(j, "confirmed_exactly", false, at);
    return c;
}

// The weight draw's version, 0 when the report has none. One this permcheck cannot draw is refused: the
// counterexample's layer would get other weights than it was found with, and the replay would mean nothing.
int weights_version(const json& j) {
    const int v = get_or<int>(j, "weights", 0);
    if (j.contains("weights") && (v < kOldestWeightsVersion || v > kWeightsVersion))
        throw std::invalid_argument("field 'weights': version " + std::to_string(v) + " of the weight draw is " +
                                    "unknown to this permcheck, which draws versions " +
                                    std::to_string(kOldestWeightsVersion) + " to " + std::to_string(kWeightsVersion) +
                                    "; a newer permcheck made this report, replay it with that one");
    return v;
}

}  // namespace

std::map<std::string, std::string> recorded_settings(const json& details) {
    std::map<std::string, std::string> out = get_or<std::map<std::string, std::string>>(details, "settings", {});
    if (get_or<bool>(details, "keep_positions", false)) out.emplace("keep_positions", "true");
    if (const std::string along = get_or<std::string>(details, "along", ""); !along.empty()) out.emplace("along", along);
    return out;
}

// ---- JSON ------------------------------------------------------------------------------------------------
json signature_json(const Signature& s) {
    json axes = json::array(), inputs = json::array(), outputs = json::array();
    for (const Axis& a : s.axes) axes.push_back(format(a));
    for (const TensorSpec& t : s.inputs) inputs.push_back(format_input(t));
    for (const TensorSpec& t : s.outputs) outputs.push_back(format_output(t));
    return json{{"axes", axes}, {"inputs", inputs}, {"outputs", outputs}};
}

// The taps: each with its name, shape, axes (one per dim, null for none), verdict, largest difference, tolerance
// and note; the first breaking tap by name (null when every tap holds).
void add_taps(json& j, const TapTrace& t) {
    json taps = json::array();
    for (const TapComparison& c : t.taps) {
        json axes = json::array();
        for (const std::string& a : c.axes) axes.push_back(a.empty() ? json(nullptr) : json(a));
        taps.push_back({{"name", c.name}, {"shape", c.shape}, {"axes", axes}, {"verdict", tap_verdict_name(c.verdict)},
                        {"max_difference", number(c.max_abs_diff)}, {"tolerance", number(c.tolerance)}, {"note", c.note}});
    }
    j["taps"] = taps;
    j["first_breaking_tap"] = t.first_breaking < 0 ? json(nullptr) : json(t.taps[static_cast<std::size_t>(t.first_breaking)].name);
    j["first_breaking_tap_index"] = t.first_breaking;
    j["taps_note"] = t.note;
}

TapVerdict tap_verdict_from(const std::string& name, const std::string& at) {
    for (TapVerdict v : {TapVerdict::holds, TapVerdict::violated, TapVerdict::not_comparable, TapVerdict::non_finite})
        if (name == tap_verdict_name(v)) return v;
    throw std::invalid_argument("field '" + at + "verdict' is '" + name +
                                "'; expected holds, violated, not comparable or non-finite");
}

TapTrace taps_from(const json& j) {
    TapTrace t;
    if (!j["taps"].is_array()) throw std::invalid_argument("field 'taps' must be an array");
    for (std::size_t k = 0; k < j["taps"].size(); ++k) {
        const json& v = j["taps"][k];
        const std::string at = "taps[" + std::to_string(k) + "].";
        TapComparison c;
        c.name = get_as<std::string>(v, "name", at);
        c.shape = get_as<std::vector<int>>(v, "shape", at);
        for (const json& a : required(v, "axes", at)) c.axes.push_back(a.is_string() ? a.get<std::string>() : "");
        c.verdict = tap_verdict_from(get_as<std::string>(v, "verdict", at), at);
        c.max_abs_diff = number_at(v, "max_difference", at);
        c.tolerance = number_at(v, "tolerance", at);
        c.note = get_or<std::string>(v, "note", "", at);
        t.taps.push_back(std::move(c));
    }
    t.first_breaking = get_or<int>(j, "first_breaking_tap_index", -1);
    if (t.first_breaking < -1 || t.first_breaking >= static_cast<int>(t.taps.size()))
        throw std::invalid_argument("field 'first_breaking_tap_index' is outside the taps");
    t.note = get_or<std::string>(j, "taps_note", "");
    return t;
}

// The numbers of checked.outputs[k] and of checked.tolerance, by field, in the order they are read.
constexpr std::pair<const char*, double OutputCheck::*> kOutputCheckNumbers[] = {
    {"max_abs_diff", &OutputCheck::max_abs_diff},
    {"tolerance_at_max", &OutputCheck::tolerance_at_max},
    {"largest_fraction_of_tolerance", &OutputCheck::largest_fraction},
    {"min_tolerance", &OutputCheck::min_tolerance},
    {"max_tolerance", &OutputCheck::max_tolerance}};
constexpr std::pair<const char*, double ToleranceModel::*> kToleranceNumbers[] = {
    {"unit_roundoff", &ToleranceModel::unit_roundoff},
    {"safety", &ToleranceModel::safety},
    {"amplification", &ToleranceModel::amplification},
    {"lambda", &ToleranceModel::lambda}};

// What an audit checked: each output's largest difference and tolerances, each axis's lengths, the tolerance model
// (every number at full precision; the views show six digits).
json checked_json(const Checked& c) {
    json outputs = json::array();
    for (const OutputCheck& o : c.outputs) {
        json& out = outputs.emplace_back(json{{"name", o.name}, {"cases", o.cases}});
        for (const auto& [key, m] : kOutputCheckNumbers) out[key] = number(o.*m);
        if (o.closest_case < 0) continue;
        json& closest = out["closest"] = comparison_json(o.closest);
        closest["case_index"] = o.closest_case;
        closest["lengths"] = o.closest_lengths;
    }
    json tolerance{{"widest", c.widest}};
    for (const auto& [key, m] : kToleranceNumbers) tolerance[key] = number(c.tolerance.*m);
    return json{{"outputs", outputs}, {"lengths", c.lengths}, {"tolerance", tolerance}};
}

// One output of "checked.outputs", at `here` ("checked.outputs[k].").
OutputCheck output_check_from(const json& o, const std::string& here) {
    object_at(o, here.substr(0, here.size() - 1));
    OutputCheck out;
    out.name = get_as<std::string>(o, "name", here);
    out.cases = get_as<int>(o, "cases", here);
    if (out.cases < 0) throw std::invalid_argument("field '" + here + "cases' must not be negative");
    for (const auto& [key, m] : kOutputCheckNumbers) out.*m = number_at(o, key, here);
    if (!o.contains("closest") || o["closest"].is_null()) return out;
    // The case closest to its tolerance, of a run that held.
    const json& k = object_at(o["closest"], here + "closest");
    const std::string at_k = here + "closest.";
    out.closest_case = get_as<int>(k, "case_index", at_k);
    if (out.closest_case < 0) throw std::invalid_argument("field '" + at_k + "case_index' must not be negative");
    const json& lengths = required(k, "lengths", at_k);
    if (!lengths.is_object()) throw std::invalid_argument("field '" + at_k + "lengths' must be an object of axes");
    for (auto it = lengths.begin(); it != lengths.end(); ++it) {
        const int n = get_as<int>(lengths, it.key().c_str(), at_k + "lengths.");
        if (n < 0) throw std::invalid_argument("field '" + at_k + "lengths." + it.key() + "' must not be negative");
        out.closest_lengths[it.key()] = n;
    }
    out.closest = comparison_from(k, out.name, at_k, std::nullopt, true);
    return out;
}

Checked checked_from(const json& j) {
    const std::string at = "checked.";
    if (!j.is_object()) throw std::invalid_argument("field 'checked' must be an object or null");
    Checked c;
    const json& outputs = required(j, "outputs", at);
    if (!outputs.is_array()) throw std::invalid_argument("field 'checked.outputs' must be an array");
    for (std::size_t k = 0; k < outputs.size(); ++k)
        c.outputs.push_back(output_check_from(outputs[k], at + "outputs[" + std::to_string(k) + "]."));
    const json& lengths = required(j, "lengths", at);
    if (!lengths.is_object()) throw std::invalid_argument("field 'checked.lengths' must be an object of axes");
    for (auto it = lengths.begin(); it != lengths.end(); ++it) {
        const std::string& axis = it.key();
        c.lengths[axis] = get_as<std::vector<int>>(lengths, axis.c_str(), at + "lengths.");
        for (int n : c.lengths[axis])
            if (n < 0) throw std::invalid_argument("field 'checked.lengths." + axis + "' holds a negative length");
    }
    const json& t = object_at(required(j, "tolerance", at), "checked.tolerance");
    for (const auto& [key, m] : kToleranceNumbers) c.tolerance.*m = number_at(t, key, at + "tolerance.");
    c.widest = get_as<int>(t, "widest", at + "tolerance.");

    return c;
}

json to_json(const Record& r) {
    json j = json::object();
    j["schema"] = kSchema;
    j["verdict"] = verdict_name(r.verdict);
    j["layer"] = r.layer;
    j["property"] = property_name(r.property);
    j["dtype"] = arithmetic_name(r.dtype);
    j["cases"] = r.cases;
    j["seed"] = r.seed;
    j["counterexample"] =
        r.counterexample ? counterexample_json(*r.counterexample, r.signature ? &*r.signature : nullptr, r.weights > 0)
                         : json(nullptr);
    if (r.signature) j["signature"] = r.one_tensor ? json{{"one_tensor", one_tensor_json(*r.signature)}} : signature_json(*r.signature);
    j["error"] = r.error;
    j["replay"] = r.replay;
    if (!r.repro.empty()) j["repro"] = r.repro;
    j["details"] = r.details.is_null() ? json::object() : r.details;
    if (r.weights > 0) j["weights"] = r.weights;
    if (r.case_draw > 0) j["case_draw"] = r.case_draw;
    if (r.taps) add_taps(j, *r.taps);
    if (r.checked) j["checked"] = checked_json(*r.checked);
    return j;
}

namespace {
void read_counterexample(const json& c, Record& r) {
    if (!c.is_object()) throw std::invalid_argument("field 'counterexample' must be an object or null");
    const bool white_box = !get_or<bool>(c, "black_box", false, "counterexample.") || table_row_without_weights(c, r);
    if (c.contains("x")) {  // the one-tensor form's own fields, as earlier versions wrote them
        r.counterexample = one_tensor_finding(c, r);
        if (!r.signature) {
            r.signature = one_tensor_signature_of(r, *r.counterexample);
            r.one_tensor = true;
        }
        // A check's report written before the draw had versions has no field: its weights are version 1.
        if (white_box && r.weights == 0) r.weights = kOldestWeightsVersion;
    } else {
        if (!r.signature) throw std::invalid_argument("field 'counterexample' holds named inputs but the report has no 'signature'");
        r.counterexample = counterexample_from(c, *r.signature, r.verdict, rules_of(r.property));
        r.counterexample->replay = r.replay;
        if (table_row_without_weights(c, r)) {
            r.counterexample->weight_seed = r.seed + static_cast<std::uint64_t>(std::max(r.counterexample->case_index, 0));
            if (r.weights == 0) r.weights = 3;
        }
    }
    if (white_box) r.counterexample->weights = r.weights;
}
}  // namespace

Record from_json(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("a report must be a JSON object, got " + std::string(j.type_name()));
    const std::string schema = get_as<std::string>(j, "schema");
    if (schema != kSchema)
        throw std::invalid_argument("unsupported schema '" + schema + "'; this permcheck reads '" + kSchema + "'");
    Record r;
    r.verdict = named<Verdict>(j, "verdict", parse_verdict);
    r.layer = get_as<std::string>(j, "layer");
    r.property = named<Property>(j, "property", parse_property);
    r.dtype = named<Arithmetic>(j, "dtype", parse_arithmetic);
    r.cases = get_as<int>(j, "cases");
    if (r.cases < 0) throw std::invalid_argument("field 'cases' must not be negative, got " + std::to_string(r.cases));
    r.seed = get_as<std::uint64_t>(j, "seed");
    r.error = get_or<std::string>(j, "error", "");
    r.replay = get_or<std::string>(j, "replay", "");
    r.repro = get_or<std::string>(j, "repro", "");
    if (j.contains("details") && !j["details"].is_null()) r.details = object_at(j["details"], "details");
    r.weights = weights_version(j);
    if (j.contains("signature") && !j["signature"].is_null()) r.signature = signature_from(j["signature"], r.one_tensor);
    if (j.contains("counterexample") && !j["counterexample"].is_null()) read_counterexample(j["counterexample"], r);
    // An audit's report written before the case draw had versions (no field, 0 here) drew its cases with version 1.
    r.case_draw = get_or<int>(j, "case_draw", 0);
    if (r.case_draw < 0 || r.case_draw > kCaseDrawVersion)
        throw std::invalid_argument("field 'case_draw': version " + std::to_string(r.case_draw) + " of the case draw is " +
                                    "unknown to this permcheck, which draws version " + std::to_string(kCaseDrawVersion) +
                                    "; a newer permcheck made this report");
    if (j.contains("taps") && !j["taps"].is_null()) r.taps = taps_from(j);
    if (j.contains("checked") && !j["checked"].is_null()) r.checked = checked_from(j["checked"]);  // absent before
    return r;
}

}  // namespace permcheck::report
