// Checking a layer family against a property: random search in float, double or exact rationals, the
// shrunk counterexample, and its exact confirmation. The header of the white-box check; the records it shares with the audit are in check/counterexample.h.
#pragma once

#include "layers/catalog.h"
#include "check/case.h"
#include "check/check_result.h"
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

// The case generator of a check (check/case.h): n in [min_len, max_len] (shrinking toward min_len), input,
// permutation, weight seed and shift.
rc::Gen<MatrixCase> case_generator(const CheckOptions& opts);

// Evaluates one case: does the property hold on it? (both sides in `arithmetic`, the layer built from the
// case's weight seed)
Sides<double> evaluate_case(const LayerFamily& family, Property property, const MatrixCase& c, Arithmetic arithmetic);

// Searches for a case that violates the property and shrinks it; the result is labelled with the family's
// expectation.
CheckResult check(const LayerFamily& family, Property property, const CheckOptions& opts);
// The record of a failing case: both sides evaluated again, confirmed in exact arithmetic, with a replay line.
Counterexample counterexample_of(const LayerFamily& family, Property property, const MatrixCase& c, const CheckOptions& opts,
                                 int case_index, int shrink_steps);

// For executables that run many checks (the permcheck command, the benchmarks): a check frees and allocates
// the same matrices case after case, and glibc's defaults hand the top of the heap back to the system each time
// more than 128 KiB is free there, then page-fault it in again; at n = 64, d = 64 that was a quarter of a
// float64 check's time (bench/bench_check.cpp). This keeps up to 64 MiB of freed memory for reuse. It changes
// the whole process's allocator, so the library never calls it on its own. A no-op outside glibc.
void keep_freed_memory_for_reuse();


}  // namespace permcheck
