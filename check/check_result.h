// The options and the result of a white-box check (check/check.h runs it), in a header of their own that includes no
// RapidCheck, Boost or layer template: reports (report/report.h) and the programs that only print or store a check's
// record read this, not the check.
#pragma once

#include "cases/finding.h"
#include "cases/signature.h"
#include "cases/vocabulary.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace permcheck {

// Where a check or an audit stands, for a progress line: cases of this run done and in all, calls of the layer so
// far, and whether it is shrinking a failure (shrink calls are not cases).
struct AuditProgress {
    int cases_done = 0;
    int cases_total = 0;
    int calls = 0;
    bool shrinking = false;
};
using CheckProgress = AuditProgress;

struct CheckOptions {
    Arithmetic arithmetic = Arithmetic::float64;  // float32 | float64 | exact
    int cases = 100;
    std::uint64_t seed = 1;
    // Every axis's range, where given (a family's own otherwise: 1..8 for the layers of one sequence).
    std::optional<int> min_len, max_len;
    int d = 4;  // the width of a family built for any (its texts' "{d}")
    int max_shrink_evaluations = 2000;  // a cap on the shrinking of one failure
    // Asked between cases and between shrink steps: true stops the check (CheckResult::interrupted), keeping the
    // cases run and any counterexample found (shrunk as far as it got). The check reads no signal itself: a program
    // that wants Ctrl-C to stop a check sets a flag in its handler and returns it here.
    std::function<bool()> stop_requested{};
    // Called after each case and each shrink step, from the thread that runs the check.
    std::function<void(const CheckProgress&)> on_progress{};
};

struct CheckResult {
    std::string layer;
    Property property = Property{"equivariance"};  // as recorded: equivariance or invariance along the axis, or the row's
    std::string axis;                             // the axis the row permutes, shifts or pads
    Arithmetic dtype = Arithmetic::float64;
    bool expected_holds = true;
    bool holds = true;
    int cases_run = 0, evaluations = 0;
    // The shrunk case where the property failed, both sides of every output (only `axis` is permuted; shift and
    // padding: none).
    std::optional<Counterexample> counterexample;
    Signature signature;  // the family's, at the width and lengths checked
    std::string replay;   // the command line that runs this check again
    // Stopped by CheckOptions::stop_requested before it finished: holds says only that no case failed so far (with a
    // counterexample, holds is false and the counterexample may not be the smallest).
    bool interrupted = false;
    bool as_expected() const { return holds == expected_holds; }
};

}  // namespace permcheck
