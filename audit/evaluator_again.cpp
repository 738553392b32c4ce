// The evaluator asks again (audit/evaluator.h): a failure reproduced, a case alone after a batch, an input twice,
// and the requests before it that may change its answer (history).
#include "audit/evaluator.h"

#include "cases/signature_case.h"

#include <algorithm>

namespace permcheck::engine {

// The requests of x kept for history(): the last kRecentRequests distinct ones.
void Evaluator::remember(const Tensors& inputs, const Lengths& lengths) {
    constexpr std::size_t kRecentRequests = 4;
    const auto numbers = [](const Tensors& t) {
        std::size_t n = 0;
        for (const auto& [name, v] : t) n += v.values.size();
        return n;
    };
    if (!largest_ || numbers(inputs) > numbers(largest_->inputs)) largest_ = PriorRequest{lengths, inputs};
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
    if (auto ob = differ(c.lengths, c.inputs, batched.y, y, x_side(), tolerance_, batched.positions))
        return changed_since(c, std::move(*ob), batched, true, y);
    if (auto ob = differ(lengths, batched.px, batched.lhs, lhs, side_name(), tolerance_, batched.positions))
        return changed_since(c, std::move(*ob), batched, false, lhs);
    return std::nullopt;
}

// A case's answer in a batch (ob's first side) and alone now (`alone`, its second) differ: the batched request, sent
// again, tells the batch from the time. Answered now as alone, the layer changed since the batch (history-dependent,
// naming the largest request of x asked, a table grown for it, say); else the batch changed it (batch-dependent).
std::optional<Observation> Evaluator::changed_since(const Case& c, Observation ob, const Answers& batched, bool x_side,
                                                    const Tensors& alone) {
    ob.x_call = batched.x_call;
    ob.transformed_call = batched.transformed_call;
    const std::optional<BatchCall>& sent = x_side ? batched.x_call : batched.transformed_call;
    const Batching<Tensors>& many = (x_side && reference_ ? *reference_ : box_).many;
    if (sent && sent->items && (many.call || many.call_all)) {
        ++evaluations;
        std::vector<Answer<Tensors>> got = many.call ? many.call(*sent->items) : many.call_all({*sent->items}).at(0);
        const Lengths lengths = x_side ? c.lengths : rules_.transformed_lengths(c);
        if (sent->at < got.size() && got[sent->at].value) {
            Tensors again = named_outputs(std::move(*got[sent->at].value), lengths);
            if (!x_side) again = compared_answer(c, std::move(again));
            const Tensors& inputs = x_side ? c.inputs : batched.px;
            if (!differ(lengths, inputs, again, alone, "x", tolerance_, batched.positions)) {
                const bool named = largest_ && !same_values(largest_->inputs, c.inputs);
                return ob.fail(found::HistoryDependent{named ? largest_ : std::nullopt});
            }
        }
    }
    return ob.fail(found::BatchDependent{});
}

std::optional<Observation> Evaluator::again_at_end(const Case& first, const Tensors& y) {
    const double positions = largest_position(*s_, first.inputs);
    const Tensors now = call(Side::reference, first.inputs, first.lengths);
    std::optional<Observation> ob = differ(first.lengths, first.inputs, y, now, x_side(), tolerance_, positions);
    if (!ob) return std::nullopt;
    const Tensors again = call(Side::reference, first.inputs, first.lengths);
    if (std::optional<Observation> nd = differ(first.lengths, first.inputs, now, again, x_side(), tolerance_, positions))
        return nd;  // asks in a row differ
    const bool named = largest_ && !same_values(largest_->inputs, first.inputs);
    return ob->fail(found::HistoryDependent{named ? largest_ : std::nullopt});
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

}  // namespace permcheck::engine
