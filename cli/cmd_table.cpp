// `permcheck` with no subcommand: every reference layer x every property that applies, as a table.
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/options.h"

#include "check/engine.h"
#include "check/signature_check.h"
#include "report/report.h"

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

Row timed_check(const LayerFamily& spec, Property property, const CheckOptions& opts) {
    const auto t0 = std::chrono::steady_clock::now();
    CheckResult r = check(spec, property, opts);
    return {std::move(r), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

// "n=2 (0 1), 5 shrinks" for a failure; empty when the property held.
std::string smallest(const CheckResult& r) {
    if (!r.counterexample) return "";
    const Counterexample& c = *r.counterexample;
    const std::string what = r.property == Property::shift ? "shift " + std::to_string(c.shift) : c.perm.cycles();
    return "n=" + std::to_string(c.n()) + " " + what + ", " + std::to_string(c.shrink_steps) + " shrinks";
}

// --report DIR: one report directory per row that found a counterexample (expected or not), named
// <layer>.<property>.<dtype>, and DIR/summary.json listing every row (schema permcheck.table/1).
void report_row(const std::string& dir, const Row& row, const CheckOptions& o, nlohmann::json& summary) {
    const CheckResult& r = row.result;
    nlohmann::json entry = {{"layer", r.layer}, {"property", property_name(r.property)}, {"dtype", arithmetic_name(r.dtype)},
                            {"expected", r.expected_holds ? "holds" : "violated"},
                            {"verdict", r.holds ? "holds" : "violated"}, {"as_expected", r.as_expected()},
                            {"cases", r.cases_run}, {"seconds", row.seconds}, {"report", nullptr}};
    if (r.counterexample) {
        const std::string name = r.layer + "." + property_name(r.property) + "." + arithmetic_name(r.dtype);
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

// "m=2 (0 1), 5 shrinks" for a failure of a signature row: the length and permutation of the axis at fault; for
// shift "n=1 c=1", for padding "n=1 +1 pad at slot 0".
std::string smallest(const SignatureCheckResult& r) {
    if (!r.counterexample) return "";
    const SignatureCounterexample& c = *r.counterexample;
    std::string what = r.axis + "=" + std::to_string(c.lengths.at(r.axis)) + " ";
    if (r.property == Property::shift) what += "c=" + std::to_string(c.shift);
    else if (r.property == Property::padding && c.pads) {
        what += "+" + std::to_string(c.pads->slots.size()) + (c.pads->slots.size() == 1 ? " pad at slot" : " pads at slots");
        for (std::size_t k = 0; k < c.pads->slots.size(); ++k) what += (k ? ", " : " ") + std::to_string(c.pads->slots[k]);
    } else what += c.perms.at(r.axis).cycles();
    return what + ", " + std::to_string(c.shrink_steps) + " shrinks";
}

// --report DIR for a row of a layer over named inputs that found a counterexample: its report directory, named
// <layer>.<property>-<axis>.<dtype>, with the signature and the counterexample by name (as a signature audit's).
nlohmann::json signature_report(const std::string& dir, const SignatureFamily& f, const SignatureCheckResult& r,
                                const CheckOptions& o) {
    if (dir.empty() || !r.counterexample) return nullptr;
    report::Record rec;
    rec.verdict = Verdict::violated;
    rec.layer = r.layer;
    rec.property = r.property;
    rec.dtype = r.dtype;
    rec.cases = r.cases_run;
    rec.seed = o.seed;
    rec.replay = "permcheck --cases " + std::to_string(o.cases) + " --seed " + std::to_string(o.seed);
    rec.signature = signature_of(f);
    rec.signature_counterexample = r.counterexample;
    rec.signature_counterexample->replay = rec.replay;
    const std::string name = r.layer + "." + property_name(r.property) + "-" + r.axis + "." + arithmetic_name(r.dtype);
    report::write(std::filesystem::path(dir) / name, rec);
    return name;
}

// The rows of the layers over several named inputs: one per axis and arithmetic. Returns the mismatches, or -1
// when a stop request ended a row.
int signature_rows(const CheckOptions& base, const std::string& report_dir, nlohmann::json& summary, int& rows) {
    int mismatches = 0;
    for (const SignatureFamily& f : signature_catalog())
        for (const AxisExpectation& e : f.expectations)
            for (Arithmetic a : {Arithmetic::float64, Arithmetic::exact}) {
                SignatureCheckOptions o{base.cases, base.seed, a, 400, base.stop_requested};
                if (progress_enabled())
                    std::fprintf(stderr, "\r\033[Kchecking %s along %s (%s)...", f.name.c_str(), e.axis.c_str(),
                                 arithmetic_name(a));
                const auto t0 = std::chrono::steady_clock::now();
                const SignatureCheckResult r = check_signature(f, e, o);
                const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (r.interrupted) return -1;
                if (progress_enabled()) std::fprintf(stderr, "\r\033[K");
                const std::string property = std::string(property_name(r.property)) + "(" + e.axis + ")";
                summary["rows"].push_back({{"layer", r.layer}, {"property", property_name(r.property)}, {"axis", e.axis},
                                           {"dtype", arithmetic_name(a)}, {"expected", r.expected_holds ? "holds" : "violated"},
                                           {"verdict", r.holds ? "holds" : "violated"}, {"as_expected", r.as_expected()},
                                           {"cases", r.cases_run}, {"seconds", seconds},
                                           {"report", signature_report(report_dir, f, r, base)}});
                mismatches += !r.as_expected();
                ++rows;
                std::printf("%-34s %-20s %-9s %-9s %-8s %6d %7.2fs  %s%s\n", r.layer.c_str(), property.c_str(),
                            r.expected_holds ? "holds" : "fails", r.holds ? "holds" : "fails", arithmetic_name(a),
                            r.cases_run, seconds, smallest(r).c_str(), r.as_expected() ? "" : "   <-- UNEXPECTED");
                std::fflush(stdout);
            }
    return mismatches;
}

int verdict_table(CheckOptions base, const std::string& report_dir) {
    nlohmann::json summary = {{"schema", "permcheck.table/1"}, {"rows", nlohmann::json::array()}};
    const bool progress = progress_enabled();
    const StopOnSignal stop;
    base.stop_requested = &StopOnSignal::requested;
    std::printf("%-34s %-20s %-9s %-9s %-8s %6s %8s  %s\n", "layer", "property", "expected", "verdict", "method",
                "cases", "time", "smallest counterexample");
    int mismatches = 0, rows = 0;
    for (const LayerFamily& spec : catalog()) {
        for (const Expectation& e : spec.expectations) {
            for (Arithmetic a : {Arithmetic::float64, Arithmetic::exact}) {
                CheckOptions o = base;
                o.arithmetic = a;
                if (progress)
                    std::fprintf(stderr, "\r\033[Kchecking %s %s (%s)...", spec.name.c_str(), property_name(e.property),
                                 arithmetic_name(a));
                const Row row = timed_check(spec, e.property, o);
                if (row.result.interrupted) return interrupted(report_dir, summary, row, rows);
                const bool ok = row.result.as_expected();
                if (!report_dir.empty()) report_row(report_dir, row, o, summary);
                mismatches += !ok;
                ++rows;
                if (progress) std::fprintf(stderr, "\r\033[K");
                std::printf("%-34s %-20s %-9s %-9s %-8s %6d %7.2fs  %s%s\n", spec.name.c_str(),
                            property_name(e.property), e.holds ? "holds" : "fails",
                            row.result.holds ? "holds" : "fails", arithmetic_name(a), row.result.cases_run,
                            row.seconds, smallest(row.result).c_str(), ok ? "" : "   <-- UNEXPECTED");
                std::fflush(stdout);
            }
        }
    }
    const int signature_mismatches = signature_rows(base, report_dir, summary, rows);
    if (signature_mismatches < 0) {
        Row row;
        row.result.layer = "a layer over named inputs";
        return interrupted(report_dir, summary, row, rows);
    }
    mismatches += signature_mismatches;
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
