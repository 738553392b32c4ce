// The evaluator the audit engine (audit/audit_engine.h) runs on: it asks a named black box for the answers to a case
// (L(x), again when repeated, and the answer to the property's transformed inputs), checks the outputs the signature
// names and their shapes, judges the answers with a tolerance, asks again (a reproduction, an input twice, a case
// alone after a batch), shrinks with the property's shrinker and records a finding. The expected side may come from
// a second black box, the reference (audit_against, audit/signature_audit.h). What is judged, and the tolerance,
// are in proofs-notes/signature-audit.md. Internal: it includes RapidCheck. Defined by idea: evaluator.cpp (what it
// audits, what it is built from), evaluator_ask.cpp, evaluator_shapes.cpp, evaluator_judge.cpp, evaluator_again.cpp
// and evaluator_record.cpp.
#pragma once

#include "audit/audit_engine.h"
#include "audit/signature_audit.h"
#include "properties/property.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace permcheck::engine {

// The most numbers (all items' inputs together) a batched request may hold to be recorded with a batch-dependent
// finding (found::BatchDependent::batches): about 20 MB of report.json.
inline constexpr std::size_t kLargestRecordedBatch = 1'000'000;

// What one case showed: the finding it would be (its case, kind and outputs) once `failed`; a pass keeps its outputs
// only when asked to (judge's `keep`). For nondeterminism, `inputs` were answered twice: each output's
// layer_of_permuted and permuted_layer are the first and second answer, and perms are identities.
struct Observation : Counterexample {
    bool failed = false;
    Tensors y;  // L(x), for a second evaluation
    // The batched calls its x and its transformed inputs were answered in, when they were (a batch-dependent
    // finding records them: found::BatchDependent::batches).
    std::optional<BatchCall> x_call, transformed_call;
    // What the case showed, as the verdict it would be (holds: it passed). batch_dependent: an item's answer in a
    // batched request differs from its answer alone (found only when a batched run's answers are confirmed alone);
    // history_dependent: one input answered differently after other requests, alike when asked twice in a row.
    Verdict outcome() const;
    Observation& fail(FindingKind k) {
        kind = std::move(k);
        failed = true;
        return *this;
    }
};

// L(x), L(x) again when repeated (else empty), the transformed inputs and their answer, and what the answers say of
// their precision.
// An answer that is a tensor of another shape than the signature says, said in the layer's terms: an error on x's
// side; on the transformed side, where x's answer had the signature's shape, the finding itself (Answers::reshaped).
struct AnswerShape : AdapterError {
    using AdapterError::AdapterError;
};

struct Answers {
    Tensors y, again, px, lhs;  // px: the transformed inputs (P x, x_c or pad x); lhs: their answer, as compared
    // The transformed side answered an output of another shape than the signature says (x's had it): the message,
    // and lhs holds that answer as it came (nothing compared where the shape changed).
    std::string reshaped;
    std::set<std::string> reshaped_outputs;
    PrecisionEvidence evidence;
    double inputs_magnitude = 0.0;  // the largest finite |value| of the real inputs
    double positions = 0.0;         // the largest position id of x and px
    std::string raised;             // what the layer raised instead of answering px (then lhs is empty)
    std::string reference_raised;   // what the reference raised instead of answering x (then y is empty)
    std::optional<BatchCall> x_call, transformed_call;  // the batched calls that answered y and lhs, when batched
};

class Evaluator {
public:
    // `reference`, when given, answers x (the expected side) and `box` the transformed inputs; it must outlive the
    // evaluator. Each side is batched as its box allows.
    Evaluator(const BatchedNamedBlackBox& box, std::shared_ptr<const Signature> s, const AuditOptions& o,
              Arithmetic dtype, const BatchedNamedBlackBox* reference = nullptr);

    int evaluations = 0;     // calls of the black boxes so far
    std::string last_request;  // the last request, as messages name it ("n=2")
    long largest_shift = 0;  // the largest shift c asked

    void set_dtype(Arithmetic dtype);  // the precision of every comparison from now on
    // Whether some case judged in `dtype` had a tolerance as large as its outputs.
    bool decided_nothing_in(Arithmetic dtype) const;
    std::size_t block_size() const;  // cases taken at once (1: one case a request)

    Answers ask(const Case& c, bool repeat);  // L(x) (twice when repeated) and the transformed side
    // ask() for each case, every evaluation sent through the batched side, grouped by lengths.
    std::vector<Answer<Answers>> ask_block(const std::vector<Case>& cases, const std::vector<bool>& repeats);
    // `keep`: both sides of every output and the case's lengths kept also when the case passes.
    Observation judge(const Case& c, const Answers& a, const ToleranceModel& t, bool keep = false) const;
    Observation observe(const Case& c, bool repeat);  // ask and judge with the current tolerance
    // Both sides again: a nondeterministic observation when either answer changed.
    std::optional<Observation> reproduce(const Case& c, const Observation& seen);
    // The case asked alone, one request each, compared with its answers in a batch: a batch_dependent observation
    // when they differ (layer_of_permuted the batched answer, permuted_layer the answer alone).
    std::optional<Observation> alone(const Case& c, const Answers& batched);
    std::optional<Observation> twice(const Case& c);  // x twice (and to the layer too against a reference)
    // A nondeterministic finding's input asked again: history-dependent when it is answered alike in three pairs
    // of asks in a row and one of the recent requests, asked before it, changes its answer the same way twice (the
    // observation names that request); nothing otherwise (nondeterministic, as found).
    std::optional<Observation> history(const Case& input);
    // x, then `earlier`, then x again: a history-dependent observation naming `earlier` when the two answers to x
    // differ (a report's saved finding replays so).
    std::optional<Observation> asked_after(const Case& input, const PriorRequest& earlier);
    // The audit's first case, whose x was answered `y` at the start, asked again once every other request has run:
    // a history-dependent observation naming the largest request of x asked (a table grown for it, say) when x is
    // answered otherwise now and alike twice in a row; nondeterministic when the two asks in a row differ.
    std::optional<Observation> again_at_end(const Case& first, const Tensors& y);
    rc::Shrinkable<Case> shrinkable(const Case& c) const;

    // What the side that the last call asked says of `e`, which that call threw: an error's side and, where the
    // adapter said them, the exception's type and raising place.
    found::Erred erred_by(const std::exception& e) const;

    // The finding into the result, at its case index and shrink steps.
    void record(AuditResult& result, const Observation& ob, int case_index, int shrink_steps) const;
    // The signature's open sizes as the first answer gave them (those no answer gave stay open).
    void learned_sizes(Signature& s) const;
    void plan_repro(Counterexample& ce) const;
    const Signature& signature() const { return *s_; }

private:
    enum class Side { transformed, reference };  // the box that answers the transformed inputs, or x
    Tensors call(Side side, const Tensors& inputs, const Lengths& lengths, bool check = true);
    Tensors asked(const NamedBlackBox& box, const Tensors& inputs, const Lengths& lengths) const;
    Tensors transformed_answer(const Tensors& px, const Lengths& lengths, std::string& raised,
                               Answers* reshaped = nullptr);
    Tensors taken_transformed(Tensors answer, const Lengths& lengths, Answers& a);
    Observation reshaped_observation(const Case& c, const Answers& a, const ToleranceModel& t) const;
    Tensors reference_answer(const Tensors& x, const Lengths& lengths, std::string& raised);
    void both_raised(const Answers& a, const Lengths& lengths) const;
    const char* x_side() const;
    Tensors named_outputs(Tensors answer, const Lengths& lengths);
    void check_shape(const TensorSpec& spec, const Tensor& t, const Lengths& lengths);
    void check_open_size(const TensorSpec& spec, std::size_t k, int size, const std::string& in_a_request);
    Tensors transformed(const Case& c) const;
    Tensors compared_answer(const Case& c, Tensors answer) const;
    std::optional<Observation> differ(const Lengths& lengths, const Tensors& inputs, const Tensors& a, const Tensors& b,
                                      const char* what, const ToleranceModel& t, double positions) const;
    const char* side_name() const;
    void note_undecided(const OutputComparison& o, const Tensor& a, const Tensor& b, const ToleranceModel& t) const;
    void finish(const Case& c, Answers& a);
    std::optional<found::NonFinite> non_finite(const Tensors& answer, const char* side, const Tensors& inputs) const;
    Answers answers_of(const Case& c, std::vector<Answer<Tensors>>& got, std::size_t i, Answer<Tensors>& lhs,
                       bool repeat, Tensors px);
    std::vector<bool> ignored(const Case& c, const Tensors& px, const TensorSpec& spec, const std::vector<int>& shape) const;

    const BatchedNamedBlackBox& box_;
    const BatchedNamedBlackBox* reference_;
    std::shared_ptr<const Signature> s_;
    const AuditOptions& o_;
    ToleranceModel tolerance_;
    int widest_;  // the widest fixed size (an open one is not counted)
    const PropertyRules& rules_;
    PropertyArgs args_;
    bool has_positions_;  // a position input: its rounding can make a comparison undecidable
    bool has_free_axes_;  // an axis no input has as a dim: its length travels with the inputs (kLengthInput)
    mutable std::set<double> undecided_;  // the unit roundoffs under which some comparison decided nothing
    std::map<std::pair<std::string, std::size_t>, int> open_;  // (output, dim) -> the size its first answer gave
    Side asking_ = Side::reference;      // the side of the last call (erred_by)
    std::vector<PriorRequest> recent_;  // the last few distinct requests of x (the earlier requests history() tries)
    std::optional<PriorRequest> largest_;  // the request of x with the most numbers so far (the first of equals)
    std::optional<Observation> changed_since(const Case& c, Observation ob, const Answers& batched, bool x_side,
                                             const Tensors& alone);
    void remember(const Tensors& inputs, const Lengths& lengths);
};

// The property an audit judges (equivariance when none is given: each output equivariant along its axes and
// invariant to the others), the arguments it is asked with, and those completed for a signature (throws
// std::invalid_argument naming what the signature lacks).
const PropertyRules& audited_rules(const AuditOptions& o);
PropertyArgs audited_args(const Signature& s, const AuditOptions& o);

}  // namespace permcheck::engine
