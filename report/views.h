// What the human views (Markdown, HTML) share: numbers and matrices as text, escaping, the headline.
#pragma once

#include "report/report.h"

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace permcheck::report::detail {

std::string text(double v);                        // six significant digits (report.json keeps every digit)
// A difference (or its fraction of the tolerance) in a table: text(v), or "not taken" where a case's two sides could
// not be subtracted (they differ in shape, or hold NaN or infinity), which untaken_note says under the table.
std::string difference_cell(double v);
inline constexpr const char* untaken_note =
    "Not taken: a case's two sides could not be subtracted (they differ in shape, or hold NaN or infinity).";
std::string one_line_text(const Permutation& p);   // "[1, 0, 2]"
std::string headline(const Record& r);             // "layer: property verdict (dtype)"
// `text` with each character `by` names replaced by its text.
std::string replaced(const std::string& text, std::initializer_list<std::pair<char, const char*>> by);
std::string html_escape(const std::string& in);
std::string md_code(const std::string& s);         // inline code that survives backticks in the content

// A signature audit's pieces: a tensor as nested arrays ("[[1, 2], [3, 4]]", a scalar as a number); the lengths
// ("n = 2, m = 2"); a spec by name (nullptr if none); a permutation's cycles, "(identity)" for one that moves nothing.
std::string tensor_text(const Tensor& t);
std::string lengths_text(const Lengths& lengths);
const TensorSpec* spec_named(const std::vector<TensorSpec>& specs, const std::string& name);
std::string cycles_text(const Permutation& p);
std::string where_text(const std::vector<int>& where);  // "[1, 2]": one index per dim
std::string axes_text(const std::vector<std::string>& axes);  // a tap's axes, "n, -": "-" for a dim without one

// The command that re-evaluates the record's saved case as written: `permcheck replay report.json`, with the
// audited command as --exec for an audit (replay never takes the program from a report); empty when nothing
// can (no counterexample, or a black box without a command, e.g. a layer audited in process through the C++ API).
std::string case_replay(const Record& r);
// The sides of one output of a signature audit: an output without an axis is invariant, L(P x) against L(x), whatever
// the record's property says of the layer as a whole; "first answer" / "second answer" for a nondeterministic or
// batch-dependent record (one input answered twice).
SideNames output_sides(const Record& r, const TensorSpec* t);
// A record whose counterexample is one input answered twice (nondeterministic, or batch-dependent: in a batched
// request and alone), where no permutation plays a part.
bool answered_twice(const Record& r);
// The tensors a view lists of a counterexample, each with its label: x's inputs by name; the inputs of the
// transformed side that differ from x's, "P x: edge_index" ("x_c: pos", "pad x: mask"), every index input already
// renumbered (none for a finding answered twice, when the transformed side is x itself (agreement), or for a report
// that did not record them); each output's two sides, "y: L(P x)" and "y: P L(x)".
std::vector<std::pair<std::string, const Tensor*>> tensors_shown(const Record& r, const Counterexample& c,
                                                                 const Signature& sig);
// The heading of the record's counterexample section: "Counterexample", "One input answered twice" or "One input
// answered in a batch and alone".
std::string counterexample_heading(const Record& r);
// "Found at case 2, 8 shrink steps." and, for a reference layer's (a check's record, which has weights), "Weight seed
// 0 (weight draw version 3); confirmed in exact rational arithmetic."
std::string found_text(const Record& r, const Counterexample& c);
// What the transformed side raised instead of answering (Counterexample::raised), as a sentence.
std::string raised_text(const Record& r, const Counterexample& c);
// What an output must do under the record's property: "equivariant along n" (a permuting property, per axis), or
// the property's own claim ("equal to the reference's answer to the same input").
std::string claim_text(const Record& r, const TensorSpec& t, const Signature& sig);
// The sentences that open "What was checked": how a case is drawn and what it compares, then what the table's
// numbers are (the failing case's as it was found, or none recorded).
std::string checked_intro(const Record& r);
// For a record answered twice, the sentence that stands in place of the permutation (plain text); empty otherwise.
std::string answered_twice_note(const Record& r);

// ---- what was checked -------------------------------------------------------------------------------------
// One row of the table "What was checked": an output and an axis (equivariant along it or invariant to it), or,
// for the shift and padding properties, an output and what must not change it. The output's own cells (its cases,
// differences and tolerances) are those of its first row; `check` is null when the report does not record them.
struct CheckedRow {
    std::string output, axis, claim, lengths;
    const OutputCheck* check = nullptr;
    SideNames sides{"", "", ""};  // the output's two sides (empty for a record of an input answered twice)
    bool first = true;   // the output's first row
    int span = 1;        // the output's rows
    bool broke = false;  // the output the counterexample violates
};
// The rows of an audit's record (one with a signature); empty for a check's. An older report without "checked"
// gets its rows with the lengths from details.audit and no numbers.
std::vector<CheckedRow> checked_rows(const Record& r);
// How the tolerance was derived, a sentence with the record's parameters: the dtype, u, the formula, k and M.
std::string tolerance_text(const Record& r);
// The verdict of a row's output: "violated" (broke), "within tolerance" or "not recorded".
std::string row_result(const CheckedRow& row);
// A record's details (details.audit, details.check, ...) as (key, value) lines for a table: scalars as text, short
// lists joined; the signature and longer values are left to report.json.
std::vector<std::pair<std::string, std::string>> detail_lines(const Record& r);

}  // namespace permcheck::report::detail
