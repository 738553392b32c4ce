// The text of a finding: what the terminal, a failed test and the C++ API show of an audit's or a check's result
// (the Markdown and HTML views, report/views.cpp, are made of the same record). Written here and nowhere else;
// the primitives it writes values with (format_row, column_width, format_tensor: cases/signature.h) are the views' too. Part of the public API (<permcheck/audit.h>): no RapidCheck, Boost,
// GMP or JSON header.
#pragma once

#include "audit/blackbox.h"
#include "cases/finding.h"
#include "cases/signature.h"
#include "cases/vocabulary.h"

#include <string>

namespace permcheck {

// How a finding's text names what was done to its case and its two sides: the property's words (P x and P L(x),
// x_c, pad x), or, for a nondeterministic or batch-dependent finding, two answers to one input. `moved` names the
// sides of an output the property moves, `unmoved` those of one it leaves where it is (L(x) on the other side).
struct FindingWords {
    std::string done;
    SideNames moved, unmoved;
    bool reference_layer = false;  // a check's: its weight seed, and whether exact arithmetic confirmed it
};
FindingWords finding_words(Property p, Verdict v, const Counterexample& c, bool reference_layer = false);
// The two sides of a finding of property p with verdict v, for an output the property moves (`moves`) or leaves where
// it is: the property's, or the two answers to one input.
SideNames sides_of(Property p, Verdict v, bool moves);

// A readable multi-line account of a counterexample: its lengths, what was done to it, the inputs in the order of
// s.inputs (a mask or an index input named as such), every output's two sides in the order of s.outputs, the
// largest difference, the case and its replay line.
std::string describe(const Counterexample& c, const Signature& s, const FindingWords& words);
// The same in the words of property p and verdict v.
std::string describe(const Counterexample& c, const Signature& s, Property p = Property{"equivariance"},
                     Verdict v = Verdict::violated);

// The sentence on a finding, from its kind's facts in the words of property p ("output y: L(P x) and P L(x) differ
// by 0.5 at (1, 0) (tolerance 1e-06; n=2; permutations n=[1 0])", "L(x in chunks) raised where L(x) was answered
// ...", "the same input (n=2), requested as x, was answered twice with different results: ..."); s, when given,
// says which outputs move. Empty for a case the layer erred on (the error says it).
std::string finding_text(Property p, const Signature* s, const Counterexample& c);
// The sentence on an audit's finding, when its verdict is the finding's (not an error met while shrinking it).
std::string finding_text(const AuditResult& r);
// What the result says beside its verdict: its own note (AuditResult::detail: how an interrupted run ended, why it
// is undecided), else the sentence on its finding.
std::string detail_text(const AuditResult& r);
// "L(x) raised where R(x) was answered": which side of a finding raised (found::Raised, or a nondeterministic
// finding's side that raised once), in the property's words.
std::string raised_clause(Property p, const Counterexample& c);

// The finding of an audit: the verdict, then describe() with the result's signature (without one, inputs by name).
// Empty without a counterexample.
std::string describe_finding(const AuditResult& r);

// The dtype of an audit as its header line says it: "float32" (given), "float32, inferred from the answers",
// "float64, inferred from the answers", "float64, as the answers were short dyadic numbers" or "no answer came, so
// no precision was inferred".
std::string precision_text(const AuditResult& r);
// For answers that were only short dyadic numbers (or held no finite entry), a sentence on why they were judged
// as float64 and what to give instead; empty otherwise.
std::string precision_note(const AuditResult& r);

// " --axis n=1..8 --input x:n,8 --output y:n,8": the signature as the command line writes it, each text as the
// parser reads it, quoted for the shell where it must be.
std::string signature_flags(const Signature& s);
// A word of a shell command line: quoted unless it holds only characters the shell leaves alone.
std::string shell_quote(const std::string& s);
std::string shell_word(const std::string& s);
// A readable account of an audit's result (`o` the options it was run with): the verdict, what was found, the shrunk
// counterexample in the signature the result carries, and what finds it again (replay_hint below).
std::string explain(const AuditResult& r, const AuditOptions& o);
// What finds an audit's case again: the line the result carries, when the entry that converted the layer's form gave
// one (AuditResult::replay: a one-tensor callable's AuditOptions), else the C++ of a signature audit: the
// signature the result carries, the options the audit used (its property and every option of it, the dtype it judged
// in) and the call, which compiles as pasted where `layer` (and, for agreement, `reference`) are the callables
// audited.
std::string replay_hint(const AuditResult& r, const AuditOptions& o);

// An error that says an index was out of range (IndexError, "index out of range"), when the signature has token or
// position inputs: "; the ids sent stay below their limits (ids < 50, pos < 4096): if a table of the layer's has
// fewer rows, give its size in the input's kind (token=V, position=P)"; empty otherwise.
std::string index_error_hint(const Signature& s, const std::string& error);
// ", the shrink cut short at its bound of 300 s (--shrink-seconds): a smaller failing case may exist" when the time
// bound ended the counterexample's shrink; empty otherwise.
std::string cut_short_text(const Counterexample& c);
// The case an error was recorded on, in a sentence: "case 4: the layer erred on it (raising answering x:
// ValueError at model.py:12 in forward; shrunk in 6 steps), nothing was compared".
std::string erred_text(const Counterexample& c);
// "2-8, 13, 19" (`to` "-"): ascending lengths with their runs joined.
std::string runs_text(const std::vector<int>& lengths, const char* to);
// "equivariant along n, invariant to m": what an output of signature s must do under a permutation of every axis,
// or of `moved` alone (an audit --along it) when not empty.
std::string output_claim(const TensorSpec& t, const Signature& s, const std::string& moved = "");
// The one axis a permuting property moves given its recorded `settings` (equivariance --along), empty for every axis.
std::string moved_axis(const Property& p, const Signature& s, const std::map<std::string, std::string>& settings);
// "y equivariant along n, invariant to m (float32, n in [1, 8], m in [1, 8])": what each output must do (the dtype
// left out when an error came before the first call), what shift and padding leave unchanged.
std::string signature_head(const Signature& s, const AuditResult& r);
// A time or a rate as a reader takes it in: three significant digits ("0.0465", "40.1"), whole from 100 on
// ("18200").
std::string rate_text(double v);
// What a command prints of an audit's result: `head` ("audit of NAME: PROPERTY ...") and the verdict line, the
// dtype note, the lengths sent, the finding, the counterexample with `replay` as its replay line (with `signature`
// when given: the lengths and permutation of every axis, the axis at fault) and the taps.
std::string audit_summary(const std::string& head, const AuditResult& r, double seconds, const std::string& replay,
                          const Signature* signature = nullptr);

}  // namespace permcheck
