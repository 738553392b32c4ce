// The engine of black-box audits (audit/audit_engine.h): the cases run over workers, the shrink of a failure, the
// confirmation of a batched run alone, and the verdict. Its precision evidence is audit/audit_precision.cpp, its
// schedule and batched calls audit/audit_schedule.cpp.
#include "audit/audit_engine.h"

#include "audit/evaluator.h"
#include "cases/search.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <typeinfo>
#include <utility>

namespace permcheck::engine {

namespace {

bool stop_requested(const AuditOptions& o) { return o.stop_requested && o.stop_requested(); }

const char* finding_name(Verdict k) {
    switch (k) {
        case Verdict::violated: return "violation";
        case Verdict::non_finite: return "non-finite output";
        case Verdict::batch_dependent: return "batch-dependent answer";
        case Verdict::history_dependent: return "history-dependent answer";
        default: return "nondeterministic answer";
    }
}

// The first failure of the run: its position in the schedule, and the observation that failed or the error of one
// of its calls (with that call's request).
struct Failure {
    std::size_t position = 0;
    Answer<Observation> found;
    bool batched = false;  // its evaluations were answered in a batch
    bool threw() const { return !found.value; }
    const Observation& observation() const { return *found.value; }
};

// The answers of a case in a batched request, kept to be compared with its answers alone, and the block of
// positions [begin, end) whose evaluations were batched with it.
struct BatchedAnswers {
    Answers answers;
    std::size_t begin = 0, end = 0;
};

// What the run found: the first failure under the dtype it judged with; whether a stop request ended it; the
// batched answers of the cases to confirm alone, by position.
struct RunOutcome {
    std::optional<Failure> failure;
    Arithmetic dtype = Arithmetic::float64;
    DtypeEvidence evidence = DtypeEvidence::given;  // what decided the dtype (given: the options')
    std::vector<OutputCheck> checked;  // under dtype, over the positions up to the failure's (AuditResult::checked)
    bool interrupted = false;
    int cases_done = 0;
    std::map<std::size_t, BatchedAnswers> batched;
    int confirmation_alone_already = 0;  // positions to confirm that were asked alone in the run itself
    // The run's first case asked alone whose inputs are not all zero (RapidCheck's first case is, and hides a
    // table that scales them): its position, the evaluator that asked it and its answer to x (again_at_end).
    std::size_t first_position = 0;
    Evaluator* first_asker = nullptr;
    Tensors first_y;
};

// Batching never changes a verdict: of a run whose cases were answered in batches, at least max(8, cases / 10)
// cases (all of them when fewer) are asked alone and their answers compared with the batched ones (those the run
// asked alone anyway, before an adapter announced its batches, count as asked alone); so is a failure found in a
// batch, before it is shrunk (FailureShrink works alone). The cases are spread over the run's lengths: first, in
// the run's order, a case for each length of each axis not yet among them, then evenly over the run.
constexpr std::size_t kConfirmAloneAtLeast = 8;
std::set<std::size_t> confirmation_positions(const Schedule& schedule) {
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

// One output's comparison in one case, as judged: all the run keeps of a case for AuditResult::checked.
struct Judged {
    double diff = 0.0, tolerance = 0.0;
    double fraction() const {
        return diff == 0.0 ? 0.0 : tolerance > 0.0 ? diff / tolerance : std::numeric_limits<double>::infinity();
    }
};

// What the positions [0, end) judged under one precision, per output named in `names` (AuditResult::checked).
std::vector<OutputCheck> checked_over(const std::vector<std::string>& names,
                                      const std::vector<std::vector<Judged>>& judged, std::size_t end) {
    std::vector<OutputCheck> out(names.size());
    for (std::size_t k = 0; k < names.size(); ++k) out[k].name = names[k];
    for (std::size_t j = 0; j < end && j < judged.size(); ++j)
        for (std::size_t k = 0; k < judged[j].size() && k < out.size(); ++k) {
            OutputCheck& o = out[k];
            const Judged& c = judged[j][k];
            if (o.cases == 0 || c.diff > o.max_abs_diff) {
                o.max_abs_diff = c.diff;
                o.tolerance_at_max = c.tolerance;
            }
            o.largest_fraction = std::max(o.largest_fraction, c.fraction());
            o.min_tolerance = o.cases == 0 ? c.tolerance : std::min(o.min_tolerance, c.tolerance);
            o.max_tolerance = std::max(o.max_tolerance, c.tolerance);
            ++o.cases;
        }
    return out;
}

// Workers take cases in order and judge each with every candidate precision's tolerance; once a case fails under
// the first (loosest), which makes it fail under every candidate, no later case is started. Per candidate the
// failure with the lowest position wins, and the dtype is inferred from the answers of the cases up to the first
// candidate's failure, so the outcome does not depend on the number of workers. A stop request ends every worker
// before its next case. A worker whose evaluator batches (block_size() > 1) takes a block of consecutive positions,
// has every evaluation of the block answered in batches (ask_block), then judges its cases in order as above.
class CaseRun {
public:
    CaseRun(const Schedule& schedule, const AuditOptions& o)
        : schedule_(schedule), o_(o), evidence_(schedule.size()), confirm_(confirmation_positions(schedule)) {
        for (Arithmetic a : candidate_precisions(o)) {
            candidates_.push_back({a, tolerance_model(a, o.amplification), std::nullopt});
            judged_.emplace_back(schedule.size());
            closest_.emplace_back();
        }
    }

    void work(Evaluator& ev) {
        for (;;) {
            if (stopped()) return;
            const std::size_t block = ev.block_size();
            const std::size_t j = next_.fetch_add(block);
            if (j >= schedule_.size() || j > lowest_failing_.load()) return;
            if (block <= 1 ? attempt(ev, j) : attempt_block(ev, j, std::min(schedule_.size(), j + block))) return;
        }
    }

    RunOutcome outcome() &&;

private:
    static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

    struct CandidatePrecision {  // a precision the layer may compute in, and its first failure
        Arithmetic dtype;
        ToleranceModel tolerance;
        std::optional<Failure> failure;
    };
    // The case closest to its tolerance so far for one output under one precision, with both sides.
    struct Closest {
        double fraction = 0.0;
        std::size_t position = none;
        OutputComparison sides;
        Lengths lengths;
    };

    bool attempt(Evaluator& ev, std::size_t j);
    bool attempt_block(Evaluator& ev, std::size_t begin, std::size_t end);
    bool conclude(Evaluator& ev, std::size_t j, const Case* c, const Answer<Answers>& asked, int calls,
                  std::pair<std::size_t, std::size_t> block = {0, 0});
    std::vector<std::optional<Failure>> judged_under_each(const Evaluator& ev, std::size_t j, const Case& c,
                                                          const Answers& a, bool batched, std::vector<std::string>& names);
    void keep_closest(const Evaluator& ev, std::size_t j, const Case& c, const Answers& a);
    bool stopped() {  // a stop request, which interrupts the run
        const bool stop = stop_requested(o_);
        if (stop) interrupted_ = true;
        return stop;
    }
    void progress(int calls) {  // under mutex_
        ++done_;
        calls_ += calls;
        if (o_.on_progress) o_.on_progress(AuditProgress{done_, static_cast<int>(schedule_.size()), calls_, false});
    }

    const Schedule& schedule_;
    const AuditOptions& o_;
    std::vector<CandidatePrecision> candidates_;
    std::vector<PrecisionEvidence> evidence_;
    std::vector<std::vector<std::vector<Judged>>> judged_;  // per candidate, per position: its outputs' comparisons
    std::vector<std::string> names_;                        // the outputs in the order judge() compares them
    std::vector<std::vector<Closest>> closest_;             // per candidate, per output: the case closest to its tolerance
    std::set<std::size_t> confirm_;  // positions whose batched answers are kept (a batched run's)
    std::map<std::size_t, BatchedAnswers> batched_;
    int alone_already_ = 0;
    std::size_t first_position_ = none;  // RunOutcome::first_position, first_asker, first_y
    Evaluator* first_asker_ = nullptr;
    Tensors first_y_;
    std::atomic<std::size_t> next_{0};
    std::atomic<std::size_t> lowest_failing_{none};  // the lowest position that failed under the first candidate
    std::atomic<bool> interrupted_{false};
    std::mutex mutex_;
    int done_ = 0, calls_ = 0;
};

RunOutcome CaseRun::outcome() && {
    RunOutcome out;
    out.dtype = candidates_[0].dtype;
    if (!o_.dtype) {
        PrecisionEvidence all;
        const std::size_t last = std::min(lowest_failing_.load(), schedule_.size() - 1);
        for (std::size_t j = 0; j <= last && schedule_.size() > 0; ++j) all.add(evidence_[j]);
        out.dtype = all.dtype();
        out.evidence = all.evidence();
    }
    for (std::size_t k = 0; k < candidates_.size(); ++k) {
        if (candidates_[k].dtype != out.dtype) continue;
        out.failure = std::move(candidates_[k].failure);
        out.checked = checked_over(names_, judged_[k], out.failure ? out.failure->position + 1 : schedule_.size());
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
    out.first_position = first_position_;
    out.first_asker = first_asker_;
    out.first_y = std::move(first_y_);
    return out;
}

// Runs case j; true when it failed under the first candidate (the run stops).
bool CaseRun::attempt(Evaluator& ev, std::size_t j) {
    const int calls_before = ev.evaluations;
    std::optional<Case> c;
    Answer<Answers> asked;
    try {
        c = schedule_.at(j);
        asked.value = ev.ask(*c, schedule_.repeats(j));
    } catch (const std::exception& e) {
        asked.error = e.what();
        asked.request = ev.last_request;
        asked.layers_own = layers_own(e);
    }
    return conclude(ev, j, c ? &*c : nullptr, asked, ev.evaluations - calls_before);
}

// Runs the cases of positions [begin, end) with their evaluations batched; true when the worker stops.
bool CaseRun::attempt_block(Evaluator& ev, std::size_t begin, std::size_t end) {
    const int calls_before = ev.evaluations;
    std::vector<Case> cases;
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
    const std::vector<Answer<Answers>> asked = ev.ask_block(cases, repeats);
    int calls = ev.evaluations - calls_before;  // progress counts them with the block's first case
    for (std::size_t k = 0; k < cases.size(); ++k) {
        const std::size_t j = begin + k;
        if (j > lowest_failing_.load()) return true;
        if (k > 0 && stopped()) return true;
        if (conclude(ev, j, &cases[k], asked[k], calls, {begin, end})) return true;
        calls = 0;
    }
    return false;
}

// Case j judged with each candidate's tolerance: a failure per candidate it fails under. Keeps what the run records
// of it (its evidence, each output's difference and tolerance, the outputs' names in `names`).
std::vector<std::optional<Failure>> CaseRun::judged_under_each(const Evaluator& ev, std::size_t j, const Case& c,
                                                               const Answers& a, bool batched,
                                                               std::vector<std::string>& names) {
    std::vector<std::optional<Failure>> found(candidates_.size());
    evidence_[j] = a.evidence;  // one writer per position; read after the workers are joined
    for (std::size_t k = 0; k < candidates_.size(); ++k) {
        Observation ob = ev.judge(c, a, candidates_[k].tolerance);
        if (ob.outcome() != Verdict::nondeterministic) {  // an input answered twice compared no sides
            judged_[k][j].clear();  // one writer per position, as evidence_
            for (const OutputComparison& o : ob.outputs) judged_[k][j].push_back({o.max_abs_diff, o.tolerance});
            if (names.empty())
                for (const OutputComparison& o : ob.outputs) names.push_back(o.name);
        }
        if (ob.outcome() != Verdict::holds) {
            ob.x_call = a.x_call;  // a failure found in a batch that is the batch's (failure_alone) records them
            ob.transformed_call = a.transformed_call;
            found[k] = Failure{j, {std::move(ob), "", ""}, batched};
        }
    }
    return found;
}

// Judges case j (c) from what it was answered under every candidate precision; true when it failed under the first.
// `block`: the positions batched with it, when they were; its answers are kept when it is to be confirmed alone.
bool CaseRun::conclude(Evaluator& ev, std::size_t j, const Case* c, const Answer<Answers>& asked, int calls,
                       std::pair<std::size_t, std::size_t> block) {
    const bool batched = block.second > block.first;
    std::vector<std::optional<Failure>> found(candidates_.size());
    Answer<Observation> error{std::nullopt, asked.error, asked.request, asked.layers_own};
    bool threw = !(asked.value && c);
    // The outputs judged, named under the lock for checked_over() (AuditResult::checked).
    std::vector<std::string> names;
    if (!threw) {
        try {
            found = judged_under_each(ev, j, *c, *asked.value, batched, names);
        } catch (const std::exception& e) {
            threw = true;
            error = {std::nullopt, e.what(), ev.last_request, layers_own(e)};
        }
    }
    if (threw && stopped()) return true;  // the stop's own error (an adapter killed by it): no finding
    if (threw)
        for (auto& f : found) f = Failure{j, error, false};
    std::lock_guard<std::mutex> lock(mutex_);
    if (names_.empty()) names_ = std::move(names);
    if (!threw) {
        try {
            keep_closest(ev, j, *c, *asked.value);
        } catch (const std::exception&) {  // judged once already: a second judgement that throws keeps nothing
        }
    }
    progress(calls);
    if (!threw && !found[0] && confirm_.count(j)) {
        if (batched) batched_[j] = BatchedAnswers{*asked.value, block.first, block.second};
        else ++alone_already_;
    }
    const auto zero = [](const Tensors& inputs) {
        return std::all_of(inputs.begin(), inputs.end(), [](const auto& t) {
            return std::all_of(t.second.values.begin(), t.second.values.end(), [](double v) { return v == 0.0; });
        });
    };
    if (!threw && !batched && j < first_position_ && asked.value->reference_raised.empty() && !zero(c->inputs)) {
        first_position_ = j;
        first_asker_ = &ev;
        first_y_ = asked.value->y;
    }
    for (std::size_t k = 0; k < candidates_.size(); ++k)
        if (found[k] && (!candidates_[k].failure || j < candidates_[k].failure->position)) candidates_[k].failure = std::move(found[k]);
    if (!found[0]) return false;
    if (j < lowest_failing_.load()) lowest_failing_ = j;
    return true;
}

// Case j, judged: where it comes closer to the tolerance than the case kept for an output (of equal fractions the
// earlier position, so workers change nothing), it is judged again keeping both sides (no call of the layer).
// Under mutex_.
void CaseRun::keep_closest(const Evaluator& ev, std::size_t j, const Case& c, const Answers& a) {
    for (std::size_t k = 0; k < candidates_.size(); ++k) {
        const std::vector<Judged>& judged = judged_[k][j];
        if (closest_[k].size() < judged.size()) closest_[k].resize(judged.size());
        std::optional<Observation> kept;
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

RunOutcome run_cases(std::vector<Evaluator>& evaluators, const Schedule& schedule, const AuditOptions& o) {
    CaseRun run(schedule, o);
    const std::size_t workers = std::min(evaluators.size(), std::max<std::size_t>(schedule.size(), 1));
    if (workers <= 1) {
        run.work(evaluators[0]);
    } else {
        std::vector<std::thread> threads;
        for (std::size_t k = 0; k < workers; ++k) threads.emplace_back(&CaseRun::work, &run, std::ref(evaluators[k]));
        for (std::thread& t : threads) t.join();
    }
    return std::move(run).outcome();
}

// -------------------------------------------------------------------------------------------------- shrink

// A failure shrunk as far as it went: the minimal case and its observation, the shrinks accepted, and whether a stop
// request ended it early.
struct Shrunk {
    Case minimal;
    Observation observation;
    int steps = 0;
    bool interrupted = false;
};

// The time bound of one failure's whole shrink (AuditOptions::shrink_seconds; none at 0): `cut_short` once it
// ended a shrink, which then keeps the smallest failing case found by then.
struct ShrinkClock {
    std::chrono::steady_clock::time_point deadline;
    bool bounded = false;
    bool cut_short = false;
    static ShrinkClock of(const AuditOptions& o) {
        ShrinkClock c;
        c.bounded = o.shrink_seconds > 0;
        c.deadline = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o.shrink_seconds));
        return c;
    }
    bool out_of_time() {
        if (bounded && std::chrono::steady_clock::now() >= deadline) cut_short = true;
        return cut_short;
    }
};

// Shrinks a failing case with the property's shrinker, keeping the kind of failure (for nondeterminism the input is
// asked twice and the permutation ignored); nothing when the case, evaluated again, no longer fails that way.
// A candidate the layer errs on (it raises where raising is no finding, answers in another shape, or its adapter
// fails) is a rejected candidate: the failure found is never lost to a smaller case the layer cannot answer. A
// stop request's own error ends the shrink.
std::optional<Shrunk> shrink_failure(Evaluator& ev, Verdict kind, const Case& start, const AuditOptions& o,
                                     ShrinkClock& clock) {
    std::optional<Observation> last;  // the observation of the last failing call: the minimum's (search.h accepts each)
    const std::function<bool(const Case&)> fails = [&](const Case& c) {
        if (o.on_progress) o.on_progress(AuditProgress{0, 0, ev.evaluations, true});
        std::optional<Observation> ob;
        try {
            ob = kind == Verdict::nondeterministic ? ev.twice(c) : ev.observe(c, false);
        } catch (const std::exception&) {
            if (stop_requested(o)) throw;
            return false;
        }
        if (!ob || ob->outcome() != kind) return false;
        last = std::move(ob);
        return true;
    };
    if (!fails(start)) return std::nullopt;
    const ShrinkResult<Case> r = shrink<Case>(ev.shrinkable(start), fails, o.max_shrink_evaluations - 1,
                                              [&o, &clock] { return stop_requested(o) || clock.out_of_time(); });
    return Shrunk{r.minimal.value(), *last, r.steps, r.interrupted && stop_requested(o)};
}

// Shrinks the first failure on one black box. `found` is the latest finding, also when a call throws.
struct FailureShrink {
    Evaluator& ev;
    const AuditOptions& o;
    Observation found;
    int steps = 0;
    ShrinkClock clock = ShrinkClock::of(o);

    // False when a stop request ended it (found the smallest failure so far).
    bool run(const Case& failing) {
        // Both sides again, before shrinking: the failing case is the largest and the likeliest to show
        // dropout-like nondeterminism, which a small shrunk case may hide.
        if (found.outcome() == Verdict::violated) reproduce(failing);
        if (found.outcome() != Verdict::nondeterministic && !shrink_case(failing)) return false;
        if (found.outcome() != Verdict::nondeterministic) return true;
        // The input answered twice differently (x, or P x of the failing case), as a case whose permutation the
        // predicate ignores.
        if (stop_requested(o)) return false;
        const Case input{found.lengths, identities(found.lengths), found.inputs};
        const std::optional<Shrunk> s = shrink_failure(ev, Verdict::nondeterministic, input, o, clock);
        if (s && !taken(*s)) return false;
        // Answered alike twice in a row: state kept from other requests, not randomness.
        const Case shrunk{found.lengths, identities(found.lengths), found.inputs};
        if (std::optional<Observation> h = ev.history(shrunk)) found = *h;
        return true;
    }
    // Both sides of c again: a nondeterministic finding when they answer otherwise. An error asking them keeps the
    // finding as it was (the case failed the way it was found, once at least).
    void reproduce(const Case& c) {
        try {
            if (auto nd = ev.reproduce(c, found)) found = *nd;
        } catch (const std::exception&) {
            if (stop_requested(o)) throw;
        }
    }
    bool taken(const Shrunk& s) {
        steps += s.steps;
        found = s.observation;
        return !s.interrupted;
    }
    bool shrink_case(const Case& failing) {
        if (stop_requested(o)) return false;
        const std::optional<Shrunk> shrunk = shrink_failure(ev, found.outcome(), failing, o, clock);
        if (!shrunk) {
            reproduce(failing);  // the failing case, evaluated again, no longer failed: its answers changed
            return true;
        }
        if (!taken(*shrunk)) return false;
        if (found.outcome() == Verdict::violated) reproduce(shrunk->minimal);
        return true;
    }
};

// --------------------------------------------------------------------------------------------------- verdict

// The verdict on a failure of the run: shrunk on the first black box, or an error if shrinking failed. Stopped
// while shrinking: the failure found is kept, shrunk as far as it got, and its kind named in the detail.
void judge_failure(AuditResult& result, Evaluator& ev, int case_index, const Case& failing, const Observation& observation,
                   const AuditOptions& o) {
    FailureShrink shrinking{ev, o, observation};
    const auto interrupted = [&] {
        result.verdict = Verdict::interrupted;
        result.detail = std::string("interrupted while shrinking a ") + finding_name(shrinking.found.outcome()) +
                        " found at case " + std::to_string(case_index) + "; the counterexample is the smallest found so far";
        ev.record(result, shrinking.found, case_index, shrinking.steps);
    };
    try {
        if (!shrinking.run(failing)) return interrupted();
    } catch (const std::exception& e) {
        if (stop_requested(o)) return interrupted();  // the stop's own error (an adapter killed while it computed)
        result.verdict = Verdict::error;
        result.error = std::string(e.what()) + " (while shrinking a " + finding_name(shrinking.found.outcome()) +
                       " found at case " + std::to_string(case_index) + ")";
        ev.record(result, shrinking.found, case_index, 0);
        return;
    }
    Observation& found = shrinking.found;
    if (auto* v = found.as<found::Violated>()) v->again = true;  // FailureShrink evaluated both sides again
    if (auto* r = found.as<found::Raised>()) r->again = true;
    result.verdict = verdict_of(found.kind);
    ev.record(result, found, case_index, shrinking.steps);
    if (shrinking.clock.cut_short && result.counterexample) result.counterexample->shrink_cut_short = o.shrink_seconds;
}

// The failure of a batched run asked alone: a batch_dependent observation when it does not fail the same way alone
// and the layer answers the same input alone the same way twice (else nothing: the failure is the layer's own, and
// FailureShrink, which asks alone, shrinks it). Throws what the black box throws alone.
std::optional<Observation> failure_alone(Evaluator& ev, const Case& failing, const Observation& found) {
    const Observation alone = ev.observe(failing, found.outcome() == Verdict::nondeterministic);
    if (alone.outcome() == found.outcome() || ev.twice(failing)) return std::nullopt;
    std::optional<Observation> diff = found.outcome() == Verdict::nondeterministic ? std::optional(found) : ev.reproduce(failing, found);
    if (diff) {
        diff->fail(found::BatchDependent{{}, true, 0, 0});
        diff->x_call = found.x_call;
        diff->transformed_call = found.transformed_call;
    }
    return diff;
}

// A batched run's confirmation alone, stopped before every answer was compared: interrupted (never the run's
// verdict on fewer confirmations than promised), the failure found in a batch kept as found.
void stopped_confirming(AuditResult& result, const Evaluator& ev, const Schedule& schedule, const RunOutcome& run) {
    result.verdict = Verdict::interrupted;
    if (run.failure) {
        const int index = schedule.index[run.failure->position];
        ev.record(result, run.failure->observation(), index, 0);
        result.detail = "interrupted while asking alone case " + std::to_string(index) + ", whose " +
                        finding_name(run.failure->observation().outcome()) +
                        " was found in a batched request: not yet confirmed alone, nor shrunk";
    } else {
        result.detail = "interrupted while asking cases of the batched run alone: " +
                        std::to_string(result.confirmed_alone) + " agreed with their batched answers, fewer than the " +
                        std::to_string(run.batched.size() + run.confirmation_alone_already) + " that confirm a verdict";
    }
    result.last_request = ev.last_request;
}

// What is out of the ordinary in a case the layer erred on, in words ("no edges", "n of length 1", "attention_mask
// all padding"): the audit draws such inputs on purpose, and the error names them with the input.
std::string unusual(const Signature& s, const Case& c) {
    std::string said;
    const auto add = [&said](const std::string& what) { said += (said.empty() ? "" : ", ") + what; };
    for (const auto& [axis, n] : c.lengths) {
        if (n == 0) add("no " + axis);
        if (n == 1) add(axis + " of length 1");  // one token, one node: a softmax or a norm over a single entry
    }
    for (const TensorSpec& t : s.inputs) {
        const auto it = c.inputs.find(t.name);
        if (!is_mask(t.kind) || it == c.inputs.end() || it->second.values.empty()) continue;
        const double real = t.kind == TensorKind::mask_keep ? 1.0 : 0.0;
        if (std::none_of(it->second.values.begin(), it->second.values.end(), [real](double v) { return v == real; }))
            add(t.name + " all padding");
    }
    return said;
}

// What makes two errors one: the exception's type and raising place where the adapter says them, else its type
// and message with the numbers masked (a smaller case names smaller sizes).
std::string error_identity(const std::exception& e, const found::Erred& how) {
    if (!how.type.empty()) return how.side + ":" + how.type + " at " + how.where;
    std::string text = how.side + ":" + typeid(e).name() + ":";
    for (const char ch : std::string(e.what()))
        if (!std::isdigit(static_cast<unsigned char>(ch))) text += ch;
        else if (text.back() != '#') text += '#';
    return text;
}

// An erring case, asked again alone and shrunk to the smallest case that still errs the same way (error_identity):
// the case, how it erred, its error message and the shrinks taken. Nothing when it answers alone (or a stop came).
struct ErredShrunk {
    Case minimal;
    found::Erred how;
    std::string message, request;
    int steps = 0;
};
std::optional<ErredShrunk> shrink_error(Evaluator& ev, const Case& start, const AuditOptions& o) {
    std::optional<ErredShrunk> last;
    std::string identity;
    const std::function<bool(const Case&)> errs = [&](const Case& c) {
        try {
            ev.observe(c, false);
        } catch (const std::exception& e) {
            if (stop_requested(o)) throw;
            const found::Erred how = ev.erred_by(e);
            if (!identity.empty() && error_identity(e, how) != identity) return false;
            identity = error_identity(e, how);
            last = ErredShrunk{c, how, e.what(), ev.last_request, 0};
            return true;
        }
        return false;
    };
    if (!errs(start)) return std::nullopt;
    ShrinkClock clock = ShrinkClock::of(o);
    const ShrinkResult<Case> r = shrink<Case>(ev.shrinkable(start), errs, o.max_shrink_evaluations - 1,
                                              [&o, &clock] { return stop_requested(o) || clock.out_of_time(); });
    if (!same_case(r.minimal.value(), last->minimal)) errs(r.minimal.value());  // the minimum's own error, to say it
    last->steps = r.steps;
    return last;
}

// The case at `position` the layer erred on, recorded in the error's result (Counterexample::erred) so that the
// report shows it and a replay sends it again, with what is unusual about it named in the error. Where the error
// was the layer's own (`shrunk_alone`), the case is asked again alone and shrunk to its smallest still-erring form,
// whose error becomes the result's, the side that raised named; an adapter's failure (a crash, a timeout) is not
// asked again. A case that could not be drawn erred before any request: nothing is recorded.
void record_erred(AuditResult& result, Evaluator& ev, const Schedule& schedule, std::size_t position,
                  const AuditOptions& o, bool shrunk_alone) {
    try {
        Observation erred;
        static_cast<Case&>(erred) = schedule.at(position);
        found::Erred how;
        int steps = 0;
        try {
            if (const std::optional<ErredShrunk> shrunk = shrunk_alone ? shrink_error(ev, erred, o) : std::nullopt) {
                static_cast<Case&>(erred) = shrunk->minimal;
                how = shrunk->how;
                steps = shrunk->steps;
                if (steps > 0)
                    result.error = shrunk->message + " (shrunk in " + std::to_string(steps) +
                                   (steps == 1 ? " step" : " steps") + " from case " +
                                   std::to_string(schedule.index[position]) + ", " +
                                   format_lengths(schedule.at(position).lengths) + ", which erred the same way: " +
                                   result.error + ")";
                result.last_request = shrunk->request;
            }
        } catch (const std::exception&) {  // a stop while shrinking: the case as it erred
        }
        erred.fail(how);
        ev.record(result, erred, static_cast<int>(schedule.index[position]), steps);
        if (const std::string what = unusual(ev.signature(), erred); !what.empty())
            result.error += " (the case it erred on has " + what + ")";
    } catch (const std::exception&) {
        result.counterexample.reset();
    }
}

// A batched run's verdict confirmed alone (kConfirmAloneAtLeast): the failure, or the kept cases of a run that held.
// Sets the result's verdict to batch_dependent (or error, when a case alone errs, or interrupted) and returns true
// when the answers alone disagree with the batched ones or the confirmation could not finish; counts the cases.
bool confirm_alone(AuditResult& result, Evaluator& ev, const Schedule& schedule, const RunOutcome& run, const AuditOptions& o) {
    std::string where;
    std::optional<std::size_t> asking;  // the position asked alone
    const auto dependent = [&](const Observation& dep, int index) {
        result.verdict = verdict_of(dep.kind);  // batch-dependent, or history-dependent (Evaluator::alone)
        ev.record(result, dep, index, 0);
        return true;
    };
    try {
        if (run.failure) {
            if (!run.failure->batched) return false;  // found alone: nothing to confirm
            const std::size_t j = run.failure->position;
            where = "case " + std::to_string(schedule.index[j]) + ", the failing one";
            ++result.confirmed_alone;
            asking = j;
            const std::optional<Observation> dep = failure_alone(ev, schedule.at(j), run.failure->observation());
            return dep && dependent(*dep, schedule.index[j]);
        }
        result.confirmed_alone += run.confirmation_alone_already;
        for (const auto& [j, kept] : run.batched) {
            if (stop_requested(o)) return stopped_confirming(result, ev, schedule, run), true;
            where = "case " + std::to_string(schedule.index[j]) + " (batched with positions " + std::to_string(kept.begin) +
                    " to " + std::to_string(kept.end - 1) + " of the run)";
            asking = j;
            std::optional<Observation> dep = ev.alone(schedule.at(j), kept.answers);
            ++result.confirmed_alone;
            if (!dep) continue;
            if (auto* in = dep->as<found::BatchDependent>()) {
                in->batch_begin = static_cast<int>(kept.begin);
                in->batch_end = static_cast<int>(kept.end);
            }
            return dependent(*dep, schedule.index[j]);
        }
    } catch (const std::exception& e) {
        if (stop_requested(o)) return stopped_confirming(result, ev, schedule, run), true;  // the stop's own error
        result.verdict = Verdict::error;
        result.error = std::string(e.what()) + " (" + where + ", asked alone; its answers in a batched request were accepted)";
        result.last_request = ev.last_request;
        if (asking) record_erred(result, ev, schedule, *asking, o, layers_own(e));
        return true;
    }
    return false;
}

// A run that held, its first case asked alone (RunOutcome::first_position): that case asked again (Evaluator::again_at_end), once per audit. A
// history-dependent or nondeterministic answer is the verdict; an error asking it is the audit's.
void first_again(AuditResult& result, const Schedule& schedule, const RunOutcome& run, const AuditOptions& o) {
    if (!run.first_asker || stop_requested(o)) return;
    try {
        const std::size_t j = run.first_position;
        if (std::optional<Observation> h = run.first_asker->again_at_end(schedule.at(j), run.first_y)) {
            result.verdict = verdict_of(h->kind);
            run.first_asker->record(result, *h, schedule.index[j], 0);
        }
    } catch (const std::exception& e) {
        if (stop_requested(o)) return;
        result.verdict = Verdict::error;
        result.error = std::string(e.what()) + " (the audit's first case, asked again after the others; it was answered " +
                       "the first time)";
    }
}

// What the run decided, on the result: its dtype and the evidence for it, what it checked, the cases it ran.
void take_run(AuditResult& result, const RunOutcome& run, const Schedule& schedule, const AuditOptions& given) {
    result.dtype = run.dtype;
    result.dtype_evidence = run.evidence;
    result.dtype_inferred = !given.dtype.has_value() && run.evidence != DtypeEvidence::no_answer;
    result.checked = run.checked;
    result.tolerance = tolerance_model(run.dtype, given.amplification);
    result.cases = run.failure ? static_cast<int>(run.failure->position) + 1 : static_cast<int>(schedule.size());
    if (!run.failure && run.interrupted) {
        result.verdict = Verdict::interrupted;
        result.cases = run.cases_done;
        result.detail = "interrupted after " + std::to_string(run.cases_done) + " of " +
                        std::to_string(schedule.size()) + " cases, none of which failed";
    }
}

}  // namespace


AuditResult run_audit(std::vector<Evaluator>& evaluators, const Schedule& schedule, const AuditOptions& given,
                      AuditResult result, const std::function<void(AuditResult&, std::size_t)>& cover) {
    const RunOutcome run = run_cases(evaluators, schedule, given);
    // From here on every comparison uses the dtype the run judged with, as an audit given it would.
    AuditOptions o = given;
    o.dtype = run.dtype;
    for (Evaluator& ev : evaluators) ev.set_dtype(run.dtype);
    take_run(result, run, schedule, given);
    cover(result, static_cast<std::size_t>(result.cases));
    const std::optional<Failure>& failure = run.failure;
    // A run some of whose cases were answered in batches (an adapter announces them with its first answer).
    const bool batched = !run.batched.empty() || (failure && failure->batched);
    Evaluator& first = evaluators[0];
    if (failure && failure->threw()) {
        result.verdict = Verdict::error;
        result.error = failure->found.error;
        result.last_request = failure->found.request;
        record_erred(result, first, schedule, failure->position, o, failure->found.layers_own);
    } else if (batched && (failure || !run.interrupted) && confirm_alone(result, first, schedule, run, o)) {
        if (result.verdict != Verdict::error) result.last_request = first.last_request;
    } else {
        if (failure)
            judge_failure(result, first, schedule.index[failure->position], schedule.at(failure->position),
                          failure->observation(), o);
        else if (!run.interrupted)
            first_again(result, schedule, run, o);
        result.last_request = first.last_request;
    }
    for (const Evaluator& ev : evaluators) result.evaluations += ev.evaluations;
    return result;
}

}  // namespace permcheck::engine
