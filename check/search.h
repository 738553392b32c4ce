// A search for a failing case and its shrinking to the smallest, on RapidCheck's Shrinkable values.
// Deterministic: the same generator, seed and predicate give the same result.
#pragma once

#include "check/progress.h"

#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

namespace permcheck {

struct SearchOptions {
    int cases = 100;
    std::uint64_t seed = 0;
    int max_shrink_evaluations = 20000;  // a cap, so a pathological predicate cannot make shrinking hang
    // Asked before each case and each shrink step: true ends the search there (SearchResult::interrupted) with
    // the cases run and the smallest failure so far. A stop is never a case: it neither fails nor passes one.
    std::function<bool()> stop_requested{};
    // Called after each case and each shrink step.
    std::function<void(const SearchProgress&)> on_progress{};
};

template <class T> struct SearchResult {
    int cases_run = 0;       // cases generated before the first failure, the failing one included
    int evaluations = 0;     // predicate calls in all, shrinking included
    int shrink_steps = 0;    // accepted shrinks, from the first failure to the minimum
    int first_failure = -1;  // the index of the failing case, -1 when none failed
    std::optional<T> first;  // the failing case as generated
    std::optional<T> minimal;  // the same, shrunk (as far as it got when interrupted)
    bool interrupted = false;  // stop_requested ended the search before it finished its cases or its shrinking
};

// The RapidCheck size for case i of `cases`: grows from 0 to 100 (sizes above 100 hit undefined behaviour in
// Debian's RapidCheck snapshot).
inline int size_for_case(int i, int cases) { return cases <= 1 ? 100 : (i * 100) / (cases - 1); }

template <class T> struct ShrinkResult {
    rc::Shrinkable<T> minimal;  // the start when nothing smaller fails
    int steps = 0;              // accepted shrinks
    int evaluations = 0;        // predicate calls
    bool interrupted = false;   // `stop` ended the shrinking early
};

// Shrinks a failing value greedily: take a shrink that still fails, repeat until no shrink of the current value
// does, or until `max_evaluations` calls of `fails`. Each round starts where the last accepted shrink stood in
// the list and wraps around, rather than at the top: when the top of the list (deleting positions, say) keeps
// failing while later shrinks (putting back moved positions) keep succeeding, starting at the top would pay
// for every deletion again after each accepted shrink. The end is the same kind of minimum: a full round in
// which no shrink fails. Every failing call is accepted, so the last one that returned true was on the minimum.
// `stop`, when given, is asked before each call; true ends the shrinking with the smallest failure so far.
template <class T>
ShrinkResult<T> shrink(rc::Shrinkable<T> start, const std::function<bool(const T&)>& fails, int max_evaluations,
                       const std::function<bool()>& stop = {}) {
    ShrinkResult<T> result{std::move(start)};
    std::size_t resume = 0;  // the accepted shrink's index in its list
    const auto accepted = [&](const rc::Shrinkable<T>& candidate, std::size_t at) {
        if (stop && stop()) {
            result.interrupted = true;
            max_evaluations = result.evaluations;  // ends both loops
            return false;
        }
        ++result.evaluations;
        if (!fails(candidate.value())) return false;
        result.minimal = candidate;
        ++result.steps;
        resume = at;
        return true;
    };
    for (bool shrunk = true; shrunk && result.evaluations < max_evaluations;) {
        shrunk = false;
        rc::Seq<rc::Shrinkable<T>> tail = result.minimal.shrinks();
        rc::Seq<rc::Shrinkable<T>> top = tail;  // an independent copy, still at the top of the list
        std::size_t index = 0;
        while (index < resume && tail.next()) ++index;
        for (; !shrunk && result.evaluations < max_evaluations; ++index) {  // from `resume` to the end
            rc::Maybe<rc::Shrinkable<T>> next = tail.next();
            if (!next) break;
            shrunk = accepted(*next, index);
        }
        const std::size_t wrap = std::min(resume, index);
        for (std::size_t i = 0; !shrunk && i < wrap && result.evaluations < max_evaluations; ++i) {  // then the top
            rc::Maybe<rc::Shrinkable<T>> next = top.next();
            if (!next) break;
            shrunk = accepted(*next, i);
        }
    }
    return result;
}

// `fails(value)` is true when the value is a counterexample; the first one found is shrunk.
template <class T>
SearchResult<T> search(const rc::Gen<T>& gen, const std::function<bool(const T&)>& fails, const SearchOptions& opts,
                       const std::function<void(int)>& on_case = {}) {
    SearchResult<T> result;
    rc::Random random(opts.seed);
    const auto report = [&](int evaluations, bool shrinking) {
        if (opts.on_progress) opts.on_progress(SearchProgress{result.cases_run, opts.cases, evaluations, shrinking});
    };
    for (int i = 0; i < opts.cases; ++i) {
        if (opts.stop_requested && opts.stop_requested()) {
            result.interrupted = true;
            return result;
        }
        if (on_case) on_case(i);
        rc::Shrinkable<T> current = gen(random.split(), size_for_case(i, opts.cases));
        const bool failed = fails(current.value());
        result.cases_run = i + 1;
        ++result.evaluations;
        report(result.evaluations, false);
        if (!failed) continue;
        result.first_failure = i;
        result.first = current.value();
        const std::function<bool(const T&)> counted = [&, calls = 0](const T& v) mutable {
            const bool f = fails(v);
            report(result.evaluations + ++calls, true);
            return f;
        };
        const ShrinkResult<T> shrunk = shrink<T>(std::move(current), opts.on_progress ? counted : fails,
                                                 opts.max_shrink_evaluations - result.evaluations, opts.stop_requested);
        result.evaluations += shrunk.evaluations;
        result.shrink_steps = shrunk.steps;
        result.minimal = shrunk.minimal.value();
        result.interrupted = shrunk.interrupted;
        return result;
    }
    return result;
}

}  // namespace permcheck
