// Batched and stacked requests of the line protocol (adapters/protocol.h, docs/protocol.md, "Batched requests"): the
// announcements, the request lines and the answers' parsers, pure functions like the rest of the protocol.
#include "adapters/protocol.h"
#include "adapters/protocol_detail.h"

#include <boost/beast/core/detail/base64.hpp>

#include <algorithm>
#include <bit>
#include <charconv>
#include <stdexcept>
#include <system_error>

namespace permcheck::adapters {

using namespace detail;

namespace {
// An ordinary request line as an item of a batched request: {"id":7,"x":...} becomes {"x":...}.
std::string batch_item(const std::string& request_line) {
    const std::size_t comma = request_line.find(',');
    if (comma == std::string::npos) return request_line;
    std::string item = "{";  // += rather than "{" + ...: GCC 12 -O3 warns falsely (-Wrestrict) on the latter
    item += std::string_view(request_line).substr(comma + 1);
    return item;
}

constexpr const char* kBatchAnswer = "{\"id\": N, \"batch\": [ANSWER, ...]}";

// An item answer as the ordinary answer line of request `id`, for the ordinary parsers.
std::string item_line(const nlohmann::json& item, std::int64_t id, std::size_t k) {
    if (!item.is_object())
        throw std::invalid_argument("item " + std::to_string(k) + " of \"batch\" is " + item.type_name() +
                                    ", not an answer object; expected " + kBatchAnswer);
    nlohmann::json copy = item;
    copy["id"] = id;
    return copy.dump();
}

// ,"batch_dims":{"x":0,...}
std::string batch_dims_field(const std::map<std::string, int>& batch_dims) {
    return ",\"batch_dims\":" + nlohmann::json(batch_dims).dump();
}

// The items of a batched answer j (the line `line`), each as an ordinary answer line of request `id`.
std::vector<std::string> item_lines(const nlohmann::json& j, std::string_view line, std::size_t count, std::int64_t id) {
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
}  // namespace

int parse_batch_announcement(std::string_view line) {
    const nlohmann::json j = answer_object(line);
    const auto k = j.find("batch");
    if (k == j.end()) return 0;
    // Any integer >= 1 (an unsigned one past INT64_MAX too); batches are capped by the caller, so a larger one than
    // an int holds means "as many as you like".
    if (!k->is_number_integer() || (k->is_number_unsigned() ? k->get<std::uint64_t>() < 1 : k->get<std::int64_t>() < 1))
        throw std::invalid_argument("\"batch\" in an answer is " + (k->is_number() ? k->dump() : std::string(k->type_name())) +
                                    "; expected an integer >= 1, the most cases one request may hold (docs/protocol.md, "
                                    "\"Batched requests\")");
    if (k->is_number_unsigned()) return static_cast<int>(std::min<std::uint64_t>(k->get<std::uint64_t>(), INT32_MAX));
    return static_cast<int>(std::min<std::int64_t>(k->get<std::int64_t>(), INT32_MAX));
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
    if (!batch_dims.empty()) line += batch_dims_field(batch_dims);
    line += ",\"batch\":[";
    for (const std::string& item : items) {
        if (line.back() != '[') line += ',';
        line += item;
    }
    return line + "]}";
}

std::vector<std::string> batch_items(std::string_view line, std::size_t count, std::int64_t& id,
                                     std::optional<std::string>& error) {
    const nlohmann::json j = answer_object(line, kBatchAnswer);
    AnswerHead head;
    const bool failed = read_head(head, j, line, kBatchAnswer);
    id = head.id;
    error = failed ? std::optional(head.error) : std::nullopt;
    return failed ? std::vector<std::string>{} : item_lines(j, line, count, id);
}

// ---------------------------------------------------------------------------------------------------------
// Stacked batches

std::string float64_base64(const std::vector<double>& values) {
    std::string bytes(values.size() * 8, '\0');
    for (std::size_t k = 0; k < values.size(); ++k) {
        const auto bits = std::bit_cast<std::uint64_t>(values[k]);
        for (std::size_t b = 0; b < 8; ++b) bytes[8 * k + b] = static_cast<char>((bits >> (8 * b)) & 0xffu);
    }
    namespace b64 = boost::beast::detail::base64;
    std::string out(b64::encoded_size(bytes.size()), '\0');
    out.resize(b64::encode(out.data(), bytes.data(), bytes.size()));
    return out;
}

std::vector<double> float64_values(std::string_view text, std::size_t count, const std::string& what) {
    namespace b64 = boost::beast::detail::base64;
    const std::size_t want = b64::encoded_size(count * 8);
    if (text.size() != want)
        throw std::invalid_argument(what + ": " + std::to_string(text.size()) + " base64 characters, expected " +
                                    std::to_string(want) + " (" + std::to_string(count) +
                                    " little-endian float64 values)");
    std::string bytes(b64::decoded_size(text.size()), '\0');
    const auto [written, read] = b64::decode(bytes.data(), text.data(), text.size());
    if (written != count * 8 || text.find_first_not_of('=', read) != std::string_view::npos)
        throw std::invalid_argument(what + ": not base64 at character " + std::to_string(read) + " of " +
                                    std::to_string(text.size()));
    std::vector<double> values(count);
    for (std::size_t k = 0; k < count; ++k) {
        std::uint64_t bits = 0;
        for (std::size_t b = 0; b < 8; ++b)
            bits |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[8 * k + b])) << (8 * b);
        values[k] = std::bit_cast<double>(bits);
    }
    return values;
}

bool parse_stacked_announcement(std::string_view line) {
    const nlohmann::json j = answer_object(line);
    const auto it = j.find("stacked");
    if (it == j.end()) return false;
    if (!it->is_boolean())
        throw std::invalid_argument("\"stacked\" in an answer is " + std::string(it->type_name()) +
                                    "; expected true or false (docs/protocol.md, \"Stacked batches\")");
    return it->get<bool>();
}

namespace {
constexpr const char* kStackedAnswer = "{\"id\": N, \"outputs\": {\"NAME\": \"BASE64\", ...}}";

// The batch dim of tensor t: a dim of size 1 of its spec.
int batch_dim_of(const TensorSpec& t, const std::map<std::string, int>& batch_dims) {
    const auto it = batch_dims.find(t.name);
    if (it == batch_dims.end() || it->second < 0 || it->second >= static_cast<int>(t.dims.size()) ||
        t.dims[it->second].is_axis() || t.dims[it->second].size != 1)
        throw std::invalid_argument("'" + t.name + "' has no batch dim (a fixed dim of size 1) to stack items on");
    return it->second;
}

// Input t of every item, stacked on dim `dim` (where each has size 1), its values checked.
Tensor stacked(const TensorSpec& t, const std::vector<Tensors>& items, int dim) {
    Tensor out;
    out.shape = input_of(items[0], t).shape;
    out.shape[dim] = static_cast<int>(items.size());
    const auto [outer, inner] = outer_inner(out.shape, dim);
    out.values.reserve(outer * items.size() * inner);
    std::vector<const Tensor*> xs;
    for (const Tensors& item : items) {
        xs.push_back(&input_of(item, t));
        if (xs.back()->shape != xs[0]->shape)
            throw std::invalid_argument("the items of a stacked request differ in the shape of input '" + t.name + "'");
        for (double v : xs.back()->values) check_value(t, v);
    }
    for (std::size_t o = 0; o < outer; ++o)
        for (const Tensor* x : xs) out.values.insert(out.values.end(), x->values.begin() + o * inner,
                                                     x->values.begin() + (o + 1) * inner);
    return out;
}

// Output e of every item, read from the stacked values (the items on dim `dim`) into items[k][e.name].
void unstack(const ExpectedOutput& e, const std::vector<double>& values, int dim, std::vector<Tensors>& items) {
    const auto [outer, inner] = outer_inner(e.shape, dim);
    for (std::size_t k = 0; k < items.size(); ++k) {
        Tensor& t = items[k][e.name];
        t.shape = e.shape;
        t.values.reserve(outer * inner);
        for (std::size_t o = 0; o < outer; ++o) {
            const auto from = values.begin() + static_cast<std::ptrdiff_t>((o * items.size() + k) * inner);
            t.values.insert(t.values.end(), from, from + static_cast<std::ptrdiff_t>(inner));
        }
    }
}
}  // namespace

std::string format_stacked_request(std::int64_t id, const Signature& s, const std::vector<Tensors>& items,
                                   const std::map<std::string, int>& batch_dims) {
    if (items.empty()) throw std::invalid_argument("a stacked request holds at least one item");
    for (const TensorSpec& t : s.outputs) batch_dim_of(t, batch_dims);
    std::string line = "{\"id\":" + std::to_string(id) + ",\"stacked\":" + std::to_string(items.size());
    line += batch_dims_field(batch_dims);
    return line + request_body(s, [&](const TensorSpec& t, std::string& inputs) {
               const Tensor x = stacked(t, items, batch_dim_of(t, batch_dims));
               inputs += '"';
               inputs += float64_base64(x.values);
               inputs += '"';
               return x.shape;
           });
}

namespace {
// A stacked answer line with its long string values (the base64 of its outputs) taken out before it is parsed:
// nlohmann's lexer copies a string one character at a time, which made reading a stacked audit's answers cost
// more than computing them. Each string (a value or, harmlessly, a key) of more than kLiftedLength characters and
// without a backslash becomes "\u0000K", K its index in `lifted`; the rest of the line is unchanged, so a malformed
// line stays malformed.
constexpr std::size_t kLiftedLength = 256;
struct LiftedLine {
    std::string line;
    std::vector<std::string_view> lifted;  // views into the original line
};
LiftedLine lift_long_strings(std::string_view line) {
    LiftedLine out;
    std::size_t copied = 0, open = 0;
    while ((open = line.find('"', open)) != std::string_view::npos) {
        std::size_t close = open;
        for (;;) {  // the closing quote: one preceded by an even number of backslashes
            close = line.find('"', close + 1);
            if (close == std::string_view::npos) {
                out.line.append(line.substr(copied));
                return out;
            }
            std::size_t escapes = 0;
            while (line[close - 1 - escapes] == '\\') ++escapes;
            if (escapes % 2 == 0) break;
        }
        const std::string_view content = line.substr(open + 1, close - open - 1);
        if (content.size() > kLiftedLength && content.find('\\') == std::string_view::npos) {
            out.line.append(line.substr(copied, open + 1 - copied));
            out.line += "\\u0000";
            out.line += std::to_string(out.lifted.size());
            out.line += '"';
            out.lifted.push_back(content);
            copied = close + 1;
        }
        open = close + 1;
    }
    out.line.append(line.substr(copied));
    return out;
}

// A string value of the parsed lifted line: its original text.
std::string_view original_text(const std::string& value, const std::vector<std::string_view>& lifted) {
    if (value.empty() || value[0] != '\0') return value;
    std::size_t k = 0;
    const auto [end, error] = std::from_chars(value.data() + 1, value.data() + value.size(), k);
    if (error != std::errc() || end != value.data() + value.size() || k >= lifted.size()) return value;
    return lifted[k];
}

// Output e of a stacked answer: every item's values, read from outputs[e.name] into items[k][e.name].
void read_stacked(const nlohmann::json& outputs, const nlohmann::json* shapes, const std::vector<std::string_view>& lifted,
                  const ExpectedOutput& e, int dim, std::vector<Tensors>& items) {
    const auto v = outputs.find(e.name);
    if (v == outputs.end())
        throw std::invalid_argument("the answer has no output '" + e.name + "'; every output the request names is expected");
    std::vector<int> shape = e.shape;
    shape[dim] = static_cast<int>(items.size());
    const std::string text = nlohmann::json(shape).dump();
    if (shapes) {
        const auto given = shapes->find(e.name);
        if (given != shapes->end() && !(given->is_array() && *given == nlohmann::json(shape)))
            throw std::invalid_argument("output '" + e.name + "' has shape " + excerpt(given->dump()) +
                                        ", expected " + text + " (" + std::to_string(items.size()) +
                                        " items stacked on dim " + std::to_string(dim) + ")");
    }
    if (!v->is_string())
        throw std::invalid_argument("output '" + e.name + "' is " + std::string(v->type_name()) +
                                    ", expected a base64 string of " + text + " float64 values");
    std::size_t count = 1;
    for (int d : shape) count *= static_cast<std::size_t>(d);
    unstack(e, float64_values(original_text(v->get_ref<const std::string&>(), lifted), count, "output '" + e.name + "' " + text),
            dim, items);
}
}  // namespace

StackedResponse parse_stacked_response(std::string_view line, const std::vector<ExpectedOutput>& expected,
                                       std::size_t count, const std::map<std::string, int>& batch_dims) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const LiftedLine lifted = lift_long_strings(line);
    std::string_view lifted_line = lifted.line;
    const nlohmann::json j = answer_object(lifted_line, kStackedAnswer);
    StackedResponse r;
    if (read_head(r, j, lifted_line, kStackedAnswer)) {
        r.error = original_text(r.error, lifted.lifted);
        return r;
    }
    // A "batch" array is the answer item by item; an integer is the announcement, which an adapter may repeat in
    // every answer.
    if (const auto b = j.find("batch"); b != j.end() && b->is_array()) {
        r.item_lines = item_lines(answer_object(line, kBatchAnswer), line, count, r.id);  // the line as it came
        return r;
    }
    const auto outputs = j.find("outputs");
    if (outputs == j.end() || !outputs->is_object())
        throw std::invalid_argument("the answer to a stacked request has no \"outputs\" object (nor \"batch\" nor "
                                    "\"error\"): " + excerpt(lifted.line) + "; expected " + kStackedAnswer);
    const auto shapes = j.find("shapes");
    const nlohmann::json* given = shapes != j.end() && shapes->is_object() ? &*shapes : nullptr;
    r.items.resize(count);
    for (const ExpectedOutput& e : expected) {
        const auto dim = batch_dims.find(e.name);
        if (dim == batch_dims.end() || dim->second < 0 || dim->second >= static_cast<int>(e.shape.size()) ||
            e.shape[dim->second] != 1)
            throw std::invalid_argument("output '" + e.name + "' has no batch dim of size 1 to unstack");
        read_stacked(*outputs, given, lifted.lifted, e, dim->second, r.items);
    }
    return r;
}

std::string batch_request_line(std::int64_t id, const Signature& s, const std::vector<Tensors>& items, bool stacked,
                               bool one_tensor) {
    const std::string first = format_lengths(lengths_of(s, items.at(0)));
    for (const Tensors& x : items)
        if (format_lengths(lengths_of(s, x)) != first)
            throw std::invalid_argument("the items of a batched request differ in lengths");
    const std::map<std::string, int> dims = one_tensor ? std::map<std::string, int>{} : batch_dims_of(s);
    if (stacked && !dims.empty()) {
        std::string line = format_stacked_request(id, s, items, dims);
        if (const std::string lengths = lengths_field(items.front()); !lengths.empty())
            line.insert(line.size() - 1, lengths);  // every item has the same lengths
        return line;
    }
    std::vector<std::string> lines;
    for (const Tensors& x : items) lines.push_back(batch_item(request_line(0, s, x, one_tensor)));
    return format_batch_request(id, lines, dims);
}

BatchResponse read_batch_answer(std::string_view line, const Signature& s, const std::vector<ExpectedOutput>& expected,
                                const Lengths& lengths, std::size_t count, bool stacked, bool one_tensor) {
    // The one-tensor form has no batch dim: its batches are items, never stacked.
    const std::map<std::string, int> dims = one_tensor ? std::map<std::string, int>{} : batch_dims_of(s);
    BatchResponse r;
    std::vector<std::string> lines;
    if (stacked && !dims.empty()) {
        StackedResponse stacked_answer = parse_stacked_response(line, expected, count, dims);
        static_cast<AnswerHead&>(r) = stacked_answer;
        lines = std::move(stacked_answer.item_lines);
        r.unstacked = !lines.empty();
        for (Tensors& outputs : stacked_answer.items)
            r.items.push_back(NamedResponse{{r.id, false, "", false}, std::move(outputs), false});
    } else {
        std::optional<std::string> error;
        lines = batch_items(line, count, r.id, error);
        r.is_error = error.has_value();
        r.error = error.value_or("");
    }
    for (std::size_t k = 0; k < lines.size(); ++k) {
        try {
            r.items.push_back(read_answer(lines[k], s, expected, lengths, one_tensor));
            r.taps_offered = r.taps_offered || r.items.back().taps_offered;
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("item " + std::to_string(k) + " of the batch: " + e.what());
        }
    }
    return r;
}

}  // namespace permcheck::adapters
