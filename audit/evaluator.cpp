// The evaluator of audits (audit/evaluator.h).
#include "audit/evaluator.h"

#include "cases/signature_case.h"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>

namespace permcheck::engine {

const PropertyRules& audited_rules(const AuditOptions& o) { return rules_of(o.property.value_or(Property{"equivariance"})); }

PropertyArgs audited_args(const Signature& s, const AuditOptions& o) {
    const PropertyRules& rules = audited_rules(o);
    if (!o.along.empty() && (!rules.permutes() || rules.needs_reference()))
        throw std::invalid_argument("along (--along) goes with equivariance or invariance, not --property " +
                                    std::string(property_name(rules.id())));
    if (!o.along.empty() && !o.padding_axis.empty())
        throw std::invalid_argument("along (--along) and padding_axis (--padding-axis) do not go together");
    const std::string& axis = rules.along_sequence() ? o.causal_axis : !o.along.empty() ? o.along : o.padding_axis;
    for (const auto& setting : o.settings) {
        const std::string& keyword = setting.first;  // a name, not a binding: a lambda captures it
        const std::vector<PropertyOption> declared = rules.options();
        if (std::none_of(declared.begin(), declared.end(), [&](const PropertyOption& d) { return keyword == d.keyword; }))
            throw std::invalid_argument("the setting '" + keyword + "' is no option of --property " +
                                        std::string(rules.name()));
    }
    return rules.checked(s, PropertyArgs{axis, o.padding, o.positions_stay, false, o.settings});
}

Evaluator::Evaluator(const BatchedNamedBlackBox& box, std::shared_ptr<const Signature> s, const AuditOptions& o,
                     Arithmetic dtype, const BatchedNamedBlackBox* reference)
    : box_(box), reference_(reference), s_(std::move(s)), o_(o), widest_(widest_fixed_size(*s_)),
      rules_(audited_rules(o)), args_(audited_args(*s_, o)),
      has_positions_(std::any_of(s_->inputs.begin(), s_->inputs.end(),
                                 [](const TensorSpec& t) { return t.kind == TensorKind::position; })),
      has_free_axes_(!free_axes(*s_).empty()) {
    set_dtype(dtype);
}

void Evaluator::set_dtype(Arithmetic dtype) { tolerance_ = tolerance_model(dtype, o_.amplification); }

bool Evaluator::decided_nothing_in(Arithmetic dtype) const {
    return undecided_.count(tolerance_model(dtype, o_.amplification).unit_roundoff) > 0;
}

std::size_t Evaluator::block_size() const {
    if (rules_.chunks_calls()) return 1;  // a chunked request goes alone
    return std::max(block_size_of(box_.many), reference_ ? block_size_of(reference_->many) : 1);
}

Tensors Evaluator::call(Side side, const Tensors& inputs, const Lengths& lengths, bool check) {
    last_request = format_lengths(lengths);
    ++evaluations;
    const NamedBlackBox& box = side == Side::reference && reference_ ? reference_->one : box_.one;
    if (side == Side::reference) remember(inputs, lengths);
    Tensors answer = asked(box, inputs, lengths);
    if (side == Side::transformed && rules_.chunks_calls() && !answer.count(kChunkedAnswer))
        throw AdapterError("the layer answered a request of " + last_request +
                           " in chunks as if it were one pass: it does not decode in chunks (an adapter answers "
                           "\"chunked\": true, as permcheck.serve does for a module with its cache= route; in C++, "
                           "audit a chunked_black_box of a ChunkStep)");
    return check ? checked(std::move(answer), lengths) : answer;
}

// The box's answer to inputs of these lengths, a free axis's length carried with them (kLengthInput).
Tensors Evaluator::asked(const NamedBlackBox& box, const Tensors& inputs, const Lengths& lengths) const {
    return has_free_axes_ ? box(with_free_lengths(*s_, inputs, lengths)) : box(inputs);
}

// The answer to the transformed inputs; where the layer raised (LayerRaised) and the property makes that a finding
// (decoding in chunks, or against a reference), what it raised goes to `raised` and the answer is empty.
// With `reshaped`, an answer of another shape than the signature says is kept there as the finding (taken_transformed).
Tensors Evaluator::transformed_answer(const Tensors& px, const Lengths& lengths, std::string& raised, Answers* reshaped) {
    try {
        if (!reshaped || reference_) return call(Side::transformed, px, lengths);
        return taken_transformed(call(Side::transformed, px, lengths, /*check=*/false), lengths, *reshaped);
    } catch (const LayerRaised& e) {
        if (!rules_.raising_is_finding()) throw;
        raised = e.what();
        return {};
    }
}

// The answer to x, the expected side's; where a reference raised and the property makes that a finding (agreement),
// what it raised goes to `raised` and the answer is empty.
Tensors Evaluator::reference_answer(const Tensors& x, const Lengths& lengths, std::string& raised) {
    try {
        return call(Side::reference, x, lengths);
    } catch (const LayerRaised& e) {
        if (!reference_ || !rules_.raising_is_finding()) throw;
        const std::string said = e.what(), prefix = "the layer raised: ";
        raised = "the reference raised: " + (said.rfind(prefix, 0) == 0 ? said.substr(prefix.size()) : said);
        return {};
    }
}

// The transformed side's answer, its outputs' shapes checked: one of another shape than the signature says, where x's
// answer had it, is the finding (a readout that counts its graphs from the last batch entry answers another number
// of them once the nodes move): the outputs are kept as answered, those of another shape named in `a`.
Tensors Evaluator::taken_transformed(Tensors answer, const Lengths& lengths, Answers& a) {
    try {
        return checked(answer, lengths);
    } catch (const AnswerShape& e) {
        Tensors outputs;
        for (const TensorSpec& spec : s_->outputs) {
            const auto it = answer.find(spec.name);
            if (it == answer.end()) return checked(std::move(answer), lengths);  // an output missing: the error
            try {
                check_shape(spec, it->second, lengths);
            } catch (const AnswerShape&) {
                a.reshaped_outputs.insert(spec.name);
            }
            outputs[spec.name] = std::move(it->second);
        }
        a.reshaped = e.what();
        return outputs;
    }
}

// Both sides raised on one input: it is outside what either answers, a case that tests nothing (an error naming both).
void Evaluator::both_raised(const Answers& a, const Lengths& lengths) const {
    if (a.raised.empty() || a.reference_raised.empty()) return;
    throw AdapterError("the layer and the reference both raised on the same input (" + format_lengths(lengths) +
                       "): " + a.raised + "; " + a.reference_raised +
                       " (the signature asks for inputs neither answers)");
}

// The side that answers x, as messages name it: L(x), or R(x) against a reference.
const char* Evaluator::x_side() const { return reference_ ? "R(x)" : "L(x)"; }

// The outputs the signature names of an answer, their shapes checked.
Tensors Evaluator::checked(Tensors answer, const Lengths& lengths) {
    Tensors outputs;
    for (const TensorSpec& spec : s_->outputs) {
        const auto it = answer.find(spec.name);
        if (it == answer.end())
            throw AdapterError("the layer's answer to a request of " + last_request + " has no output '" + spec.name +
                               "' (the signature names " + format_output(spec) + ")");
        check_shape(spec, it->second, lengths);
        outputs[spec.name] = std::move(it->second);
    }
    return outputs;
}

// An open size is the one the first answer gave; every later answer must have it.
void Evaluator::check_open_size(const TensorSpec& spec, std::size_t k, int size, const std::string& in_a_request) {
    const std::string dim = " in dim " + std::to_string(k);
    if (size < 1) throw AdapterError("the layer answered output '" + spec.name + "' with size 0" + dim + in_a_request);
    const auto [it, first] = open_.emplace(std::pair{spec.name, k}, size);
    if (first || it->second == size) return;
    throw AdapterError("the layer answered output '" + spec.name + "' with size " + std::to_string(size) + dim +
                       in_a_request + ", after " + std::to_string(it->second) +
                       " before; a size the signature leaves open must not depend on the input");
}

// An output's shape against the signature's at these lengths, said in the layer's terms ("the layer answered output
// 'y' with shape (1, 1, 8) where the signature says (1, 2, 8): dim 1, the axis n, has 1 of its 2 positions").
void Evaluator::check_shape(const TensorSpec& spec, const Tensor& t, const Lengths& lengths) {
    std::vector<int> want = shape_of(spec, lengths);
    for (std::size_t k = 0; k < want.size() && k < t.shape.size(); ++k)
        if (spec.dims[k].is_open()) want[k] = t.shape[k];  // an open size is checked against the first answer's
    const std::string m = "the layer answered output '" + spec.name + "' with shape " + index_text(t.shape);
    const std::string request = " (" + format_output(spec) + "), for a request of " + last_request;
    if (t.shape.size() != want.size())
        throw AnswerShape(m + ", " + std::to_string(t.shape.size()) + " dims where the signature says " +
                          std::to_string(want.size()) + ": " + index_text(want) + request);
    for (std::size_t k = 0; k < want.size(); ++k) {
        if (spec.dims[k].is_open()) check_open_size(spec, k, t.shape[k], " for a request of " + last_request);
        if (t.shape[k] == want[k]) continue;
        const Dim& d = spec.dims[k];
        throw AnswerShape(m + " where the signature says " + index_text(want) + ": dim " + std::to_string(k) + ", " +
                          (d.is_axis() ? "the axis " + d.axis + ", has " + std::to_string(t.shape[k]) + " of its " +
                                             std::to_string(want[k]) + " positions"
                                       : "of fixed size " + std::to_string(want[k]) + ", has " + std::to_string(t.shape[k])) +
                          request);
    }
    if (t.values.size() != t.size())
        throw AdapterError(m + "with " + std::to_string(t.values.size()) + " values for the shape " +
                           index_text(t.shape) + " (" + std::to_string(t.size()) + ")");
}

// What L(x) is compared with: the property's transformation (the position inputs put back when they stay).
Tensors Evaluator::transformed(const Case& c) const { return rules_.transformed(*s_, args_, c); }

// An answer to the transformed inputs as it is compared (a padded answer at its real positions).
Tensors Evaluator::compared_answer(const Case& c, Tensors answer) const {
    for (const TensorSpec& spec : s_->outputs) answer[spec.name] = rules_.compared(spec, c, answer.at(spec.name));
    return answer;
}

// The transformed inputs' side as messages name it: L(P x), L(x_c) or L(pad x).
const char* Evaluator::side_name() const { return rules_.sides(true).lhs; }

Answers Evaluator::ask(const Case& c, bool repeat) {
    Answers a;
    a.y = reference_answer(c.inputs, c.lengths, a.reference_raised);
    if (repeat && a.reference_raised.empty()) a.again = call(Side::reference, c.inputs, c.lengths);
    a.px = transformed(c);
    a.lhs = transformed_answer(a.px, rules_.transformed_lengths(c), a.raised, &a);
    both_raised(a, c.lengths);
    finish(c, a);
    return a;
}

// The requests of x kept for history(): the last kRecentRequests distinct ones.
void Evaluator::remember(const Tensors& inputs, const Lengths& lengths) {
    constexpr std::size_t kRecentRequests = 4;
    if (!recent_.empty() && same_values(recent_.back().inputs, inputs)) return;
    recent_.push_back({lengths, inputs});
    if (recent_.size() > kRecentRequests) recent_.erase(recent_.begin());
}

std::optional<Observation> Evaluator::history(const Case& input) {
    constexpr int kPairs = 3;  // dropout on a tiny input may answer alike once by chance, hardly three times
    for (int k = 0; k < kPairs; ++k)
        if (twice(input)) return std::nullopt;  // answered differently in a row: nondeterministic
    const std::vector<PriorRequest> earlier = recent_;  // the calls below add to it
    for (auto it = earlier.rbegin(); it != earlier.rend(); ++it) {
        if (same_values(it->inputs, input.inputs)) continue;
        std::optional<Observation> d = asked_after(input, *it);
        if (!d) continue;
        // The same change again, to the value: state, not chance.
        const std::optional<Observation> again = asked_after(input, *it);
        const auto same_after = [&] {
            for (std::size_t k = 0; k < d->outputs.size(); ++k)
                if (again->outputs[k].permuted_layer.values != d->outputs[k].permuted_layer.values) return false;
            return true;
        };
        if (again && same_after()) return d;
    }
    return std::nullopt;  // no request found that changes the answer the same way twice: nondeterministic
}

std::optional<Observation> Evaluator::asked_after(const Case& input, const PriorRequest& earlier) {
    const Tensors first = call(Side::reference, input.inputs, input.lengths);
    call(Side::reference, earlier.inputs, earlier.lengths);
    const Tensors after = call(Side::reference, input.inputs, input.lengths);
    std::optional<Observation> d =
        differ(input.lengths, input.inputs, first, after, "x", tolerance_, largest_position(*s_, input.inputs));
    if (d) d->fail(found::HistoryDependent{earlier});
    return d;
}

namespace {

// The inputs answered by one side: grouped and batched when it batches, else one call each (an error an item's).
// `calls` gets the batched call of each (empty when one call each).
std::vector<Answer<Tensors>> answered_by(const BatchedNamedBlackBox& box, const std::vector<Tensors>& inputs,
                                         const std::vector<Lengths>& keys, std::vector<BatchCall>& calls) {
    calls.clear();
    if (capacity_of(box.many) > 1) return answer_grouped(inputs, keys, capacity_of(box.many), box.many, &calls);
    std::vector<Answer<Tensors>> got(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        try {
            got[i].value = box.one(inputs[i]);
        } catch (const std::exception& e) {
            got[i].error = e.what();
        }
    }
    return got;
}

}  // namespace

std::vector<Answer<Answers>> Evaluator::ask_block(const std::vector<Case>& cases, const std::vector<bool>& repeats) {
    // Without a reference one box answers every request of the block, x and the transformed inputs alike, so that
    // its batches are as full as they can be; against a reference each side answers its own.
    std::vector<Tensors> inputs, theirs;  // the box's, the reference's
    std::vector<Lengths> keys, their_keys;
    std::vector<Tensors> permuted(cases.size());
    for (std::size_t k = 0; k < cases.size(); ++k) {
        permuted[k] = transformed(cases[k]);
        for (int r = repeats[k] ? 2 : 1; r > 0; --r) {
            (reference_ ? theirs : inputs).push_back(cases[k].inputs);
            (reference_ ? their_keys : keys).push_back(cases[k].lengths);
        }
        remember(cases[k].inputs, cases[k].lengths);
        inputs.push_back(permuted[k]);
        keys.push_back(rules_.transformed_lengths(cases[k]));
    }
    if (has_free_axes_) {  // a free axis's length travels with the inputs
        for (std::size_t k = 0; k < inputs.size(); ++k) inputs[k] = with_free_lengths(*s_, std::move(inputs[k]), keys[k]);
        for (std::size_t k = 0; k < theirs.size(); ++k)
            theirs[k] = with_free_lengths(*s_, std::move(theirs[k]), their_keys[k]);
    }
    std::vector<BatchCall> calls, their_calls;
    std::vector<Answer<Tensors>> got = answered_by(box_, inputs, keys, calls);
    std::vector<Answer<Tensors>> reference_got;
    if (reference_) reference_got = answered_by(*reference_, theirs, their_keys, their_calls);
    const std::vector<BatchCall>& their_call = reference_ ? their_calls : calls;
    const auto call_of = [](const std::vector<BatchCall>& in, std::size_t at) {
        return at < in.size() ? std::optional<BatchCall>(in[at]) : std::nullopt;
    };
    std::vector<Answer<Tensors>>& their = reference_ ? reference_got : got;
    evaluations += static_cast<int>(inputs.size() + theirs.size());
    std::vector<Answer<Answers>> out(cases.size());
    for (std::size_t k = 0, i = 0, j = 0; k < cases.size(); ++k) {
        const std::size_t asks = repeats[k] ? 2 : 1;
        try {
            out[k].value = reference_ ? answers_of(cases[k], their, j, got[i], repeats[k], std::move(permuted[k]))
                                      : answers_of(cases[k], got, i, got[i + asks], repeats[k], std::move(permuted[k]));
            out[k].value->x_call = call_of(their_call, reference_ ? j : i);
            out[k].value->transformed_call = call_of(calls, reference_ ? i : i + asks);
        } catch (const std::exception& e) {
            try {  // asked alone, where what a side raises is the property's finding (a batch's item keeps only text)
                if (!rules_.raising_is_finding()) throw;
                out[k].value = ask(cases[k], repeats[k]);
            } catch (const std::exception& alone) {
                out[k].error = alone.what();
                out[k].request = last_request;
            }
        }
        i += reference_ ? 1 : asks + 1;
        j += reference_ ? asks : 0;
    }
    return out;
}

// The answers to case c from the batched items: x's from got[i..] (L(x), again when repeated), the transformed
// side's `lhs`.
Answers Evaluator::answers_of(const Case& c, std::vector<Answer<Tensors>>& got, std::size_t i, Answer<Tensors>& lhs,
                              bool repeat, Tensors px) {
    const auto take = [&](Answer<Tensors>& item, const Lengths& lengths) {
        last_request = format_lengths(lengths);
        if (!item.value) throw AdapterError(item.error);
        return checked(std::move(*item.value), lengths);
    };
    Answers a;
    a.y = take(got[i], c.lengths);
    if (repeat) a.again = take(got[i + 1], c.lengths);
    a.px = std::move(px);
    if (reference_) a.lhs = take(lhs, rules_.transformed_lengths(c));
    else {
        last_request = format_lengths(rules_.transformed_lengths(c));
        if (!lhs.value) throw AdapterError(lhs.error);
        a.lhs = taken_transformed(std::move(*lhs.value), rules_.transformed_lengths(c), a);
    }
    finish(c, a);
    return a;
}

// After the answers of case c came: the compared side, what they say of their precision, the magnitudes.
void Evaluator::finish(const Case& c, Answers& a) {
    if (a.raised.empty() && a.reference_raised.empty() && a.reshaped.empty()) a.lhs = compared_answer(c, std::move(a.lhs));
    for (const Tensors* answer : {&a.y, &a.again, &a.lhs})  // against a reference, x's answers are the reference's
        for (const auto& [name, t] : *answer)
            (reference_ && answer != &a.lhs ? a.evidence.reference : static_cast<SideEvidence&>(a.evidence)).add(t.values);
    a.inputs_magnitude = inputs_magnitude(c.inputs);
    a.positions = std::max(largest_position(*s_, c.inputs), largest_position(*s_, a.px));
    largest_shift = std::max(largest_shift, c.shift);
}

Observation Evaluator::judge(const Case& c, const Answers& a, const ToleranceModel& t, bool keep) const {
    if (!a.again.empty())
        if (auto nd = differ(c.lengths, c.inputs, a.y, a.again, x_side(), t, a.positions)) return *nd;
    // P x == x (ties): L(P x) answers the very request L(x) answered, so any difference is nondeterminism (of one
    // black box: against a reference it is what is judged).
    if (!reference_ && same_values(a.px, c.inputs))
        if (auto nd = differ(c.lengths, c.inputs, a.y, a.lhs, "x and as P x", t, a.positions)) return *nd;
    if (!a.reshaped.empty()) return reshaped_observation(c, a, t);
    Observation ob;
    if (!a.raised.empty() || !a.reference_raised.empty()) {  // one side raised, the other answered: what it raised
        static_cast<Case&>(ob) = c;
        const bool theirs = !a.reference_raised.empty();
        ob.fail(found::Raised{theirs ? a.reference_raised : a.raised, theirs});
        ob.y = theirs ? a.lhs : a.y;
        return ob;
    }
    std::vector<Tensor> rhs;
    const Lengths lengths = rules_.transformed_lengths(c);  // the tolerance is the padded case's
    for (const TensorSpec& spec : s_->outputs) {
        const Tensor& lhs = a.lhs.at(spec.name);
        rhs.push_back(rules_.expected(spec, c, a.y.at(spec.name)));
        ob.outputs.push_back(compare_sides(spec.name, lhs, rhs.back(), t, lengths, widest_, a.inputs_magnitude,
                                           a.positions, ignored(c, a.px, spec, lhs.shape)));
        if (has_positions_) note_undecided(ob.outputs.back(), lhs, rhs.back(), t);
    }
    std::optional<found::NonFinite> where;  // a non-finite entry, when that is a finding of its own
    if (rules_.flags_non_finite()) where = non_finite(a.y, x_side(), c.inputs);
    if (!where && rules_.flags_non_finite()) where = non_finite(a.lhs, side_name(), rules_.compared_layout(c, a.px));
    const bool holds = std::all_of(ob.outputs.begin(), ob.outputs.end(), [](const OutputComparison& o) { return o.holds; });
    if (holds && !where && !keep) return ob;  // pass: nothing kept
    if (where) ob.fail(*where);
    else if (!holds) ob.fail(found::Violated{});
    static_cast<Case&>(ob) = c;
    ob.y = a.y;
    for (std::size_t k = 0; k < ob.outputs.size(); ++k) {
        ob.outputs[k].layer_of_permuted = a.lhs.at(ob.outputs[k].name);
        ob.outputs[k].permuted_layer = std::move(rhs[k]);
    }
    return ob;
}

// A case whose transformed side answered an output of another shape than the signature says (x's had it): violated,
// that output's two sides of different shapes, the others compared as ever.
Observation Evaluator::reshaped_observation(const Case& c, const Answers& a, const ToleranceModel& t) const {
    Observation ob;
    static_cast<Case&>(ob) = c;
    ob.fail(found::Violated{});
    ob.y = a.y;
    const Lengths lengths = rules_.transformed_lengths(c);
    for (const TensorSpec& spec : s_->outputs) {
        Tensor rhs = rules_.expected(spec, c, a.y.at(spec.name));
        const Tensor& got = a.lhs.at(spec.name);
        if (!a.reshaped_outputs.count(spec.name)) {
            const Tensor lhs = rules_.compared(spec, c, got);
            ob.outputs.push_back(compare_sides(spec.name, lhs, rhs, t, lengths, widest_, a.inputs_magnitude, a.positions,
                                               ignored(c, a.px, spec, lhs.shape)));
            ob.outputs.back().layer_of_permuted = lhs;
        } else {
            OutputComparison o;
            o.name = spec.name;
            o.layer_of_permuted = got;
            o.max_abs_diff = std::numeric_limits<double>::infinity();
            o.holds = false;
            o.shape_mismatch = true;
            ob.outputs.push_back(std::move(o));
        }
        ob.outputs.back().permuted_layer = std::move(rhs);
    }
    return ob;
}

// The entries of a compared output left out: the property's, and with skip_padded the slots the masks pad.
std::vector<bool> Evaluator::ignored(const Case& c, const Tensors& px, const TensorSpec& spec,
                                     const std::vector<int>& shape) const {
    std::vector<bool> out = rules_.ignored(*s_, c, spec, shape);
    if (!o_.skip_padded) return out;
    const std::vector<bool> padded = entries_at_padded_slots(*s_, rules_.compared_layout(c, px), spec, shape);
    if (out.empty()) return padded;
    for (std::size_t e = 0; e < out.size() && e < padded.size(); ++e) out[e] = out[e] || padded[e];
    return out;
}

Observation Evaluator::observe(const Case& c, bool repeat) { return judge(c, ask(c, repeat), tolerance_); }

std::optional<Observation> Evaluator::reproduce(const Case& c, const Observation& seen) {
    const Tensors px = transformed(c);
    const Lengths lengths = rules_.transformed_lengths(c);
    const double positions = std::max(largest_position(*s_, c.inputs), largest_position(*s_, px));
    std::string their_raised, raised;
    const Tensors y = reference_answer(c.inputs, c.lengths, their_raised);
    Answers reshaped;
    Tensors py = transformed_answer(px, lengths, raised, &reshaped);
    const bool was_reshaped = std::any_of(seen.outputs.begin(), seen.outputs.end(),
                                          [](const OutputComparison& o) { return o.shape_mismatch; });
    if (!reshaped.reshaped.empty() || was_reshaped) {  // answered another shape: again, the same shape, else not alike
        bool same = !reshaped.reshaped.empty() && was_reshaped;
        for (const OutputComparison& o : seen.outputs)
            if (same && o.shape_mismatch && py.at(o.name).shape != o.layer_of_permuted.shape) same = false;
        if (same) return differ(c.lengths, c.inputs, seen.y, y, x_side(), tolerance_, positions);
        Observation ob;
        static_cast<Case&>(ob) = c;
        ob.fail(found::Nondeterministic{.side = side_name(), .raised = "", .by_reference = false,
                                        .in_two_shapes = true, .shapes = reshaped.reshaped});
        ob.y = y;
        return ob;
    }
    Answers again;
    again.raised = raised;
    again.reference_raised = their_raised;
    both_raised(again, lengths);
    const bool now_layer = !raised.empty(), now_reference = !their_raised.empty();
    const std::string& seen_raised = seen.raised();
    if (now_layer || now_reference || !seen_raised.empty()) {
        const bool same = !seen_raised.empty() && (seen.raised_by_reference() ? now_reference : now_layer);
        if (!same) {  // a side raised once and answered once
            Observation ob;
            static_cast<Case&>(ob) = c;
            const bool theirs = seen_raised.empty() ? now_reference : seen.raised_by_reference();
            ob.fail(found::Nondeterministic{.side = theirs ? x_side() : side_name(),
                                            .raised = !seen_raised.empty() ? seen_raised : now_layer ? raised : their_raised,
                                            .by_reference = theirs, .in_two_shapes = false, .shapes = ""});
            ob.y = now_reference ? py : y;
            return ob;
        }
        // The same side raised again: the other side's answer, asked again, must be the same.
        if (seen.raised_by_reference())
            return differ(lengths, px, seen.y, compared_answer(c, std::move(py)), side_name(), tolerance_, positions);
        return differ(c.lengths, c.inputs, seen.y, y, x_side(), tolerance_, positions);
    }
    py = compared_answer(c, std::move(py));
    Tensors seen_lhs;
    for (const OutputComparison& o : seen.outputs) seen_lhs[o.name] = o.layer_of_permuted;
    // Padded: the real positions' answers are compared, as the case was judged.
    if (auto nd = differ(lengths, px, seen_lhs, py, side_name(), tolerance_, positions)) return nd;
    return differ(c.lengths, c.inputs, seen.y, y, x_side(), tolerance_, positions);
}

std::optional<Observation> Evaluator::alone(const Case& c, const Answers& batched) {
    const Lengths lengths = rules_.transformed_lengths(c);
    const Tensors y = call(Side::reference, c.inputs, c.lengths);
    const Tensors lhs = compared_answer(c, call(Side::transformed, batched.px, lengths));
    std::optional<Observation> ob = differ(c.lengths, c.inputs, batched.y, y, x_side(), tolerance_, batched.positions);
    if (!ob) ob = differ(lengths, batched.px, batched.lhs, lhs, side_name(), tolerance_, batched.positions);
    if (ob) {
        ob->fail(found::BatchDependent{});
        ob->x_call = batched.x_call;
        ob->transformed_call = batched.transformed_call;
    }
    return ob;
}

std::optional<Observation> Evaluator::twice(const Case& c) {
    const Tensors a = call(Side::reference, c.inputs, c.lengths);
    const Tensors b = call(Side::reference, c.inputs, c.lengths);
    const double positions = largest_position(*s_, c.inputs);
    std::optional<Observation> ob = differ(c.lengths, c.inputs, a, b, reference_ ? "R(x)" : "x", tolerance_, positions);
    if (ob || !reference_ || rules_.chunks_calls()) return ob;
    // Against a reference the layer answers x too (agreement's transformed side is x): asked twice as well.
    const Tensors l = call(Side::transformed, c.inputs, c.lengths), m = call(Side::transformed, c.inputs, c.lengths);
    return differ(c.lengths, c.inputs, l, m, side_name(), tolerance_, positions);
}

Outcome Observation::outcome() const {
    if (!failed) return Outcome::pass;
    switch (verdict_of(kind)) {
        case Verdict::violated: return Outcome::violated;
        case Verdict::non_finite: return Outcome::non_finite;
        case Verdict::batch_dependent: return Outcome::batch_dependent;
        case Verdict::history_dependent: return Outcome::history_dependent;
        default: return Outcome::nondeterministic;
    }
}

rc::Shrinkable<Case> Evaluator::shrinkable(const Case& c) const { return shrinkable_case(rules_, s_, args_, c); }

void Evaluator::record(AuditResult& result, const Observation& ob, int case_index, int shrink_steps) const {
    if (result.signature) learned_sizes(*result.signature);
    Counterexample ce = ob;
    if (!rules_.chunks_calls()) {
        ce.transformed_lengths = rules_.transformed_lengths(ob);
        for (const auto& [name, t] : rules_.transformed(*s_, args_, ob))
            if (!name.starts_with(kLengthInput)) ce.transformed[name] = t;
    }
    plan_repro(ce);
    if (auto* dependent = ce.as<found::BatchDependent>()) {  // the batched requests, as sent, for a reproduction
        const auto add = [&](const std::optional<BatchCall>& call, bool transformed_side) {
            if (!call || !call->items) return;
            std::size_t values = 0;
            for (const Tensors& item : *call->items)
                for (const auto& [name, t] : item) values += t.values.size();
            if (values > kLargestRecordedBatch) return;  // the report would grow by tens of megabytes: not recorded
            BatchedRequest b{.transformed_side = transformed_side,
                             .by_reference = reference_ && !transformed_side,
                             .stacked = call->stacked,
                             .lengths = transformed_side ? rules_.transformed_lengths(ob) : ob.lengths,
                             .items = {},
                             .at = call->at};
            for (const Tensors& item : *call->items) {
                Tensors kept;
                for (const auto& [name, t] : item)
                    if (!name.starts_with(kLengthInput)) kept[name] = t;
                b.items.push_back(std::move(kept));
            }
            dependent->batches.push_back(std::move(b));
        };
        add(ob.x_call, false);
        add(ob.transformed_call, true);
    }
    ce.case_index = case_index;
    ce.shrink_steps = shrink_steps;
    const auto moves = [](const auto& perm) { return !perm.second.is_identity(); };
    if (std::count_if(ob.perms.begin(), ob.perms.end(), moves) == 1 && !ce.is<found::Erred>())
        ce.axis_at_fault = std::find_if(ob.perms.begin(), ob.perms.end(), moves)->first;
    result.counterexample = std::move(ce);
}

// How a reproduction without permcheck compares each output (repro.py): the property's compared() and expected()
// applied to the answers' own flat indices (they only pick and move entries) say where each compared entry comes
// from; the entries left out and the two sides' names go with them. Not for a side that raised (nothing compared).
void Evaluator::plan_repro(Counterexample& ce) const {
    if (!ce.raised().empty()) return;
    Signature s = *s_;
    learned_sizes(s);
    const auto indices = [](std::vector<int> shape) {
        Tensor t{std::move(shape), {}};
        t.values.resize(t.size());
        for (std::size_t e = 0; e < t.values.size(); ++e) t.values[e] = static_cast<double>(e);
        return t;
    };
    const auto as_ints = [](const std::vector<double>& v) { return std::vector<int>(v.begin(), v.end()); };
    const Tensors px = transformed(ce);
    const Lengths lengths = rules_.transformed_lengths(ce);
    for (OutputComparison& o : ce.outputs) {
        const auto spec = std::find_if(s.outputs.begin(), s.outputs.end(), [&](const TensorSpec& t) { return t.name == o.name; });
        if (spec == s.outputs.end()) continue;
        const Tensor lhs = rules_.compared(*spec, ce, indices(shape_of(*spec, lengths)));
        o.compared_from = as_ints(lhs.values);
        o.expected_from = as_ints(rules_.expected(*spec, ce, indices(shape_of(*spec, ce.lengths))).values);
        const std::vector<bool> left = ignored(ce, px, *spec, lhs.shape);
        o.ignored_at.clear();
        for (std::size_t e = 0; e < left.size(); ++e)
            if (left[e]) o.ignored_at.push_back(static_cast<int>(e));
        const SideNames names = rules_.sides(has_axis(*spec));
        o.sides = {names.lhs, names.rhs};
    }
}

void Evaluator::learned_sizes(Signature& s) const {
    for (TensorSpec& spec : s.outputs)
        for (std::size_t k = 0; k < spec.dims.size(); ++k)
            if (const auto it = open_.find({spec.name, k}); spec.dims[k].is_open() && it != open_.end())
                spec.dims[k].size = it->second;
}

// A comparison whose tolerance is as large as the outputs it compares decides nothing (rotary angles at large
// position ids in a low precision): remembered per precision, so that such an audit is undecided, never holds.
void Evaluator::note_undecided(const OutputComparison& o, const Tensor& a, const Tensor& b, const ToleranceModel& t) const {
    const double outputs = finite_max_abs(b.values, finite_max_abs(a.values));
    if (o.holds && outputs > 0.0 && o.tolerance >= outputs) undecided_.insert(t.unit_roundoff);
}

// real_inputs_magnitude for inputs that are finite (drawn and shrunk by permcheck): no test for infinities, so the
// loop vectorizes.
double Evaluator::inputs_magnitude(const Tensors& inputs) const {
    double m = 0.0;
    for (const TensorSpec& spec : s_->inputs)
        if (const std::vector<double>& v = inputs.at(spec.name).values; spec.kind == TensorKind::real && !v.empty())
            m = std::max(m, Eigen::Map<const Eigen::ArrayXd>(v.data(), static_cast<Eigen::Index>(v.size())).abs().maxCoeff());
    return m;
}

std::optional<Observation> Evaluator::differ(const Lengths& lengths, const Tensors& inputs, const Tensors& a,
                                             const Tensors& b, const char* what, const ToleranceModel& t,
                                             double positions) const {
    Observation ob;
    const double magnitude = inputs_magnitude(inputs);
    for (const TensorSpec& spec : s_->outputs)
        ob.outputs.push_back(
            compare_sides(spec.name, a.at(spec.name), b.at(spec.name), t, lengths, widest_, magnitude, positions));
    if (std::all_of(ob.outputs.begin(), ob.outputs.end(), [](const OutputComparison& c) { return c.holds; }))
        return std::nullopt;
    ob.fail(found::Nondeterministic{what, "", false, false, ""});
    for (OutputComparison& c : ob.outputs) {
        c.layer_of_permuted = a.at(c.name);
        c.permuted_layer = b.at(c.name);
    }
    ob.lengths = lengths;
    ob.perms = identities(lengths);
    ob.inputs = inputs;
    ob.y = a;
    return ob;
}

// Where the first non-finite entry of an answer to `inputs` is, or empty. An entry at a slot the inputs' masks pad
// is not counted (a padded query that sees no key is NaN in common model code; it is still compared).
std::optional<found::NonFinite> Evaluator::non_finite(const Tensors& answer, const char* side, const Tensors& inputs) const {
    std::optional<std::map<std::string, std::vector<bool>>> padded;  // found at the first non-finite entry
    for (const TensorSpec& spec : s_->outputs) {
        const Tensor& t = answer.at(spec.name);
        for (std::size_t e = 0; e < t.values.size(); ++e) {
            if (std::isfinite(t.values[e])) continue;
            if (!padded) padded = padded_slots(*s_, inputs);
            if (at_padded_slot(spec, position_of(e, t.shape), *padded)) continue;
            return found::NonFinite{side, spec.name, position_of(e, t.shape), t.values[e]};
        }
    }
    return std::nullopt;
}

}  // namespace permcheck::engine
