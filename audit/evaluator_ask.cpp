// The evaluator asks (audit/evaluator.h): a case's requests sent to the box(es), alone or in a block of cases,
// and their answers gathered with what they say of their precision.
#include "audit/evaluator.h"

#include "cases/signature_case.h"

#include <algorithm>

namespace permcheck::engine {

Tensors Evaluator::call(Side side, const Tensors& inputs, const Lengths& lengths, bool check) {
    last_request = format_lengths(lengths);
    ++evaluations;
    asking_ = side;
    const NamedBlackBox& box = side == Side::reference && reference_ ? reference_->one : box_.one;
    if (side == Side::reference) remember(inputs, lengths);
    Tensors answer = asked(box, inputs, lengths);
    if (side == Side::transformed && rules_.chunks_calls() && !answer.count(kChunkedAnswer))
        throw AdapterError("the layer answered a request of " + last_request +
                           " in chunks as if it were one pass: it does not decode in chunks (an adapter answers "
                           "\"chunked\": true, as permcheck.serve does for a module with its cache= route; in C++, "
                           "audit a chunked_black_box of a ChunkStep)");
    return check ? named_outputs(std::move(answer), lengths) : answer;
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
        if (!rules_.plan().raising_is_finding) throw;
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
        if (!reference_ || !rules_.plan().raising_is_finding) throw;
        const std::string said = e.what(), prefix = "the layer raised: ";
        raised = "the reference raised: " + (said.rfind(prefix, 0) == 0 ? said.substr(prefix.size()) : said);
        return {};
    }
}

found::Erred Evaluator::erred_by(const std::exception& e) const {
    found::Erred out{asking_ == Side::reference ? "x" : "transformed", asking_ == Side::reference && reference_, "", ""};
    if (const auto* raised = dynamic_cast<const LayerRaised*>(&e)) {
        out.type = raised->type;
        out.where = raised->where;
    }
    return out;
}

// Both sides raised on one input: it is outside what either answers, a case that tests nothing (an error naming both).
void Evaluator::both_raised(const Answers& a, const Lengths& lengths) const {
    if (a.raised.empty() || a.reference_raised.empty()) return;
    throw AdapterError("the layer and the reference both raised on the same input (" + format_lengths(lengths) +
                       "): " + a.raised + "; " + a.reference_raised +
                       " (the signature asks for inputs neither answers)");
}

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
            got[i].layers_own = layers_own(e);
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
        } catch (const std::exception&) {
            try {  // asked alone before it is an error of the layer (a batch's item keeps only text)
                out[k].value = ask(cases[k], repeats[k]);
            } catch (const std::exception& alone) {
                out[k].error = alone.what();
                out[k].request = last_request;
                out[k].layers_own = layers_own(alone);
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
        return named_outputs(std::move(*item.value), lengths);
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
    a.inputs_magnitude = real_inputs_magnitude(*s_, c.inputs);
    a.positions = std::max(largest_position(*s_, c.inputs), largest_position(*s_, a.px));
    largest_shift = std::max(largest_shift, rules_.offset(c));
}

}  // namespace permcheck::engine
