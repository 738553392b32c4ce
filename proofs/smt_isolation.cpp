// Z3's check() in a child process with a hard time limit. Z3 4.8.12 honours its "timeout" parameter in most
// phases but not all: on several non-equivariant layers (attention with RoPE, a learned table, a first-position
// readout) the nonlinear arithmetic solver ran for minutes past a 2 s limit, and neither the limit nor
// Z3_interrupt stopped it. A forked child can be killed; the parent only ever sees an answer or a timeout.
#include "proofs/smt.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace permcheck::detail {

namespace {

constexpr std::chrono::milliseconds kStopPoll{100};  // how often a stop request is asked while the child works
// The kill comes this long after Z3's own limit should have ended the check: room for a model to be written.
constexpr double kGraceSeconds = 1.0, kGracePerTimeoutSecond = 0.25;

// Z3's own measure of the check's time.
double solver_seconds(const z3::solver& s) {
    const z3::stats st = s.statistics();
    for (unsigned i = 0; i < st.size(); ++i)
        if (st.key(i) == "time") return st.is_double(i) ? st.double_value(i) : st.uint_value(i);
    return 0.0;
}

// A decimal approximation "-12.34567?" of an algebraic number, as an exact rational ("-1234567/100000").
Rational parse_decimal(std::string s) {
    if (!s.empty() && s.back() == '?') s.pop_back();
    const std::size_t dot = s.find('.');
    std::string digits = s, denominator = "1";
    if (dot != std::string::npos) {
        digits = s.substr(0, dot) + s.substr(dot + 1);
        denominator += std::string(s.size() - dot - 1, '0');
    }
    return Rational(digits + "/" + denominator);
}

// The model's value of a constant, rounded to the nearest double: the witness is then exactly representable
// in every report, and the exact confirmation runs on exactly these doubles.
double model_value(const z3::model& m, const Symbolic& c) {
    const z3::expr v = m.eval(c.expr(), true);
    if (v.is_numeral()) return Rational(Z3_get_numeral_string(v.ctx(), v)).convert_to<double>();
    if (v.is_algebraic()) return parse_decimal(v.get_decimal_string(30)).convert_to<double>();
    throw std::runtime_error("no numeric value for " + c.expr().to_string() + ": " + v.to_string());
}

// A double as a hex float line: exact.
std::string hex_line(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a\n", v);
    return buf;
}

// The child's whole answer as text: answer, seconds, then the reason or the model (hex floats, exact).
std::string answer_in_child(const z3::solver& original, const std::vector<Symbolic>& constants,
                            double timeout_seconds) {
    try {
        z3::solver solver = original;
        z3::params params(solver.ctx());
        params.set("timeout", static_cast<unsigned>(timeout_seconds * 1000));  // the graceful limit
        solver.set(params);
        const z3::check_result r = solver.check();
        const std::string seconds = hex_line(solver_seconds(solver));
        if (r == z3::unsat) return "unsat\n" + seconds;
        if (r == z3::unknown) return "unknown\n" + seconds + solver.reason_unknown() + "\n";
        std::ostringstream out;
        out << "sat\n" << seconds;
        try {
            const z3::model m = solver.get_model();
            std::string values;
            for (const Symbolic& c : constants) values += hex_line(model_value(m, c));
            out << "model " << constants.size() << "\n" << values;
        } catch (const std::exception& e) {
            out << "nomodel " << e.what() << "\n";
        }
        return out.str();
    } catch (const std::exception& e) {
        return std::string("unknown\n0x0p+0\nZ3 failed: ") + e.what() + "\n";
    } catch (...) {
        return "unknown\n0x0p+0\nZ3 failed with an unknown exception\n";
    }
}

void write_all(int fd, const std::string& s) {
    std::size_t done = 0;
    while (done < s.size()) {
        const ssize_t k = ::write(fd, s.data() + done, s.size() - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return;
        done += static_cast<std::size_t>(k);
    }
}

// Reads until EOF, the deadline or a stop request (asked every 0.1 s when given); false on the last two.
bool read_until(int fd, std::chrono::steady_clock::time_point deadline, std::string& data,
                const std::function<bool()>& stop) {
    char buf[4096];
    for (;;) {
        if (stop && stop()) return false;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        if (stop) left = std::min(left, kStopPoll);
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0 && stop) continue;  // a slice of the wait is over: ask again, then check the deadline
        if (ready <= 0) return false;
        const ssize_t k = ::read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return true;
        data.append(buf, static_cast<std::size_t>(k));
    }
}

// The child's answer into q; the model, if it sent one.
std::optional<std::vector<double>> parse(const std::string& data, SmtQuery& q) {
    std::istringstream in(data);
    std::string answer, seconds;
    if (!std::getline(in, answer) || !std::getline(in, seconds)) {
        q.reason_unknown = "the Z3 child process ended without an answer";
        return std::nullopt;
    }
    q.seconds = std::strtod(seconds.c_str(), nullptr);
    if (answer == "unsat") q.answer = SmtAnswer::unsat;
    else if (answer == "sat") q.answer = SmtAnswer::sat;
    if (q.answer == SmtAnswer::unknown) std::getline(in, q.reason_unknown);
    std::string tag;
    std::size_t count = 0;
    if (q.answer != SmtAnswer::sat || !(in >> tag) || tag != "model" || !(in >> count)) return std::nullopt;
    std::vector<double> values(count);
    std::string v;
    for (double& x : values) {
        in >> v;
        x = std::strtod(v.c_str(), nullptr);
    }
    if (!in) return std::nullopt;
    return values;
}

}  // namespace

std::optional<std::vector<double>> check_isolated(const z3::solver& solver, const std::vector<Symbolic>& constants,
                                                  double timeout_seconds, const std::function<bool()>& stop,
                                                  SmtQuery& q) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error(std::string("cannot create a pipe for Z3: ") + std::strerror(errno));
    std::fflush(nullptr);  // nothing buffered may be written twice
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        throw std::runtime_error(std::string("cannot start a process for Z3: ") + std::strerror(errno));
    }
    if (pid == 0) {
        ::close(fds[0]);
        write_all(fds[1], answer_in_child(solver, constants, timeout_seconds));
        ::_exit(0);  // no destructors, no atexit handlers of the parent's program
    }
    ::close(fds[1]);
    const auto started = std::chrono::steady_clock::now();
    const double limit = timeout_seconds + kGraceSeconds + kGracePerTimeoutSecond * timeout_seconds;
    const auto deadline = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double>(limit));
    std::string data;
    const bool finished = read_until(fds[0], deadline, data, stop);
    if (!finished) ::kill(pid, SIGKILL);
    ::close(fds[0]);
    int status = 0;
    rusage usage{};
    while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
    }
    q.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                    static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
    if (finished) return parse(data, q);
    const bool stopped = stop && stop();
    q.reason_unknown = stopped ? "interrupted" : "timeout";
    q.seconds = stopped ? std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
                        : timeout_seconds;
    return std::nullopt;
}

}  // namespace permcheck::detail
