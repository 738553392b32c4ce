// The subprocess adapter of `permcheck audit --exec`: a program that speaks the line protocol (adapters/protocol.h,
// docs/audit.md) becomes the NamedBlackBox of a signature (cases/signature.h; with ExecOptions::one_tensor, the
// one-tensor form's signature, one_tensor_signature, spoken in that form's dialect: {"id","x"} in, {"id","y"} out),
// with its batched side once the adapter announces batches, and a source of taps after a violation.
#pragma once

#include "adapters/protocol.h"
#include "audit/signature_audit.h"

#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace permcheck::adapters {

struct ExecOptions {
    std::string command;                         // run as /bin/sh -c COMMAND
    // Instead of a command: the path of a Unix stream socket that a serving process listens on (the Python
    // package's in-process audits). Each adapter is one connection, spoken to exactly as to a process's pipes;
    // closing it (our end of writing first) is what ending a process is.
    std::string socket_path;
    double timeout_seconds = 30;                 // per request: writing it and reading the answer
    // The first request of the process instead: start-up (e.g. `import torch`) can take far longer than an answer.
    double startup_timeout_seconds = 120;
    std::size_t max_line_bytes = 64u << 20;      // a longer answer line is refused without being read whole
    // Set (from any thread) when an answer offers taps ("taps_offered": true), if given: so that a caller learns
    // from the audit's own answers whether asking for taps is worth a process of its own.
    std::shared_ptr<std::atomic<bool>> taps_offered{};
    // Counted (from any thread), if given, for each stacked request the adapter answered item by item (the layer
    // refused one forward pass over the batch): so that the verdict line can say the batches were not the layer's.
    std::shared_ptr<std::atomic<int>> unstacked{};
    // Asked, if given, before each request and at least every 100 ms while one is under way (writing it or
    // waiting for its answer): true kills the adapter and fails the call with AdapterError ("stopped ..."), so that
    // a stop (Ctrl-C, SIGTERM) never waits out a --timeout. The caller tells that error from the layer's by asking
    // its own stop flag.
    std::function<bool()> stop_requested{};
    // The layer is the one-tensor form's (its signature one_tensor_signature's, audit/blackbox.h): its requests and
    // answers are that form's lines ({"id","x"} in, {"id","y"} out), never stacked. Set by the edge that converted it.
    bool one_tensor = false;
};

// SIGKILL to the process group of every adapter process still running. Async-signal-safe (atomic loads and
// kill(2) only): what a second Ctrl-C calls before permcheck dies of it, so that no adapter outlives permcheck.
void kill_adapter_processes() noexcept;

// Makes this process the reaper of its descendants' orphans (Linux's PR_SET_CHILD_SUBREAPER), so that stopping an
// adapter reaps every process of its group, not only the shell: `/bin/sh -c "python3 a.py"` forks python, which a
// kill of the group orphans, and an init that does not reap (a container's) would keep it a zombie. For a
// program's main; a library leaves it to its caller.
void adopt_adapter_orphans();

// One running adapter process, in its own process group; its stderr is the caller's stderr; or one connection to
// a serving process (ExecOptions::socket_path). Not thread-safe: one adapter per worker. Every failure throws AdapterError naming the cause and the last request; after a
// failure the process is gone and every further call throws the same error.
class ExecAdapter {
public:
    explicit ExecAdapter(ExecOptions opts);  // starts the process; throws AdapterError if it cannot
    ~ExecAdapter();                          // closes stdin, waits a moment, then kills the group and reaps
    ExecAdapter(const ExecAdapter&) = delete;
    ExecAdapter& operator=(const ExecAdapter&) = delete;

    // An audit's call: every input of `s` in, every output of `s` back, each of the shape the inputs' lengths give
    // it (the one-tensor form's y as the adapter answered it, its rows checked by one_tensor_answer).
    Tensors operator()(const Signature& s, const Tensors& inputs);
    // The one-tensor form's call, in its dialect whatever the options say: x (n x d) in, y as the adapter answered it.
    Mat<double> operator()(const Mat<double>& x);
    // The batched calls: several inputs of equal lengths in one request (after the adapter announced K: at most
    // K). An item the adapter answered with an error gets that error; a failure of the request throws.
    std::vector<Answer<Tensors>> operator()(const Signature& s, const std::vector<Tensors>& inputs);
    // Several such calls at once (part p's answers in element p), their requests pipelined (exchange_all). A part
    // whose inputs cannot be sent, or that a failure of the adapter left unanswered, has that error in every item.
    std::vector<std::vector<Answer<Tensors>>> operator()(const Signature& s,
                                                              const std::vector<std::vector<Tensors>>& parts);
    int batch_capacity() const { return batch_; }  // the K the adapter announced, 0 before
    bool stacked() const { return stacked_; }       // it announced "stacked": true (a signature's batches go stacked)
    // The taps of one evaluation.
    std::vector<Tap> taps(const Tensors& inputs, const Signature& s);
    bool taps_offered() const { return taps_offered_; }  // some answer offered taps
    pid_t pid() const { return pid_; }

private:
    void spawn();            // starts opts_.command with its stdin and stdout on pipes
    void connect_socket();   // connects to opts_.socket_path
    bool connected() const { return !opts_.socket_path.empty(); }
    std::string killed_text() const;  // "it was killed", or what closing a connection does
    [[noreturn]] void fail(const std::string& cause);
    bool stopping() const { return opts_.stop_requested && opts_.stop_requested(); }
    [[noreturn]] void fail_stopped(const char* during);  // fail() with the stop's words
    // poll(2) until some of p is ready (> 0) or the deadline passes (0), in slices that let a stop request end the
    // wait (fail_stopped) and retrying on EINTR.
    int wait_ready(pollfd* p, int count, double deadline, const char* during);
    std::string exit_description();  // "exited with status 3", after the process ended (reaps it)
    void stop();                     // kill the group and reap, idempotent
    void wait_for_exit(double seconds);  // reaps the process if it exits within `seconds`
    void write_all(const std::string& data, double deadline);
    // Writes what the pipe takes of data[0, size) now: the bytes written (0: none now); fails on a write error.
    std::size_t write_some(const char* data, std::size_t size);
    std::string read_line(double deadline);
    std::optional<std::string> take_line(std::size_t& scanned);  // a whole line from the buffer, if it holds one
    void read_chunk();  // what the adapter wrote, into the buffer (fails at its end)
    // Waits for the adapter's stdout to hold bytes or (pending) its stdin to take some: reads a chunk, or writes
    // *pending from offset on as far as the pipe takes it.
    void pump(double deadline, const std::string* pending, std::size_t& offset);
    std::string limit_text() const;  // "30 s (--timeout)": the limit of the request under way
    // Sends one request line (its id is requests_ + 1, described for messages as `what`) and returns the answer
    // line. `parse` reads it (throwing std::invalid_argument for a protocol error); the id and an error answer
    // are checked here.
    template <class Parse> auto exchange(const std::string& request, const std::string& what, Parse parse);
    // The answer line read by parse; a std::invalid_argument fails the adapter as a protocol error.
    template <class Parse> auto parse_answer(const std::string& line, Parse parse);
    // Checks an answer to request `id` (its id, an error answer) and notes what it offers.
    template <class R> void accept(const R& r, std::int64_t id);
    // Several requests (described as whats[k]) written while their answers are read: an answer is read as soon
    // as it is whole, so the adapter computes the next one meanwhile. Answer k is read by parse(k, line) and handed
    // to done(k, answer). Each answer is due within the limit of the one before. Fails as exchange() does, after
    // the answers before the failure were handed on.
    template <class Parse, class Done>
    void exchange_all(const std::vector<std::string>& requests, const std::vector<std::string>& whats, Parse parse,
                      Done done);
    void note_announcement(const std::string& line);  // learns K and "stacked" from an ordinary answer line
    Tensors call(const Signature& s, const Tensors& inputs, bool one_tensor);  // operator(), in the dialect given

    ExecOptions opts_;
    pid_t pid_ = -1;
    int to_child_ = -1, from_child_ = -1;
    std::string buffer_;
    int requests_ = 0, answered_ = 0;
    std::string last_request_, failure_;
    bool reaped_ = false;
    int batch_ = 0;
    bool stacked_ = false;
    bool taps_offered_ = false;
    int status_ = 0;
};

// A NamedBlackBox that owns an adapter process (shared between copies of the function), speaking the signature's
// request and answer lines.
NamedBlackBox exec_named_black_box(const ExecOptions& opts, const Signature& s);
// The same with its batched side, which takes requests of at most min(K, 1024) items once the adapter announced K,
// pipelined when several are asked at once (call_all), stacked when the adapter announced "stacked" and the
// signature has batch dims (the one-tensor form has none: its batches are items).
BatchedNamedBlackBox exec_batched_named_black_box(const ExecOptions& opts, const Signature& s);
// The taps of a counterexample, from an adapter process of their own, started on the first call. Its first call
// sends a plain request first and throws NoTapsOffered (audit/taps.h) when that answer does not offer them, so no
// adapter is ever sent a tap request it did not ask for.
TapSource exec_tap_source(const ExecOptions& opts, const Signature& s);

}  // namespace permcheck::adapters
