// The record of a finding (audit/evaluator.h): the observation's outcome, the finding written into the result with
// its transformed inputs, batched requests and place, and the plan of its reproduction without permcheck.
#include "audit/evaluator.h"

#include "cases/signature_case.h"

#include <algorithm>

namespace permcheck::engine {

Verdict Observation::outcome() const { return failed ? verdict_of(kind) : Verdict::holds; }

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

}  // namespace permcheck::engine
