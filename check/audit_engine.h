// The engine of black-box audits: the run of a schedule over workers (the lowest failing case wins, whatever the
// number of workers; the precision inferred from PrecisionEvidence), the shrink of a failure (reproduce, shrink the
// case, or shrink the input answered twice), stop requests and progress, and the verdict. One evaluator runs on it,
// check/signature_audit.cpp's, for the signature form and the one-tensor shorthand alike; the contract an evaluator
// meets is the concept `Evaluator` below. Internal: it includes RapidCheck (check/search.h). Defined here (the
// templates) and in check/audit_engine.cpp.
#pragma once

#include "check/blackbox.h"
#include "check/compare.h"
#include "check/search.h"

#include <concepts>
#include <cstddef>

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace permcheck::engine {

// What a case showed, once judged.
// batch_dependent: an item's answer in a batched request differs from its answer alone (never found by judge();
// the confirmation of a batched run finds it: confirm_alone, below).
enum class Outcome { pass, violated, non_finite, nondeterministic, batch_dependent };

// What the values of the answers say of their precision. permcheck's real inputs are short dyadic numbers: k / 2^e
// with e <= 20 and |k| <= 2^(e + 3) (check/generators.h, Sampler::value), at most 23 significant bits; masks and
// indices are small integers, and so are token and position ids below 2^23 (most are). A layer that copies,
// permutes, negates, masks, selects or scales them by powers of two, or adds a few with room to spare, answers
// such numbers in any precision, exactly: they say nothing of the precision it computes in. A float32 rounding fills float32's 24-bit significand (its last bit is
// set in about half the values it rounds). So, over every finite entry of the answers (non-finite ones say nothing;
// an integer is a value like any other, zero has no significant bit):
//   - some entry is not a float32 value (beyond its range, or more bits than its significand): float64;
//   - else some entry has more than kShortDyadicBits = 23 significant bits (check/blackbox.h; float32 rounding
//     seen): float32;
//   - else (every entry a short dyadic number, or none finite): float64, the stricter tolerance, which exact
//     answers meet: ambiguous evidence judged as float64 and said so (a float32 layer that never rounds is exact).
// One rounded entry anywhere decides, so a float32 layer that computes exactly on some cases and rounds on others
// is float32. A float64 layer whose answers are exact sums of two inputs can show a 24th bit and be inferred
// float32: give --dtype float64. An audit that infers its dtype runs every case up to the first that fails even
// with the float32 tolerance, then decides from all their answers and judges them with the tolerance decided, so
// the verdict is that of an audit given that dtype (the replay line names it).
int significant_bits(double v);  // of a finite v: 0 for zero, 1 for a power of two, up to 53
struct PrecisionEvidence {
    bool answered = false;      // some answer was added (possibly without a finite entry)
    bool any_finite = false;
    bool all_float32 = true;    // every finite entry is a float32 value
    bool rounded = false;       // some float32 value has more than kShortDyadicBits significant bits
    void add(const double* values, std::size_t count);
    void add(const std::vector<double>& values) { add(values.data(), values.size()); }
    void add(const PrecisionEvidence& other);
    Arithmetic dtype() const;
    DtypeEvidence evidence() const;  // which of the rules above decided (no_answer when nothing was added)
};

// The precisions a run judges each case with: the given dtype, or, when it is inferred, float32 (the looser,
// first) and float64.
std::vector<Arithmetic> candidate_precisions(const AuditOptions& o);

inline bool stop_requested(const AuditOptions& o) { return o.stop_requested && o.stop_requested(); }

// A worker whose black box batches takes this many times the box's capacity of cases at once: a case asks two
// or three evaluations, and a block's evaluations are split by lengths.
inline constexpr std::size_t kBlockPerCapacity = 4;

// What the batched evaluations of a block gave one case: its answers, or the error of one of its evaluations
// and that evaluation's request (as last_request names it).
template <class A> struct Asked {
    std::optional<A> answers;
    std::string error, request;
};

// The contract of an evaluator, what the engine runs on: it asks a black box for the answers to a case, judges
// them with a tolerance, asks again (a reproduction, an input twice), shrinks and records.
template <class E>
concept Evaluator = requires(E& ev, const E& cev, const typename E::Case& c, const typename E::Answers& a,
                             const typename E::Observation& ob, const ToleranceModel& t, AuditResult& r,
                             const std::vector<typename E::Case>& cases, const std::vector<bool>& repeats) {
    { ev.evaluations } -> std::convertible_to<int>;            // calls of the black box so far
    { ev.last_request } -> std::convertible_to<std::string>;   // the last request, as messages name it
    { a.evidence } -> std::convertible_to<PrecisionEvidence>;  // what the answers say of their precision
    { ob.outcome } -> std::convertible_to<Outcome>;
    { ob.detail } -> std::convertible_to<std::string>;         // a sentence on a finding
    { ob.outputs } -> std::convertible_to<std::vector<OutputComparison>>;  // each output's comparison, as judged
    ev.set_dtype(Arithmetic::float64);                         // the precision of every comparison from now on
    { ev.ask(c, true) } -> std::same_as<typename E::Answers>;  // L(x) (twice when repeated) and L(P x)
    { cev.judge(c, a, t) } -> std::same_as<typename E::Observation>;
    // judge() keeping both sides of every output and the case's lengths, also when the case passes
    { cev.judge(c, a, t, true) } -> std::same_as<typename E::Observation>;
    { ob.lengths } -> std::convertible_to<Lengths>;
    { ev.observe(c, false) } -> std::same_as<typename E::Observation>;  // ask and judge with the current tolerance
    { ev.reproduce(c, ob) } -> std::same_as<std::optional<typename E::Observation>>;  // both sides again
    { ev.twice(c) } -> std::same_as<std::optional<typename E::Observation>>;  // x twice, the permutation ignored
    { cev.input_case(ob) } -> std::same_as<typename E::Case>;   // the input answered twice, as a case
    { cev.shrinkable(c) } -> std::same_as<rc::Shrinkable<typename E::Case>>;
    cev.record(r, ob, 0, 0);                                    // the finding into the result (case index, steps)
    { cev.violation_detail(ob) } -> std::convertible_to<std::string>;
    { cev.block_size() } -> std::convertible_to<std::size_t>;  // cases a worker takes at once (1: unbatched)
    { ev.ask_block(cases, repeats) } -> std::same_as<std::vector<Asked<typename E::Answers>>>;
    // The case asked alone, one request each, compared with its answers in a batch: an observation of kind
    // batch_dependent when they differ; throws what the black box throws alone.
    { ev.alone(c, a) } -> std::same_as<std::optional<typename E::Observation>>;
    { cev.batch_detail(ob) } -> std::convertible_to<std::string>;  // a sentence on a batch_dependent observation
};

// The cases of this run: those of its shard, and which of them also evaluate L(x) twice. A case is drawn when it
// is run (by the worker that runs it), from its own random split from the audit's seed as search.h splits them,
// so the same position always gives the same case and no run holds more than its workers' cases at once.
template <class C> struct Schedule {
    using Draw = std::function<C(int case_index, const rc::Random& random)>;
    std::vector<int> index;            // each case's index in the whole audit
    std::vector<rc::Random> randoms;   // each case's random
    Draw draw;
    std::set<std::size_t> repeated;    // positions that also evaluate L(x) twice
    std::vector<std::vector<int>> lengths;  // each position's lengths, one per axis (empty: not known)

    static Schedule of(const AuditOptions& o, Draw draw) {
        Schedule s;
        s.draw = std::move(draw);
        rc::Random random(o.seed);
        for (int i = 0; i < o.cases; ++i) {
            const rc::Random case_random = random.split();
            if (!in_shard(i, o.shard)) continue;
            s.index.push_back(i);
            s.randoms.push_back(case_random);
        }
        // Spread over the run, since the first cases are the smallest (RapidCheck's size grows with the case
        // index) and a zero input hides dropout.
        const std::size_t count = s.size();
        for (int k = 0; k < o.repeat_checks && count > 0; ++k)
            s.repeated.insert(std::min(count - 1, static_cast<std::size_t>(k + 1) * count /
                                                      static_cast<std::size_t>(o.repeat_checks + 1)));
        return s;
    }

    std::size_t size() const { return index.size(); }
    C at(std::size_t j) const { return draw(index[j], randoms[j]); }
    bool repeats(std::size_t j) const { return repeated.count(j) > 0; }
};

// The first failure of the run: an observation, or an error of the black box.
template <class Obs> struct Failure {
    std::size_t position = 0;  // in the schedule
    Obs observation;
    bool threw = false;
    std::string error, last_request;
    bool batched = false;  // its evaluations were answered in a batch
};

// The answers of a case in a batched request, kept to be compared with its answers alone, and the block of
// positions [begin, end) whose evaluations were batched with it.
template <class Answers> struct BatchedAnswers {
    Answers answers;
    std::size_t begin = 0, end = 0;
};

// What the run found: the first failure under the dtype it judged with; whether a stop request ended it; the
// batched answers of the cases to confirm alone (confirmation_positions), by position.
template <class Obs, class Answers> struct RunOutcome {
    std::optional<Failure<Obs>> failure;
    Arithmetic dtype = Arithmetic::float64;
    DtypeEvidence evidence = DtypeEvidence::given;  // what decided the dtype (given: the options')
    std::vector<OutputCheck> checked;  // under dtype, over the positions up to the failure's (AuditResult::checked)
    bool interrupted = false;
    int cases_done = 0;
    std::map<std::size_t, BatchedAnswers<Answers>> batched;
    int confirmation_alone_already = 0;  // positions to confirm that were asked alone in the run itself
};

// Batching never changes a verdict: of a run whose cases were answered in batches, at least max(8, cases / 10)
// cases (all of them when fewer) are asked alone and their answers compared with the batched ones (those the run
// asked alone anyway, before an adapter announced its batches, count as asked alone); so is a failure found in a
// batch, before it is shrunk (FailureShrink works alone). The cases are spread over the run's lengths: first, in
// the run's order, a case for each length of each axis not yet among them (a layer that answers one shape
// differently in a batch is seen), then evenly over the run, as many as that leaves.
inline constexpr std::size_t kConfirmAloneAtLeast = 8;
template <class C> std::set<std::size_t> confirmation_positions(const Schedule<C>& schedule) {
    const std::size_t count = schedule.size();
    const std::size_t r = std::min(count, std::max(kConfirmAloneAtLeast, count / 10));
    std::set<std::size_t> out;
    std::set<std::pair<std::size_t, int>> covered;  // (axis, length)
    for (std::size_t j = 0; j < schedule.lengths.size() && j < count && out.size() < r; ++j)
        for (std::size_t a = 0; a < schedule.lengths[j].size(); ++a)
            if (covered.insert({a, schedule.lengths[j][a]}).second) out.insert(j);
    for (std::size_t k = 0; k < r && out.size() < r; ++k) out.insert(k * count / r);
    for (std::size_t j = 0; j < count && out.size() < r; ++j) out.insert(j);
    return out;
}

// The stop of an audit asked for between calls (AuditOptions::stop_requested). Not a std::exception, so that
// no handler of a black box's failures mistakes it for one.
template <class Obs> struct Interrupted {
    std::optional<Obs> smallest;  // interrupted while shrinking: the smallest failing case so far
};

// Inputs answered through a batched black box: grouped by key (inputs of one key have equal shapes, e.g. their
// lengths), each group in calls of at most `capacity` inputs, all of them at once through call_all when the box
// has it. A call that throws, or answers another number of items than it was given, gives each of its items that
// error.
template <class In, class Key>
std::vector<BatchAnswer<In>> answer_grouped(const std::vector<In>& inputs, const std::vector<Key>& keys,
                                            std::size_t capacity, const Batching<In>& batching) {
    std::map<Key, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < inputs.size(); ++i) groups[keys[i]].push_back(i);
    std::vector<std::vector<std::size_t>> members;  // the positions of each call's inputs
    std::vector<std::vector<In>> parts;
    for (const auto& group : groups)
        for (std::size_t start = 0; start < group.second.size(); start += capacity) {
            const std::size_t end = std::min(group.second.size(), start + capacity);
            members.emplace_back(group.second.begin() + start, group.second.begin() + end);
            parts.emplace_back();
            for (std::size_t i : members.back()) parts.back().push_back(inputs[i]);
        }
    std::vector<std::vector<BatchAnswer<In>>> got(parts.size());
    const auto failed = [&](std::size_t p, const std::string& error) {
        got[p].assign(parts[p].size(), BatchAnswer<In>{std::nullopt, error});
    };
    if (batching.call_all) {
        try {
            got = batching.call_all(parts);
            got.resize(parts.size());
        } catch (const std::exception& e) {
            got.resize(parts.size());
            for (std::size_t p = 0; p < parts.size(); ++p) failed(p, e.what());
        }
    } else {
        for (std::size_t p = 0; p < parts.size(); ++p) {
            try {
                got[p] = batching.call(parts[p]);
            } catch (const std::exception& e) {
                failed(p, e.what());
            }
        }
    }
    std::vector<BatchAnswer<In>> out(inputs.size());
    for (std::size_t p = 0; p < parts.size(); ++p) {
        if (got[p].size() != parts[p].size())
            failed(p, "the batched call answered " + std::to_string(got[p].size()) + " items for " +
                          std::to_string(parts[p].size()) + " inputs");
        for (std::size_t k = 0; k < parts[p].size(); ++k) out[members[p][k]] = std::move(got[p][k]);
    }
    return out;
}

// The number of cases a worker takes at once (1: unbatched) for a batched side of this capacity.
template <class In> std::size_t capacity_of(const Batching<In>& batching) {
    const int k = batching.call && batching.capacity ? batching.capacity() : 0;
    return k > 1 ? static_cast<std::size_t>(k) : 1;
}
template <class In> std::size_t block_size_of(const Batching<In>& batching) {
    const std::size_t k = capacity_of(batching);
    return k > 1 ? kBlockPerCapacity * k : 1;
}

// Workers take cases in order and judge each with every candidate precision's tolerance; once a case fails under
// the first (loosest), which makes it fail under every candidate, no later case is started. Per candidate the
// failure with the lowest position wins, and the dtype is inferred from the answers of the cases up to the first
// candidate's
// failure, so the outcome does not depend on the number of workers. A stop request ends every worker before
// its next case. A worker whose evaluator batches (block_size() > 1) takes a block of consecutive positions,
// has every evaluation of the block answered in batches (ask_block), then judges its cases in order as above,
// so the outcome is that of the unbatched run.
template <Evaluator Ev> class CaseRun {
public:
    using Obs = typename Ev::Observation;

    CaseRun(const Schedule<typename Ev::Case>& schedule, const AuditOptions& o)
        : schedule_(schedule), o_(o), evidence_(schedule.size()), confirm_(confirmation_positions(schedule)) {
        for (Arithmetic a : candidate_precisions(o)) {
            candidates_.push_back({a, tolerance_model(a, o.amplification), std::nullopt});
            judged_.emplace_back(schedule.size());
            closest_.emplace_back();
        }
    }

    void work(Ev& ev) {
        for (;;) {
            if (stop_requested(o_)) {
                interrupted_ = true;
                return;
            }
            const std::size_t block = ev.block_size();
            const std::size_t j = next_.fetch_add(block);
            if (j >= schedule_.size() || j > lowest_failing_.load()) return;
            if (block <= 1 ? attempt(ev, j) : attempt_block(ev, j, std::min(schedule_.size(), j + block))) return;
        }
    }

    RunOutcome<Obs, typename Ev::Answers> outcome() && {
        RunOutcome<Obs, typename Ev::Answers> out;
        out.dtype = candidates_[0].dtype;
        if (!o_.dtype) {
            PrecisionEvidence all;
            const std::size_t last = std::min(lowest_failing_.load(), schedule_.size() - 1);
            for (std::size_t j = 0; j <= last && schedule_.size() > 0; ++j) all.add(evidence_[j]);
            out.dtype = all.dtype();
            out.evidence = all.evidence();
        }
        for (std::size_t k = 0; k < candidates_.size(); ++k)
            if (candidates_[k].dtype == out.dtype) {
                out.failure = std::move(candidates_[k].failure);
                out.checked = checked(judged_[k], out.failure ? out.failure->position + 1 : schedule_.size());
                // A run that held (or was stopped before a failure): the case closest to its tolerance, per output.
                for (std::size_t o = 0; o < out.checked.size() && o < closest_[k].size() && !out.failure; ++o) {
                    const Closest& c = closest_[k][o];
                    if (c.position >= schedule_.size()) continue;
                    out.checked[o].closest_case = schedule_.index[c.position];
                    out.checked[o].closest_lengths = c.lengths;
                    out.checked[o].closest = c.sides;
                }
            }
        out.interrupted = interrupted_.load();
        out.cases_done = done_;
        out.batched = std::move(batched_);
        out.confirmation_alone_already = alone_already_;
        return out;
    }

private:
    static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

    struct CandidatePrecision {  // a precision the layer may compute in, and its first failure
        Arithmetic dtype;
        ToleranceModel tolerance;
        std::optional<Failure<Obs>> failure;
    };

    using Answers = typename Ev::Answers;

    // One output's comparison in one case, as judged: all the run keeps of a case for AuditResult::checked.
    struct Judged {
        double diff = 0.0, tolerance = 0.0;
        double fraction() const {
            return diff == 0.0 ? 0.0 : tolerance > 0.0 ? diff / tolerance : std::numeric_limits<double>::infinity();
        }
    };
    // The case closest to its tolerance so far for one output under one precision, with both sides.
    struct Closest {
        double fraction = 0.0;
        std::size_t position = none;
        OutputComparison sides;
        Lengths lengths;
    };

    // Case j, judged: where it comes closer to the tolerance than the case kept for an output (of equal fractions the
    // earlier position, so workers change nothing), it is judged again keeping both sides (no call of the layer).
    // Under mutex_.
    void keep_closest(const Ev& ev, std::size_t j, const typename Ev::Case& c, const Answers& a) {
        for (std::size_t k = 0; k < candidates_.size(); ++k) {
            const std::vector<Judged>& judged = judged_[k][j];
            if (closest_[k].size() < judged.size()) closest_[k].resize(judged.size());
            std::optional<Obs> kept;
            for (std::size_t o = 0; o < judged.size(); ++o) {
                Closest& best = closest_[k][o];
                const double f = judged[o].fraction();
                if (best.position != none && !(f > best.fraction || (f == best.fraction && j < best.position))) continue;
                if (!kept) kept = ev.judge(c, a, candidates_[k].tolerance, true);
                if (o >= kept->outputs.size()) continue;
                best = Closest{f, j, kept->outputs[o], kept->lengths};
            }
        }
    }

    // What the positions [0, end) judged under one precision, per output (AuditResult::checked).
    std::vector<OutputCheck> checked(const std::vector<std::vector<Judged>>& judged, std::size_t end) const {
        std::vector<OutputCheck> out;
        for (const std::string& name : names_) {
            out.emplace_back();
            out.back().name = name;
        }
        for (std::size_t j = 0; j < end && j < judged.size(); ++j)
            for (std::size_t k = 0; k < judged[j].size() && k < out.size(); ++k) {
                OutputCheck& o = out[k];
                const Judged& c = judged[j][k];
                const double fraction = c.fraction();
                if (o.cases == 0 || c.diff > o.max_abs_diff) {
                    o.max_abs_diff = c.diff;
                    o.tolerance_at_max = c.tolerance;
                }
                o.largest_fraction = std::max(o.largest_fraction, fraction);
                o.min_tolerance = o.cases == 0 ? c.tolerance : std::min(o.min_tolerance, c.tolerance);
                o.max_tolerance = std::max(o.max_tolerance, c.tolerance);
                ++o.cases;
            }
        return out;
    }

    // Runs case j; true when it failed under the first candidate (the run stops).
    bool attempt(Ev& ev, std::size_t j) {
        const int calls_before = ev.evaluations;
        std::optional<typename Ev::Case> c;
        Asked<Answers> asked;
        try {
            c = schedule_.at(j);
            asked.answers = ev.ask(*c, schedule_.repeats(j));
        } catch (const std::exception& e) {
            asked.error = e.what();
            asked.request = ev.last_request;
        }
        return conclude(ev, j, c ? &*c : nullptr, asked, ev.evaluations - calls_before);
    }

    // Runs the cases of positions [begin, end) with their evaluations batched; true when the worker stops.
    bool attempt_block(Ev& ev, std::size_t begin, std::size_t end) {
        const int calls_before = ev.evaluations;
        std::vector<typename Ev::Case> cases;
        std::vector<bool> repeats;
        try {
            for (std::size_t j = begin; j < end; ++j) {
                cases.push_back(schedule_.at(j));
                repeats.push_back(schedule_.repeats(j));
            }
        } catch (const std::exception&) {  // a case that cannot be drawn: one at a time, each with its own error
            for (std::size_t j = begin; j < end; ++j)
                if (j > lowest_failing_.load() || attempt(ev, j)) return true;
            return false;
        }
        const std::vector<Asked<Answers>> asked = ev.ask_block(cases, repeats);
        int calls = ev.evaluations - calls_before;  // progress counts them with the block's first case
        for (std::size_t k = 0; k < cases.size(); ++k) {
            const std::size_t j = begin + k;
            if (j > lowest_failing_.load()) return true;
            if (k > 0 && stop_requested(o_)) {
                interrupted_ = true;
                return true;
            }
            if (conclude(ev, j, &cases[k], asked[k], calls, {begin, end})) return true;
            calls = 0;
        }
        return false;
    }

    // Judges case j (c) from what it was answered under every candidate precision; true when it failed under the
    // first. `block`: the positions batched with it, when they were; its answers are kept when it is to be confirmed.
    bool conclude(Ev& ev, std::size_t j, const typename Ev::Case* c, const Asked<Answers>& asked, int calls,
                  std::pair<std::size_t, std::size_t> block = {0, 0}) {
        std::vector<std::optional<Failure<Obs>>> found(candidates_.size());
        std::optional<std::string> error, request;
        std::vector<std::string> names;  // the outputs judged, named under the lock for checked()
        if (asked.answers && c) {
            try {
                evidence_[j] = asked.answers->evidence;  // one writer per position; read after the workers are joined
                for (std::size_t k = 0; k < candidates_.size(); ++k) {
                    Obs ob = ev.judge(*c, *asked.answers, candidates_[k].tolerance);
                    if (ob.outcome != Outcome::nondeterministic) {  // an input answered twice compared no sides
                        judged_[k][j].clear();  // one writer per position, as evidence_
                        for (const OutputComparison& o : ob.outputs) judged_[k][j].push_back({o.max_abs_diff, o.tolerance});
                        if (names.empty())
                            for (const OutputComparison& o : ob.outputs) names.push_back(o.name);
                    }
                    if (ob.outcome != Outcome::pass)
                        found[k] = Failure<Obs>{j, std::move(ob), false, "", "", block.second > block.first};
                }
            } catch (const std::exception& e) {
                error = e.what();
                request = ev.last_request;
            }
        } else {
            error = asked.error;
            request = asked.request;
        }
        if (error && stop_requested(o_)) {  // the stop's own error (an adapter killed by it): no finding
            interrupted_ = true;
            return true;
        }
        if (error)
            for (auto& f : found) f = Failure<Obs>{j, Obs{}, true, *error, *request};
        std::lock_guard<std::mutex> lock(mutex_);
        if (names_.empty()) names_ = std::move(names);
        if (!error && c) {
            try {
                keep_closest(ev, j, *c, *asked.answers);
            } catch (const std::exception&) {  // judged once already: a second judgement that throws keeps nothing
            }
        }
        progress(calls);
        if (!error && !found[0] && confirm_.count(j)) {
            if (block.second > block.first) batched_[j] = BatchedAnswers<Answers>{*asked.answers, block.first, block.second};
            else ++alone_already_;
        }
        for (std::size_t k = 0; k < candidates_.size(); ++k)
            if (found[k] && (!candidates_[k].failure || j < candidates_[k].failure->position)) candidates_[k].failure = std::move(found[k]);
        if (!found[0]) return false;
        if (j < lowest_failing_.load()) lowest_failing_ = j;
        return true;
    }

    void progress(int calls) {  // under mutex_
        ++done_;
        calls_ += calls;
        if (o_.on_progress) o_.on_progress(AuditProgress{done_, static_cast<int>(schedule_.size()), calls_, false});
    }

    const Schedule<typename Ev::Case>& schedule_;
    const AuditOptions& o_;
    std::vector<CandidatePrecision> candidates_;
    std::vector<PrecisionEvidence> evidence_;
    std::vector<std::vector<std::vector<Judged>>> judged_;  // per candidate, per position: its outputs' comparisons
    std::vector<std::string> names_;                        // the outputs in the order judge() compares them
    std::vector<std::vector<Closest>> closest_;             // per candidate, per output: the case closest to its tolerance
    std::set<std::size_t> confirm_;  // positions whose batched answers are kept (a batched run's)
    std::map<std::size_t, BatchedAnswers<Answers>> batched_;
    int alone_already_ = 0;
    std::atomic<std::size_t> next_{0};
    std::atomic<std::size_t> lowest_failing_{none};  // the lowest position that failed under the first candidate
    std::atomic<bool> interrupted_{false};
    std::mutex mutex_;
    int done_ = 0, calls_ = 0;
};

template <Evaluator Ev>
RunOutcome<typename Ev::Observation, typename Ev::Answers> run_cases(std::vector<Ev>& evaluators,
                                                                    const Schedule<typename Ev::Case>& schedule,
                                                                    const AuditOptions& o) {
    CaseRun<Ev> run(schedule, o);
    const std::size_t workers = std::min(evaluators.size(), std::max<std::size_t>(schedule.size(), 1));
    if (workers <= 1) {
        run.work(evaluators[0]);
    } else {
        std::vector<std::thread> threads;
        for (std::size_t k = 0; k < workers; ++k) threads.emplace_back(&CaseRun<Ev>::work, &run, std::ref(evaluators[k]));
        for (std::thread& t : threads) t.join();
    }
    return std::move(run).outcome();
}

// -------------------------------------------------------------------------------------------------- shrink

// The predicate of a shrink: does the case still fail the same way? For nondeterminism, the case's input is
// asked twice and its permutation ignored. Remembers the observation of its last failing call, which is the
// minimum's, since search.h accepts every failing shrink.
template <Evaluator Ev> struct SameFailure {
    Ev& ev;
    Outcome kind;
    const AuditOptions& o;
    std::optional<typename Ev::Observation> last;

    bool operator()(const typename Ev::Case& c) {
        if (stop_requested(o)) throw Interrupted<typename Ev::Observation>{};
        if (o.on_progress) o.on_progress(AuditProgress{0, 0, ev.evaluations, true});
        std::optional<typename Ev::Observation> ob = kind == Outcome::nondeterministic ? ev.twice(c) : ev.observe(c, false);
        if (!ob || ob->outcome != kind) return false;
        last = std::move(ob);
        return true;
    }
};

template <Evaluator Ev> struct Shrunk {
    typename Ev::Case minimal;
    typename Ev::Observation observation;
    int steps = 0;
};

// Shrinks a failing case with the evaluator's shrinker, keeping the kind of failure; nothing when the case,
// evaluated again, no longer fails that way.
template <Evaluator Ev>
std::optional<Shrunk<Ev>> shrink_failure(Ev& ev, Outcome kind, const typename Ev::Case& start, const AuditOptions& o) {
    using C = typename Ev::Case;
    SameFailure<Ev> same{ev, kind, o, std::nullopt};
    const std::function<bool(const C&)> fails = std::ref(same);
    if (!fails(start)) return std::nullopt;
    std::optional<ShrinkResult<C>> r;
    try {
        r = shrink<C>(ev.shrinkable(start), fails, o.max_shrink_evaluations - 1);
    } catch (Interrupted<typename Ev::Observation>& stop) {
        stop.smallest = same.last;  // search.h accepts every failing shrink: the last failing call's case is it
        throw;
    }
    return Shrunk<Ev>{r->minimal.value(), *same.last, r->steps};
}

// Shrinks the first failure on one black box. found() is the latest finding, also when a call throws.
template <Evaluator Ev> class FailureShrink {
public:
    using Obs = typename Ev::Observation;
    FailureShrink(Ev& ev, const AuditOptions& o, Obs found) : ev_(ev), o_(o), found_(std::move(found)) {}

    void run(const typename Ev::Case& failing) {
        // Both sides again, before shrinking: the failing case is the largest and the likeliest to show
        // dropout-like nondeterminism, which a small shrunk case may hide.
        if (found_.outcome == Outcome::violated) reproduce(failing);
        if (found_.outcome != Outcome::nondeterministic) shrink_case(failing);
        if (found_.outcome == Outcome::nondeterministic) shrink_input();
    }

    const Obs& found() const { return found_; }
    int steps() const { return steps_; }

private:
    void reproduce(const typename Ev::Case& c) {
        if (auto nd = ev_.reproduce(c, found_)) found_ = *nd;
    }

    void shrink_case(const typename Ev::Case& failing) {
        const std::optional<Shrunk<Ev>> shrunk = shrink_failure(ev_, found_.outcome, failing, o_);
        if (!shrunk) {
            reproduce(failing);  // the failing case, evaluated again, no longer failed: its answers changed
            return;
        }
        steps_ += shrunk->steps;
        found_ = shrunk->observation;
        if (found_.outcome == Outcome::violated) reproduce(shrunk->minimal);
    }

    // The input answered twice differently (x, or P x of the failing case), as a case whose permutation the
    // predicate ignores.
    void shrink_input() {
        if (const std::optional<Shrunk<Ev>> shrunk = shrink_failure(ev_, Outcome::nondeterministic, ev_.input_case(found_), o_)) {
            steps_ += shrunk->steps;
            found_ = shrunk->observation;
        }
    }

    Ev& ev_;
    const AuditOptions& o_;
    Obs found_;
    int steps_ = 0;
};

// --------------------------------------------------------------------------------------------------- verdict

const char* finding_name(Outcome k);  // "violation", "non-finite output", "nondeterministic answer"

Verdict verdict_of(Outcome k);  // of a failure: violated, non-finite or nondeterministic

// The verdict on a failure of the run: shrunk on the first black box, or an error if shrinking failed. Stopped
// while shrinking: the failure found is kept, shrunk as far as it got, and its kind named in the detail.
template <Evaluator Ev>
void judge_failure(AuditResult& result, Ev& ev, int case_index, const typename Ev::Case& failing,
                   const typename Ev::Observation& observation, const AuditOptions& o) {
    FailureShrink<Ev> shrinking(ev, o, observation);
    const auto interrupted = [&](const typename Ev::Observation& smallest) {
        result.verdict = Verdict::interrupted;
        result.detail = std::string("interrupted while shrinking a ") + finding_name(smallest.outcome) + " found at case " +
                        std::to_string(case_index) + "; the counterexample is the smallest found so far";
        ev.record(result, smallest, case_index, shrinking.steps());
    };
    try {
        shrinking.run(failing);
    } catch (const Interrupted<typename Ev::Observation>& stop) {
        interrupted(stop.smallest ? *stop.smallest : shrinking.found());
        return;
    } catch (const std::exception& e) {
        if (stop_requested(o)) {  // the stop's own error (an adapter killed while it computed): not the layer's
            interrupted(shrinking.found());
            return;
        }
        result.verdict = Verdict::error;
        result.error = std::string(e.what()) + " (while shrinking a " + finding_name(shrinking.found().outcome) +
                       " found at case " + std::to_string(case_index) + ")";
        ev.record(result, shrinking.found(), case_index, 0);
        return;
    }
    const auto& found = shrinking.found();
    result.verdict = verdict_of(found.outcome);
    ev.record(result, found, case_index, shrinking.steps());
    result.detail = found.outcome == Outcome::violated ? ev.violation_detail(found) : found.detail;
}

// The failure of a batched run asked alone: a batch_dependent observation when it does not fail the same way
// alone and the layer answers the same input alone the same way twice (else nothing: the failure is the layer's
// own, and FailureShrink, which asks alone, shrinks it). Throws what the black box throws alone.
template <Evaluator Ev>
std::optional<typename Ev::Observation> failure_alone(Ev& ev, const typename Ev::Case& failing,
                                                      const typename Ev::Observation& found) {
    const typename Ev::Observation alone = ev.observe(failing, found.outcome == Outcome::nondeterministic);
    if (alone.outcome == found.outcome || ev.twice(failing)) return std::nullopt;
    std::optional<typename Ev::Observation> diff =
        found.outcome == Outcome::nondeterministic ? std::optional(found) : ev.reproduce(failing, found);
    if (diff) diff->outcome = Outcome::batch_dependent;
    return diff;
}

// "case 12 (batched with cases 8 to 15 of the run)".
inline std::string batched_case_text(int case_index, std::size_t begin, std::size_t end) {
    return "case " + std::to_string(case_index) + " (batched with positions " + std::to_string(begin) + " to " +
           std::to_string(end - 1) + " of the run)";
}

// A batched run's verdict confirmed alone (kConfirmAloneAtLeast): the failure, or the kept cases of a run that
// held. Sets the result's verdict to batch_dependent (or error, when a case alone errs) and returns true when the
// answers alone disagree with the batched ones; counts the cases confirmed.
template <Evaluator Ev, class Run>
bool confirm_alone(AuditResult& result, Ev& ev, const Schedule<typename Ev::Case>& schedule, const Run& run,
                   const AuditOptions& o) {
    const auto found = [&](const typename Ev::Observation& dep, int index, const std::string& where) {
        result.verdict = Verdict::batch_dependent;
        ev.record(result, dep, index, 0);
        result.detail = where + ": " + ev.batch_detail(dep);
        return true;
    };
    std::string where;
    // Stopped before the answers alone were all compared: interrupted (never the run's verdict on fewer
    // confirmations than promised), the failure found in a batch kept as found.
    const auto stopped = [&] {
        result.verdict = Verdict::interrupted;
        if (run.failure) {
            const int index = schedule.index[run.failure->position];
            ev.record(result, run.failure->observation, index, 0);
            result.detail = "interrupted while asking alone case " + std::to_string(index) + ", whose " +
                            finding_name(run.failure->observation.outcome) +
                            " was found in a batched request: not yet confirmed alone, nor shrunk";
        } else {
            result.detail = "interrupted while asking cases of the batched run alone: " +
                            std::to_string(result.confirmed_alone) + " agreed with their batched answers, " +
                            "fewer than the " + std::to_string(run.batched.size() + run.confirmation_alone_already) +
                            " that confirm a verdict";
        }
        result.last_request = ev.last_request;
        return true;
    };
    try {
        if (run.failure) {
            if (!run.failure->batched) return false;  // found alone: nothing to confirm
            const std::size_t j = run.failure->position;
            where = "case " + std::to_string(schedule.index[j]) + ", the failing one";
            ++result.confirmed_alone;
            if (auto dep = failure_alone(ev, schedule.at(j), run.failure->observation))
                return found(*dep, schedule.index[j], where);
            return false;
        }
        result.confirmed_alone += run.confirmation_alone_already;
        for (const auto& [j, kept] : run.batched) {
            if (stop_requested(o)) return stopped();
            where = batched_case_text(schedule.index[j], kept.begin, kept.end);
            auto dep = ev.alone(schedule.at(j), kept.answers);
            ++result.confirmed_alone;
            if (dep) return found(*dep, schedule.index[j], where);
        }
    } catch (const std::exception& e) {
        if (stop_requested(o)) return stopped();  // the stop's own error
        result.verdict = Verdict::error;
        result.error = std::string(e.what()) + " (" + where + ", asked alone; its answers in a batched request " +
                       "were accepted)";
        result.last_request = ev.last_request;
        return true;
    }
    return false;
}

// The run, the dtype it decided, and the verdict, on a labelled result; `cover(result, count)` records what the
// first `count` positions of the schedule covered.
template <Evaluator Ev, class Cover>
AuditResult run_audit(std::vector<Ev>& evaluators, const Schedule<typename Ev::Case>& schedule, const AuditOptions& given,
                      AuditResult result, const Cover& cover) {
    const auto run = run_cases(evaluators, schedule, given);
    // From here on every comparison uses the dtype the run judged with, as an audit given it would.
    AuditOptions o = given;
    o.dtype = run.dtype;
    for (Ev& ev : evaluators) ev.set_dtype(run.dtype);
    const auto& failure = run.failure;
    result.dtype = run.dtype;
    result.dtype_evidence = run.evidence;
    result.dtype_inferred = !given.dtype.has_value() && run.evidence != DtypeEvidence::no_answer;
    result.checked = run.checked;
    result.tolerance = tolerance_model(run.dtype, given.amplification);
    result.cases = failure ? static_cast<int>(failure->position) + 1 : static_cast<int>(schedule.size());
    if (!failure && run.interrupted) {
        result.verdict = Verdict::interrupted;
        result.cases = run.cases_done;
        result.detail = "interrupted after " + std::to_string(run.cases_done) + " of " +
                        std::to_string(schedule.size()) + " cases, none of which failed";
    }
    cover(result, static_cast<std::size_t>(result.cases));
    // A run some of whose cases were answered in batches (an adapter announces them with its first answer).
    const bool batched = !run.batched.empty() || (failure && failure->batched);
    if (failure && failure->threw) {
        result.verdict = Verdict::error;
        result.error = failure->error;
        result.last_request = failure->last_request;
    } else if (batched && (failure || !run.interrupted) && confirm_alone(result, evaluators[0], schedule, run, o)) {
        if (result.verdict != Verdict::error) result.last_request = evaluators[0].last_request;
    } else {
        if (failure)
            judge_failure(result, evaluators[0], schedule.index[failure->position], schedule.at(failure->position),
                          failure->observation, o);
        result.last_request = evaluators[0].last_request;
    }
    for (const Ev& ev : evaluators) result.evaluations += ev.evaluations;
    return result;
}

}  // namespace permcheck::engine
