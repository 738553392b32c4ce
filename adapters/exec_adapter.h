// The subprocess adapter of `permcheck audit --exec`: a program that speaks the line protocol (README,
// "Auditing your own layer") becomes a BlackBox. One request line {"id":7,"x":[[...],...]} per call, one
// answer line {"id":7,"y":[[...],...]} (sequence), {"id":7,"y":[...]} (pooled) or {"id":7,"error":"text"}.
#pragma once

#include "check/blackbox.h"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace permcheck::adapters {

// One answer line, parsed. `vector` is true when y was one flat array (a pooled layer's answer): y is then
// one row.
struct Response {
    std::int64_t id = 0;
    bool is_error = false;
    std::string error;  // the adapter's own message when is_error
    Mat<double> y;
    bool vector = false;
};

// Parses one answer line (without its newline). Accepts NaN, Infinity and -Infinity outside strings, as
// Python's json module writes them. A pure function: throws std::invalid_argument saying what is wrong and
// what was expected; never crashes, whatever the bytes.
Response parse_response(std::string_view line);

// The request line for x (without the newline), numbers in shortest round-trip form.
std::string format_request(std::int64_t id, const Mat<double>& x);

struct ExecOptions {
    std::string command;                         // run as /bin/sh -c COMMAND
    double timeout_seconds = 30;                 // per request: writing it and reading the answer
    // The first request of the process instead: start-up (e.g. `import torch`) can take far longer than an answer.
    double startup_timeout_seconds = 120;
    std::size_t max_line_bytes = 64u << 20;      // a longer answer line is refused without being read whole
};

// One running adapter process, in its own process group; its stderr is the caller's stderr. Not thread-safe:
// one adapter per worker. Every failure throws AdapterError naming the cause and the last request; after a
// failure the process is gone and every further call throws the same error.
class ExecAdapter {
public:
    explicit ExecAdapter(ExecOptions opts);  // starts the process; throws AdapterError if it cannot
    ~ExecAdapter();                          // closes stdin, waits a moment, then kills the group and reaps
    ExecAdapter(const ExecAdapter&) = delete;
    ExecAdapter& operator=(const ExecAdapter&) = delete;

    Mat<double> operator()(const Mat<double>& x);
    int requests() const { return requests_; }
    pid_t pid() const { return pid_; }

private:
    [[noreturn]] void fail(const std::string& cause);
    std::string exit_description();  // "exited with status 3", after the process ended (reaps it)
    void stop();                     // kill the group and reap, idempotent
    void write_all(const std::string& data, double deadline);
    std::string read_line(double deadline);
    std::string limit_text() const;  // "30 s (--timeout)": the limit of the request under way


    ExecOptions opts_;
    pid_t pid_ = -1;
    int to_child_ = -1, from_child_ = -1;
    std::string buffer_;
    int requests_ = 0, answered_ = 0;
    std::string last_request_, failure_;
    bool reaped_ = false;
    int status_ = 0;
};

// A BlackBox that owns an adapter process (shared between copies of the function).
BlackBox exec_black_box(const ExecOptions& opts);

}  // namespace permcheck::adapters
