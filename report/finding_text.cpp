// A finding in words (report/text.h): the sentence each kind of finding is said in, from the facts the engine
// recorded (cases/finding.h) and the property's own words (its sides and its case).
#include "cases/signature_case.h"
#include "properties/property.h"
#include "report/text.h"

#include <algorithm>

namespace permcheck {

namespace {

// The lengths a side was asked at: x's, or the transformed inputs' (a padded case's are longer).
const Lengths& lengths_of(const Counterexample& c, bool transformed_side) {
    return transformed_side && !c.transformed_lengths.empty() ? c.transformed_lengths : c.lengths;
}

// "output y differs by 0.3 at (0, 1) (tolerance 1e-06)" of the first output whose sides differ.
std::string first_difference(const Counterexample& c) {
    for (const OutputComparison& o : c.outputs)
        if (!o.holds)
            return "output " + o.name + " differs by " + short_number(o.max_abs_diff) + " at " + index_text(o.where) +
                   " (tolerance " + short_number(o.tolerance) + ")";
    return "";
}

bool moves(const Signature* s, const std::string& output) {
    if (!s) return true;
    return std::any_of(s->outputs.begin(), s->outputs.end(),
                       [&](const TensorSpec& t) { return t.name == output && has_axis(t); });
}

std::string violated_text(Property p, const Signature* s, const Counterexample& c, bool again) {
    const PropertyRules& rules = rules_of(p);
    for (const OutputComparison& o : c.outputs) {
        if (o.holds) continue;
        const SideNames sides = rules.sides(moves(s, o.name));
        const std::string about = format_lengths(c.lengths) + "; " + rules.case_text(c);
        std::string m = o.shape_mismatch  // the transformed side answered another shape
                            ? "output " + o.name + ": " + sides.lhs + " has shape " + index_text(o.layer_of_permuted.shape) +
                                  ", " + sides.rhs + " " + index_text(o.permuted_layer.shape) + " (" + about +
                                  "): the answer's shape changed with the case"
                            : "output " + o.name + ": " + sides.lhs + " and " + sides.rhs + " differ by " +
                                  short_number(o.max_abs_diff) + " at " + index_text(o.where) + " (tolerance " +
                                  short_number(o.tolerance) + "; " + about + ")";
        return again ? m + "; both sides gave the same answers when evaluated again" : m;
    }
    return "";
}

std::string nondeterministic_text(const found::Nondeterministic& n, const Counterexample& c) {
    const std::string request = "the same request of " + format_lengths(lengths_of(c, !n.by_reference)) + ", as " + n.side;
    if (!n.raised.empty()) return request + ", raised once and was answered once: " + n.raised;
    if (n.in_two_shapes) return request + ", was answered in two shapes" + (n.shapes.empty() ? "" : ": " + n.shapes);
    return "the same input (" + format_lengths(c.lengths) + "), requested as " + n.side +
           ", was answered twice with different results: " + first_difference(c);
}

std::string batch_text(const found::BatchDependent& b, const Counterexample& c) {
    std::string where = "case " + std::to_string(c.case_index);
    if (b.the_failing_one) where += ", the failing one";
    else if (b.batch_end > b.batch_begin)
        where += " (batched with positions " + std::to_string(b.batch_begin) + " to " + std::to_string(b.batch_end - 1) +
                 " of the run)";
    for (const OutputComparison& o : c.outputs)
        if (!o.holds)
            return where + ": output " + o.name + " to " + format_lengths(c.lengths) +
                   " differs between its batched request and its request alone by " + short_number(o.max_abs_diff) +
                   " at " + index_text(o.where) + " (tolerance " + short_number(o.tolerance) +
                   "): the layer's answer for one item depends on the other items of its batch";
    return where + ": its answers in a batch and alone differ";
}

}  // namespace

std::string erred_text(const Counterexample& c) {
    const found::Erred* e = c.as<found::Erred>();
    std::string how;
    if (e && !e->side.empty())
        how = std::string("raising answering ") + (e->side == "x" ? "x" : "the transformed inputs") +
              (e->by_reference ? " (the reference)" : "") +
              (e->type.empty() ? "" : ": " + e->type + (e->where.empty() ? "" : " at " + e->where));
    if (c.shrink_steps > 0)
        how += (how.empty() ? "" : "; ") + std::string("shrunk in ") + std::to_string(c.shrink_steps) +
               (c.shrink_steps == 1 ? " step" : " steps") +
               cut_short_text(c);
    return "case " + std::to_string(c.case_index) + ": the layer erred on it" + (how.empty() ? "" : " (" + how + ")") +
           ", nothing was compared";
}

std::string raised_clause(Property p, const Counterexample& c) {
    const SideNames sides = rules_of(p).sides(true);
    const bool theirs = c.raised_by_reference();
    return std::string(theirs ? sides.rhs : sides.lhs) + " raised where " + (theirs ? sides.lhs : sides.rhs) +
           " was answered";
}

std::string finding_text(Property p, const Signature* s, const Counterexample& c) {
    if (const auto* v = c.as<found::Violated>()) return violated_text(p, s, c, v->again);
    if (const auto* r = c.as<found::Raised>())
        return raised_clause(p, c) + " (" + format_lengths(c.lengths) + "; " + rules_of(p).case_text(c) + "): " +
               r->what + (r->again ? "; it raised again when asked again" : "");
    if (const auto* n = c.as<found::NonFinite>(); n && !n->output.empty())  // (a report read back has no place)
        return n->side + " has a non-finite entry (" + short_number(n->value) + ") in output " + n->output + " at " +
               index_text(n->at) + " for " + format_lengths(c.lengths);
    if (const auto* n = c.as<found::Nondeterministic>()) return nondeterministic_text(*n, c);
    if (const auto* h = c.as<found::HistoryDependent>())
        return "the same input (" + format_lengths(c.lengths) + ") was answered alike twice in a row, and differently " +
               (h->asked_before ? "after a request of " + format_lengths(h->asked_before->lengths)
                                : std::string("after another request")) +
               ": " + first_difference(c);
    if (const auto* b = c.as<found::BatchDependent>()) return batch_text(*b, c);
    return "";  // erred: the error says it
}

std::string finding_text(const AuditResult& r) {
    if (!r.counterexample || verdict_of(r.counterexample->kind) != r.verdict) return "";
    return finding_text(r.property, r.signature ? &*r.signature : nullptr, *r.counterexample);
}

std::string detail_text(const AuditResult& r) { return r.detail.empty() ? finding_text(r) : r.detail; }

}  // namespace permcheck
