// The audit (check/signature_audit.h): the one evaluator the engine (check/audit_engine.h) runs, over named
// tensors. What is judged, and the tolerance, are in proofs-notes/signature-audit.md.
#include "check/signature_audit.h"

#include "check/audit_engine.h"
#include "check/signature_case.h"
#include "properties/property.h"

#include <cmath>
#include <map>
#include <memory>
#include <set>

namespace permcheck {

namespace {

using engine::Outcome;

// The property an audit judges (equivariance when none is given: each output equivariant along its axes and
// invariant to the others), and what it is asked with.
const PropertyRules& audited_rules(const AuditOptions& o) { return rules_of(o.property.value_or(Property::equivariance)); }
PropertyArgs given_args(const AuditOptions& o) { return {o.padding_axis, o.padding, o.positions_stay, false}; }
// The arguments completed for the signature (throws std::invalid_argument naming what the signature lacks).
PropertyArgs audited_args(const Signature& s, const AuditOptions& o) { return audited_rules(o).checked(s, given_args(o)); }

// What one case showed. For nondeterminism, `inputs` were answered twice: each output's layer_of_permuted and
// permuted_layer are the first and second answer, and perms are identities.
struct SignatureObservation : Case {
    Outcome outcome = Outcome::pass;
    Tensors y;  // L(x), for a second evaluation
    std::vector<OutputComparison> outputs;
    std::string detail;
};

// L(x), L(x) again when repeated (else empty), P x and L(P x), and what the answers say of their precision.
struct SignatureAnswers {
    Tensors y, again, px, lhs;  // px: the transformed inputs (P x, x_c or pad x); lhs: their answer, as compared
    engine::PrecisionEvidence evidence;
    double inputs_magnitude = 0.0;  // the largest finite |value| of the real inputs
    double positions = 0.0;         // the largest position id of x and px
};

// Calls one named black box, checks the outputs it names and their shapes, and judges a case: the one evaluator.
class SignatureEvaluator {
public:
    using Case = permcheck::Case;
    using Observation = SignatureObservation;
    using Answers = SignatureAnswers;

    SignatureEvaluator(const BatchedNamedBlackBox& box, std::shared_ptr<const Signature> s, const AuditOptions& o,
                       Arithmetic dtype)
        : box_(box), s_(std::move(s)), o_(o), widest_(widest_fixed_size(*s_)),
          rules_(audited_rules(o)), args_(audited_args(*s_, o)),
          has_positions_(std::any_of(s_->inputs.begin(), s_->inputs.end(),
                                     [](const TensorSpec& t) { return t.kind == TensorKind::position; })) {
        set_dtype(dtype);
    }

    int evaluations = 0;
    std::string last_request;
    long largest_shift = 0;  // the largest shift c asked

    // Whether some case judged in `dtype` had a tolerance as large as its outputs (note_undecided).
    bool decided_nothing_in(Arithmetic dtype) const {
        return undecided_.count(tolerance_model(dtype, o_.amplification).unit_roundoff) > 0;
    }

    void set_dtype(Arithmetic dtype) {
        dtype_ = dtype;
        tolerance_ = tolerance_model(dtype, o_.amplification);
    }

    Tensors call(const Tensors& inputs, const Lengths& lengths) {
        last_request = request_text(lengths);
        ++evaluations;
        return checked(box_.one(inputs), lengths);
    }

    // The outputs the signature names of an answer, their shapes checked.
    Tensors checked(Tensors answer, const Lengths& lengths) {
        Tensors outputs;
        for (const TensorSpec& spec : s_->outputs) {
            const auto it = answer.find(spec.name);
            if (it == answer.end())
                throw AdapterError("the layer's answer to a request of " + last_request + " has no output '" +
                                   spec.name + "' (the signature names " + format_output(spec) + ")");
            check_shape(spec, it->second, lengths);
            outputs[spec.name] = std::move(it->second);
        }
        return outputs;
    }

    // What L(x) is compared with: the property's transformation, the position inputs put back when they stay.
    Tensors transformed(const Case& c) const { return rules_.transformed(*s_, args_, c); }

    Answers ask(const Case& c, bool repeat) {
        Answers a;
        a.y = call(c.inputs, c.lengths);
        if (repeat) a.again = call(c.inputs, c.lengths);
        a.px = transformed(c);
        a.lhs = call(a.px, rules_.transformed_lengths(c));
        finish(c, a);
        return a;
    }

    std::size_t block_size() const { return engine::block_size_of(box_.many); }

    // ask() for each case, every evaluation sent through the batched side, grouped by lengths.
    std::vector<engine::Asked<Answers>> ask_block(const std::vector<Case>& cases, const std::vector<bool>& repeats) {
        std::vector<Tensors> inputs;
        std::vector<Lengths> keys;
        std::vector<Tensors> permuted(cases.size());
        for (std::size_t k = 0; k < cases.size(); ++k) {
            permuted[k] = transformed(cases[k]);
            for (int r = repeats[k] ? 2 : 1; r > 0; --r) {
                inputs.push_back(cases[k].inputs);
                keys.push_back(cases[k].lengths);
            }
            inputs.push_back(permuted[k]);
            keys.push_back(rules_.transformed_lengths(cases[k]));
        }
        std::vector<BatchAnswer<Tensors>> got = engine::answer_grouped(inputs, keys, engine::capacity_of(box_.many), box_.many);
        evaluations += static_cast<int>(inputs.size());
        std::vector<engine::Asked<Answers>> out(cases.size());
        std::size_t i = 0;
        for (std::size_t k = 0; k < cases.size(); ++k) {
            try {
                out[k].answers = answers_of(cases[k], got, i, repeats[k], std::move(permuted[k]));
            } catch (const std::exception& e) {
                out[k].error = e.what();
                out[k].request = last_request;
            }
            i += repeats[k] ? 3 : 2;
        }
        return out;
    }

    // `keep`: both sides of every output and the case's lengths kept also when it passes (AuditResult::checked's
    // closest case).
    Observation judge(const Case& c, const Answers& a, const ToleranceModel& t, bool keep = false) const {
        if (!a.again.empty())
            if (auto nd = differ(c.lengths, c.inputs, a.y, a.again, "L(x)", t, a.positions)) return *nd;
        // P x == x (ties): L(P x) answers the very request L(x) answered, so any difference is nondeterminism.
        if (same_values(a.px, c.inputs))
            if (auto nd = differ(c.lengths, c.inputs, a.y, a.lhs, "x and as P x", t, a.positions)) return *nd;
        Observation ob;
        std::vector<Tensor> rhs;
        const Lengths lengths = rules_.transformed_lengths(c);  // the tolerance is the padded case's
        for (const TensorSpec& spec : s_->outputs) {
            const Tensor& lhs = a.lhs.at(spec.name);
            rhs.push_back(rules_.expected(spec, c, a.y.at(spec.name)));
            ob.outputs.push_back(compared(spec.name, lhs, rhs.back(), lengths, a.inputs_magnitude, t, a.positions,
                                          rules_.ignored(*s_, c, spec, lhs.shape)));
            if (has_positions_) note_undecided(ob.outputs.back(), lhs, rhs.back(), t);
        }
        std::string where = non_finite(a.y, "L(x)", c.inputs);
        if (where.empty()) where = non_finite(a.lhs, side_name(), rules_.compared_layout(c, a.px));
        const bool holds = std::all_of(ob.outputs.begin(), ob.outputs.end(), [](const OutputComparison& o) { return o.holds; });
        if (holds && where.empty() && !keep) return ob;  // pass: nothing kept
        if (!holds || !where.empty()) ob.outcome = where.empty() ? Outcome::violated : Outcome::non_finite;
        if (!where.empty()) ob.detail = where + " for " + format_lengths(c.lengths);
        static_cast<Case&>(ob) = c;
        ob.y = a.y;
        for (std::size_t k = 0; k < ob.outputs.size(); ++k) {
            ob.outputs[k].layer_of_permuted = a.lhs.at(ob.outputs[k].name);
            ob.outputs[k].permuted_layer = std::move(rhs[k]);
        }
        return ob;
    }

    Observation observe(const Case& c, bool repeat) { return judge(c, ask(c, repeat), tolerance_); }

    // Both sides again: if either answer changed, the layer is nondeterministic.
    std::optional<Observation> reproduce(const Case& c, const Observation& seen) {
        const Tensors px = transformed(c);
        const Lengths lengths = rules_.transformed_lengths(c);
        const double positions = std::max(largest_position(*s_, c.inputs), largest_position(*s_, px));
        const Tensors y = call(c.inputs, c.lengths);
        const Tensors py = compared_answer(c, call(px, lengths));
        Tensors seen_lhs;
        for (const OutputComparison& o : seen.outputs) seen_lhs[o.name] = o.layer_of_permuted;
        // Padded: the real positions' answers are compared, as the case was judged.
        if (auto nd = differ(lengths, px, seen_lhs, py, side_name(), tolerance_, positions)) return nd;
        return differ(c.lengths, c.inputs, seen.y, y, "L(x)", tolerance_, positions);
    }

    // Case c asked alone, L(x) and the transformed side one request each, compared with its answers in a batch:
    // layer_of_permuted holds the batched answer, permuted_layer the answer alone.
    std::optional<Observation> alone(const Case& c, const Answers& batched) {
        const Lengths lengths = rules_.transformed_lengths(c);
        const Tensors y = call(c.inputs, c.lengths);
        const Tensors lhs = compared_answer(c, call(batched.px, lengths));
        std::optional<Observation> ob = differ(c.lengths, c.inputs, batched.y, y, "L(x)", tolerance_, batched.positions);
        if (!ob) ob = differ(lengths, batched.px, batched.lhs, lhs, side_name(), tolerance_, batched.positions);
        if (ob) ob->outcome = Outcome::batch_dependent;
        return ob;
    }

    // "output y of L(P x) (n=2): in the batch and alone it differs by 0.3 at (0, 1) (tolerance 1e-06)".
    std::string batch_detail(const Observation& ob) const {
        for (const OutputComparison& c : ob.outputs) {
            if (c.holds) continue;
            return "output " + c.name + " to " + format_lengths(ob.lengths) +
                   " differs between its batched request and its request alone by " + short_number(c.max_abs_diff) +
                   " at " + index_text(c.where) + " (tolerance " + short_number(c.tolerance) +
                   "): the layer's answer for one item depends on the other items of its batch";
        }
        return "its answers in a batch and alone differ";
    }

    std::optional<Observation> twice(const Case& c) {
        const Tensors a = call(c.inputs, c.lengths);
        const Tensors b = call(c.inputs, c.lengths);
        return differ(c.lengths, c.inputs, a, b, "x", tolerance_, largest_position(*s_, c.inputs));
    }

    Case input_case(const Observation& ob) const { return Case{ob.lengths, properties::identities(ob.lengths), ob.inputs}; }
    rc::Shrinkable<Case> shrinkable(const Case& c) const {
        return rules_.shrinkable(s_, args_, c);
    }

    void record(AuditResult& result, const Observation& ob, int case_index, int shrink_steps) const {
        if (result.signature) learned_sizes(*result.signature);
        Counterexample ce;
        static_cast<Case&>(ce) = ob;
        ce.outputs = ob.outputs;
        ce.case_index = case_index;
        ce.shrink_steps = shrink_steps;
        int moved = 0;
        for (const auto& [axis, p] : ob.perms)
            if (!p.is_identity()) {
                ++moved;
                ce.axis_at_fault = axis;
            }
        if (moved != 1) ce.axis_at_fault.clear();
        result.counterexample = std::move(ce);
    }

    // `reproduced`: both sides were evaluated again before the case was called a violation (the audit's way).
    std::string violation_detail(const Observation& found, bool reproduced = true) const;

    // The signature's open sizes as the first answer gave them (those no answer gave stay open).
    void learned_sizes(Signature& s) const {
        for (TensorSpec& spec : s.outputs)
            for (std::size_t k = 0; k < spec.dims.size(); ++k)
                if (const auto it = open_.find({spec.name, k}); spec.dims[k].is_open() && it != open_.end())
                    spec.dims[k].size = it->second;
    }

private:
    static std::string request_text(const Lengths& lengths) { return format_lengths(lengths); }
    void check_shape(const TensorSpec& spec, const Tensor& t, const Lengths& lengths);
    void check_open_size(const TensorSpec& spec, std::size_t k, int size, const std::string& in_a_request);
    std::optional<Observation> differ(const Lengths& lengths, const Tensors& inputs, const Tensors& a, const Tensors& b,
                                      const char* what, const ToleranceModel& t, double positions) const;
    // The transformed inputs' side as messages name it: L(P x), L(x_c) or L(pad x).
    const char* side_name() const { return rules_.sides(true).lhs; }
    // An answer to the transformed inputs as it is compared (a padded answer at its real positions).
    Tensors compared_answer(const Case& c, Tensors answer) const {
        for (const TensorSpec& spec : s_->outputs) answer[spec.name] = rules_.compared(spec, c, answer.at(spec.name));
        return answer;
    }
    // A comparison whose tolerance is as large as the outputs it compares decides nothing (rotary angles at large
    // position ids in a low precision): remembered per precision, so that such an audit is undecided, never holds.
    void note_undecided(const OutputComparison& o, const Tensor& a, const Tensor& b, const ToleranceModel& t) const {
        const double outputs = finite_max_abs(b.values, finite_max_abs(a.values));
        if (o.holds && outputs > 0.0 && o.tolerance >= outputs) undecided_.insert(t.unit_roundoff);
    }
    // After the answers of case c came: the compared side, the evidence, the magnitudes.
    void finish(const Case& c, Answers& a) {
        a.lhs = compared_answer(c, std::move(a.lhs));
        add_evidence(a, c);
        a.positions = std::max(largest_position(*s_, c.inputs), largest_position(*s_, a.px));
        largest_shift = std::max(largest_shift, c.shift);
    }
    // Where the first non-finite entry of an answer to `inputs` is, or empty. An entry at a slot the inputs' masks
    // pad is not counted (a padded query that sees no key is NaN in common model code; it is still compared).
    std::string non_finite(const Tensors& answer, const char* side, const Tensors& inputs) const;

    // The answers to case c from the batched items got[i..] (L(x), L(x) again when repeated, L(P x)).
    Answers answers_of(const Case& c, std::vector<BatchAnswer<Tensors>>& got, std::size_t i, bool repeat, Tensors px) {
        const auto take = [&](std::size_t at, const Lengths& lengths) {
            last_request = request_text(lengths);
            if (!got[at].value) throw AdapterError(got[at].error);
            return checked(std::move(*got[at].value), lengths);
        };
        Answers a;
        a.y = take(i, c.lengths);
        if (repeat) a.again = take(i + 1, c.lengths);
        a.px = std::move(px);
        a.lhs = take(i + (repeat ? 2 : 1), rules_.transformed_lengths(c));
        finish(c, a);
        return a;
    }
    // What the answers say of their precision, and the magnitude of the inputs they answered.
    void add_evidence(Answers& a, const Case& c) const {
        for (const Tensors* answer : {&a.y, &a.again, &a.lhs})
            for (const auto& [name, t] : *answer) a.evidence.add(t.values);
        a.inputs_magnitude = inputs_magnitude(c.inputs);
    }

    // real_inputs_magnitude for inputs that are finite (drawn and shrunk by permcheck): no test for infinities, so
    // the loop vectorizes.
    double inputs_magnitude(const Tensors& inputs) const {
        double m = 0.0;
        for (const TensorSpec& spec : s_->inputs)
            if (const std::vector<double>& v = inputs.at(spec.name).values; spec.kind == TensorKind::real && !v.empty())
                m = std::max(m, Eigen::Map<const Eigen::ArrayXd>(v.data(), static_cast<Eigen::Index>(v.size())).abs().maxCoeff());
        return m;
    }
    // a against b, with the tolerance at these lengths for the magnitude of the inputs and of both sides and the
    // largest position id.
    OutputComparison compared(const std::string& name, const Tensor& a, const Tensor& b, const Lengths& lengths,
                              double inputs_magnitude, const ToleranceModel& t, double positions,
                              const std::vector<bool>& ignored = {}) const {
        const double m = finite_max_abs(b.values, finite_max_abs(a.values, inputs_magnitude));
        return compare_tensors(name, a, b, signature_tolerance(t, lengths, widest_, m, positions), ignored);
    }

    const BatchedNamedBlackBox& box_;
    std::shared_ptr<const Signature> s_;
    const AuditOptions& o_;
    Arithmetic dtype_ = Arithmetic::float64;
    ToleranceModel tolerance_;
    int widest_;  // the widest fixed size (an open one is not counted)
    const PropertyRules& rules_;  // the property judged (check/.. properties/)
    PropertyArgs args_;
    bool has_positions_;  // a position input: its rounding can make a comparison undecidable
    mutable std::set<double> undecided_;  // the unit roundoffs under which some comparison decided nothing
    std::map<std::pair<std::string, std::size_t>, int> open_;  // (output, dim) -> the size its first answer gave
};

// An open size is the one the first answer gave; every later answer must have it.
void SignatureEvaluator::check_open_size(const TensorSpec& spec, std::size_t k, int size, const std::string& in_a_request) {
    const std::string dim = " in dim " + std::to_string(k);
    if (size < 1) throw AdapterError("the layer answered output '" + spec.name + "' with size 0" + dim + in_a_request);
    const auto [it, first] = open_.emplace(std::pair{spec.name, k}, size);
    if (first || it->second == size) return;
    throw AdapterError("the layer answered output '" + spec.name + "' with size " + std::to_string(size) + dim +
                       in_a_request + ", after " + std::to_string(it->second) +
                       " before; a size the signature leaves open must not depend on the input");
}

void SignatureEvaluator::check_shape(const TensorSpec& spec, const Tensor& t, const Lengths& lengths) {
    const std::vector<int> want = shape_of(spec, lengths);
    std::string m = "the layer answered output '" + spec.name + "' ";
    if (t.shape.size() != want.size()) {
        m += "with " + std::to_string(t.shape.size()) + " dims for a request of " + last_request + "; the signature says ";
        m += format_output(spec);
        throw AdapterError(m);
    }
    for (std::size_t k = 0; k < want.size(); ++k) {
        if (spec.dims[k].is_open()) check_open_size(spec, k, t.shape[k], " for a request of " + last_request);
        if (t.shape[k] == want[k] || spec.dims[k].is_open()) continue;
        const Dim& d = spec.dims[k];
        m += "with length " + std::to_string(t.shape[k]) + " in dim " + std::to_string(k) + " (";
        m += d.is_axis() ? "the axis " + d.axis + ", of length " + std::to_string(want[k]) : "fixed size " + std::to_string(want[k]);
        m += ") for a request of " + last_request + "; the signature says ";
        m += format_output(spec);
        throw AdapterError(m);
    }
    if (t.values.size() != t.size())
        throw AdapterError(m + "with " + std::to_string(t.values.size()) + " values for the shape " +
                           index_text(t.shape) + " (" + std::to_string(t.size()) + ")");
}

std::optional<SignatureObservation> SignatureEvaluator::differ(const Lengths& lengths, const Tensors& inputs,
                                                               const Tensors& a, const Tensors& b, const char* what,
                                                               const ToleranceModel& t, double positions) const {
    Observation ob;
    ob.outcome = Outcome::nondeterministic;
    const double magnitude = inputs_magnitude(inputs);
    for (const TensorSpec& spec : s_->outputs) {
        ob.outputs.push_back(compared(spec.name, a.at(spec.name), b.at(spec.name), lengths, magnitude, t, positions));
        const OutputComparison& c = ob.outputs.back();
        if (c.holds || !ob.detail.empty()) continue;
        ob.detail = "the same input (" + format_lengths(lengths) + "), requested as ";
        ob.detail += what;
        ob.detail += ", was answered twice with different results: output " + spec.name + " differs by " +
                     short_number(c.max_abs_diff) + " at " + index_text(c.where) + " (tolerance " + short_number(c.tolerance) + ")";
    }
    if (ob.detail.empty()) return std::nullopt;
    for (OutputComparison& c : ob.outputs) {
        c.layer_of_permuted = a.at(c.name);
        c.permuted_layer = b.at(c.name);
    }
    ob.lengths = lengths;
    ob.perms = properties::identities(lengths);
    ob.inputs = inputs;
    ob.y = a;
    return ob;
}

std::string SignatureEvaluator::non_finite(const Tensors& answer, const char* side, const Tensors& inputs) const {
    std::optional<std::map<std::string, std::vector<bool>>> padded;  // found at the first non-finite entry
    for (const TensorSpec& spec : s_->outputs) {
        const Tensor& t = answer.at(spec.name);
        for (std::size_t e = 0; e < t.values.size(); ++e)
            if (!std::isfinite(t.values[e])) {
                if (!padded) padded = padded_slots(*s_, inputs);
                if (at_padded_slot(spec, position_of(e, t.shape), *padded)) continue;
                std::string m = side;
                m += " has a non-finite entry (" + short_number(t.values[e]) + ") in output " + spec.name + " at " +
                     index_text(position_of(e, t.shape));
                return m;
            }
    }
    return "";
}

std::string SignatureEvaluator::violation_detail(const Observation& found, bool reproduced) const {
    for (const OutputComparison& c : found.outputs) {
        if (c.holds) continue;
        const bool moves = std::any_of(s_->outputs.begin(), s_->outputs.end(),
                                       [&](const TensorSpec& t) { return t.name == c.name && has_axis(t); });
        const SideNames sides = rules_.sides(moves);
        std::string m = "output " + c.name + ": " + sides.lhs + " and " + sides.rhs + " differ by " +
                        short_number(c.max_abs_diff) + " at " + index_text(c.where) + " (tolerance " + short_number(c.tolerance) + "; " + format_lengths(found.lengths) +
             "; " + rules_.case_text(found) + ")";
        if (reproduced) m += "; both sides gave the same answers when evaluated again";
        return m;
    }
    return "";
}

// Throws std::invalid_argument unless the saved case carries what its property needs (pads that fit its lengths,
// a shift of at least 1) and the signature can take the property.
void validate_saved_case(const Signature& s, const Counterexample& c, const AuditOptions& o) {
    audited_args(s, o);
    audited_rules(o).validate_saved(s, c);
}

}  // namespace

AuditResult reevaluate(const NamedBlackBox& layer, const Signature& signature, const Counterexample& saved,
                       bool twice, const AuditOptions& opts) {
    validate(signature);
    if (!opts.dtype || *opts.dtype == Arithmetic::exact)
        throw std::invalid_argument("a saved case is judged again in the dtype it was found in: float32, float64, float16 or bfloat16");
    require_case_fits(signature, saved);
    validate_saved_case(signature, saved, opts);
    const BatchedNamedBlackBox box{layer, {}};
    SignatureEvaluator ev(box, std::make_shared<const Signature>(signature), opts, *opts.dtype);
    const Case& c = saved;
    std::optional<SignatureObservation> ob = twice ? ev.twice(c) : std::optional(ev.observe(c, false));
    AuditResult r;
    r.property = audited_rules(opts).recorded_as(signature, audited_args(signature, opts));
    r.dtype = *opts.dtype;
    r.dtype_evidence = DtypeEvidence::given;
    r.cases = 1;
    r.signature = signature;
    r.verdict = ob && ob->outcome != Outcome::pass ? engine::verdict_of(ob->outcome) : Verdict::holds;
    if (r.verdict != Verdict::holds) {
        ev.record(r, *ob, saved.case_index, saved.shrink_steps);
        r.detail = ob->outcome == Outcome::violated ? ev.violation_detail(*ob, false) : ob->detail;
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
    checked.d = defaults.d;
    checked.min_len = defaults.min_len;
    checked.max_len = defaults.max_len;
    checked.long_len = defaults.long_len;
    validate(checked);
}

namespace {

// Case i drawn when it is run, at the lengths given it (`lengths` outlives the schedule).
engine::Schedule<Case>::Draw case_draw(const Signature& s, const AuditOptions& o, const std::vector<Lengths>& lengths) {
    return [&s, &lengths, cases = o.cases, &rules = audited_rules(o), args = audited_args(s, o)](int i, const rc::Random& random) {
        Case c = draw_signature_case(s, lengths[static_cast<std::size_t>(i)], random, size_for_case(i, cases));
        rules.draw(s, args, c, random, i, cases);
        return c;
    };
}

// What the first `count` cases of the schedule covered per axis, ascending, each once.
void cover(AuditResult& r, const std::vector<Lengths>& lengths, const engine::Schedule<Case>& schedule, std::size_t count) {
    std::map<std::string, std::set<int>> covered;
    for (std::size_t j = 0; j < count && j < schedule.size(); ++j)
        for (const auto& [axis, len] : lengths[static_cast<std::size_t>(schedule.index[j])]) covered[axis].insert(len);
    for (const auto& [axis, set] : covered) r.axis_lengths[axis] = {set.begin(), set.end()};
}

}  // namespace

AuditResult audit(const std::vector<BatchedNamedBlackBox>& layers, const Signature& signature, const AuditOptions& given) {
    validate_audit(signature, given);
    if (layers.empty()) throw std::invalid_argument("an audit needs at least one black box");
    const auto shared = std::make_shared<const Signature>(signature);
    const std::vector<Lengths> lengths = audited_rules(given).lengths(*shared, audited_args(*shared, given), given.cases, given.seed);
    auto schedule = engine::Schedule<Case>::of(given, case_draw(*shared, given, lengths));
    for (int i : schedule.index) {
        schedule.lengths.emplace_back();
        for (const auto& [axis, len] : lengths[static_cast<std::size_t>(i)]) schedule.lengths.back().push_back(len);
    }
    std::vector<SignatureEvaluator> evaluators;
    for (const BatchedNamedBlackBox& box : layers)
        evaluators.emplace_back(box, shared, given, engine::candidate_precisions(given)[0]);
    AuditResult labelled;
    labelled.property = audited_rules(given).recorded_as(signature, audited_args(signature, given));
    labelled.signature = signature;
    AuditResult r = engine::run_audit(evaluators, schedule, given, labelled, [&](AuditResult& result, std::size_t count) {
        cover(result, lengths, schedule, count);
    });
    evaluators[0].learned_sizes(*r.signature);
    r.tolerance_widest = widest_fixed_size(signature);
    for (const SignatureEvaluator& ev : evaluators) r.largest_shift = std::max(r.largest_shift, ev.largest_shift);
    const bool undecided = std::any_of(evaluators.begin(), evaluators.end(),
                                       [&](const SignatureEvaluator& ev) { return ev.decided_nothing_in(r.dtype); });
    if (r.verdict == Verdict::holds && undecided) {
        r.verdict = Verdict::undecided;
        r.detail = "no case failed, but some case's tolerance (from its position ids' rounding in " +
                   std::string(arithmetic_name(r.dtype)) +
                   ") was as large as its outputs: the audit could not decide (smaller position ids: position=P, "
                   "or a wider dtype)";
    }
    return r;
}

}  // namespace permcheck
