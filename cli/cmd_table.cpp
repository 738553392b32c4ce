// `permcheck` with no subcommand: every reference layer x every property that applies, as a table.
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/options.h"
#include "layers/catalog.h"

#include "check/check.h"
#include "report/report.h"

#include "properties/property.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

namespace permcheck::cli {
namespace {

struct Row {
    CheckResult result;
    double seconds;
};

// "equivariance", or "invariance(m)" for a layer of several axes: the row as the table and its reports name it.
std::string row_name(const Family& f, const Expectation& e) {
    return std::string(property_name(e.property)) + (f.axes.size() > 1 ? "(" + e.axis + ")" : "");
}

// "n=2 (0 1), 5 shrinks" for a failure: the length of the row's axis and what the property did there; empty when
// the property held.
std::string smallest(const CheckResult& r) {
    if (!r.counterexample) return "";
    const Counterexample& c = *r.counterexample;
    const PropertyRules& rules = rules_of(r.property);
    const auto perm = c.perms.find(r.axis);
    const std::string what = rules.permutes() && perm != c.perms.end() ? perm->second.cycles() : rules.case_text(c);
    const auto len = c.lengths.find(r.axis);
    return r.axis + "=" + std::to_string(len == c.lengths.end() ? 0 : len->second) + " " + what + ", " +
           std::to_string(c.shrink_steps) + " shrinks";
}

// --report DIR: one report directory per row that found a counterexample (expected or not), named
// <layer>.<row>.<dtype>, and DIR/summary.json listing every row (schema permcheck.table/1).
void report_row(const std::string& dir, const Family& f, const Expectation& e, const Row& row, const CheckOptions& o,
                nlohmann::json& summary) {
    const CheckResult& r = row.result;
    nlohmann::json entry = {{"layer", r.layer}, {"property", property_name(r.property)}, {"axis", r.axis},
                            {"dtype", arithmetic_name(r.dtype)}, {"expected", r.expected_holds ? "holds" : "violated"},
                            {"verdict", r.holds ? "holds" : "violated"}, {"as_expected", r.as_expected()},
                            {"cases", r.cases_run}, {"seconds", row.seconds}, {"report", nullptr}};
    if (r.counterexample) {
        const std::string name = r.layer + "." + property_name(e.property) + (f.axes.size() > 1 ? "-" + e.axis : "") +
                                 "." + arithmetic_name(r.dtype);
        report::write(std::filesystem::path(dir) / name, report::record_of(r, o));
        entry["report"] = name;
    }
    summary["rows"].push_back(std::move(entry));
}

// Ctrl-C or SIGTERM during a row: the rows above stand; summary.json lists them and says the table is incomplete.
int interrupted(const std::string& report_dir, nlohmann::json& summary, const Row& row, int done) {
    if (progress_enabled()) std::fprintf(stderr, "\r\033[K");
    std::fflush(stdout);
    std::fprintf(stderr, "permcheck: the verdict table was interrupted by %s after %d %s, during %s %s (%s)\n",
                 StopOnSignal::name().c_str(), done, done == 1 ? "row" : "rows", row.result.layer.c_str(),
                 property_name(row.result.property), arithmetic_name(row.result.dtype));
    if (!report_dir.empty()) {
        report::prepare_directory(report_dir);  // no row may have made it yet
        summary["interrupted"] = true;
        report::write_atomically(std::filesystem::path(report_dir) / "summary.json", summary.dump(2) + "\n");
    }
    return exit_code(Verdict::interrupted);
}

Row timed_check(const Family& f, const Expectation& e, const CheckOptions& o) {
    const auto t0 = std::chrono::steady_clock::now();
    CheckResult r = check(f, e, o);
    return {std::move(r), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

int verdict_table(CheckOptions base, const std::string& report_dir) {
    nlohmann::json summary = {{"schema", "permcheck.table/1"}, {"rows", nlohmann::json::array()}};
    const bool progress = progress_enabled();
    const StopOnSignal stop;
    base.stop_requested = &StopOnSignal::requested;
    std::printf("%-34s %-20s %-9s %-9s %-8s %6s %8s  %s\n", "layer", "property", "expected", "verdict", "method",
                "cases", "time", "smallest counterexample");
    int mismatches = 0, rows = 0;
    for (const Family& f : catalog())
        for (const Expectation& e : f.expectations)
            for (Arithmetic a : {Arithmetic::float64, Arithmetic::exact}) {
                CheckOptions o = base;
                o.arithmetic = a;
                if (progress)
                    std::fprintf(stderr, "\r\033[Kchecking %s %s (%s)...", f.name.c_str(), row_name(f, e).c_str(),
                                 arithmetic_name(a));
                const Row row = timed_check(f, e, o);
                if (row.result.interrupted) return interrupted(report_dir, summary, row, rows);
                const bool ok = row.result.as_expected();
                if (!report_dir.empty()) report_row(report_dir, f, e, row, o, summary);
                mismatches += !ok;
                ++rows;
                if (progress) std::fprintf(stderr, "\r\033[K");
                std::printf("%-34s %-20s %-9s %-9s %-8s %6d %7.2fs  %s%s\n", f.name.c_str(), row_name(f, e).c_str(),
                            e.holds ? "holds" : "fails", row.result.holds ? "holds" : "fails", arithmetic_name(a),
                            row.result.cases_run, row.seconds, smallest(row.result).c_str(),
                            ok ? "" : "   <-- UNEXPECTED");
                std::fflush(stdout);
            }
    if (!report_dir.empty()) {
        summary["as_expected"] = mismatches == 0;
        report::write_atomically(std::filesystem::path(report_dir) / "summary.json", summary.dump(2) + "\n");
    }
    std::printf("\n%s\n", mismatches == 0 ? "every verdict matches the theory"
                                          : "some verdicts do NOT match the theory");
    return mismatches == 0 ? 0 : 1;
}

}  // namespace

void add_table(CLI::App& app, Outcome& outcome) {
    auto opts = std::make_shared<CheckOptions>();
    auto report_dir = std::make_shared<std::string>();
    add_ranged(app, kCheckCases, opts->cases, "random cases per check, in float64 and in exact arithmetic");
    add_seed(app, opts->seed, "seed of the random search");
    app.add_option("--report", *report_dir,
                   "write a report directory per row with a counterexample, and summary.json, into DIR");
    app.callback([&app, &outcome, opts, report_dir] {
        if (app.get_subcommands().empty()) outcome.exit_code = verdict_table(*opts, *report_dir);
    });
}

}  // namespace permcheck::cli
