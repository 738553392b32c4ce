// The shrinking of a failing case to the smallest, on RapidCheck's Shrinkable values, and the size of each case a
// run draws. Deterministic: the same start and predicate give the same result.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <functional>
#include <utility>

namespace permcheck {

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

}  // namespace permcheck
