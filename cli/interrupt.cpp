#include "cli/interrupt.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <sstream>

namespace permcheck::cli {

namespace {

volatile std::sig_atomic_t g_signal = 0;
struct sigaction g_previous_int, g_previous_term;
bool g_int_installed = false;

extern "C" void record_signal(int sig) { g_signal = sig; }

}  // namespace

StopOnSignal::StopOnSignal() {
    g_signal = 0;
    struct sigaction action {};
    action.sa_handler = record_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, nullptr, &g_previous_int);
    g_int_installed = g_previous_int.sa_handler != SIG_IGN;
    if (g_int_installed) sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, &g_previous_term);
}

StopOnSignal::~StopOnSignal() {
    if (g_int_installed) sigaction(SIGINT, &g_previous_int, nullptr);
    sigaction(SIGTERM, &g_previous_term, nullptr);
}

bool StopOnSignal::requested() { return g_signal != 0; }

std::string StopOnSignal::name() {
    const int sig = g_signal;
    return sig == SIGINT ? "Ctrl-C (SIGINT)" : sig == SIGTERM ? "SIGTERM" : "";
}

ProgressLine::ProgressLine(bool enabled)
    : enabled_(enabled), start_(std::chrono::steady_clock::now()), last_(start_) {}

ProgressLine::~ProgressLine() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
}

void ProgressLine::audit(const AuditProgress& p) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    std::ostringstream s;
    s.precision(3);
    if (p.shrinking) {
        s << "audit: shrinking a failure, " << p.calls << " calls so far";
    } else {
        s << "audit: " << p.cases_done << "/" << p.cases_total << " cases, " << p.calls << " calls";
        if (seconds > 0) s << ", " << p.calls / seconds << " calls/s";
        if (p.cases_done > 0)
            s << ", about " << static_cast<long>(seconds * (p.cases_total - p.cases_done) / p.cases_done + 0.5)
              << " s left";
    }
    draw(s.str());
}

void ProgressLine::draw(const std::string& text) {
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace permcheck::cli
