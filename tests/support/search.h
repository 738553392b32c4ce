// A search for a failing value and its shrinking, over a RapidCheck generator: for the tests of the generators'
// shrinks (cases/search.h's shrink, as the check and the audit run it).
#pragma once

#include "cases/search.h"

#include <functional>
#include <optional>

namespace permcheck::test {

struct SearchOptions {
    int cases = 100;
    std::uint64_t seed = 0;
    int max_shrink_evaluations = 20000;  // a cap, so a pathological predicate cannot make shrinking hang
};

template <class T> struct SearchResult {
    int cases_run = 0;       // cases generated before the first failure, the failing one included
    int evaluations = 0;     // predicate calls in all, shrinking included
    int shrink_steps = 0;    // accepted shrinks, from the first failure to the minimum
    int first_failure = -1;  // the index of the failing case, -1 when none failed
    std::optional<T> first;  // the failing case as generated
    std::optional<T> minimal;  // the same, shrunk
};

// `fails(value)` is true when the value is a counterexample; the first one found is shrunk.
template <class T>
SearchResult<T> search(const rc::Gen<T>& gen, const std::function<bool(const T&)>& fails, const SearchOptions& opts) {
    SearchResult<T> result;
    rc::Random random(opts.seed);
    for (int i = 0; i < opts.cases; ++i) {
        rc::Shrinkable<T> current = gen(random.split(), size_for_case(i, opts.cases));
        const bool failed = fails(current.value());
        result.cases_run = i + 1;
        ++result.evaluations;
        if (!failed) continue;
        result.first_failure = i;
        result.first = current.value();
        const ShrinkResult<T> shrunk = shrink<T>(std::move(current), fails, opts.max_shrink_evaluations - result.evaluations);
        result.evaluations += shrunk.evaluations;
        result.shrink_steps = shrunk.steps;
        result.minimal = shrunk.minimal.value();
        return result;
    }
    return result;
}

}  // namespace permcheck::test
