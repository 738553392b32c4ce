#include "adapters/exec_adapter.h"

#include "adapters/python_path.h"

#include "io/json_limits.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <mutex>
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

double number_of(const nlohmann::json& v, const char* where) {
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
    throw std::invalid_argument(std::string("\"y\" holds ") + v.type_name() + " " + where +
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
nlohmann::json answer_object(std::string_view line) {
    // Before parsing: the error path dumps "error" values recursively (a million '[' overflowed the stack).
    json_limits::require_shallow(line, "the answer line " + excerpt(line));
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(replace_non_finite_tokens(line));
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument("the answer line is not JSON (" + std::string(e.what()) + "): " + excerpt(line) +
                                    "; expected {\"id\": N, \"y\": [...]} on one line");
    }
    if (!j.is_object())
        throw std::invalid_argument("the answer line is JSON " + std::string(j.type_name()) + ", not an object: " +
                                    excerpt(line) + "; expected {\"id\": N, \"y\": [...]}");
    return j;
}

// A pooled layer's answer: one flat array, one row.
Mat<double> vector_of(const nlohmann::json& y) {
    Mat<double> out(1, static_cast<Eigen::Index>(y.size()));
    for (std::size_t k = 0; k < y.size(); ++k)
        out(0, static_cast<Eigen::Index>(k)) = number_of(y[k], ("at index " + std::to_string(k)).c_str());
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
                number_of(row[k], ("at row " + std::to_string(i) + ", index " + std::to_string(k)).c_str());
    }
    return out;
}
}  // namespace

Response parse_response(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const nlohmann::json j = answer_object(line);
    Response r;
    const auto id = j.find("id");
    if (id == j.end() || !id->is_number_integer())
        throw std::invalid_argument("the answer has no integer \"id\": " + excerpt(line) +
                                    "; expected the id of the request it answers");
    r.id = id->is_number_unsigned() && id->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)
               ? -1
               : id->get<std::int64_t>();
    const auto err = j.find("error");
    if (err != j.end()) {
        r.is_error = true;
        // Not dump(): it recurses, and a fuzzer's deeply nested "error" value would exhaust the stack.
        r.error = err->is_string() ? err->get<std::string>()
                                   : std::string("(the adapter sent a JSON ") + err->type_name() + " as its error, not a string)";
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

Mat<double> ExecAdapter::operator()(const Mat<double>& x) {
    if (!failure_.empty()) throw AdapterError(failure_);
    const std::int64_t id = requests_ + 1;
    const std::string request = format_request(id, x) + "\n";
    ++requests_;
    last_request_ = "id " + std::to_string(id) + ", n=" + std::to_string(x.rows()) + ", d=" + std::to_string(x.cols());
    const double deadline = now() + (answered_ == 0 ? opts_.startup_timeout_seconds : opts_.timeout_seconds);
    write_all(request, deadline);
    const std::string line = read_line(deadline);
    Response r;
    try {
        r = parse_response(line);
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
    ++answered_;
    return std::move(r.y);
}

BlackBox exec_black_box(const ExecOptions& opts) {
    auto adapter = std::make_shared<ExecAdapter>(opts);
    return [adapter](const Mat<double>& x) { return (*adapter)(x); };
}

}  // namespace permcheck::adapters
