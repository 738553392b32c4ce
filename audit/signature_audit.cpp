// The audit (audit/signature_audit.h): its schedule and labels, on the engine (audit/audit_engine.h) and its
// evaluator (audit/evaluator.h).
#include "audit/signature_audit.h"

#include "audit/audit_engine.h"
#include "audit/evaluator.h"
#include "cases/search.h"
#include "cases/signature_case.h"

#include <algorithm>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <tuple>

namespace permcheck {

using engine::audited_args;
using engine::audited_rules;
using engine::Evaluator;
using engine::Observation;

namespace {
// Throws std::invalid_argument when the audited property needs a reference implementation (agreement) and `given`
// is false.
void require_reference(const AuditOptions& opts, bool given) {
    if (audited_rules(opts).needs_reference() && !given)
        throw std::invalid_argument(std::string("--property ") + property_name(audited_rules(opts).id()) +
                                    " compares the layer with a reference implementation, and none was given "
                                    "(permcheck audit --reference-exec CMD; in Python reference=; in C++ "
                                    "audit_signature(layer, reference, signature, options))");
}
}  // namespace

AuditResult reevaluate(const NamedBlackBox& layer, const Signature& signature, const Counterexample& saved,
                       bool twice, const AuditOptions& opts, const NamedBlackBox* reference) {
    validate(signature);
    if (!opts.dtype || *opts.dtype == Arithmetic::exact)
        throw std::invalid_argument("a saved case is judged again in the dtype it was found in: float32, float64, float16 or bfloat16");
    require_case_fits(signature, saved);
    // The saved case carries what its property needs (pads that fit its lengths, a shift of at least 1), and the
    // signature can take the property.
    audited_args(signature, opts);
    audited_rules(opts).validate_saved(signature, saved);
    require_reference(opts, reference != nullptr);
    const BatchedNamedBlackBox box{layer, {}};
    const std::optional<BatchedNamedBlackBox> theirs =
        reference ? std::optional(BatchedNamedBlackBox{*reference, {}}) : std::nullopt;
    Evaluator ev(box, std::make_shared<const Signature>(signature), opts, *opts.dtype, theirs ? &*theirs : nullptr);
    std::optional<Observation> ob = twice                ? ev.twice(saved)
                                    : saved.asked_before() ? ev.asked_after(saved, *saved.asked_before())
                                                         : std::optional(ev.observe(saved, false));
    AuditResult r;
    r.property = audited_rules(opts).recorded_as(signature, audited_args(signature, opts));
    r.settings = opts.settings;
    r.dtype = *opts.dtype;
    r.dtype_evidence = DtypeEvidence::given;
    r.cases = 1;
    r.signature = signature;
    r.verdict = ob && ob->failed ? verdict_of(ob->kind) : Verdict::holds;
    if (r.verdict != Verdict::holds) {
        ev.record(r, *ob, saved.case_index, saved.shrink_steps);
    } else {
        r.counterexample = saved;
        r.counterexample->outputs = ob ? ob->outputs : std::vector<OutputComparison>{};  // within tolerance
        r.counterexample->replay.clear();
    }
    r.evaluations = ev.evaluations;
    r.last_request = ev.last_request;
    return r;
}

AuditResult audit(const NamedBlackBox& layer, const Signature& signature, const AuditOptions& opts) {
    return audit(std::vector<NamedBlackBox>{layer}, signature, opts);
}

AuditResult audit(const std::vector<NamedBlackBox>& layers, const Signature& signature, const AuditOptions& opts) {
    std::vector<BatchedNamedBlackBox> boxes;
    for (const NamedBlackBox& box : layers) boxes.push_back(BatchedNamedBlackBox{box, {}});
    return audit(boxes, signature, opts);
}

// The options a signature audit reads, the lengths its axes give (the fields they replace are not the caller's to
// get wrong).
void validate_audit(const Signature& s, const AuditOptions& given) {
    validate(s);
    audited_args(s, given);
    AuditOptions checked = given;
    const AuditOptions defaults;
    std::tie(checked.d, checked.min_len, checked.max_len, checked.long_len) =
        std::tie(defaults.d, defaults.min_len, defaults.max_len, defaults.long_len);
    validate(checked);
}

namespace {

// Case i drawn when it is run, at the lengths given it (`lengths` outlives the schedule).
engine::Schedule::Draw case_draw(const Signature& s, const AuditOptions& o, const LengthSchedule& lengths) {
    return [&s, &lengths, cases = o.cases, &rules = audited_rules(o), args = audited_args(s, o)](int i, const rc::Random& random) {
        const auto at = static_cast<std::size_t>(i);
        return draw_case(rules, s, args, lengths[at], random, i, cases, lengths.at_longest(at));
    };
}

// What the first `count` cases of the schedule covered per axis, ascending, each once.
void cover(AuditResult& r, const LengthSchedule& lengths, const engine::Schedule& schedule, std::size_t count) {
    std::map<std::string, std::set<int>> covered;
    for (std::size_t j = 0; j < count && j < schedule.size(); ++j)
        for (const auto& [axis, len] : lengths[static_cast<std::size_t>(schedule.index[j])]) covered[axis].insert(len);
    for (const auto& [axis, set] : covered) r.axis_lengths[axis] = {set.begin(), set.end()};
}

// The audit of the black boxes (one worker each), the expected side from `reference` when given.
AuditResult audit_boxes(const std::vector<BatchedNamedBlackBox>& layers,
                        const std::vector<BatchedNamedBlackBox>* references, const Signature& signature,
                        const AuditOptions& given) {
    validate_audit(signature, given);
    require_reference(given, references != nullptr);
    if (layers.empty()) throw std::invalid_argument("an audit needs at least one black box");
    if (references && references->size() != layers.size())
        throw std::invalid_argument("an audit against a reference needs one reference box per layer box (each "
                                    "worker asks its own), got " + std::to_string(references->size()) + " for " +
                                    std::to_string(layers.size()));
    const auto shared = std::make_shared<const Signature>(signature);
    const LengthSchedule lengths = audited_rules(given).lengths(*shared, audited_args(*shared, given), given.cases, given.seed);
    auto schedule = engine::Schedule::of(given, case_draw(*shared, given, lengths));
    for (int i : schedule.index) {
        schedule.lengths.emplace_back();
        for (const auto& [axis, len] : lengths[static_cast<std::size_t>(i)]) schedule.lengths.back().push_back(len);
    }
    std::vector<Evaluator> evaluators;
    for (std::size_t k = 0; k < layers.size(); ++k)
        evaluators.emplace_back(layers[k], shared, given, engine::candidate_precisions(given)[0],
                                references ? &(*references)[k] : nullptr);
    AuditResult labelled;
    labelled.property = audited_rules(given).recorded_as(signature, audited_args(signature, given));
    labelled.settings = given.settings;
    labelled.signature = signature;
    AuditResult r = engine::run_audit(evaluators, schedule, given, labelled, [&](AuditResult& result, std::size_t count) {
        cover(result, lengths, schedule, count);
    });
    evaluators[0].learned_sizes(*r.signature);
    r.tolerance_widest = widest_fixed_size(signature);
    for (const Evaluator& ev : evaluators) r.largest_shift = std::max(r.largest_shift, ev.largest_shift);
    const bool undecided = std::any_of(evaluators.begin(), evaluators.end(),
                                       [&](const Evaluator& ev) { return ev.decided_nothing_in(r.dtype); });
    if (r.verdict == Verdict::holds && undecided) {
        r.verdict = Verdict::undecided;
        r.detail = "no case failed, but some case's tolerance (from its position ids' rounding in " +
                   std::string(arithmetic_name(r.dtype)) +
                   ") was as large as its outputs: the audit could not decide (smaller position ids: position=P, "
                   "or a wider dtype)";
    }
    return r;
}

}  // namespace

AuditResult audit(const std::vector<BatchedNamedBlackBox>& layers, const Signature& signature, const AuditOptions& given) {
    return audit_boxes(layers, nullptr, signature, given);
}

AuditResult audit(const std::vector<BatchedNamedBlackBox>& layers, const std::vector<BatchedNamedBlackBox>& references,
                  const Signature& signature, const AuditOptions& given) {
    return audit_boxes(layers, &references, signature, given);
}

AuditResult audit_against(const NamedBlackBox& layer, const NamedBlackBox& reference, const Signature& signature,
                          const AuditOptions& opts) {
    const std::vector<BatchedNamedBlackBox> references{BatchedNamedBlackBox{reference, {}}};
    return audit_boxes({BatchedNamedBlackBox{layer, {}}}, &references, signature, opts);
}

namespace {

// Tensors of one shape but along dim k, joined along it.
Tensor joined_along(const std::vector<Tensor>& parts, std::size_t k) {
    Tensor out{parts.front().shape, {}};
    out.shape[k] = 0;
    for (const Tensor& p : parts) out.shape[k] += p.shape[k];
    const auto [outer, inner] = outer_inner(out.shape, k);
    for (std::size_t o = 0; o < outer; ++o)
        for (const Tensor& p : parts) {
            const std::size_t run = static_cast<std::size_t>(p.shape[k]) * inner;
            out.values.insert(out.values.end(), p.values.begin() + static_cast<std::ptrdiff_t>(o * run),
                              p.values.begin() + static_cast<std::ptrdiff_t>((o + 1) * run));
        }
    return out;
}

// The chunked request's axis and the chunks' ends, when `inputs` hold one.
std::optional<std::pair<std::string, std::vector<int>>> chunking_of(const Tensors& inputs) {
    const auto it = inputs.lower_bound(kChunksInput);
    if (it == inputs.end() || it->first.rfind(kChunksInput, 0) != 0) return std::nullopt;
    std::vector<int> ends;
    for (double e : it->second.values) ends.push_back(static_cast<int>(e));
    return std::pair{it->first.substr(kChunksInput.size()), ends};
}

// "chunk 2 of 3, positions 2 to 4"
std::string chunk_text(std::size_t k, std::size_t count, int from, int end) {
    return "chunk " + std::to_string(k + 1) + " of " + std::to_string(count) + ", positions " + std::to_string(from) +
           (end - from > 1 ? " to " + std::to_string(end - 1) : "");
}

}  // namespace

NamedBlackBox chunked_black_box(ChunkStep step, const Signature& signature) {
    return [step = std::move(step), s = signature](const Tensors& inputs) {
        const auto chunking = chunking_of(inputs);
        std::any state;
        if (!chunking) return step(state, inputs, 0);
        const std::string& axis = chunking->first;  // named, not bound: a lambda below captures it
        const std::vector<int>& ends = chunking->second;
        // A planted harness bug: each chunk after the first starts one position early, its first output dropped.
        const int early = test_only::planted_harness_bug() == test_only::HarnessBug::chunks_repeat_a_position ? 1 : 0;
        std::map<std::string, std::vector<Tensor>> parts;
        int first = 0;
        for (std::size_t k = 0; k < ends.size(); ++k) {
            const int end = ends[k];
            const int from = first > 0 ? first - early : first;
            Tensors answer;
            try {
                answer = step(state, properties::span_of(s, inputs, axis, from, end), from);
            } catch (const std::exception& e) {  // the layer's own: a finding where one step from empty answers
                throw LayerRaised(std::string(e.what()) + " (" + chunk_text(k, ends.size(), from, end) + ")");
            }
            for (const TensorSpec& t : s.outputs) {
                Tensor& y = answer.at(t.name);
                if (from < first) y = properties::span_along(t, y, axis, first - from, end - from);
                parts[t.name].push_back(std::move(y));
            }
            first = end;
        }
        Tensors out{{kChunkedAnswer, Tensor{}}};
        for (const TensorSpec& t : s.outputs) {
            const auto k = std::find_if(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.axis == axis; });
            out[t.name] = k == t.dims.end() ? parts[t.name].back()
                                            : joined_along(parts[t.name], static_cast<std::size_t>(k - t.dims.begin()));
        }
        return out;
    };
}

}  // namespace permcheck
