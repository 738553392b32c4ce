#include "adapters/exec_adapter.h"

#include "adapters/python_path.h"

#include "io/json_limits.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <mutex>
#include <optional>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

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
        if (in_string) {
            out += c;
            if (c == '\\' && i + 1 < line.size()) {
                out += line[i + 1];
                i += 2;
                continue;
            }
            if (c == '"') in_string = false;
            ++i;
            continue;
        }
        if (c == '"') {
            in_string = true;
            out += c;
            ++i;
            continue;
        }
        bool replaced = false;
        for (std::string_view token : {std::string_view("-Infinity"), std::string_view("Infinity"), std::string_view("NaN")}) {
            const bool at_boundary = i == 0 || !word_char(line[i - 1]);
            if (at_boundary && line.substr(i, token.size()) == token &&
                (i + token.size() == line.size() || !word_char(line[i + token.size()]))) {
                out += '"';
                out += kMarker;
                out += token;
                out += '"';
                i += token.size();
                replaced = true;
                break;
            }
        }
        if (!replaced) {
            out += c;
            ++i;
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

std::string excerpt(std::string_view line) {
    constexpr std::size_t keep = 80;
    std::string s(line.substr(0, keep));
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    return "'" + s + (line.size() > keep ? "...'" : "'");
}

}  // namespace

namespace {
// The answer line as a JSON object, or an error that says what the line was and what was expected.
nlohmann::json answer_object(std::string_view line, const char* expected = "{\"id\": N, \"y\": [...]}") {
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

// The id of an answer, -1 for one beyond int64 (it then matches no request).
std::int64_t answer_id(const nlohmann::json& j, std::string_view line, const char* expected) {
    const auto id = j.find("id");
    if (id == j.end() || !id->is_number_integer())
        throw std::invalid_argument("the answer has no integer \"id\": " + excerpt(line) + "; expected " + expected);
    return id->is_number_unsigned() && id->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)
               ? -1
               : id->get<std::int64_t>();
}

// The adapter's own error message, if the answer is one. Not dump(): it recurses, and a fuzzer's deeply nested
// "error" value would exhaust the stack.
std::optional<std::string> answer_error(const nlohmann::json& j) {
    const auto err = j.find("error");
    if (err == j.end()) return std::nullopt;
    return err->is_string() ? err->get<std::string>()
                            : std::string("(the adapter sent a JSON ") + err->type_name() + " as its error, not a string)";
}

// "taps_offered": true (check/taps.h); anything else, or nothing, offers none.
bool offers_taps(const nlohmann::json& j) {
    const auto it = j.find("taps_offered");
    return it != j.end() && it->is_boolean() && it->get<bool>();
}

// A pooled layer's answer: one flat array, one row.
Mat<double> vector_of(const nlohmann::json& y) {
    Mat<double> out(1, static_cast<Eigen::Index>(y.size()));
    for (std::size_t k = 0; k < y.size(); ++k)
        out(0, static_cast<Eigen::Index>(k)) = number_of(y[k], "at index " + std::to_string(k));
    return out;
}

// A sequence layer's answer: rows of equal, nonzero width.
Mat<double> rows_of(const nlohmann::json& y) {
    if (!y[0].empty() && y[0][0].is_array())
        throw std::invalid_argument("\"y\" has three or more dimensions (its rows hold arrays); a sequence layer "
                                    "answers n rows of numbers: drop the batch dimension (e.g. y[0] or y.squeeze(0))");
    const std::size_t width = y[0].size();
    if (width == 0)
        throw std::invalid_argument("row 0 of \"y\" is an empty array; expected at least one number a row");
    Mat<double> out(static_cast<Eigen::Index>(y.size()), static_cast<Eigen::Index>(width));
    for (std::size_t i = 0; i < y.size(); ++i) {
        const nlohmann::json& row = y[i];
        if (!row.is_array())
            throw std::invalid_argument("row " + std::to_string(i) + " of \"y\" is " + row.type_name() +
                                        ", not an array; rows are arrays of numbers");
        if (row.size() != width)
            throw std::invalid_argument("row " + std::to_string(i) + " of \"y\" has " + std::to_string(row.size()) +
                                        " numbers, row 0 has " + std::to_string(width) + "; rows must have equal width");
        for (std::size_t k = 0; k < width; ++k)
            out(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)) =
                number_of(row[k], "at row " + std::to_string(i) + ", index " + std::to_string(k));
    }
    return out;
}
}  // namespace

Response parse_response(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const nlohmann::json j = answer_object(line);
    Response r;
    r.id = answer_id(j, line, "the id of the request it answers");
    r.taps_offered = offers_taps(j);
    if (const auto error = answer_error(j)) {
        r.is_error = true;
        r.error = *error;
        return r;
    }
    const auto y = j.find("y");
    if (y == j.end())
        throw std::invalid_argument("the answer has neither \"y\" nor \"error\": " + excerpt(line));
    if (!y->is_array())
        throw std::invalid_argument("\"y\" is " + std::string(y->type_name()) +
                                    ", not an array; expected [[...], ...] (one row per position) or [...] (pooled)");
    if (y->empty()) throw std::invalid_argument("\"y\" is an empty array; expected at least one number");
    r.vector = !(*y)[0].is_array();
    r.y = r.vector ? vector_of(*y) : rows_of(*y);
    return r;
}

std::string format_request(std::int64_t id, const Mat<double>& x) {
    std::string s = "{\"id\":" + std::to_string(id) + ",\"x\":[";
    char buf[64];
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        s += i ? ",[" : "[";
        for (Eigen::Index k = 0; k < x.cols(); ++k) {
            if (!std::isfinite(x(i, k)))
                throw std::invalid_argument("cannot send a non-finite input to an adapter (row " + std::to_string(i) + ")");
            if (k) s += ',';
            // Shortest form that reads back to the same double: full round-trip precision.
            const auto res = std::to_chars(buf, buf + sizeof buf, x(i, k));
            s.append(buf, res.ptr);
        }
        s += ']';
    }
    s += "]}";
    return s;
}

// ---------------------------------------------------------------------------------------------------------
// The signature's lines

namespace {

void append_number(std::string& s, double v) {
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, res.ptr);
}

// A real value always with a fraction or an exponent (2.0, 0.0, 1e+300), shortest round-trip otherwise: an
// adapter that tells index inputs from reals by JSON type must not read an all-integer real input as integers.
void append_real(std::string& s, double v) {
    const std::size_t start = s.size();
    append_number(s, v);
    if (s.find_first_of(".e", start) == std::string::npos) s += ".0";
}

// One value of an input as its kind writes it; throws for what JSON cannot carry.
void append_value(std::string& s, const TensorSpec& t, double v) {
    if (!std::isfinite(v))
        throw std::invalid_argument("cannot send a non-finite value of input '" + t.name + "' to an adapter");
    switch (t.kind) {
        case TensorKind::mask: s += v != 0.0 ? "true" : "false"; return;
        case TensorKind::index:
            if (v != std::floor(v) || std::abs(v) > 9e15)
                throw std::invalid_argument("input '" + t.name + "' is an index input but holds " + std::to_string(v));
            s += std::to_string(static_cast<long long>(v));
            return;
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

void append_shape(std::string& s, const std::vector<int>& shape) {
    s += '[';
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (k) s += ',';
        s += std::to_string(shape[k]);
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

std::string json_string(const std::string& text) { return nlohmann::json(text).dump(); }

// "kinds":{"q":"float","pad":"mask","edge_index":"index"}: every input's kind, so that an adapter knows it even
// when the values cannot show it (an empty index input).
std::string kinds_of(const Signature& s) {
    std::string out = "\"kinds\":{";
    for (std::size_t k = 0; k < s.inputs.size(); ++k) {
        if (k) out += ',';
        out += json_string(s.inputs[k].name);
        out += ":\"";
        out += tensor_kind_name(s.inputs[k].kind);
        out += '"';
    }
    return out + "}";
}

std::string dim_name(const Dim& d) { return d.is_axis() ? "axis " + d.axis : "fixed size " + std::to_string(d.size); }

}  // namespace

std::string format_named_request(std::int64_t id, const Signature& s, const Tensors& inputs) {
    std::string line = "{\"id\":" + std::to_string(id) + ",\"inputs\":{";
    std::string shapes = "\"shapes\":{";
    for (std::size_t k = 0; k < s.inputs.size(); ++k) {
        const TensorSpec& t = s.inputs[k];
        const Tensor& x = input_of(inputs, t);
        std::string key = k ? "," : "";
        key += json_string(t.name);
        key += ':';
        line += key;
        std::size_t at = 0;
        append_nested(line, t, x, 0, at);
        shapes += key;
        append_shape(shapes, x.shape);
    }
    line += "},";
    line += shapes;
    line += "},";
    line += kinds_of(s);
    line += ",\"outputs\":[";
    for (std::size_t k = 0; k < s.outputs.size(); ++k) {
        if (k) line += ',';
        line += json_string(s.outputs[k].name);
    }
    line += "]}";
    return line;
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
    return lengths;
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

}  // namespace

NamedResponse parse_named_response(std::string_view line, const std::vector<ExpectedOutput>& expected) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const nlohmann::json j = answer_object(line, kNamedAnswer);
    NamedResponse r;
    r.id = answer_id(j, line, kNamedAnswer);
    r.taps_offered = offers_taps(j);
    if (const auto error = answer_error(j)) {
        r.is_error = true;
        r.error = *error;
        return r;
    }
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
        Tensor t;
        t.shape = e.shape;
        read_nested(*v, e, 0, "", t.values);
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
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const nlohmann::json j = answer_object(line, kTapAnswer);
    TapResponse r;
    r.id = answer_id(j, line, kTapAnswer);
    r.taps_offered = offers_taps(j);
    if (const auto error = answer_error(j)) {
        r.is_error = true;
        r.error = *error;
        return r;
    }
    const auto taps = j.find("taps");
    if (taps == j.end() || !taps->is_array())
        throw std::invalid_argument("the answer to a tap request has no \"taps\" array: " + excerpt(line) +
                                    "; expected " + kTapAnswer);
    for (std::size_t k = 0; k < taps->size(); ++k) r.taps.push_back(tap_of((*taps)[k], k));
    return r;
}

std::string with_taps(std::string request_line) {
    const std::size_t end = request_line.rfind('}');
    if (end == std::string::npos) throw std::invalid_argument("a request line is a JSON object");
    request_line.insert(end, ",\"taps\":true");
    return request_line;
}

// ---------------------------------------------------------------------------------------------------------
// The process

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int ms_until(double deadline) {
    const double left = deadline - now();
    return left <= 0 ? 0 : static_cast<int>(std::min(left * 1000.0 + 1.0, 1e9));
}

// A write to an adapter that has exited must fail with EPIPE, not kill permcheck.
void ignore_sigpipe() {
    static std::once_flag once;
    std::call_once(once, [] { std::signal(SIGPIPE, SIG_IGN); });
}

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

}  // namespace

ExecAdapter::ExecAdapter(ExecOptions opts) : opts_(std::move(opts)) {
    ignore_sigpipe();
    if (opts_.command.empty()) throw AdapterError("the adapter command is empty; expected a shell command");
    if (!(opts_.timeout_seconds > 0)) throw AdapterError("the timeout must be positive");
    if (!(opts_.startup_timeout_seconds > 0)) throw AdapterError("the start-up timeout must be positive");
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) throw AdapterError(std::string("cannot create a pipe: ") + std::strerror(errno));
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        throw AdapterError(std::string("cannot create a pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Its own process group, so a timeout kills the shell and whatever it started; default SIGPIPE, since we
    // ignore it and an ignored signal would stay ignored across exec.
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
    const char* argv[] = {"/bin/sh", "-c", opts_.command.c_str(), nullptr};
    const ChildEnvironment child_env;  // PYTHONPATH led by permcheck_adapter.py's directory
    const int rc = posix_spawn(&pid_, "/bin/sh", &actions, &attr, const_cast<char* const*>(argv), child_env.envp());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
        close(in[1]);
        close(out[0]);
        pid_ = -1;
        throw AdapterError("cannot start /bin/sh -c '" + opts_.command + "': " + std::strerror(rc));
    }
    to_child_ = in[1];
    from_child_ = out[0];
    fcntl(to_child_, F_SETFL, fcntl(to_child_, F_GETFL) | O_NONBLOCK);
    fcntl(from_child_, F_SETFL, fcntl(from_child_, F_GETFL) | O_NONBLOCK);
}

ExecAdapter::~ExecAdapter() {
    if (to_child_ >= 0) {
        close(to_child_);  // EOF: a well-behaved adapter exits now
        to_child_ = -1;
    }
    const double deadline = now() + std::min(2.0, opts_.timeout_seconds);
    while (!reaped_ && pid_ > 0 && now() < deadline) {
        if (waitpid(pid_, &status_, WNOHANG) == pid_) {
            reaped_ = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop();
}

void ExecAdapter::stop() {
    if (pid_ > 0) {
        kill(-pid_, SIGKILL);  // the whole group: also children the adapter started, even after it exited
        if (!reaped_) {
            while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
            }
            reaped_ = true;
        }
    }
    if (to_child_ >= 0) close(to_child_);
    if (from_child_ >= 0) close(from_child_);
    to_child_ = from_child_ = -1;
}

std::string ExecAdapter::exit_description() {
    if (!reaped_) {
        // The adapter closed its end; give it a moment to exit before calling it alive.
        const double deadline = now() + 1.0;
        while (now() < deadline) {
            if (waitpid(pid_, &status_, WNOHANG) == pid_) {
                reaped_ = true;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }
    if (!reaped_) return "closed its stdout but did not exit";
    if (WIFEXITED(status_)) {
        const int code = WEXITSTATUS(status_);
        return "exited with status " + std::to_string(code) + (code == 127 ? " (command not found?)" : "");
    }
    if (WIFSIGNALED(status_)) {
        const int sig = WTERMSIG(status_);
        return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    }
    return "ended";
}

void ExecAdapter::fail(const std::string& cause) {
    failure_ = cause + " after " + std::to_string(requests_) + (requests_ == 1 ? " request" : " requests") +
               " (" + std::to_string(answered_) + " answered); last request: " +
               (last_request_.empty() ? "none" : last_request_) + "; command: " + opts_.command;
    stop();
    throw AdapterError(failure_);
}

void ExecAdapter::write_all(const std::string& data, double deadline) {
    std::size_t done = 0;
    while (done < data.size()) {
        pollfd p{to_child_, POLLOUT, 0};
        const int ready = poll(&p, 1, ms_until(deadline));
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) fail("adapter did not read its request within " + limit_text() + "; it was killed");
        const ssize_t w = write(to_child_, data.data() + done, data.size() - done);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            if (errno == EPIPE) fail("adapter " + exit_description());  // same words as an exit seen on read: which side sees it first is a race
            fail(std::string("cannot write to the adapter: ") + std::strerror(errno));
        }
        done += static_cast<std::size_t>(w);
    }
}

std::string ExecAdapter::read_line(double deadline) {
    // Each byte is searched for the newline once: rescanning the whole buffer per chunk made a 64 MB line cost
    // quadratic time. Past 1 MB the buffer takes the limit's size at once, so that doubling never holds two
    // copies of a long line (peak memory stays near max_line_bytes, not twice it).
    std::size_t scanned = 0;
    for (;;) {
        const std::size_t nl = buffer_.find('\n', scanned);
        scanned = buffer_.size();
        if (buffer_.size() > (std::size_t{1} << 20) && buffer_.capacity() <= opts_.max_line_bytes)
            buffer_.reserve(opts_.max_line_bytes + 1);
        if (nl != std::string::npos) {
            std::string line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            return line;
        }
        if (buffer_.size() > opts_.max_line_bytes)
            fail("adapter wrote an answer line longer than " + std::to_string(opts_.max_line_bytes) +
                 " bytes; it was refused and the adapter killed");
        pollfd p{from_child_, POLLIN, 0};
        const int ready = poll(&p, 1, ms_until(deadline));
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0)
            fail("adapter did not answer within " + limit_text() + "; it was killed");
        char chunk[1 << 16];
        const std::size_t room = opts_.max_line_bytes + 1 - std::min(buffer_.size(), opts_.max_line_bytes);
        const ssize_t r = read(from_child_, chunk, std::min(sizeof chunk, room));
        if (r < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            fail(std::string("cannot read from the adapter: ") + std::strerror(errno));
        }
        if (r == 0) {
            fail("adapter " + exit_description() +
                 (buffer_.empty() ? std::string() : " in the middle of an answer line " + excerpt(buffer_)));
        }
        buffer_.append(chunk, static_cast<std::size_t>(r));
    }
}

std::string ExecAdapter::limit_text() const {
    return answered_ == 0 ? seconds_text(opts_.startup_timeout_seconds) + " s (--startup-timeout, the first answer)"
                          : seconds_text(opts_.timeout_seconds) + " s (--timeout)";
}

template <class Parse> auto ExecAdapter::exchange(const std::string& request, const std::string& what, Parse parse) {
    if (!failure_.empty()) throw AdapterError(failure_);
    const std::int64_t id = requests_ + 1;
    ++requests_;
    last_request_ = "id " + std::to_string(id) + ", " + what;
    const double deadline = now() + (answered_ == 0 ? opts_.startup_timeout_seconds : opts_.timeout_seconds);
    write_all(request, deadline);
    const std::string line = read_line(deadline);
    decltype(parse(line)) r;
    try {
        r = parse(line);
    } catch (const std::invalid_argument& e) {
        // The hint only when the line is no JSON object: a log line on stdout, not a malformed answer.
        const std::size_t start = line.find_first_not_of(" \t");
        const bool object = start != std::string::npos && line[start] == '{';
        fail(std::string("adapter broke the protocol: ") + e.what() +
             (object ? "" : " (stdout carries only answer lines; write logs to stderr)"));
    }
    if (r.id != id)
        fail("adapter answered id " + std::to_string(r.id) + " to request id " + std::to_string(id) +
             "; answers come one per request, in order");
    if (r.is_error) fail("adapter answered with an error: " + r.error);
    if (r.taps_offered) {
        taps_offered_ = true;
        if (opts_.taps_offered) *opts_.taps_offered = true;
    }
    ++answered_;
    return r;
}

Mat<double> ExecAdapter::operator()(const Mat<double>& x) {
    const std::string what = "n=" + std::to_string(x.rows()) + ", d=" + std::to_string(x.cols());
    return exchange(format_request(requests_ + 1, x) + "\n", what, [this](const std::string& line) {
               note_announcement(line);
               return parse_response(line);
           }).y;
}

Tensors ExecAdapter::operator()(const Signature& s, const Tensors& inputs) {
    const Lengths lengths = lengths_of(s, inputs);
    std::string what;
    for (const auto& [axis, length] : lengths) {
        if (!what.empty()) what += ", ";
        what += axis + "=" + std::to_string(length);
    }
    const std::vector<ExpectedOutput> expected = expected_outputs(s, lengths);
    const std::string request = format_named_request(requests_ + 1, s, inputs) + "\n";
    return exchange(request, what, [this, &expected](const std::string& line) {
               note_announcement(line);
               return parse_named_response(line, expected);
           }).outputs;
}

namespace {
// The one-tensor form's x (n x d, row-major) as a matrix.
Mat<double> matrix_of(const Tensor& t) {
    return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
        t.values.data(), t.shape[0], t.shape[1]);
}
}  // namespace

std::vector<Tap> ExecAdapter::taps(const Tensors& inputs, const Signature* s) {
    const auto x = inputs.find("x");
    if (!s && (x == inputs.end() || x->second.shape.size() != 2))
        throw std::invalid_argument("the one-tensor form's taps need an input x of n x d values");
    std::string request, what;
    if (s) {
        for (const auto& [axis, length] : lengths_of(*s, inputs)) {
            if (!what.empty()) what += ", ";
            what += axis + "=" + std::to_string(length);
        }
        request = format_named_request(requests_ + 1, *s, inputs);
    } else {
        const Tensor& t = x->second;
        what = "n=" + std::to_string(t.shape[0]) + ", d=" + std::to_string(t.shape[1]);
        request = format_request(requests_ + 1, matrix_of(t));
    }
    return exchange(with_taps(request) + "\n", what + ", taps", parse_tap_response).taps;
}

BlackBox exec_black_box(const ExecOptions& opts) {
    auto adapter = std::make_shared<ExecAdapter>(opts);
    return [adapter](const Mat<double>& x) { return (*adapter)(x); };
}

NamedBlackBox exec_named_black_box(const ExecOptions& opts, const Signature& s) {
    auto adapter = std::make_shared<ExecAdapter>(opts);
    return [adapter, s](const Tensors& inputs) { return (*adapter)(s, inputs); };
}

TapSource exec_tap_source(const ExecOptions& opts, const Signature* s) {
    auto adapter = std::make_shared<std::unique_ptr<ExecAdapter>>();
    std::shared_ptr<const Signature> sig = s ? std::make_shared<const Signature>(*s) : nullptr;
    return [opts, adapter, sig](const Tensors& inputs) {
        if (!*adapter) {
            *adapter = std::make_unique<ExecAdapter>(opts);
            if (sig) (**adapter)(*sig, inputs);
            else (**adapter)(matrix_of(inputs.at("x")));
        }
        if (!(*adapter)->taps_offered()) throw NoTapsOffered("the adapter offers no taps");
        return (*adapter)->taps(inputs, sig.get());
    };
}

}  // namespace permcheck::adapters

// ---------------------------------------------------------------------------------------------------------
// Batched requests

namespace permcheck::adapters {

namespace {
constexpr const char* kBatchAnswer = "{\"id\": N, \"batch\": [ANSWER, ...]}";
constexpr int kMaxBatchItems = 1024;  // per request, whatever K the adapter announced

// An ordinary request line without its id: {"id":7,"x":...} becomes {"x":...}, an item of a batched request.
std::string without_id(const std::string& line) {
    const std::size_t comma = line.find(',');
    return comma == std::string::npos ? line : "{" + line.substr(comma + 1);
}

// An item answer as the ordinary answer line of request `id`, for the ordinary parsers.
std::string item_line(const nlohmann::json& item, std::int64_t id, std::size_t k) {
    if (!item.is_object())
        throw std::invalid_argument("item " + std::to_string(k) + " of \"batch\" is " + item.type_name() +
                                    ", not an answer object; expected " + kBatchAnswer);
    nlohmann::json copy = item;
    copy["id"] = id;
    return copy.dump();
}
}  // namespace

int parse_batch_announcement(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const nlohmann::json j = answer_object(line);
    const auto k = j.find("batch");
    if (k == j.end()) return 0;
    if (!k->is_number_integer() || k->get<std::int64_t>() < 1 || k->get<std::int64_t>() > INT32_MAX)
        throw std::invalid_argument("\"batch\" in an answer is " + (k->is_number() ? k->dump() : std::string(k->type_name())) +
                                    "; expected an integer >= 1, the most cases one request may hold (README, "
                                    "\"Batched requests\")");
    return static_cast<int>(k->get<std::int64_t>());
}

std::map<std::string, int> batch_dims_of(const Signature& s) {
    std::map<std::string, int> dims;
    for (const auto* list : {&s.inputs, &s.outputs})
        for (const TensorSpec& t : *list) {
            const auto one = std::find_if(t.dims.begin(), t.dims.end(), [](const Dim& d) { return !d.is_axis() && d.size == 1; });
            if (one == t.dims.end()) return {};
            dims[t.name] = static_cast<int>(one - t.dims.begin());
        }
    return dims;
}

std::string format_batch_request(std::int64_t id, const std::vector<std::string>& items,
                                 const std::map<std::string, int>& batch_dims) {
    std::string line = "{\"id\":" + std::to_string(id);
    if (!batch_dims.empty()) {
        line += ",\"batch_dims\":{";
        bool first = true;
        for (const auto& [name, dim] : batch_dims) {
            if (!first) line += ',';
            first = false;
            line += json_string(name);
            line += ':';
            line += std::to_string(dim);
        }
        line += '}';
    }
    line += ",\"batch\":[";
    for (std::size_t k = 0; k < items.size(); ++k) {
        if (k) line += ',';
        line += items[k];
    }
    line += "]}";
    return line;
}

std::vector<std::string> batch_items(std::string_view line, std::size_t count, std::int64_t& id,
                                     std::optional<std::string>& error) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const nlohmann::json j = answer_object(line, kBatchAnswer);
    id = answer_id(j, line, kBatchAnswer);
    error = answer_error(j);
    if (error) return {};
    const auto batch = j.find("batch");
    if (batch == j.end() || !batch->is_array())
        throw std::invalid_argument("the answer to a batched request has no \"batch\" array: " + excerpt(line) +
                                    "; expected " + kBatchAnswer);
    if (batch->size() != count)
        throw std::invalid_argument("the answer's \"batch\" holds " + std::to_string(batch->size()) +
                                    " answers for a request of " + std::to_string(count) +
                                    " items; expected one answer per item, in order");
    std::vector<std::string> items;
    for (std::size_t k = 0; k < batch->size(); ++k) items.push_back(item_line((*batch)[k], id, k));
    return items;
}

void ExecAdapter::note_announcement(const std::string& line) {
    if (line.find("\"batch\"") == std::string::npos) return;
    if (const int k = parse_batch_announcement(line)) batch_ = k;
}

namespace {
// An item of a batched answer, parsed by the ordinary parser.
template <class R> struct ParsedBatch {
    std::int64_t id = 0;
    bool is_error = false;
    std::string error;
    std::vector<R> items;
    bool taps_offered = false;  // some item offered taps (README "Where symmetry first breaks")
};
}  // namespace

template <class Out, class ParseItem>
std::vector<BatchAnswer<Out>> ExecAdapter::exchange_batch(const std::vector<std::string>& items, const std::string& what,
                                                          const std::map<std::string, int>& dims, ParseItem parse_item) {
    using R = decltype(parse_item(std::string()));
    const std::int64_t id = requests_ + 1;
    const auto parse = [&](const std::string& line) {
        ParsedBatch<R> b;
        std::optional<std::string> error;
        const std::vector<std::string> lines = batch_items(line, items.size(), b.id, error);
        b.is_error = error.has_value();
        if (error) b.error = *error;
        for (std::size_t k = 0; k < lines.size(); ++k) {
            try {
                b.items.push_back(parse_item(lines[k]));
                b.taps_offered = b.taps_offered || b.items.back().taps_offered;
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument("item " + std::to_string(k) + " of the batch: " + e.what());
            }
        }
        return b;
    };
    ParsedBatch<R> b = exchange(format_batch_request(id, items, dims) + "\n", what, parse);
    std::vector<BatchAnswer<Out>> out(b.items.size());
    for (std::size_t k = 0; k < b.items.size(); ++k) {
        if (b.items[k].is_error)
            out[k].error = "adapter answered with an error: " + b.items[k].error + " (item " + std::to_string(k) + " of " +
                           std::to_string(items.size()) + " of request id " + std::to_string(id) + ", " + what +
                           "); command: " + opts_.command;
        else
            out[k].value = std::move(b.items[k]);
    }
    return out;
}

std::vector<BatchAnswer<Mat<double>>> ExecAdapter::operator()(const std::vector<Mat<double>>& xs) {
    std::vector<std::string> items;
    for (const Mat<double>& x : xs) items.push_back(without_id(format_request(0, x)));
    const std::string what = xs.empty() ? std::string("no items")
                                        : "n=" + std::to_string(xs[0].rows()) + ", d=" + std::to_string(xs[0].cols());
    auto answers = exchange_batch<Response>(items, std::to_string(xs.size()) + " items of " + what, {}, parse_response);
    std::vector<BatchAnswer<Mat<double>>> out(answers.size());
    for (std::size_t k = 0; k < answers.size(); ++k) {
        out[k].error = std::move(answers[k].error);
        if (answers[k].value) out[k].value = std::move(answers[k].value->y);
    }
    return out;
}

std::vector<BatchAnswer<Tensors>> ExecAdapter::operator()(const Signature& s, const std::vector<Tensors>& inputs) {
    if (inputs.empty()) return {};
    const Lengths lengths = lengths_of(s, inputs[0]);
    std::string what = std::to_string(inputs.size()) + " items of ";
    for (const auto& [axis, length] : lengths) {
        if (what.back() != ' ') what += ", ";
        what += axis + "=" + std::to_string(length);
    }
    std::vector<std::string> items;
    for (const Tensors& x : inputs) {
        if (lengths_of(s, x) != lengths) throw std::invalid_argument("the items of a batched request differ in lengths");
        items.push_back(without_id(format_named_request(0, s, x)));
    }
    const std::vector<ExpectedOutput> expected = expected_outputs(s, lengths);
    auto answers = exchange_batch<NamedResponse>(items, what, batch_dims_of(s), [&expected](const std::string& line) {
        return parse_named_response(line, expected);
    });
    std::vector<BatchAnswer<Tensors>> out(answers.size());
    for (std::size_t k = 0; k < answers.size(); ++k) {
        out[k].error = std::move(answers[k].error);
        if (answers[k].value) out[k].value = std::move(answers[k].value->outputs);
    }
    return out;
}

BatchedBlackBox exec_batched_black_box(const ExecOptions& opts) {
    auto adapter = std::make_shared<ExecAdapter>(opts);
    BatchedBlackBox box;
    box.one = [adapter](const Mat<double>& x) { return (*adapter)(x); };
    box.many.capacity = [adapter] { return std::min(adapter->batch_capacity(), kMaxBatchItems); };
    box.many.call = [adapter](const std::vector<Mat<double>>& xs) { return (*adapter)(xs); };
    return box;
}

BatchedNamedBlackBox exec_batched_named_black_box(const ExecOptions& opts, const Signature& s) {
    auto adapter = std::make_shared<ExecAdapter>(opts);
    BatchedNamedBlackBox box;
    box.one = [adapter, s](const Tensors& inputs) { return (*adapter)(s, inputs); };
    box.many.capacity = [adapter] { return std::min(adapter->batch_capacity(), kMaxBatchItems); };
    box.many.call = [adapter, s](const std::vector<Tensors>& inputs) { return (*adapter)(s, inputs); };
    return box;
}

}  // namespace permcheck::adapters
