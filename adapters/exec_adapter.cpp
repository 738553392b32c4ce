// The adapter process of `permcheck audit --exec` (adapters/exec_adapter.h): starting, stopping and reaping it, its
// pipes or socket under time limits, and its calls (one, batched, pipelined, taps); the lines it writes and reads are
// the protocol's (adapters/protocol.h).
#include "adapters/exec_adapter.h"

#include "adapters/python_path.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <spawn.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace permcheck::adapters {

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

// The process groups of the adapters running now, for kill_adapter_processes (0: a free slot). A process
// that finds no free slot is still killed by its own adapter; only a second signal's last words miss it.
std::array<std::atomic<pid_t>, 256> g_groups{};

void register_group(pid_t group) {
    for (std::atomic<pid_t>& slot : g_groups) {
        pid_t free = 0;
        if (slot.compare_exchange_strong(free, group)) return;
    }
}

void unregister_group(pid_t group) {
    for (std::atomic<pid_t>& slot : g_groups) {
        pid_t mine = group;
        if (slot.compare_exchange_strong(mine, 0)) return;
    }
}

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
}

static_assert(std::atomic<pid_t>::is_always_lock_free, "kill_adapter_processes reads the slots in a signal handler");

}  // namespace

void adopt_adapter_orphans() {
#ifdef PR_SET_CHILD_SUBREAPER
    prctl(PR_SET_CHILD_SUBREAPER, 1);  // best effort: without it the system's init reaps them
#endif
}

void kill_adapter_processes() noexcept {
    for (const std::atomic<pid_t>& slot : g_groups)
        if (const pid_t group = slot.load(); group > 0) kill(-group, SIGKILL);
}

ExecAdapter::ExecAdapter(ExecOptions opts) : opts_(std::move(opts)) {
    ignore_sigpipe();
    if (opts_.command.empty() && opts_.socket_path.empty())
        throw AdapterError("the adapter command is empty; expected a shell command");
    if (!(opts_.timeout_seconds > 0)) throw AdapterError("the timeout must be positive");
    if (!(opts_.startup_timeout_seconds > 0)) throw AdapterError("the start-up timeout must be positive");
    if (connected()) connect_socket();
    else spawn();
    fcntl(to_child_, F_SETFL, fcntl(to_child_, F_GETFL) | O_NONBLOCK);
    fcntl(from_child_, F_SETFL, fcntl(from_child_, F_GETFL) | O_NONBLOCK);
}

void ExecAdapter::connect_socket() {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (opts_.socket_path.size() >= sizeof address.sun_path)
        throw AdapterError("the socket path " + opts_.socket_path + " is longer than a Unix socket's " +
                           std::to_string(sizeof address.sun_path - 1) + " bytes");
    std::memcpy(address.sun_path, opts_.socket_path.data(), opts_.socket_path.size());
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw AdapterError(std::string("cannot create a socket: ") + std::strerror(errno));
    int rc;
    do {
        rc = connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        const int error = errno;
        close(fd);
        throw AdapterError("cannot connect to the serving process at " + opts_.socket_path + ": " +
                           std::strerror(error) + " (is the process that started this audit still running?)");
    }
    const int other = fcntl(fd, F_DUPFD_CLOEXEC, 0);  // two descriptors, so that each direction has its own
    if (other < 0) {
        close(fd);
        throw AdapterError(std::string("cannot duplicate a socket: ") + std::strerror(errno));
    }
    to_child_ = fd;
    from_child_ = other;
}

void ExecAdapter::spawn() {
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
    register_group(pid_);
    to_child_ = in[1];
    from_child_ = out[0];
#ifdef F_SETPIPE_SZ
    // Room for a whole batched request (64 KiB by default): pipelined requests (exchange_all) then wait in the
    // pipe while their answers are read, and the adapter never waits for permcheck to finish reading one.
    // Best effort: the limit is /proc/sys/fs/pipe-max-size (1 MiB by default), and a smaller pipe only costs speed.
    fcntl(to_child_, F_SETPIPE_SZ, 1 << 20);
    fcntl(from_child_, F_SETPIPE_SZ, 1 << 20);
#endif
}

ExecAdapter::~ExecAdapter() {
    if (to_child_ >= 0) {
        if (connected()) shutdown(to_child_, SHUT_WR);  // the other descriptor shares the socket: close is no EOF
        close(to_child_);  // EOF: a well-behaved adapter exits now
        to_child_ = -1;
    }
    wait_for_exit(std::min(2.0, opts_.timeout_seconds));
    stop();
}

void ExecAdapter::wait_for_exit(double seconds) {
    const double deadline = now() + seconds;
    while (!reaped_ && pid_ > 0 && now() < deadline) {
        if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
        else std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
}

void ExecAdapter::stop() {
    if (pid_ > 0) {
        kill(-pid_, SIGKILL);  // the whole group: also children the adapter started, even after it exited
        unregister_group(pid_);  // before reaping: until then no other process can have its id
        if (!reaped_) {
            while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
            }
            reaped_ = true;
        }
        // The group's orphans (the shell's python, killed with it), ours to reap when this process adopts them
        // (adopt_adapter_orphans); without that, none is our child and the loop ends at once.
        for (;;) {
            kill(-pid_, SIGKILL);  // again: a process the group started while it was being killed
            int ignored = 0;
            if (waitpid(-pid_, &ignored, 0) < 0 && errno != EINTR) break;  // ECHILD: none left
        }
    }
    if (to_child_ >= 0) close(to_child_);
    if (from_child_ >= 0) close(from_child_);
    to_child_ = from_child_ = -1;
}

std::string ExecAdapter::exit_description() {
    if (connected()) return "closed the connection";
    wait_for_exit(1.0);  // the adapter closed its end: a moment to exit before it is called alive
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
               (last_request_.empty() ? "none" : last_request_) +
               (connected() ? std::string() : "; command: " + opts_.command);  // a socket's path says nothing
    stop();
    throw AdapterError(failure_);
}

void ExecAdapter::fail_stopped(const char* during) {
    fail(std::string("stopped (Ctrl-C or SIGTERM) ") + during + "; " + killed_text());
}

int ExecAdapter::wait_ready(pollfd* p, int count, double deadline, const char* during) {
    for (;;) {
        if (stopping()) fail_stopped(during);
        const int left = ms_until(deadline);
        const int ready = poll(p, static_cast<nfds_t>(count), opts_.stop_requested ? std::min(left, 100) : left);
        if (ready < 0 && errno == EINTR) continue;  // a signal: the stop flag is asked at once
        if (ready < 0) fail(std::string("cannot wait for the adapter: ") + std::strerror(errno));
        if (ready > 0 || left == 0) return ready;
    }
}

void ExecAdapter::write_all(const std::string& data, double deadline) {
    std::size_t done = 0;
    while (done < data.size()) {
        pollfd p{to_child_, POLLOUT, 0};
        if (wait_ready(&p, 1, deadline, "while writing a request") == 0)
            fail("adapter did not read its request within " + limit_text() + "; " + killed_text());
        done += write_some(data.data() + done, data.size() - done);
    }
}

std::size_t ExecAdapter::write_some(const char* data, std::size_t size) {
    const ssize_t w = write(to_child_, data, size);
    if (w >= 0) return static_cast<std::size_t>(w);
    if (errno == EAGAIN || errno == EINTR) return 0;
    if (errno == EPIPE) fail("adapter " + exit_description());  // same words as an exit seen on read: which side sees it first is a race
    fail(std::string("cannot write to the adapter: ") + std::strerror(errno));
}

std::optional<std::string> ExecAdapter::take_line(std::size_t& scanned) {
    // Each byte is searched for the newline once: rescanning the whole buffer per chunk made a 64 MB line cost
    // quadratic time. Past 1 MB the buffer takes the limit's size at once, so that doubling never holds two
    // copies of a long line (peak memory stays near max_line_bytes, not twice it).
    const std::size_t nl = buffer_.find('\n', scanned);
    scanned = buffer_.size();
    if (buffer_.size() > (std::size_t{1} << 20) && buffer_.capacity() <= opts_.max_line_bytes)
        buffer_.reserve(opts_.max_line_bytes + 1);
    if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        scanned = 0;
        return line;
    }
    if (buffer_.size() > opts_.max_line_bytes)
        fail("adapter wrote an answer line longer than " + std::to_string(opts_.max_line_bytes) +
             " bytes; it was refused and the adapter killed");
    return std::nullopt;
}

void ExecAdapter::read_chunk() {
    char chunk[1 << 16];
    const std::size_t room = opts_.max_line_bytes + 1 - std::min(buffer_.size(), opts_.max_line_bytes);
    const ssize_t r = read(from_child_, chunk, std::min(sizeof chunk, room));
    if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        fail(std::string("cannot read from the adapter: ") + std::strerror(errno));
    }
    if (r == 0) {
        fail("adapter " + exit_description() +
             (buffer_.empty() ? std::string() : " in the middle of an answer line " + excerpt(buffer_)));
    }
    buffer_.append(chunk, static_cast<std::size_t>(r));
}

std::string ExecAdapter::read_line(double deadline) {
    std::size_t scanned = 0, nothing_to_write = 0;
    for (;;) {
        if (std::optional<std::string> line = take_line(scanned)) return std::move(*line);
        pump(deadline, nullptr, nothing_to_write);
    }
}

void ExecAdapter::pump(double deadline, const std::string* pending, std::size_t& offset) {
    pollfd p[2] = {{from_child_, POLLIN, 0}, {to_child_, POLLOUT, 0}};
    if (wait_ready(p, pending ? 2 : 1, deadline, "while waiting for an answer") == 0)
        fail("adapter did not answer within " + limit_text() + "; " + killed_text());
    if (p[0].revents) read_chunk();
    if (!pending || !p[1].revents) return;
    offset += write_some(pending->data() + offset, pending->size() - offset);
}

std::string ExecAdapter::killed_text() const {
    return connected() ? "the connection was closed (the serving process's call cannot be stopped from here)"
                       : "it was killed";
}

std::string ExecAdapter::limit_text() const {
    return answered_ == 0 ? seconds_text(opts_.startup_timeout_seconds) + " s (--startup-timeout, the first answer)"
                          : seconds_text(opts_.timeout_seconds) + " s (--timeout)";
}

template <class Parse> auto ExecAdapter::parse_answer(const std::string& line, Parse parse) {
    try {
        return parse(line);
    } catch (const std::invalid_argument& e) {
        // The hint only when the line is no JSON object: a log line on stdout, not a malformed answer.
        const std::size_t start = line.find_first_not_of(" \t");
        const bool object = start != std::string::npos && line[start] == '{';
        fail(std::string("adapter broke the protocol: ") + e.what() +
             (object ? "" : " (stdout carries only answer lines; write logs to stderr)"));
    }
}

template <class R> void ExecAdapter::accept(const R& r, std::int64_t id) {
    if (r.id != id)
        fail("adapter answered id " + std::to_string(r.id) + " to request id " + std::to_string(id) +
             "; answers come one per request, in order");
    if constexpr (requires { r.raised; })
        if (r.is_error && r.raised) {  // the layer itself raised (not the adapter); the adapter serves on
            ++answered_;
            throw LayerRaised("the layer raised: " + r.error, r.error_type, r.error_where);
        }
    if (r.is_error) fail("adapter answered with an error: " + r.error);
    if (r.taps_offered) {
        taps_offered_ = true;
        if (opts_.taps_offered) *opts_.taps_offered = true;
    }
    if constexpr (requires { r.unstacked; })
        if (r.unstacked && opts_.unstacked) ++*opts_.unstacked;
    ++answered_;
}

template <class Parse> auto ExecAdapter::exchange(const std::string& request, const std::string& what, Parse parse) {
    if (!failure_.empty()) throw AdapterError(failure_);
    if (stopping()) fail_stopped("before a request");
    const std::int64_t id = requests_ + 1;
    ++requests_;
    last_request_ = "id " + std::to_string(id) + ", " + what;
    const double deadline = now() + (answered_ == 0 ? opts_.startup_timeout_seconds : opts_.timeout_seconds);
    write_all(request, deadline);
    auto r = parse_answer(read_line(deadline), parse);
    accept(r, id);
    return r;
}

template <class Parse, class Done>
void ExecAdapter::exchange_all(const std::vector<std::string>& requests, const std::vector<std::string>& whats,
                               Parse parse, Done done) {
    if (!failure_.empty()) throw AdapterError(failure_);
    if (stopping()) fail_stopped("before a request");
    const std::int64_t first = requests_ + 1;
    std::size_t writing = 0, offset = 0, answered = 0, scanned = 0;
    const auto limit = [this] { return answered_ == 0 ? opts_.startup_timeout_seconds : opts_.timeout_seconds; };
    double deadline = now() + limit();  // each answer within the limit of the one before
    while (answered < requests.size()) {
        if (stopping()) fail_stopped("between the requests of a pipelined block");
        last_request_ = "id " + std::to_string(first + static_cast<std::int64_t>(answered)) + ", " + whats[answered];
        if (std::optional<std::string> line = take_line(scanned)) {
            auto r = parse_answer(*line, [&](const std::string& l) { return parse(answered, l); });
            accept(r, first + static_cast<std::int64_t>(answered));
            done(answered++, std::move(r));
            deadline = now() + limit();
            continue;
        }
        if (writing < requests.size() && offset == 0 && requests_ < first + static_cast<std::int64_t>(writing))
            ++requests_;  // request `writing` is under way
        pump(deadline, writing < requests.size() ? &requests[writing] : nullptr, offset);
        if (writing < requests.size() && offset == requests[writing].size()) {
            ++writing;
            offset = 0;
        }
    }
}

Mat<double> ExecAdapter::operator()(const Mat<double>& x) {
    const Signature s = one_tensor_signature(static_cast<int>(x.cols()), Output::sequence, 1, 1);
    return tensor_matrix::as_matrix(call(s, Tensors{{"x", tensor_matrix::as_tensor(x)}}, true).at("y"));
}

Tensors ExecAdapter::operator()(const Signature& s, const Tensors& inputs) { return call(s, inputs, opts_.one_tensor); }

Tensors ExecAdapter::call(const Signature& s, const Tensors& inputs, bool one_tensor) {
    const Lengths lengths = lengths_of(s, inputs);
    const std::vector<ExpectedOutput> expected = expected_answer(s, inputs, one_tensor);
    const std::string request = request_line(requests_ + 1, s, inputs, one_tensor) + "\n";
    const bool chunked = !chunks_field(s, inputs).empty();
    return exchange(request, format_lengths(lengths), [&, chunked](const std::string& line) {
               note_announcement(line);
               NamedResponse r = read_answer(line, s, expected, lengths, one_tensor);
               if (chunked && !r.is_error && answered_in_chunks(line)) r.outputs[kChunkedAnswer] = Tensor{};
               return r;
           }).outputs;
}

std::vector<Tap> ExecAdapter::taps(const Tensors& inputs, const Signature& s) {
    const std::string request = request_line(requests_ + 1, s, inputs, opts_.one_tensor);
    TapResponse r = exchange(with_taps(request) + "\n", format_lengths(lengths_of(s, inputs)) + ", taps", parse_tap_response);
    if (r.taps.empty() && !r.none_because.empty()) throw NoTapsAnswered(r.none_because);
    return std::move(r.taps);
}

NamedBlackBox exec_named_black_box(const ExecOptions& opts, const Signature& s) {
    return exec_batched_named_black_box(opts, s).one;
}

TapSource exec_tap_source(const ExecOptions& opts, const Signature& s) {
    auto adapter = std::make_shared<std::unique_ptr<ExecAdapter>>();
    return [opts, adapter, s](const Tensors& inputs) {
        if (!*adapter) {
            *adapter = std::make_unique<ExecAdapter>(opts);
            (**adapter)(s, inputs);
        }
        if (!(*adapter)->taps_offered()) throw NoTapsOffered("the adapter offers no taps");
        return (*adapter)->taps(inputs, s);
    };
}

void ExecAdapter::note_announcement(const std::string& line) {
    if (line.find("\"batch\"") == std::string::npos) return;
    if (const int k = parse_batch_announcement(line)) batch_ = k;
    if (line.find("\"stacked\"") != std::string::npos) stacked_ = parse_stacked_announcement(line);
}

namespace {
// A batched answer's items as each item's outputs; an item's error answer names its item and request.
std::vector<Answer<Tensors>> item_outputs(BatchResponse&& b, std::size_t count, std::int64_t id, const std::string& what,
                                          const std::string& command) {
    std::vector<Answer<Tensors>> out(b.items.size());
    for (std::size_t k = 0; k < b.items.size(); ++k) {
        if (b.items[k].is_error)
            out[k].error = "adapter answered with an error: " + b.items[k].error + " (item " + std::to_string(k) + " of " +
                           std::to_string(count) + " of request id " + std::to_string(id) + ", " + what +
                           "); command: " + command;
        else
            out[k].value = std::move(b.items[k].outputs);
    }
    return out;
}

// One batched request of a signature: its line (stacked when the adapter takes it so, else item by item), what it
// holds (for messages), and how its answer line is read into each item's answer.
struct NamedBatch {
    std::string request, what;
    std::size_t count = 0;
    std::function<BatchResponse(const std::string&)> parse;
};

NamedBatch named_batch(std::int64_t id, const Signature& s, const std::vector<Tensors>& inputs, bool stacked,
                       bool one_tensor) {
    NamedBatch b;
    b.count = inputs.size();
    const Lengths lengths = lengths_of(s, inputs.at(0));
    b.what = std::to_string(inputs.size()) + " items of " + format_lengths(lengths);
    b.request = batch_request_line(id, s, inputs, stacked, one_tensor) + "\n";
    b.parse = [s, expected = expected_answer(s, inputs.at(0), one_tensor), lengths, count = b.count, stacked,
               one_tensor](const std::string& line) {
        return read_batch_answer(line, s, expected, lengths, count, stacked, one_tensor);
    };
    return b;
}
}  // namespace

std::vector<Answer<Tensors>> ExecAdapter::operator()(const Signature& s, const std::vector<Tensors>& inputs) {
    if (inputs.empty()) return {};
    const std::int64_t id = requests_ + 1;
    const NamedBatch b = named_batch(id, s, inputs, stacked_, opts_.one_tensor);
    return item_outputs(exchange(b.request, b.what, b.parse), b.count, id, b.what, opts_.command);
}

std::vector<std::vector<Answer<Tensors>>> ExecAdapter::operator()(const Signature& s,
                                                                       const std::vector<std::vector<Tensors>>& parts) {
    std::vector<std::vector<Answer<Tensors>>> out(parts.size());
    std::vector<NamedBatch> batches;
    std::vector<std::size_t> part_of;  // the part of each request
    for (std::size_t p = 0; p < parts.size(); ++p) {
        if (parts[p].empty()) continue;
        try {
            batches.push_back(named_batch(requests_ + 1 + static_cast<std::int64_t>(batches.size()), s, parts[p], stacked_,
                                          opts_.one_tensor));
            part_of.push_back(p);
        } catch (const std::exception& e) {  // this part alone: its inputs cannot be sent
            out[p].assign(parts[p].size(), Answer<Tensors>{std::nullopt, e.what(), ""});
        }
    }
    std::vector<std::string> requests, whats;
    for (const NamedBatch& b : batches) {
        requests.push_back(b.request);
        whats.push_back(b.what);
    }
    const std::int64_t first = requests_ + 1;
    try {
        exchange_all(requests, whats, [&batches](std::size_t k, const std::string& line) { return batches[k].parse(line); },
                     [&](std::size_t k, BatchResponse&& answer) {
                         out[part_of[k]] = item_outputs(std::move(answer), batches[k].count,
                                                        first + static_cast<std::int64_t>(k), batches[k].what, opts_.command);
                     });
    } catch (const AdapterError& e) {  // the parts answered before the failure keep their answers
        for (std::size_t k = 0; k < batches.size(); ++k)
            if (out[part_of[k]].empty()) out[part_of[k]].assign(batches[k].count, Answer<Tensors>{std::nullopt, e.what(), ""});
    }
    return out;
}

BatchedNamedBlackBox exec_batched_named_black_box(const ExecOptions& opts, const Signature& s) {
    auto adapter = std::make_shared<ExecAdapter>(opts);
    BatchedNamedBlackBox box;
    box.one = [adapter, s](const Tensors& inputs) { return (*adapter)(s, inputs); };
    box.many.capacity = [adapter] { return std::min(adapter->batch_capacity(), kMaxBatchItems); };
    box.many.call = [adapter, s](const std::vector<Tensors>& inputs) { return (*adapter)(s, inputs); };
    box.many.call_all = [adapter, s](const std::vector<std::vector<Tensors>>& parts) { return (*adapter)(s, parts); };
    box.many.stacked = [adapter] { return adapter->stacked(); };
    return box;
}

}  // namespace permcheck::adapters
