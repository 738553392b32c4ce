// The engine of black-box audits (audit/audit_engine.cpp): the cases of a schedule run over workers, one per black
// box (the lowest failing case wins, whatever the number of workers; the dtype inferred from what the answers say
// of their precision), the shrink of a failure (reproduce it, shrink the case, or shrink the input answered twice),
// the confirmation of a batched run's answers alone, stop requests and progress, and the verdict. It asks and judges
// through audit/evaluator.h's Evaluator. Internal: it includes RapidCheck.
#pragma once

#include "audit/blackbox.h"
#include "cases/signature.h"

#include <rapidcheck.h>

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace permcheck::engine {

// What the values of the answers say of their precision. permcheck's real inputs are short dyadic numbers: k / 2^e
// with e <= 20 and |k| <= 2^(e + 3) (cases/generators.h, Sampler::value), at most 23 significant bits; masks and
// indices are small integers, and so are token and position ids below 2^23 (most are). A layer that copies,
// permutes, negates, masks, selects or scales them by powers of two, or adds a few with room to spare, answers
// such numbers in any precision, exactly: they say nothing of the precision it computes in. A float32 rounding
// fills float32's 24-bit significand (its last bit is set in about half the values it rounds). So, over every
// finite entry of the answers (non-finite ones say nothing; zero has no significant bit):
//   - some entry is not a float32 value (beyond its range, or more bits than its significand): float64;
//   - else some entry has more than kShortDyadicBits = 23 significant bits (float32 rounding seen): float32;
//   - else (every entry a short dyadic number, or none finite): float64, the stricter tolerance, which exact
//     answers meet: ambiguous evidence judged as float64 and said so.
// One rounded entry anywhere decides. An audit that infers its dtype judges every case with each candidate
// precision's tolerance up to the first that fails even with float32's, then decides from all their answers, so
// the verdict is that of an audit given that dtype (the replay line names it).
// Against a reference implementation (agreement) the two sides' answers are weighed apart and the coarser
// precision decides: a float32 kernel against a float64 original is judged as float32.
int significant_bits(double v);  // of a finite v: 0 for zero, 1 for a power of two, up to 53
struct SideEvidence {
    bool answered = false;      // some answer was added (possibly without a finite entry)
    bool any_finite = false;
    bool all_float32 = true;    // every finite entry is a float32 value
    bool rounded = false;       // some float32 value has more than kShortDyadicBits significant bits
    void add(const double* values, std::size_t count);
    void add(const std::vector<double>& values) { add(values.data(), values.size()); }
    void add(const SideEvidence& other);
    Arithmetic dtype() const;
    DtypeEvidence evidence() const;  // which of the rules above decided (no_answer when nothing was added)
};
// The layer's answers (every answer, without a reference) and a reference's.
struct PrecisionEvidence : SideEvidence {
    SideEvidence reference;
    void add(const double* values, std::size_t count) { SideEvidence::add(values, count); }
    void add(const std::vector<double>& values) { SideEvidence::add(values); }
    void add(const PrecisionEvidence& other);
    Arithmetic dtype() const;
    DtypeEvidence evidence() const;
};

// The precisions a run judges each case with: the given dtype, or, when it is inferred, float32 (the looser,
// first) and float64.
std::vector<Arithmetic> candidate_precisions(const AuditOptions& o);

// The cases of this run: those of its shard, and which of them also evaluate L(x) twice. A case is drawn when it
// is run (by the worker that runs it), from its own random split from the audit's seed, so the same position
// always gives the same case and no run holds more than its workers' cases at once.
struct Schedule {
    using Draw = std::function<Case(int case_index, const rc::Random& random)>;
    std::vector<int> index;                 // each case's index in the whole audit
    std::vector<rc::Random> randoms;        // each case's random
    Draw draw;
    std::set<std::size_t> repeated;         // positions that also evaluate L(x) twice
    std::vector<std::vector<int>> lengths;  // each position's lengths, one per axis (empty: not known)

    static Schedule of(const AuditOptions& o, Draw draw);
    std::size_t size() const { return index.size(); }
    Case at(std::size_t j) const { return draw(index[j], randoms[j]); }
    bool repeats(std::size_t j) const { return repeated.count(j) > 0; }
};

class Evaluator;

// The run, the dtype it decided and the verdict, on a result labelled by the caller (property, signature): one
// evaluator per black box, each run by a thread of its own; `cover(result, count)` records what the first `count`
// positions of the schedule covered. A failure is shrunk, and a batched run confirmed alone, on the first evaluator.
AuditResult run_audit(std::vector<Evaluator>& evaluators, const Schedule& schedule, const AuditOptions& given,
                      AuditResult labelled, const std::function<void(AuditResult&, std::size_t)>& cover);

// Inputs answered through a batched side: grouped by their lengths (inputs of one key have equal shapes), each
// group in calls of at most `capacity` inputs, all of them at once through call_all when the side has it. A call
// that throws, or answers another number of items than it was given, gives each of its items that error.
// `calls`, when given, gets the call each input was answered in (BatchCall).
std::vector<Answer<Tensors>> answer_grouped(const std::vector<Tensors>& inputs, const std::vector<Lengths>& keys,
                                            std::size_t capacity, const Batching<Tensors>& batching,
                                            std::vector<BatchCall>* calls = nullptr);
// The most inputs a call of the batched side takes (1: not batched), and the cases a worker takes at once: a case
// asks two or three evaluations, and a block's evaluations are split by lengths.
std::size_t capacity_of(const Batching<Tensors>& batching);
std::size_t block_size_of(const Batching<Tensors>& batching);

}  // namespace permcheck::engine
