// The options and the result of a white-box check (check/engine.h runs it), in a header of their own that
// includes no RapidCheck, Boost or layer template: reports (report/report.h) and the programs that only print or
// store a check's record read this, not the engine.
#pragma once

#include "check/counterexample.h"
#include "check/progress.h"
#include "check/vocabulary.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace permcheck {

// Where a check stands, for a progress line: cases done and in all, evaluations so far, shrinking or not.
using CheckProgress = SearchProgress;

struct CheckOptions {
    Arithmetic arithmetic = Arithmetic::float64;
    int cases = 100;
    std::uint64_t seed = 1;
    int min_len = 1;
    int max_len = 8;
    int d = 4;
    // Asked between cases and between shrink steps: true stops the check (CheckResult::interrupted), keeping the
    // cases run and any counterexample found (shrunk as far as it got). The engine reads no signal itself: a
    // program that wants Ctrl-C to stop a check sets a flag in its handler and returns it here.
    std::function<bool()> stop_requested{};
    // Called after each case and each shrink step, from the thread that runs the check.
    std::function<void(const CheckProgress&)> on_progress{};
};

struct CheckResult {
    std::string layer;
    Property property = Property::equivariance;
    Arithmetic dtype = Arithmetic::float64;
    bool expected_holds = true;
    bool holds = true;
    int cases_run = 0, evaluations = 0;
    std::optional<Counterexample> counterexample;
    // Stopped by CheckOptions::stop_requested before it finished: holds says only that no case failed so far
    // (with a counterexample, holds is false and the counterexample may not be the smallest).
    bool interrupted = false;
    bool as_expected() const { return holds == expected_holds; }
};

// The replay command line for a check.
std::string replay_command(const std::string& layer, Property property, const CheckOptions& opts);

}  // namespace permcheck
