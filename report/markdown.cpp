// The record as Markdown, for a pull-request comment.
#include "report/views.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace permcheck::report {

using namespace detail;

namespace {

// A signature audit's counterexample: every axis with its length and permutation, the axis at fault, each
// output's comparison, then the inputs and both sides of every output.
std::string signature_section(const Counterexample& c, const Signature& sig, const Record& r) {
    std::ostringstream s;
    s << "\n#### " << counterexample_heading(r) << ": " << lengths_text(c.lengths) << "\n\n";
    if (answered_twice(r)) {
        s << answered_twice_note(r) << "\n";
    } else {
        s << "| axis | length | permutation | one-line |\n| --- | --- | --- | --- |\n";
        for (const auto& [axis, p] : c.perms)
            s << "| " << md_code(axis) << (axis == c.axis_at_fault ? " (at fault)" : "") << " | " << p.size() << " | "
              << md_code(cycles_text(p)) << " | " << md_code(one_line_text(p)) << " |\n";
        s << "\nEach permutation acts along its axis: (P t)[.., i, ..] = t[.., p[i], ..]; an index input's values are "
             "renumbered.\n";
    }
    if (!c.axis_at_fault.empty()) s << "The axis at fault: **" << c.axis_at_fault << "** (the only axis permuted).\n";
    if (!c.outputs.empty())
        s << "\n| output | must be | largest difference | where | tolerance | |\n| --- | --- | --- | --- | --- | --- |\n";
    for (const OutputComparison& o : c.outputs) {
        const TensorSpec* t = spec_named(sig.outputs, o.name);
        s << "| " << md_code(o.name) << " | " << (t ? claim_text(r, *t, sig) : "") << " | "
          << (o.shape_mismatch ? std::string("not taken") : difference_cell(o.max_abs_diff)) << " | " << (o.shape_mismatch || o.where.empty() ? std::string("shapes differ") : md_code(where_text(o.where)))
          << " | " << text(o.tolerance) << " | " << (o.holds ? "holds" : "**violated**") << " |\n";
    }
    s << "\n" << found_text(r, c) << "\n\n";
    s << "<details><summary>inputs and outputs</summary>\n\n```text\n";
    for (const auto& [label, t] : tensors_shown(r, c, sig)) s << label << " = " << tensor_text(*t) << "\n";
    s << "```\n\n</details>\n";
    return s.str();
}

// Text in a table cell: its bars escaped, line breaks as spaces.
std::string cell(const std::string& text) { return replaced(text, {{'|', "\\|"}, {'\n', " "}}); }

// Text outside code as Markdown shows it: HTML's special characters and table bars escaped (an adapter chooses its
// tap names: "<script>" must read as text).
std::string md_plain(const std::string& text) {
    return replaced(text, {{'<', "&lt;"}, {'>', "&gt;"}, {'&', "&amp;"}, {'|', "\\|"}});
}

// The taps in the order the submodules finished, the first breaking one marked.
std::string taps_section(const TapTrace& t) {
    std::ostringstream s;
    s << "\n#### Taps: where symmetry first breaks\n\n" << md_plain(first_break_sentence(t)) << ".\n";
    if (t.taps.empty()) return s.str();
    s << "\n| # | tap | shape | axes | verdict | largest difference | tolerance | note |\n"
         "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (std::size_t k = 0; k < t.taps.size(); ++k) {
        const TapComparison& c = t.taps[k];
        const bool first = static_cast<int>(k) == t.first_breaking;
        s << "| " << k + 1 << (first ? " ◀ first break" : "") << " | " << md_code(cell(printable_tap_name(c.name)))
          << " | " << where_text(c.shape) << " | " << axes_text(c.axes) << " | "
          << (c.verdict == TapVerdict::holds ? std::string("holds")
                                             : std::string("**").append(tap_verdict_name(c.verdict)).append("**"))
          << " | " << text(c.max_abs_diff) << " | " << text(c.tolerance) << " | " << cell(c.note) << " |\n";
    }
    if (!t.note.empty()) s << "\n" << md_plain(printable_tap_name(t.note)) << "\n";
    return s.str();
}

// What the audit checked, one row per output and axis; an output's own cells in its first row (Markdown has no
// row spans), the output that broke marked.
std::string checked_section(const Record& r) {
    const std::vector<CheckedRow> rows = checked_rows(r);
    if (rows.empty()) return "";
    std::ostringstream s;
    s << "\n#### What was checked\n\n" << checked_intro(r)
      << "\n\n| output | axis | must be | lengths covered | cases | compared | largest difference | its tolerance | "
         "largest fraction of tolerance | tolerances | result |\n"
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const CheckedRow& row : rows) {
        const OutputCheck* c = row.first ? row.check : nullptr;
        const std::string none = row.first ? "–" : "";
        s << "| " << (row.first ? md_code(row.output) : "") << " | " << md_plain(row.axis) << " | " << row.claim << " | "
          << row.lengths << " | " << (c ? std::to_string(c->cases) : none) << " | "
          << (!row.first ? "" : *row.sides.diff ? md_code(cell(row.sides.diff)) : none) << " | " << (c ? difference_cell(c->max_abs_diff) : none) << " | "
          << (c ? text(c->tolerance_at_max) : none) << " | " << (c ? difference_cell(c->largest_fraction) : none) << " | "
          << (c ? text(c->min_tolerance) + " – " + text(c->max_tolerance) : none) << " | "
          << (!row.first ? "" : row.broke ? "**violated** ◀" : row_result(row)) << " |\n";
    }
    if (std::any_of(rows.begin(), rows.end(), [](const CheckedRow& row) {
            return row.first && row.check && !std::isfinite(row.check->max_abs_diff);
        }))
        s << "\n" << untaken_note << "\n";
    s << "\nTolerance: " << md_plain(tolerance_text(r)) << "\n";
    // A run that held: the case closest to its tolerance, per output (report.html draws its heatmap).
    for (const OutputCheck& o : r.checked && !r.counterexample ? r.checked->outputs : std::vector<OutputCheck>{}) {
        if (o.closest_case < 0) continue;
        const OutputComparison& c = o.closest;
        s << "\nClosest to its tolerance, output " << md_code(o.name) << ": ";
        if (c.max_abs_diff == 0.0) {
            s << "no case showed any difference.\n";
            continue;
        }
        s << "case " << o.closest_case << " (" << lengths_text(o.closest_lengths) << "), largest difference "
          << text(c.max_abs_diff);
        if (!c.where.empty()) s << " at " << md_code(where_text(c.where));
        s << ", " << text(c.tolerance > 0 ? c.max_abs_diff / c.tolerance : 0.0) << " of its tolerance " << text(c.tolerance)
          << ".\n";
    }
    return s.str();
}

// The record's details as a table of plain values; report.json holds them all.
std::string details_section(const Record& r) {
    std::ostringstream s;
    s << "\n<details><summary>details</summary>\n\n";
    if (const auto lines = detail_lines(r); !lines.empty()) {
        s << "| field | value |\n| --- | --- |\n";
        for (const auto& [key, value] : lines) s << "| " << md_plain(key) << " | " << md_code(cell(value)) << " |\n";
        s << "\n";
    }
    s << "Every field, at full precision: `report.json`.\n\n</details>\n";
    return s.str();
}

}  // namespace

std::string to_markdown(const Record& r) {
    std::ostringstream s;
    s << "### permcheck: " << headline(r) << "\n\n";
    if (!r.repro.empty())
        s << "**Reproduce without permcheck:** `python3 " << r.repro << "` (beside this report; it exits 1 while the "
          << "bug is there).\n\n";
    s << "| field | value |\n| --- | --- |\n";
    s << "| verdict | **" << verdict_name(r.verdict) << "** |\n";
    s << "| layer | " << md_code(r.layer) << " |\n";
    s << "| property | " << property_name(r.property) << " |\n";
    s << "| dtype | " << arithmetic_name(r.dtype) << " |\n";
    s << "| cases | " << r.cases << " |\n";
    s << "| seed | " << r.seed << " |\n";
    if (!r.error.empty()) s << "\n**Error:**\n\n```text\n" << r.error << "\n```\n";
    s << checked_section(r);
    if (r.counterexample && r.signature) s << signature_section(*r.counterexample, *r.signature, r);
    if (r.taps) s << taps_section(*r.taps);
    s << details_section(r);
    // An audit served in process replays from Python (permcheck.replay), not from a shell.
    const bool python = r.replay.rfind("permcheck.replay(", 0) == 0;
    if (!r.replay.empty()) s << "\n**Replay:**\n\n```" << (python ? "python" : "sh") << "\n" << r.replay << "\n```\n";
    if (const std::string again = case_replay(r); !again.empty())
        s << "or re-evaluate this exact case: " << md_code(again) << "\n";
    return s.str();
}

}  // namespace permcheck::report
