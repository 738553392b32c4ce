// Auditing a layer we did not write, seen only through its answers: the options, the result, and the one-tensor
// form's entry (one_tensor_signature, one_tensor_answer, one_tensor_box, audit(BlackBox) and its replay line),
// where the API, the command line, the adapters and old reports convert that form into a signature, so that the
// engine, cases/, properties/ and the report's views see only signatures. Every audit is a signature audit
// (audit/signature_audit.h) on one engine (audit/audit_engine.h): it draws cases as a check does (cases/signature_case.h), compares the property's two sides with a tolerance
// derived from the dtype's unit roundoff, n, d and the magnitudes (proofs-notes/float-tolerance.md; the dtype
// inferred from the answers when not given), evaluates a failing case again before calling it a violation (two
// answers to one input: nondeterministic), and shrinks every failure with the cases' own shrinker.
// It includes no RapidCheck header, so that <permcheck/audit.h> does not either (tests/public_headers.sh).
#pragma once

#include "cases/tolerance_model.h"
#include "cases/finding.h"
#include "cases/signature.h"
#include "check/check_result.h"
#include "audit/taps.h"
#include "layers/expectation.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

// The layer under audit. Called with an n x d input (one row per position); returns n rows (sequence output)
// or one row (pooled output), of any width. Throws AdapterError (or any std::exception) on failure. One
// BlackBox is called from one thread at a time.
using BlackBox = std::function<Mat<double>(const Mat<double>&)>;

// An answer, or instead the error that came (a sentence naming its cause, as an AdapterError's) and the request it
// came for: how an error travels from an adapter or a layer to the verdict, an item of a batched call, a case's
// answers or a case's judgement alike.
template <class Out> struct Answer {
    std::optional<Out> value;
    std::string error;
    std::string request;  // as messages name it ("n=2"); empty where the caller knows it
    // The error is the layer's own (it raised, or answered what no comparison takes; layers_own()), not its
    // adapter's failure (a crash, a timeout, a broken protocol): the case it erred on is shrunk.
    bool layers_own = false;
};
// Whether an exception is the layer's own rather than its adapter's failure, which throws a plain AdapterError.
bool layers_own(const std::exception& e);

// Batched evaluation, for a black box that takes several inputs per call (an adapter process that announced
// "batch": K, docs/protocol.md, "Batched requests"), each item an Answer.
// capacity(): the most inputs one call takes; 0 or 1 while not batched (e.g. before the adapter's first answer
// announced it; it may grow after any call). call(inputs): inputs of equal shapes, answered in order, one item
// each; throws (AdapterError or any std::exception) when the call as a whole fails. call_all(parts), optional:
// the calls of several parts at once (their requests pipelined: an adapter process computes one while the answer
// of the one before is read), part p's answers in element p; a part whose call failed has that error in every item.
// stacked(), optional: whether its calls go stacked now (an adapter that announced "stacked"), as a reproduction of
// a batch-dependent finding sends them again.
template <class In> struct Batching {
    std::function<int()> capacity;
    std::function<std::vector<Answer<In>>(const std::vector<In>&)> call;
    std::function<std::vector<std::vector<Answer<In>>>(const std::vector<std::vector<In>>&)> call_all;
    std::function<bool()> stacked;
};

// The batched call an input was answered in: every input of the call, in order, and that input's place among them.
struct BatchCall {
    std::shared_ptr<const std::vector<Tensors>> items;
    std::size_t at = 0;
    bool stacked = false;
};

// A deterministic split of the cases: case i belongs to shard `index` (1-based) of `count` when
// i % count == index - 1, so the shards of one audit together run exactly the unsharded audit's cases.
struct Shard {
    int index = 1;
    int count = 1;
};
Shard parse_shard(const std::string& text);  // "K/N" with 1 <= K <= N; throws std::invalid_argument otherwise
bool in_shard(int case_index, const Shard& shard);

// The default cap on the shrinking of one audit failure, in evaluations of its predicate.
inline constexpr int kAuditShrinkEvaluations = 500;

struct AuditOptions {
    std::string name = "black box";     // the audited layer's name in the record (e.g. the command)
    Output output = Output::sequence;   // sequence: equivariance L(P x) = P L(x); pooled: invariance L(P x) = L(x)
    // The precision the layer computes in: float32 | float64 | float16 | bfloat16, or empty: inferred from the
    // answers (float32 or float64, never a half precision), since judging a float32 layer with a
    // float64 tolerance calls its rounding a violation.
    std::optional<Arithmetic> dtype;
    int d = 4;                          // features per position
    int min_len = 1, max_len = 8;       // sequence lengths; shrinking goes toward min_len
    // Every tenth case is a long one, lengths rising up to long_len (cases/lengths.h), so that a layer that mixes
    // only inside windows or blocks is seen; 0 (or <= max_len) makes max_len a hard cap.
    int long_len = 256;
    int cases = 100;                    // cases of the whole audit (before sharding)
    std::uint64_t seed = 1;
    Shard shard;                        // which of the cases this run evaluates
    int repeat_checks = 3;              // cases of this run (spread over it) that also evaluate L(x) twice
    double amplification = 1.0;         // the layer's worst-case growth of a rounding error (ToleranceModel)
    int max_shrink_evaluations = kAuditShrinkEvaluations;  // a cap on the shrinking of one failure (each costs 2 calls)
    // A bound on the time one failure's whole shrink takes, in seconds (0: none): a shrink cut short keeps the
    // smallest failing case found by then and says so (Counterexample::shrink_cut_short).
    double shrink_seconds = 300;
    // A signature audit's property (properties/; `permcheck describe` lists them): empty or equivariance (each
    // output equivariant along its axes, invariant to the others), shift, padding, causal, packing, ...
    std::optional<Property> property;
    // The values of the options the property declares (properties/property.h, PropertyRules::options), by keyword:
    // {"window", "3"} for --window 3, {"padding", "left"}, {"padding_axis", "n"}, {"causal_axis", "n"},
    // {"along", "nodes"}, {"keep_positions", "true"}. The property reads and checks them.
    std::map<std::string, std::string> settings;
    // The slots the inputs' masks pad left out of every comparison (by default they are compared: a fast path's NaN
    // at a fully masked row against a reference's 0 is a disagreement).
    bool skip_padded = false;
    // Asked between cases and between shrink steps: true stops the audit with the verdict `interrupted`, which
    // keeps the cases run and any failure found (shrunk as far as it got). The engine reads no signal itself: a
    // program that wants Ctrl-C to stop an audit sets a flag in its handler and returns it here.
    std::function<bool()> stop_requested;
    // Called after each case and each shrink step, from the thread that ran it (one call at a time).
    std::function<void(const AuditProgress&)> on_progress;
};
// Throws std::invalid_argument naming the bad option and what is expected.
void validate(const AuditOptions& opts);

// The most significant bits of a short dyadic number: permcheck's real inputs have at most 23 (audit/audit_engine.h).
inline constexpr int kShortDyadicBits = 23;
// What decided the dtype of an audit (audit/audit_engine.h, PrecisionEvidence): given in the options; or, inferred
// from the answers of the cases it judged: no answer came (nothing inferred: judged as float64); the answers held
// no finite entry, or only short dyadic numbers, which any precision computes exactly (ambiguous: judged as
// float64, the stricter tolerance); some entry showed float32 rounding (float32); some entry is not a float32
// value (float64).
enum class DtypeEvidence { given, no_answer, no_finite_value, short_dyadic, float32_rounding, not_float32 };
// report.json's details.audit.dtype_evidence: "given", "no answer", "no finite value", "short dyadic answers,
// judged as float64", "float32 rounding seen", "an answer not a float32 value".
const char* dtype_evidence_name(DtypeEvidence e);
// What a run checked of one output, over the cases it judged (those up to and including the failing one, the
// failure before shrinking; a case answered twice differently judged no output): the largest difference of the two
// sides (|L(P x) - P L(x)|, or |L(P x) - L(x)| for an output without an axis), the tolerance of the case it was
// seen in, the largest fraction of its own tolerance any case came to (> 1: that case violated), and the range of
// the cases' tolerances (each case's own: its lengths and magnitudes, cases/compare.h). A running maximum over the
// judgements the run makes anyway: no evaluation of its own.
struct OutputCheck {
    std::string name;
    int cases = 0;
    double max_abs_diff = 0.0;
    double tolerance_at_max = 0.0;
    double largest_fraction = 0.0;
    double min_tolerance = 0.0, max_tolerance = 0.0;
    // The case that came closest to its tolerance (the largest fraction; of equal ones the first), kept with both
    // sides of this output when the run judged every case it drew without a failure: its index in the audit (-1:
    // none kept), its lengths, and the comparison with both tensors, so a report that holds can draw it.
    int closest_case = -1;
    Lengths closest_lengths;
    OutputComparison closest;
};

struct AuditResult {
    Verdict verdict = Verdict::holds;
    Property property = Property{"equivariance"};  // as recorded: equivariance, invariance, shift or padding
    std::map<std::string, std::string> settings = {};  // the property's options the run took (AuditOptions::settings)
    Arithmetic dtype = Arithmetic::float64;      // the one the comparisons used: float32 | float64 | float16 | bfloat16
    bool dtype_inferred = false;                 // inferred from the answers (some came), not given in the options
    DtypeEvidence dtype_evidence = DtypeEvidence::no_answer;  // what decided dtype (given when the options gave it)
    int cases = 0;                      // cases evaluated by this run (its shard), the failing one included
    int evaluations = 0;                // calls of the black box, in all
    // Cases of a batched run asked again alone, one request each, to confirm that batching changed no answer
    // (the failure, or at least max(8, cases / 10) of a run that held); 0 when nothing was batched.
    int confirmed_alone = 0;
    // A note on how the run ended beside its finding (interrupted while shrinking, why it is undecided); the
    // finding's own sentence is said from its facts by report/text.h's finding_text (detail_text: this, else that).
    std::string detail;
    std::string error;                  // verdict error: the cause, naming the last request
    std::string last_request;           // the last input sent, e.g. "n=5", empty before the first
    // The lengths the run evaluated per axis, ascending, each once (the one-tensor form's: axis n).
    std::map<std::string, std::vector<int>> axis_lengths;
    // The finding, every audit's in one form (the one-tensor form's: input x, output y). violated, non-finite: the
    // shrunk case with every output's two sides and their comparison; nondeterministic: the input answered twice,
    // its permutations identities, the two answers as the two sides.
    std::optional<Counterexample> counterexample;
    // The signature audited (the shorthand's, its open output width learned from the answers), so that
    // describe_finding and the reports show it whole.
    std::optional<Signature> signature;
    // The shift property: the largest c the run checked (0 for the other properties).
    long largest_shift = 0;
    // What the run checked of each output, in the signature's order (empty when no case was judged), and the
    // tolerance model of every comparison (the dtype's unit roundoff, the options' amplification) with `widest`,
    // the signature's widest fixed size: a case's tolerance is float_tolerance(model, k, widest, M) with k the sum
    // of its axes' lengths (plus kPositionRoundingTerms times its largest position id, cases/signature_case.h).
    std::vector<OutputCheck> checked;
    ToleranceModel tolerance;
    int tolerance_widest = 1;
    // The counterexample's taps (audit/taps.h): set by a caller that asked the layer for them after a violation or a
    // non-finite output (`permcheck audit` does when the adapter offers taps); the audit itself never does.
    std::optional<TapTrace> taps;
    // The line that finds the case again, when the entry that converted the layer's form gave one (the one-tensor
    // form's AuditOptions): replay_hint() and explain() (report/text.h) give it instead of the signature's C++.
    std::string replay;
};

// Audits one black box.
AuditResult audit(const BlackBox& layer, const AuditOptions& opts);

// The same audit with the cases spread over several black boxes (one thread each, e.g. one adapter process
// each). The verdict, cases and counterexample are those of one box (the lowest-indexed failing case is the
// one shrunk); `evaluations` may be higher, since cases already started past a failure are finished.
AuditResult audit(const std::vector<BlackBox>& layers, const AuditOptions& opts);

// The one-tensor form `--dim D [--output sequence|pooled] [--min-len --max-len]` as a signature: axis n=MIN..MAX (its
// long cases up to long_len), input x:n,D, output y:n,W (sequence) or y:W (pooled), W open: learned from the first
// answer, and every later answer must have it.
Signature one_tensor_signature(int d, Output output, int min_len, int max_len, int long_len = 0);
// The one-tensor signature's output as the form names it.
Output one_tensor_output(const Signature& s);
// A one-tensor layer's answer y to a request of n positions as its output tensor: n x W for a sequence output, the
// vector W for a pooled one; throws AdapterError in the form's words for another number of rows.
Tensor one_tensor_answer(const Mat<double>& y, Output output, int n);
// A one-tensor black box as the named one of its signature: inputs {x: n x d} in, outputs {y} out (n x W, or W
// for a pooled output), each answer's rows checked by one_tensor_answer.
NamedBlackBox one_tensor_box(BlackBox layer, Output output);

}  // namespace permcheck
