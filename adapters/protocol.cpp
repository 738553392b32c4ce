#include "adapters/protocol.h"
#include "adapters/protocol_detail.h"

#include "io/json_limits.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace permcheck::adapters {

// ---------------------------------------------------------------------------------------------------------
// The protocol's lines

namespace {

// Python's json module writes NaN, Infinity and -Infinity, which JSON (and nlohmann) reject. Outside strings,
// each becomes a string holding a marker that no valid answer contains in a number's place: NUL, then the name.
constexpr std::string_view kMarker = "\\u0000";

bool word_char(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

std::string replace_non_finite_tokens(std::string_view line) {
    std::string out;
    out.reserve(line.size() + 16);
    bool in_string = false;
    for (std::size_t i = 0; i < line.size();) {
        const char c = line[i];
        const std::size_t taken = in_string && c == '\\' && i + 1 < line.size() ? 2 : 1;  // an escape: both characters
        std::string_view token;
        if (c == '"') in_string = !in_string;
        else if (!in_string && (i == 0 || !word_char(line[i - 1])))
            for (std::string_view t : {std::string_view("-Infinity"), std::string_view("Infinity"), std::string_view("NaN")})
                if (line.substr(i, t.size()) == t && (i + t.size() == line.size() || !word_char(line[i + t.size()])))
                    token = t;
        if (token.empty()) {
            out += line.substr(i, taken);
            i += taken;
        } else {
            out += '"' + std::string(kMarker) + std::string(token) + '"';
            i += token.size();
        }
    }
    return out;
}

double number_of(const nlohmann::json& v, const std::string& where, const std::string& field = "\"y\"") {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s.size() > 1 && s[0] == '\0') {
            const std::string_view name = std::string_view(s).substr(1);
            if (name == "NaN") return std::numeric_limits<double>::quiet_NaN();
            if (name == "Infinity") return std::numeric_limits<double>::infinity();
            if (name == "-Infinity") return -std::numeric_limits<double>::infinity();
        }
    }
    throw std::invalid_argument(field + " holds " + v.type_name() + " " + where +
                                "; expected numbers (NaN, Infinity and -Infinity are accepted)");
}

}  // namespace

std::string excerpt(std::string_view line) {
    constexpr std::size_t keep = 80;
    std::string s(line.substr(0, keep));
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    return "'" + s + (line.size() > keep ? "...'" : "'");
}

namespace detail {
nlohmann::json answer_object(std::string_view& line, const char* expected) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // Before parsing: the error path dumps "error" values recursively (a million '[' overflowed the stack).
    json_limits::require_shallow(line, "the answer line " + excerpt(line));
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(replace_non_finite_tokens(line));
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument("the answer line is not JSON (" + std::string(e.what()) + "): " + excerpt(line) +
                                    "; expected " + expected + " on one line");
    }
    if (!j.is_object())
        throw std::invalid_argument("the answer line is JSON " + std::string(j.type_name()) + ", not an object: " +
                                    excerpt(line) + "; expected " + expected);
    return j;
}

std::int64_t answer_id(const nlohmann::json& j, std::string_view line, const char* expected) {
    const auto id = j.find("id");
    if (id == j.end() || !id->is_number_integer())
        throw std::invalid_argument("the answer has no integer \"id\": " + excerpt(line) + "; expected " + expected);
    return id->is_number_unsigned() && id->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)
               ? -1
               : id->get<std::int64_t>();
}

// Not dump(): it recurses, and a fuzzer's deeply nested "error" value would exhaust the stack.
std::optional<std::string> answer_error(const nlohmann::json& j) {
    const auto err = j.find("error");
    if (err == j.end()) return std::nullopt;
    return err->is_string() ? err->get<std::string>()
                            : std::string("(the adapter sent a JSON ") + err->type_name() + " as its error, not a string)";
}

// Whether j holds `key`: true; anything else, or nothing, says no.
bool says(const nlohmann::json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_boolean() && it->get<bool>();
}

bool read_head(AnswerHead& r, const nlohmann::json& j, std::string_view line, const char* expected, bool* raised) {
    r.id = answer_id(j, line, expected);
    r.taps_offered = says(j, "taps_offered");
    const std::optional<std::string> error = answer_error(j);
    if (!error) return false;
    r.is_error = true;
    r.error = *error;
    for (auto [key, into] : {std::pair{"type", &r.error_type}, std::pair{"where", &r.error_where}})
        if (const auto it = j.find(key); it != j.end() && it->is_string()) *into = it->get<std::string>();
    if (raised) *raised = says(j, "raised");
    return true;
}

// The shortest form that reads back to the same double: full round-trip precision.
void append_number(std::string& s, double v) {
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, res.ptr);
}

// The one-tensor answer's y (a non-empty array): one flat array, a pooled layer's vector W; or rows of equal,
// nonzero width, a sequence layer's n x W.
Tensor y_of(const nlohmann::json& y) {
    Tensor out{{static_cast<int>(y.size())}, {}};
    if (!y[0].is_array()) {
        for (std::size_t k = 0; k < y.size(); ++k) out.values.push_back(number_of(y[k], "at index " + std::to_string(k)));
        return out;
    }
    if (!y[0].empty() && y[0][0].is_array())
        throw std::invalid_argument("\"y\" has three or more dimensions (its rows hold arrays); a sequence layer "
                                    "answers n rows of numbers: drop the batch dimension (e.g. y[0] or y.squeeze(0))");
    const std::size_t width = y[0].size();
    if (width == 0)
        throw std::invalid_argument("row 0 of \"y\" is an empty array; expected at least one number a row");
    out.shape.push_back(static_cast<int>(width));
    for (std::size_t i = 0; i < y.size(); ++i) {
        const nlohmann::json& row = y[i];
        if (!row.is_array())
            throw std::invalid_argument("row " + std::to_string(i) + " of \"y\" is " + row.type_name() +
                                        ", not an array; rows are arrays of numbers");
        if (row.size() != width)
            throw std::invalid_argument("row " + std::to_string(i) + " of \"y\" has " + std::to_string(row.size()) +
                                        " numbers, row 0 has " + std::to_string(width) + "; rows must have equal width");
        for (std::size_t k = 0; k < width; ++k)
            out.values.push_back(number_of(row[k], "at row " + std::to_string(i) + ", index " + std::to_string(k)));
    }
    return out;
}
}  // namespace detail
using namespace detail;

NamedResponse parse_response(std::string_view line) {
    const nlohmann::json j = answer_object(line);
    NamedResponse r;
    if (read_head(r, j, line, "the id of the request it answers", &r.raised)) return r;
    const auto y = j.find("y");
    if (y == j.end())
        throw std::invalid_argument("the answer has neither \"y\" nor \"error\": " + excerpt(line));
    if (!y->is_array())
        throw std::invalid_argument("\"y\" is " + std::string(y->type_name()) +
                                    ", not an array; expected [[...], ...] (one row per position) or [...] (pooled)");
    if (y->empty()) throw std::invalid_argument("\"y\" is an empty array; expected at least one number");
    r.outputs["y"] = y_of(*y);
    return r;
}

std::string format_request(std::int64_t id, const Mat<double>& x) {
    std::string s = "{\"id\":" + std::to_string(id) + ",\"x\":[";
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        s += i ? ",[" : "[";
        for (Eigen::Index k = 0; k < x.cols(); ++k) {
            if (!std::isfinite(x(i, k)))
                throw std::invalid_argument("cannot send a non-finite input to an adapter (row " + std::to_string(i) + ")");
            if (k) s += ',';
            append_number(s, x(i, k));
        }
        s += ']';
    }
    s += "]}";
    return s;
}

// ---------------------------------------------------------------------------------------------------------
// The signature's lines

namespace detail {

// A real value always with a fraction or an exponent (2.0, 0.0, 1e+300), shortest round-trip otherwise: an
// adapter that tells index inputs from reals by JSON type must not read an all-integer real input as integers.
void append_real(std::string& s, double v) {
    const std::size_t start = s.size();
    append_number(s, v);
    if (s.find_first_of(".e", start) == std::string::npos) s += ".0";
}

void check_value(const TensorSpec& t, double v) {
    if (!std::isfinite(v))
        throw std::invalid_argument("cannot send a non-finite value of input '" + t.name + "' to an adapter");
    if (is_integer(t.kind) && (v != std::floor(v) || std::abs(v) > 9e15))
        throw std::invalid_argument("input '" + t.name + "' is an " + tensor_kind_name(t.kind) +
                                    " input (integers) but holds " + std::to_string(v));
}

// One value of an input as its kind writes it; throws for what JSON cannot carry.
void append_value(std::string& s, const TensorSpec& t, double v) {
    check_value(t, v);
    switch (t.kind) {
        case TensorKind::mask: s += v != 0.0 ? "true" : "false"; return;
        case TensorKind::index:
        case TensorKind::token:
        case TensorKind::position:
        case TensorKind::segment:
        case TensorKind::mask_keep: s += std::to_string(static_cast<long long>(v)); return;
        case TensorKind::real: append_real(s, v); return;
    }
}

// The values from `at` on, nested in the order of shape[dim..]: row-major, the last dim fastest.
void append_nested(std::string& s, const TensorSpec& t, const Tensor& x, std::size_t dim, std::size_t& at) {
    if (dim == x.shape.size()) {
        append_value(s, t, x.values[at++]);
        return;
    }
    s += '[';
    for (int k = 0; k < x.shape[dim]; ++k) {
        if (k) s += ',';
        append_nested(s, t, x, dim + 1, at);
    }
    s += ']';
}

const Tensor& input_of(const Tensors& inputs, const TensorSpec& t) {
    const auto it = inputs.find(t.name);
    if (it == inputs.end()) throw std::invalid_argument("the request has no input '" + t.name + "'");
    const Tensor& x = it->second;
    if (x.shape.size() != t.dims.size() || x.values.size() != x.size())
        throw std::invalid_argument("input '" + t.name + "' has " + std::to_string(x.values.size()) +
                                    " values for its shape, or another number of dims than its " +
                                    std::to_string(t.dims.size()));
    return x;
}

// "kinds":{"q":"float","pad":"mask","edge_index":"index"} tells an adapter every input's kind even when the values
// cannot show it (an empty index input). ordered_json: the objects list the inputs in the signature's order.
std::string request_body(const Signature& s, const std::function<std::vector<int>(const TensorSpec&, std::string&)>& value) {
    std::string inputs = ",\"inputs\":{";
    nlohmann::ordered_json shapes = nlohmann::ordered_json::object(), kinds = shapes, outputs = nlohmann::ordered_json::array();
    for (const TensorSpec& t : s.inputs) {
        if (inputs.back() != '{') inputs += ',';
        inputs += nlohmann::json(t.name).dump();
        inputs += ':';
        shapes[t.name] = value(t, inputs);
        kinds[t.name] = tensor_kind_name(t.kind);
    }
    for (const TensorSpec& t : s.outputs) outputs.push_back(t.name);
    return inputs + "},\"shapes\":" + shapes.dump() + ",\"kinds\":" + kinds.dump() + ",\"outputs\":" + outputs.dump() + "}";
}

// The free axes' lengths the inputs carry: their kLengthInput entries (cases/signature.h).
Lengths free_lengths(const Tensors& inputs) {
    Lengths lengths;
    for (auto it = inputs.lower_bound(kLengthInput); it != inputs.end() && it->first.rfind(kLengthInput, 0) == 0; ++it)
        if (it->second.values.size() == 1) lengths[it->first.substr(kLengthInput.size())] = static_cast<int>(it->second.values[0]);
    return lengths;
}

std::string dim_name(const Dim& d) { return d.is_axis() ? "axis " + d.axis : "fixed size " + std::to_string(d.size); }

}  // namespace detail

std::string format_named_request(std::int64_t id, const Signature& s, const Tensors& inputs) {
    return "{\"id\":" + std::to_string(id) + request_body(s, [&inputs](const TensorSpec& t, std::string& line) {
               const Tensor& x = input_of(inputs, t);
               std::size_t at = 0;
               append_nested(line, t, x, 0, at);
               return x.shape;
           });
}

Lengths lengths_of(const Signature& s, const Tensors& inputs) {
    Lengths lengths;
    for (const TensorSpec& t : s.inputs) {
        const Tensor& x = input_of(inputs, t);
        for (std::size_t k = 0; k < t.dims.size(); ++k) {
            if (!t.dims[k].is_axis()) continue;
            const auto [it, fresh] = lengths.emplace(t.dims[k].axis, x.shape[k]);
            if (!fresh && it->second != x.shape[k])
                throw std::invalid_argument("input '" + t.name + "' gives axis " + t.dims[k].axis + " length " +
                                            std::to_string(x.shape[k]) + ", another input " +
                                            std::to_string(it->second));
        }
    }
    for (const auto& [axis, length] : free_lengths(inputs)) lengths[axis] = length;
    return lengths;
}

std::string lengths_field(const Tensors& inputs) {
    const Lengths lengths = free_lengths(inputs);
    return lengths.empty() ? "" : ",\"lengths\":" + nlohmann::json(lengths).dump();
}

std::vector<ExpectedOutput> expected_outputs(const Signature& s, const Lengths& lengths) {
    std::vector<ExpectedOutput> out;
    for (const TensorSpec& t : s.outputs) {
        ExpectedOutput e{t.name, {}, {}};
        for (const Dim& d : t.dims) {
            const auto it = d.is_axis() ? lengths.find(d.axis) : lengths.end();
            if (d.is_axis() && it == lengths.end())
                throw std::invalid_argument("output '" + t.name + "' has axis " + d.axis + ", which no input gives");
            e.shape.push_back(d.is_axis() ? it->second : d.size);
            e.dim_names.push_back(dim_name(d));
        }
        out.push_back(std::move(e));
    }
    return out;
}

namespace {

// Reads `v` as the dims dim.. of output e into out.values, row-major; names the output (`what` e.g. "tap"), the
// dim and the index path at the first disagreement.
void read_nested(const nlohmann::json& v, const ExpectedOutput& e, std::size_t dim, const std::string& path,
                 std::vector<double>& values, const char* what = "output") {
    const std::string field = std::string(what) + " '" + e.name + "'";
    if (dim == e.shape.size()) {
        values.push_back(number_of(v, "at " + (path.empty() ? std::string("the top") : path), field));
        return;
    }
    const std::string which = field + ", dim " + std::to_string(dim) + " (" + e.dim_names[dim] + ")";
    if (!v.is_array())
        throw std::invalid_argument(which + (path.empty() ? "" : " at " + path) + ": got " + v.type_name() +
                                    ", expected an array of " + std::to_string(e.shape[dim]) + " entries");
    if (v.size() != static_cast<std::size_t>(e.shape[dim]))
        throw std::invalid_argument(which + (path.empty() ? "" : " at " + path) + ": " + std::to_string(v.size()) +
                                    " entries, expected " + std::to_string(e.shape[dim]));
    for (std::size_t k = 0; k < v.size(); ++k)
        read_nested(v[k], e, dim + 1, path + "[" + std::to_string(k) + "]", values, what);
}

constexpr const char* kNamedAnswer = "{\"id\": N, \"outputs\": {\"NAME\": [...], ...}}";

// The shape v shows along its first elements, as the output to read it as: a well-formed tensor (arrays nested
// evenly down to numbers) of another shape than e's is the layer's answer, which the audit judges in the layer's
// terms (an error on x's side, the finding on the transformed side); reading a ragged one with it names where the
// protocol breaks. Its dims keep e's names where the ranks agree.
ExpectedOutput shape_shown(const nlohmann::json& v, const ExpectedOutput& e) {
    ExpectedOutput as_given{e.name, {}, {}};
    for (const nlohmann::json* at = &v; at->is_array(); at = &(*at)[0]) {
        as_given.shape.push_back(static_cast<int>(at->size()));
        as_given.dim_names.push_back("dim " + std::to_string(as_given.shape.size() - 1));
        if (at->empty()) {  // the dims below an empty one cannot be seen: as the signature says
            for (std::size_t k = as_given.shape.size(); k < e.shape.size(); ++k) {
                as_given.shape.push_back(e.shape[k]);
                as_given.dim_names.push_back("dim " + std::to_string(k));
            }
            break;
        }
    }
    if (as_given.shape.size() == e.shape.size()) as_given.dim_names = e.dim_names;
    return as_given;
}

}  // namespace

NamedResponse parse_named_response(std::string_view line, const std::vector<ExpectedOutput>& expected) {
    const nlohmann::json j = answer_object(line, kNamedAnswer);
    NamedResponse r;
    if (read_head(r, j, line, kNamedAnswer, &r.raised)) return r;
    const auto outputs = j.find("outputs");
    if (outputs == j.end())
        throw std::invalid_argument("the answer has neither \"outputs\" nor \"error\": " + excerpt(line) +
                                    "; expected " + kNamedAnswer);
    if (!outputs->is_object())
        throw std::invalid_argument("\"outputs\" is " + std::string(outputs->type_name()) +
                                    ", not an object; expected " + kNamedAnswer);
    for (const ExpectedOutput& e : expected) {
        const auto v = outputs->find(e.name);
        if (v == outputs->end())
            throw std::invalid_argument("the answer has no output '" + e.name + "' (it has " +
                                        std::to_string(outputs->size()) + " outputs); every output the request names "
                                        "is expected");
        const ExpectedOutput shown = shape_shown(*v, e);
        Tensor t;
        t.shape = shown.shape;
        read_nested(*v, shown, 0, "", t.values);
        r.outputs.emplace(e.name, std::move(t));
    }
    return r;
}

// ---------------------------------------------------------------------------------------------------------
// Taps

namespace {

constexpr const char* kTapAnswer =
    "{\"id\": N, \"taps\": [{\"name\": \"NAME\", \"shape\": [...], \"values\": [...]}, ...]}";

// One element of "taps": its name, shape (at most 2^24 values), values nested in the order of the shape, and the
// optional "dims" (an axis name or null per dim).
Tap tap_of(const nlohmann::json& v, std::size_t k) {
    const std::string which = "tap " + std::to_string(k);
    if (!v.is_object()) throw std::invalid_argument(which + " is " + v.type_name() + ", not an object; expected " + kTapAnswer);
    const auto name = v.find("name");
    if (name == v.end() || !name->is_string()) throw std::invalid_argument(which + " has no string \"name\"");
    Tap t{name->get<std::string>(), {}, std::nullopt};
    const std::string field = "tap '" + t.name + "'";
    if (const auto unusable = v.find("not_comparable"); unusable != v.end()) {  // no values: why, in words
        if (!unusable->is_string() || unusable->get<std::string>().empty())
            throw std::invalid_argument(field + ": \"not_comparable\" must be a non-empty string saying why");
        t.unusable = unusable->get<std::string>().substr(0, 500);
        return t;
    }
    const auto shape = v.find("shape");
    if (shape == v.end() || !shape->is_array())
        throw std::invalid_argument(field + " has no \"shape\" array (one size per dim)");
    double count = 1;
    ExpectedOutput e{t.name, {}, {}};
    for (const nlohmann::json& size : *shape) {
        if (!size.is_number_integer() || size.get<long long>() < 0 || size.get<long long>() > (1 << 24))
            throw std::invalid_argument(field + ": \"shape\" holds " + size.dump() + "; expected sizes in [0, 2^24]");
        e.shape.push_back(size.get<int>());
        e.dim_names.push_back("dim " + std::to_string(e.shape.size() - 1));
        count *= e.shape.back();
    }
    if (count > double(1 << 24)) throw std::invalid_argument(field + " has more than 2^24 values");
    const auto values = v.find("values");
    if (values == v.end()) throw std::invalid_argument(field + " has no \"values\"");
    t.value.shape = e.shape;
    read_nested(*values, e, 0, "", t.value.values, "tap");
    const auto dims = v.find("dims");
    if (dims == v.end() || dims->is_null()) return t;
    if (!dims->is_array() || dims->size() != e.shape.size())
        throw std::invalid_argument(field + ": \"dims\" must be an array of one axis name or null per dim (" +
                                    std::to_string(e.shape.size()) + ")");
    t.dims.emplace();
    for (const nlohmann::json& d : *dims) {
        if (!d.is_null() && !d.is_string()) throw std::invalid_argument(field + ": \"dims\" holds " + d.type_name());
        t.dims->push_back(d.is_string() ? d.get<std::string>() : std::string());
    }
    return t;
}

}  // namespace

TapResponse parse_tap_response(std::string_view line) {
    const nlohmann::json j = answer_object(line, kTapAnswer);
    TapResponse r;
    if (read_head(r, j, line, kTapAnswer)) return r;
    const auto taps = j.find("taps");
    if (taps == j.end() || !taps->is_array())
        throw std::invalid_argument("the answer to a tap request has no \"taps\" array: " + excerpt(line) +
                                    "; expected " + kTapAnswer);
    for (std::size_t k = 0; k < taps->size(); ++k) r.taps.push_back(tap_of((*taps)[k], k));
    if (const auto none = j.find("taps_none"); none != j.end() && none->is_string() && r.taps.empty())
        r.none_because = none->get<std::string>().substr(0, 500);
    return r;
}

std::string with_taps(std::string request_line) {
    const std::size_t end = request_line.rfind('}');
    if (end == std::string::npos) throw std::invalid_argument("a request line is a JSON object");
    request_line.insert(end, ",\"taps\":true");
    return request_line;
}

// ---------------------------------------------------------------------------------------------------------
// A call's lines, in either dialect

std::string request_line(std::int64_t id, const Signature& s, const Tensors& inputs, bool one_tensor) {
    std::string line = one_tensor ? format_request(id, tensor_matrix::as_matrix(inputs.at("x"))) : format_named_request(id, s, inputs);
    if (const std::string chunks = chunks_field(s, inputs); !chunks.empty()) line.insert(line.size() - 1, chunks);
    if (const std::string lengths = lengths_field(inputs); !lengths.empty()) line.insert(line.size() - 1, lengths);
    return line;
}

std::string chunks_field(const Signature& s, const Tensors& inputs) {
    const auto it = inputs.lower_bound(kChunksInput);
    if (it == inputs.end() || it->first.rfind(kChunksInput, 0) != 0) return "";
    const std::string axis = it->first.substr(kChunksInput.size());
    nlohmann::json ends = nlohmann::json::array(), dims_in = nlohmann::json::object(), dims_out = nlohmann::json::object();
    for (double e : it->second.values) ends.push_back(static_cast<long long>(e));
    const auto dims_of = [&axis](const std::vector<TensorSpec>& specs, nlohmann::json& into) {
        for (const TensorSpec& t : specs)
            for (std::size_t k = 0; k < t.dims.size(); ++k)
                if (t.dims[k].axis == axis) {
                    into[t.name] = k;
                    break;
                }
    };
    dims_of(s.inputs, dims_in);
    dims_of(s.outputs, dims_out);
    return ",\"chunks\":" + nlohmann::json{{"axis", axis}, {"ends", ends}, {"inputs", dims_in}, {"outputs", dims_out}}.dump();
}

bool answered_in_chunks(const std::string& line) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    return j.is_object() && says(j, "chunked");
}

std::vector<ExpectedOutput> expected_answer(const Signature& s, const Tensors& inputs, bool one_tensor) {
    return one_tensor ? std::vector<ExpectedOutput>{} : expected_outputs(s, lengths_of(s, inputs));
}

NamedResponse read_answer(std::string_view line, const Signature& s, const std::vector<ExpectedOutput>& expected,
                          const Lengths& lengths, bool one_tensor) {
    if (!one_tensor) return parse_named_response(line, expected);
    NamedResponse r = parse_response(line);
    if (!r.is_error)
        r.outputs["y"] = one_tensor_answer(tensor_matrix::as_matrix(r.outputs.at("y")), one_tensor_output(s), lengths.at("n"));
    return r;
}

}  // namespace permcheck::adapters
