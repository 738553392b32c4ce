// Where a search stands, as its progress callback sees it: a header of its own (no RapidCheck), so that the
// records of a check (check/check_result.h) and the reports built on them stay light.
#pragma once

namespace permcheck {

// Where a search stands: cases done and in all, predicate calls so far, and whether it is shrinking a failure.
struct SearchProgress {
    int cases_done = 0;
    int cases_total = 0;
    int evaluations = 0;
    bool shrinking = false;
};

}  // namespace permcheck
