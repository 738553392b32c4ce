// A finding: one record of a failure, whatever found it (the white-box check, the audit, a replay). Its case,
// shrunk; every output's two sides and their comparison; and its kind, a variant whose alternative holds that kind's
// own facts (names and numbers, never sentences: the words are report/'s, report/finding_text.cpp). Every view
// (text, JSON, Markdown, HTML), the replay and repro.py are made from this record.
#pragma once

#include "cases/signature.h"

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace permcheck {

// A request of a layer: its lengths and inputs (a history-dependent finding's earlier request).
struct PriorRequest {
    Lengths lengths;
    Tensors inputs;
};

// A batched request that a batch-dependent finding's case was answered in, as it was sent: every item of it (each
// item's inputs, at `lengths`; a free axis's length not among them), the case's item among them (`at`), which of the
// case's requests that item was (x's, or the transformed inputs'), whether the reference answered it (agreement's
// x), and whether it went stacked (docs/protocol.md, "Stacked batches") or item by item. What a reproduction sends
// again, beside the case's requests alone.
struct BatchedRequest {
    bool transformed_side = false;  // the item is the transformed inputs' request, else x's
    bool by_reference = false;
    bool stacked = false;
    Lengths lengths;
    std::vector<Tensors> items;
    std::size_t at = 0;
};

// The kinds of a finding, each with its own facts.
namespace found {

// Some output's two sides differ beyond its tolerance, or its shape changed with the case
// (OutputComparison::shape_mismatch). `again`: both sides were evaluated again, with the same answers, before it was
// called one (a replay of a saved case judges once).
struct Violated {
    bool again = false;
};
// One side raised where the other answered (where raising is the property's finding: decoding in chunks, a
// reference): what it raised, and whether the reference raised (answering x), else the layer (its side). Nothing is
// compared. `again`: it raised again when asked again.
struct Raised {
    std::string what;
    bool by_reference = false;
    bool again = false;
};
// The first non-finite entry of an answer: the side that answered it ("L(x)", "L(P x)"), the output, where and what.
struct NonFinite {
    std::string side, output;
    std::vector<int> at;
    double value = 0.0;
};
// One request answered twice, differently: as `side` ("L(x)", "R(x)", "x", "x and as P x", "L(P x)"), the outputs'
// two sides the two answers. Or, with `raised`, a side that raised once and was answered once (the reference, with
// `by_reference`); or, `in_two_shapes`, answered in two shapes (`shapes`: what the signature's check said of one).
struct Nondeterministic {
    std::string side;
    std::string raised;
    bool by_reference = false;
    bool in_two_shapes = false;
    std::string shapes;
};
// One input answered alike twice in a row and differently after another request: that request, when the finding
// names it (an older report may not).
struct HistoryDependent {
    std::optional<PriorRequest> asked_before;
};
// An item's answer in a batched request differs from its answer alone (the outputs' two sides): the batched requests
// as sent, for a reproduction (empty when too large to record, or for an older report), and where the case was in the
// run: the failing case of a batched run, or a case of the batch of the run's positions [batch_begin, batch_end).
struct BatchDependent {
    std::vector<BatchedRequest> batches;
    bool the_failing_one = false;
    int batch_begin = 0, batch_end = 0;
};
// The case the layer erred on (verdict error: it raised, or answered what no comparison can take), recorded so that
// the report shows it and a replay sends it again; nothing was compared. The error itself is the result's. Where
// the audit asked the case again alone (and shrank it): the side that raised ("x" or "transformed", the reference
// answering x when `by_reference`), and the exception's type and raising place where the adapter says them.
struct Erred {
    std::string side;
    bool by_reference = false;
    std::string type, where;
};

}  // namespace found

using FindingKind = std::variant<found::Violated, found::Raised, found::NonFinite, found::Nondeterministic,
                                 found::HistoryDependent, found::BatchDependent, found::Erred>;

// The verdict a finding of this kind gives (Raised: violated; Erred: error).
Verdict verdict_of(const FindingKind& kind);
// The kind as report.json's counterexample.kind names it: violated, raised, non-finite, nondeterministic,
// history-dependent, batch-dependent or erred.
const char* finding_kind_name(const FindingKind& kind);

// A finding: its case, shrunk, its kind, and every output's two sides and their comparison, in the signature's
// order. A nondeterministic (batch-dependent, history-dependent) finding: the perms are identities, and the two sides
// of each output are the first and second answer to x (in a batch and alone; before and after).
struct Counterexample : Case {
    FindingKind kind = found::Violated{};
    std::vector<OutputComparison> outputs;
    std::string axis_at_fault;   // the one axis permuted, when only one is; empty otherwise
    int case_index = -1, shrink_steps = 0;
    // The time bound (seconds) that cut the shrink short, its case the smallest failing one found by then; 0 when the
    // shrink ran out of smaller candidates (or was not timed).
    double shrink_cut_short = 0;
    std::string replay;          // a command line that re-runs the check or audit
    bool confirmed_exactly = false;  // a reference layer's: the same case violates in exact rational arithmetic too
    // The inputs the transformed side was asked, at their lengths (P x with every index renumbered and every sorted
    // input re-sorted, x_c, pad x, the prefix of a cut; x itself for agreement and for a nondeterministic finding),
    // what a reproduction sends; empty for a chunked request and for a report that did not record them.
    Lengths transformed_lengths;
    Tensors transformed;

    template <class Kind> const Kind* as() const { return std::get_if<Kind>(&kind); }
    template <class Kind> Kind* as() { return std::get_if<Kind>(&kind); }
    template <class Kind> bool is() const { return std::holds_alternative<Kind>(kind); }
    // What a side raised where it is the finding (Raised) or half of it (Nondeterministic); empty otherwise.
    const std::string& raised() const;
    bool raised_by_reference() const;
    // The earlier request of a history-dependent finding, when it names one.
    const PriorRequest* asked_before() const;
    // The batched requests of a batch-dependent finding (empty for another).
    const std::vector<BatchedRequest>& batches() const;
};

}  // namespace permcheck
