// Checking a layer family against a property: random search in float, double or exact rationals, the
// shrunk counterexample, and its exact confirmation. The header of the white-box check; the records it shares with the audit are in check/counterexample.h.
#pragma once

#include "layers/catalog.h"
#include "check/case.h"
#include "check/counterexample.h"
#include "check/compare.h"
#include "check/generators.h"
#include "check/permutation.h"
#include "check/property.h"
#include "check/search.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
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

// The case generator of a check (check/case.h): n in [min_len, max_len] (shrinking toward min_len), input,
// permutation, weight seed and shift.
rc::Gen<Case> case_generator(const CheckOptions& opts);

// Evaluates one case: does the property hold on it? (both sides in `arithmetic`, the layer built from the
// case's weight seed)
Sides<double> evaluate_case(const LayerFamily& family, Property property, const Case& c, Arithmetic arithmetic);

// Searches for a case that violates the property and shrinks it; the result is labelled with the family's
// expectation.
CheckResult check(const LayerFamily& family, Property property, const CheckOptions& opts);
// The record of a failing case: both sides evaluated again, confirmed in exact arithmetic, with a replay line.
Counterexample counterexample_of(const LayerFamily& family, Property property, const Case& c, const CheckOptions& opts,
                                 int case_index, int shrink_steps);

// For executables that run many checks (the permcheck command, the benchmarks): a check frees and allocates
// the same matrices case after case, and glibc's defaults hand the top of the heap back to the system each time
// more than 128 KiB is free there, then page-fault it in again; at n = 64, d = 64 that was a quarter of a
// float64 check's time (bench/bench_check.cpp). This keeps up to 64 MiB of freed memory for reuse. It changes
// the whole process's allocator, so the library never calls it on its own. A no-op outside glibc.
void keep_freed_memory_for_reuse();

// The replay command line for a check.
std::string replay_command(const std::string& layer, Property property, const CheckOptions& opts);

}  // namespace permcheck
