// `--profile`: every property that applies to a signature, a row each, one table on the terminal; each row writes
// its own report directory DIR/<row>/ (so that replay and EXPECT read one verdict) and DIR/profile.json lists the
// rows. The profile reports, it does not judge: exit 0 when every row ran to a verdict (violated, nondeterministic,
// non-finite and undecided included), 2 when a row erred or an option was bad, 130 when interrupted. Also the flow
// of `audit` and `audit-torch` once their layer is settled: one audit under Ctrl-C, printed, or a profile of it,
// and its report.
#pragma once

#include "cli/audit_common.h"
#include "cli/interrupt.h"
#include "properties/property.h"
#include "report/text.h"

#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace permcheck::cli {

struct ProfileRow {
    std::string id;     // its report directory's name
    std::string title;  // what it checks, in words
    std::optional<Property> property;
    std::map<std::string, std::string> settings;  // the property's options the row runs with (padding=left)
    std::function<std::string(bool holds, const RowVerdicts& before)> words;  // as the property declares (may be empty)
};

// The rows that apply, as each property declares them (PropertyRules::profile_rows), by rank (the rows whose
// verdicts others' words read first: causal, then the prefix's order and the gaps between position ids), within a
// rank in the order the properties are registered: with the signature's sequence axis (`causal_axis`, or its one
// axis) causal and the prefix's order, order only through the position inputs and order-aware at all
// (equivariance), with a position input the gaps between the ids and relative (shift), padding left, right and
// any with a mask, packing when a position or segment input lies along the sequence axis, and agreement when a
// reference implementation was given.
std::vector<ProfileRow> profile_rows(const Signature& s, const std::string& causal_axis = "", bool reference = false);

// One row's run, its flags those of the profile with the row's property: its result and its report record.
struct RowRun {
    AuditResult result;
    report::Record record;
};

// Runs every row through run_row and prints the table on `out`; writes the reports when flags.report_dir is set.
int run_profile(const std::string& program, const std::string& name, const Signature& s, const AuditFlags& flags,
                const std::function<RowRun(const AuditFlags&)>& run_row);

// A command's audit of its layer: a copyable value whose `flags` a profile's row replaces, with what each command
// does its own way: program (its name in messages), name(), options() (throws std::invalid_argument for flags the
// layer cannot take), run(o) (the audit through its adapters, started and stopped in it), add_taps(r, o) (after it,
// not in its time), head(r) (the verdict line's), replay(r), record(r, seconds), add_repro(r, record) and
// shown_signature() (the signature a result is shown with; null for the shorthand). Ctrl-C or SIGTERM stops the
// audit between cases (verdict interrupted, said on stderr with c.stopped_note); a progress line is drawn on a
// terminal.
template <class Command> RowRun run_once(const Command& c, bool print) {
    AuditResult r;
    double seconds = 0;
    try {
        AuditOptions o = c.options();
        const auto t0 = std::chrono::steady_clock::now();
        {
            const StopOnSignal stop;
            ProgressLine line(progress_enabled());
            o.stop_requested = &StopOnSignal::requested;
            o.on_progress = [&line](const AuditProgress& p) { line.audit(p); };
            r = c.run(o);
            seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            c.add_taps(r, o);
        }
        if (r.verdict == Verdict::interrupted)
            std::cerr << c.program << ": interrupted by " << StopOnSignal::name() << " after " << r.cases
                      << (r.cases == 1 ? " case" : " cases") << c.stopped_note
                      << (c.flags.report_dir.empty() ? "" : "; the report keeps what was run") << "\n";
    } catch (const std::exception& e) {  // a row the signature cannot take, a property refused
        r = error_result(e.what());
    }
    if (r.verdict == Verdict::error && !r.last_request.empty() && r.error.find("last request") == std::string::npos)
        r.error += "; last request: " + r.last_request;  // unless the message names the request that failed
    if (const Signature* s = c.shown_signature(); s && r.verdict == Verdict::error)
        r.error += index_error_hint(*s, r.error);  // ids beyond a table of the layer's: its V or P
    if (print) {  // the verdict line, the finding, the counterexample with its replay line; an error on stderr
        std::cout << audit_summary(c.head(r), r, seconds, c.replay(r), c.shown_signature());
        if (r.verdict == Verdict::error && !r.error.empty()) std::cerr << c.program << ": error: " << r.error << "\n";
    }
    return RowRun{r, c.record(r, seconds)};
}

// The audit, or with --profile a row per property (each its own repro.py), and the report: the exit code.
template <class Command> int audit_and_report(const Command& c, const Signature& s) {
    if (c.flags.profile)
        return run_profile(c.program, c.name(), s, c.flags, [&c](const AuditFlags& f) {
            Command row = c;
            row.flags = f;
            RowRun run = run_once(row, /*print=*/false);
            row.add_repro(run.result, run.record);
            return run;
        });
    RowRun run = run_once(c, /*print=*/true);
    c.add_repro(run.result, run.record);
    return finish(c.program, c.flags, run.record, exit_code(run.result.verdict));
}

}  // namespace permcheck::cli
