// Long work on the command line: a progress line on stderr (on a terminal only) and a clean stop on Ctrl-C
// (SIGINT) or SIGTERM. The handler only records the signal; the engines poll it between calls and cases
// (AuditOptions::stop_requested, CheckOptions::stop_requested; `prove --all` between layers), so adapters are
// closed and reaped and the report keeps what was run.
#pragma once

#include "audit/blackbox.h"

#include <chrono>
#include <string>

namespace permcheck::cli {

// Whether progress may be drawn on stderr: only on a terminal, never in a pipe or CI.
bool progress_enabled();

// Installs the SIGINT and SIGTERM handlers for its lifetime and restores the previous ones after. A SIGINT that
// was ignored when the program started (a background job of a shell without job control) stays ignored.
class StopOnSignal {
public:
    StopOnSignal();
    ~StopOnSignal();
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;

    static bool requested();
    // What a second signal calls before it ends the program (as if no handler were installed): an
    // async-signal-safe function, e.g. one that kills the adapters' process groups, so that none outlives it.
    static void on_second_signal(void (*last_words)() noexcept);
    // The signal that asked, as a reader knows it: "Ctrl-C (SIGINT)" or "SIGTERM"; empty when none did.
    static std::string name();
};

// One line on stderr, redrawn in place at most ten times a second and erased when done; silent unless enabled
// (progress_enabled(): a terminal, not CI).
class ProgressLine {
public:
    explicit ProgressLine(bool enabled);
    ~ProgressLine();
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    // "audit: 12/100 cases, 24 calls, 40.1 calls/s, about 2 s left" (or "shrinking a failure, 31 calls").
    void audit(const AuditProgress& p);
    // "check: 12/100 cases, 40.1 cases/s, about 2 s left" (or "check: shrinking a failure, 31 evaluations so far").
    void check(const CheckProgress& p);
    // "prove: 3/21 layers, 0.52 layers/s, about 35 s left; now attention": `done` of `total` items.
    void count(const std::string& what, int done, int total, const std::string& unit, const std::string& now);
    // Erases the line, before other output goes to the terminal; the next update draws it again.
    void clear();

private:
    bool due();  // enabled, and the last drawing is at least 0.1 s old
    double seconds() const;
    void draw(const std::string& text);

    bool enabled_;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace permcheck::cli
