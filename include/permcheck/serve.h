// A C++ layer as an adapter program of `permcheck audit --exec`, with no protocol code: the counterpart of Python's
// permcheck.serve.
//
//   #include <permcheck/serve.h>
//   Eigen::MatrixXd my_layer(const Eigen::MatrixXd& x);      // n x d -> n x w (or a vector: a pooled layer)
//   int main() { return permcheck::serve(my_layer); }
//
//   permcheck audit --exec ./my_adapter --dim 8
//
// The layer is either
//   - a one-tensor layer, callable with `const Eigen::MatrixXd&` (or only `const Eigen::MatrixXf&`: it then gets
//     the input in float), one row per position, returning any dense Eigen matrix or expression: a compile-time
//     vector (VectorXd, RowVectorXd) is answered as one vector, a pooled layer's answer; any other matrix as its
//     rows, a sequence layer's (n rows, one feature each for an n x 1 answer). Audited with --dim D; or
//   - a layer over named tensors, callable with `const permcheck::Tensors&` returning permcheck::Tensors
//     (cases/signature.h, the type audit_signature takes: each tensor its shape and its values row-major, a mask
//     as 0 and 1, indices, token and position ids as integers, all doubles). Audited with a signature (--axis,
//     --input, --output): the answer holds every output the request names, by name, in the shape the layer gave.
//     A one-tensor request reaches it as the input "x" (n x D) and is answered with its output "y". A layer that
//     decodes in chunks (the incremental property) is served as permcheck::chunked_black_box(step, signature)
//     (<permcheck/audit.h>): a chunked request reaches it with its chunking, and its answer says "chunked".
// A one-tensor layer also answers a named request of one input of two dims and one output.
//
// serve() answers each request line of stdin with one line on stdout, in order (docs/protocol.md), until end
// of input or until permcheck closes the pipe, and returns 0. Batched requests: the first answer announces
// "batch": options.batch (256 unless set; 1 or less announces nothing), and a batch is answered item by item, one
// call of the layer each. A request that cannot be answered (a line that is not JSON, a ragged array, a shape that
// does not fit the values, an exception thrown by the layer, an output the layer did not give) gets the error
// answer {"id":N,"error":"..."} saying why, also written to stderr; serve() never stops on it. While it runs,
// stdout carries only answers: whatever the program writes to std::cout (or file descriptor 1) goes to stderr.
// Non-finite answers are written NaN, Infinity and -Infinity, as permcheck reads them and judges.
//
// Needs nlohmann-json (Debian: nlohmann-json3-dev): link permcheck::serve, which brings it with permcheck::permcheck.
// <permcheck/audit.h> and <permcheck/gtest.h> do not include this header.
#pragma once

#include "audit.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unistd.h>
#include <utility>
#include <vector>

namespace permcheck {

struct ServeOptions {
    // The most cases one request may hold, announced in the first answer; 1 or less: one case per request.
    int batch = 256;
    // Where requests come from and answers go; by default stdin and the process's stdout, which serve() then
    // claims for answers (what the program prints to std::cout goes to stderr meanwhile). For tests.
    std::istream* input = nullptr;
    std::ostream* output = nullptr;
};

namespace serve_detail {

using json = nlohmann::json;

// A layer over named tensors, or a one-tensor layer and the matrix it takes (as <permcheck/audit.h> tells them).
template <class F> constexpr bool named = std::is_invocable_r_v<Tensors, const F&, const Tensors&>;
template <class F> constexpr bool takes_float = !named<F> && detail::takes_float<F>;
template <class F> constexpr bool takes_double = !named<F> && detail::takes_double<F>;

// A request that cannot be answered: its message is the error answer.
struct BadRequest : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// ------------------------------------------------------------------------------------------------ writing JSON

// Shortest round-trip form (every double reads back exactly); non-finite values as Python's json writes them.
inline void write_number(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "NaN";
    } else if (std::isinf(v)) {
        out += v > 0 ? "Infinity" : "-Infinity";
    } else {
        char buffer[32];
        const auto end = std::to_chars(buffer, buffer + sizeof buffer, v).ptr;
        out.append(buffer, end);
    }
}

// A message as a JSON string (escaped; bytes that are not UTF-8 replaced, as an exception's text may hold any).
inline std::string quoted(const std::string& text) {
    return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

// A tensor's values nested in the order of its dims (a scalar a bare number).
inline void write_nested(std::string& out, const std::vector<int>& shape, const std::vector<double>& values,
                         std::size_t dim, std::size_t& next) {
    if (dim == shape.size()) {
        write_number(out, values[next++]);
        return;
    }
    out += '[';
    for (int k = 0; k < shape[dim]; ++k) {
        if (k > 0) out += ',';
        write_nested(out, shape, values, dim + 1, next);
    }
    out += ']';
}

// A tensor's JSON text, once its values are checked against its shape.
inline std::string tensor_text(const std::string& name, const Tensor& t) {
    for (int s : t.shape)
        if (s < 0) throw BadRequest("the layer's output '" + name + "' has a negative dim");
    if (t.size() != t.values.size())
        throw BadRequest("the layer's output '" + name + "' has " + std::to_string(t.values.size()) +
                         " values for its shape of " + std::to_string(t.size()));
    std::string out;
    std::size_t next = 0;
    write_nested(out, t.shape, t.values, 0, next);
    return out;
}

// A one-tensor answer: a compile-time vector as one vector, any other matrix as its rows.
template <class R> std::string matrix_answer(const R& answer) {
    using Plain = std::decay_t<R>;
    static_assert(std::is_base_of_v<Eigen::DenseBase<Plain>, Plain>,
                  "a one-tensor layer must return an Eigen matrix, vector or expression (n rows, or one vector "
                  "when pooled)");
    Tensor y = tensor_matrix::as_tensor(answer.template cast<double>());
    if constexpr (Plain::ColsAtCompileTime == 1 || Plain::RowsAtCompileTime == 1)
        y.shape = {static_cast<int>(y.values.size())};
    return tensor_text("y", y);
}

// ------------------------------------------------------------------------------------------------ reading JSON

inline constexpr std::size_t kMostDims = 32;

inline double number(const json& v, const std::string& what) {
    if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
    if (v.is_number()) return v.get<double>();
    throw BadRequest(what + ": expected a number, got " + std::string(v.type_name()));
}

inline void flatten(const json& v, const std::vector<int>& shape, std::size_t dim, std::vector<double>& out,
                    const std::string& name) {
    if (dim == shape.size()) {
        out.push_back(number(v, "input '" + name + "'"));
        return;
    }
    if (!v.is_array() || v.size() != static_cast<std::size_t>(shape[dim]))
        throw BadRequest("input '" + name + "', dim " + std::to_string(dim) + ": expected an array of " +
                         std::to_string(shape[dim]) + " entries, got " +
                         (v.is_array() ? std::to_string(v.size()) + " entries" : std::string(v.type_name())));
    for (const json& e : v) flatten(e, shape, dim + 1, out, name);
}

// The shape of nested arrays, read along their first entries (when the request has no "shapes").
inline std::vector<int> shape_of(const json& v) {
    std::vector<int> shape;
    for (const json* at = &v; at->is_array(); at = &(*at)[0]) {
        if (shape.size() == kMostDims) throw BadRequest("an input nests more than 32 arrays");
        shape.push_back(static_cast<int>(at->size()));
        if (at->empty()) break;
    }
    return shape;
}

inline std::vector<int> declared_shape(const json& s, const std::string& name) {
    if (!s.is_array() || s.size() > kMostDims)
        throw BadRequest("\"shapes\" of input '" + name + "': expected an array of at most 32 lengths");
    std::vector<int> shape;
    for (const json& d : s) {
        if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > (std::int64_t{1} << 31) - 1)
            throw BadRequest("\"shapes\" of input '" + name + "': expected lengths >= 0, got " + d.dump());
        shape.push_back(static_cast<int>(d.get<std::int64_t>()));
    }
    return shape;
}

inline Tensors named_inputs(const json& request) {
    const json& inputs = request.at("inputs");
    if (!inputs.is_object()) throw BadRequest("\"inputs\" must be an object of named nested arrays");
    const json* shapes = request.contains("shapes") ? &request["shapes"] : nullptr;
    if (shapes && !shapes->is_object()) throw BadRequest("\"shapes\" must be an object of named shapes");
    Tensors out;
    for (const auto& [name, values] : inputs.items()) {
        Tensor t;
        t.shape = shapes && shapes->contains(name) ? declared_shape((*shapes)[name], name) : shape_of(values);
        flatten(values, t.shape, 0, t.values, name);
        out.emplace(name, std::move(t));
    }
    // The lengths of axes no input has as a dim (a batch vector's graphs): entries kLengthInput + AXIS.
    if (request.contains("lengths")) {
        const json& lengths = request["lengths"];
        if (!lengths.is_object()) throw BadRequest("\"lengths\" must be an object of axis lengths");
        for (const auto& [axis, n] : lengths.items()) {
            if (!n.is_number_integer() || n.get<long long>() < 0)
                throw BadRequest("\"lengths\"." + axis + " must be a length (an integer >= 0)");
            out[kLengthInput + axis] = Tensor{{}, {static_cast<double>(n.get<long long>())}};
        }
    }
    return out;
}

inline std::vector<std::string> output_names(const json& request) {
    const auto names = request.find("outputs");
    if (names == request.end() || !names->is_array() || names->empty() ||
        !std::all_of(names->begin(), names->end(), [](const json& n) { return n.is_string(); }))
        throw BadRequest("\"outputs\" must be a non-empty list of output names");
    return names->get<std::vector<std::string>>();
}

// x of a one-tensor request: n rows of d numbers.
inline Eigen::MatrixXd rows_of(const json& x) {
    if (!x.is_array()) throw BadRequest("\"x\" must be an array of rows (n rows of d numbers)");
    const Eigen::Index n = static_cast<Eigen::Index>(x.size());
    if (n > 0 && !x[0].is_array()) throw BadRequest("\"x\" must be an array of rows (n rows of d numbers), got a " +
                                                    std::string(x[0].type_name()) + " as row 0");
    const Eigen::Index d = n == 0 ? 0 : static_cast<Eigen::Index>(x[0].size());
    Eigen::MatrixXd m(n, d);
    for (Eigen::Index i = 0; i < n; ++i) {
        const json& row = x[static_cast<std::size_t>(i)];
        if (!row.is_array() || static_cast<Eigen::Index>(row.size()) != d)
            throw BadRequest("\"x\", row " + std::to_string(i) + ": expected an array of " + std::to_string(d) +
                             " numbers, as row 0 has");
        for (Eigen::Index j = 0; j < d; ++j)
            m(i, j) = number(row[static_cast<std::size_t>(j)], "\"x\", row " + std::to_string(i));
    }
    return m;
}

// ------------------------------------------------------------------------------------------------ the server

template <class F> class Server {
public:
    Server(const F& layer, int batch) : layer_(layer), batch_(batch) {}

    // The answer line to one request line (without the newline).
    std::string answer_line(const std::string& line) {
        json request;
        try {
            request = json::parse(line);
        } catch (const std::exception& e) {
            return error_answer("null", std::string("the request is not JSON: ") + e.what());
        }
        if (request.is_object() && request.contains("batch")) return batch_answer(request);
        std::string answer = answer_of(request, true);
        if (batch_ > 1) {  // announced once, in the first ordinary answer
            answer.insert(answer.size() - 1, ",\"batch\":" + std::to_string(batch_));
            batch_ = 0;
        }
        return answer;
    }

private:
    static std::string id_of(const json& request) {
        return request.is_object() && request.contains("id") ? request["id"].dump() : "null";
    }

    static std::string error_answer(const std::string& id, const std::string& message) {
        std::cerr << "permcheck::serve: " << (id.empty() ? "a batch's item" : "request " + id) << ": " << message << '\n';
        std::string out = "{";
        if (!id.empty()) out += "\"id\":" + id + ",";
        return out + "\"error\":" + quoted(message) + "}";
    }

    // The answer object to an ordinary request (with its id), or to a batch's item (without).
    std::string answer_of(const json& request, bool with_id) {
        const std::string id = with_id ? id_of(request) : "";
        const std::string head = with_id ? "{\"id\":" + id + "," : "{";
        try {
            if (!request.is_object())
                throw BadRequest(std::string("a request is a JSON object, got ") + request.type_name());
            if (request.contains("stacked"))
                throw BadRequest("a stacked request, which this adapter never announced (it answers batches item by item)");
            if (request.contains("inputs")) {
                bool chunked = false;
                const std::string outputs = named_answer(request, chunked);
                return head + "\"outputs\":" + outputs + (chunked ? ",\"chunked\":true}" : "}");
            }
            if (request.contains("x")) return head + "\"y\":" + one_tensor_answer(request["x"]) + "}";
            throw BadRequest("a request holds \"x\" (one tensor) or \"inputs\" (named inputs); this one holds neither");
        } catch (const LayerRaised& e) {  // the layer itself raised: a finding in chunks or against a reference
            std::string out = error_answer(id, e.what());
            std::string said = ",\"raised\":true";
            if (!e.type.empty()) said += ",\"type\":" + quoted(e.type);  // what makes two errors one
            if (!e.where.empty()) said += ",\"where\":" + quoted(e.where);
            return out.insert(out.size() - 1, said);
        } catch (const std::exception& e) {
            return error_answer(id, e.what());
        } catch (...) {
            return error_answer(id, "the layer threw something that is not a std::exception");
        }
    }

    std::string batch_answer(const json& request) {
        const std::string id = id_of(request);
        const json& items = request["batch"];
        if (!items.is_array()) return error_answer(id, "\"batch\" must be a list of request objects");
        std::string out = "{\"id\":" + id + ",\"batch\":[";
        for (const json& item : items) {
            if (out.back() != '[') out += ',';  // after the first answer
            out += answer_of(item, false);
        }
        return out + "]}";
    }

    std::string one_tensor_answer(const json& x) {
        const Eigen::MatrixXd m = rows_of(x);
        if constexpr (named<F>) {
            const Tensors outputs = std::invoke(layer_, Tensors{{"x", tensor_matrix::as_tensor(m)}});
            return output_value(outputs, "y");
        } else {
            return matrix_call(m);
        }
    }

    // A chunked request (the incremental property) reaches a layer over named tensors as its inputs and the entry
    // kChunksInput + AXIS holding the chunks' ends; `chunked` tells whether it answered in chunks (kChunkedAnswer:
    // a chunked_black_box of a ChunkStep, <permcheck/audit.h>).
    std::string named_answer(const json& request, bool& chunked) {
        const std::vector<std::string> names = output_names(request);
        Tensors inputs = named_inputs(request);
        if (request.contains("chunks")) {
            const json& c = request["chunks"];
            if (!c.is_object() || !c.contains("axis") || !c["axis"].is_string() || !c.contains("ends") || !c["ends"].is_array())
                throw BadRequest("\"chunks\" must be an object {\"axis\": NAME, \"ends\": [...]}");
            Tensor ends{{static_cast<int>(c["ends"].size())}, {}};
            for (const json& e : c["ends"]) ends.values.push_back(number(e, "\"chunks\".\"ends\""));
            inputs[kChunksInput + c["axis"].get<std::string>()] = std::move(ends);
        }
        if constexpr (named<F>) {
            // The layer's own exception is "raised" (a finding against a reference).
            const Tensors outputs = raising_box(std::cref(layer_))(inputs);
            chunked = outputs.count(kChunkedAnswer) > 0;
            std::string out = "{";
            for (std::size_t k = 0; k < names.size(); ++k) {
                if (k > 0) out += ',';
                out += quoted(names[k]) + ":" + output_value(outputs, names[k]);
            }
            return out + "}";
        } else {
            if (inputs.size() != 1 || names.size() != 1 || inputs.begin()->second.shape.size() != 2)
                throw BadRequest("this adapter serves a one-tensor layer (an Eigen matrix in, one out): audit it with "
                                 "--dim D, or with one input of two dims and one output");
            std::string out = "{";  // appends: GCC 12 at -O3 warns falsely (-Wrestrict) on "{" + a temporary
            out += quoted(names[0]);
            out += ':';
            out += matrix_call(tensor_matrix::as_matrix(inputs.begin()->second));
            return out + "}";
        }
    }

    std::string matrix_call(const Eigen::MatrixXd& m) {
        if constexpr (takes_float<F>) {
            const Eigen::MatrixXf input = m.cast<float>();
            return matrix_answer(std::invoke(layer_, input));
        } else if constexpr (takes_double<F>) {
            return matrix_answer(std::invoke(layer_, m));
        } else {
            throw BadRequest("unreachable");  // serve()'s static_assert refuses such a layer
        }
    }

    static std::string output_value(const Tensors& outputs, const std::string& name) {
        const auto it = outputs.find(name);
        if (it == outputs.end()) {
            std::string given;
            for (const auto& [n, t] : outputs) given += (given.empty() ? "" : ", ") + n;
            throw BadRequest("the layer returned no output '" + name + "' (it returned " +
                             (given.empty() ? std::string("none") : given) + ")");
        }
        return tensor_text(name, it->second);
    }

    const F& layer_;
    int batch_;
};

// Writes whole answers to a file descriptor; false once the reader is gone (EPIPE) or the write fails.
inline bool write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace serve_detail

// Answers permcheck's requests with `layer` until end of input (see the top of this header); returns 0.
template <class F> int serve(const F& layer, const ServeOptions& options = {}) {
    static_assert(serve_detail::named<F> || serve_detail::takes_double<F> || serve_detail::takes_float<F>,
                  "serve: a layer must be callable (through a const call operator) with const Eigen::MatrixXd& or "
                  "const Eigen::MatrixXf& (n x d, one row per position), or with const permcheck::Tensors& "
                  "returning permcheck::Tensors");
    serve_detail::Server<F> server(layer, options.batch);
    std::istream& in = options.input ? *options.input : std::cin;
    // Answers every request line with `write`, until the input ends or write fails.
    const auto answer_all = [&](const auto& write) {
        std::string line;
        while (std::getline(in, line))
            if (line.find_first_not_of(" \t\r") != std::string::npos && !write(server.answer_line(line) + "\n")) break;
    };
    if (options.output) {
        answer_all([&](const std::string& answer) { return static_cast<bool>(*options.output << answer << std::flush); });
        return 0;
    }
    // Claim stdout: answers go to a duplicate of descriptor 1, and descriptor 1 itself to stderr meanwhile, so
    // that what the layer prints cannot break a line of the protocol. A closed pipe ends the loop (EPIPE), not
    // the process (SIGPIPE ignored meanwhile).
    std::cout.flush();
    std::fflush(stdout);
    const int answers = ::dup(STDOUT_FILENO);
    const bool claimed = answers >= 0 && ::dup2(STDERR_FILENO, STDOUT_FILENO) >= 0;
    const int fd = claimed ? answers : STDOUT_FILENO;
    const auto previous_sigpipe = std::signal(SIGPIPE, SIG_IGN);
    answer_all([fd](const std::string& answer) { return serve_detail::write_all(fd, answer); });  // false: pipe closed
    std::signal(SIGPIPE, previous_sigpipe);
    std::cout.flush();
    std::fflush(stdout);
    if (claimed) ::dup2(answers, STDOUT_FILENO);
    if (answers >= 0) ::close(answers);
    return 0;
}

}  // namespace permcheck
