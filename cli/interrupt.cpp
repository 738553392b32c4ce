#include "cli/interrupt.h"

#include "check/check_result.h"
#include "report/text.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace permcheck::cli {

namespace {

volatile std::sig_atomic_t g_signal = 0;
struct sigaction g_previous_int, g_previous_term;
bool g_int_installed = false;
void (*volatile g_last_words)() noexcept = nullptr;

// The first signal is recorded for the program to stop cleanly; a second one stops it at once, as if no handler
// had been installed, after the last words (signal and raise are async-signal-safe, and so must they be).
extern "C" void record_signal(int sig) {
    if (g_signal != 0) {
        if (g_last_words) g_last_words();
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return;
    }
    g_signal = sig;
}

}  // namespace

bool progress_enabled() { return isatty(STDERR_FILENO) != 0 && std::getenv("CI") == nullptr; }

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

void StopOnSignal::on_second_signal(void (*last_words)() noexcept) { g_last_words = last_words; }

std::string StopOnSignal::name() {
    const int sig = g_signal;
    return sig == SIGINT ? "Ctrl-C (SIGINT)" : sig == SIGTERM ? "SIGTERM" : "";
}

ProgressLine::ProgressLine(bool enabled)
    : enabled_(enabled), start_(std::chrono::steady_clock::now()), last_(start_) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::clear() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
}

bool ProgressLine::due() {
    if (!enabled_) return false;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return false;
    last_ = now;
    return true;
}

double ProgressLine::seconds() const { return std::chrono::duration<double>(last_ - start_).count(); }

namespace {
// ", about 12 s left" from the share done so far; empty before the first item is done.
std::string time_left(double seconds, int done, int total) {
    if (done <= 0 || total < done) return "";
    std::string text = ", about ";
    text += std::to_string(static_cast<long>(seconds * (total - done) / done + 0.5));
    text += " s left";
    return text;
}
}  // namespace

void ProgressLine::audit(const AuditProgress& p) {
    if (!due()) return;
    const double seconds = this->seconds();
    std::ostringstream s;
    if (p.shrinking) {
        s << "audit: shrinking a failure, " << p.calls << " calls so far";
    } else {
        s << "audit: " << p.cases_done << "/" << p.cases_total << " cases, " << p.calls << " calls";
        if (seconds > 0) s << ", " << rate_text(p.calls / seconds) << " calls/s";
        s << time_left(seconds, p.cases_done, p.cases_total);
    }
    draw(s.str());
}

void ProgressLine::check(const CheckProgress& p) {
    if (!p.shrinking) count("check", p.cases_done, p.cases_total, "cases", "");
    else if (due()) draw("check: shrinking a failure, " + std::to_string(p.calls) + " evaluations so far");
}

void ProgressLine::count(const std::string& what, int done, int total, const std::string& unit,
                         const std::string& now) {
    if (!due()) return;
    const double seconds = this->seconds();
    std::ostringstream s;
    s << what << ": " << done << "/" << total << " " << unit;
    if (seconds > 0 && done > 0) s << ", " << rate_text(done / seconds) << " " << unit << "/s";
    s << time_left(seconds, done, total);
    if (!now.empty()) s << "; now " << now;
    draw(s.str());
}

void ProgressLine::draw(const std::string& text) {
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace permcheck::cli
