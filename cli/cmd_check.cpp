// `permcheck check LAYER`: one layer, one property, one arithmetic; exit 0 when the property holds, 1 when it
// is violated, 2 on bad input. A CI job asks "does my layer keep this property?", not "does it match the
// theory?": the verdict table answers the second.
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/options.h"
#include "layers/catalog.h"

#include "properties/property.h"
#include "report/failure_db.h"
#include "report/text.h"
#include "report/report.h"

#include <iostream>
#include <memory>
#include <sstream>

namespace permcheck::cli {
namespace {

struct CheckRequest {
    std::string layer;
    int property_index = 0;       // --property: its index among the registered properties
    bool property_given = false;  // otherwise: the first property that applies
    std::string along;            // the row's axis, where the family has several rows of the property
    Arithmetic dtype = Arithmetic::float64;
    bool exact = false;
    int cases = 100, min_len = 1, max_len = 8, d = 4;
    bool min_len_given = false, max_len_given = false;
    std::uint64_t seed = 1;
    std::string report_dir;
    std::string db_dir = ".permcheck";
    bool no_db = false;
};

// Throws std::invalid_argument with a message a user can act on; each option's own range was checked as it
// was parsed.
CheckOptions options_of(const CheckRequest& q) {
    if (q.exact && q.dtype == Arithmetic::float32)
        throw std::invalid_argument("--exact contradicts --dtype float32; give one of them");
    CheckOptions o;
    o.arithmetic = q.exact ? Arithmetic::exact : q.dtype;
    o.cases = q.cases;
    o.seed = q.seed;
    o.d = q.d;
    if (q.min_len_given) o.min_len = q.min_len;
    if (q.max_len_given) o.max_len = q.max_len;
    return o;
}

// The row the flags name: --property (the family's first row when not given) along --along.
const Expectation& row_for(const Family& family, const CheckRequest& q) {
    if (q.property_given || !q.along.empty())
        return row_of(family,
                      q.property_given ? registered_properties().at(static_cast<std::size_t>(q.property_index))->id()
                                       : family.expectations.front().property,
                      q.along);
    return family.expectations.front();
}

void write_report(const std::string& dir, const report::Record& r) {
    report::write(dir, r);
    std::cout << "report written to " << (std::filesystem::path(dir) / "report.{json,md,html}").string() << "\n";
}

// The check under StopOnSignal, with a progress line on a terminal; says on stderr what an interruption stopped.
CheckRun run_interruptibly(const Family& spec, const Expectation& row, CheckOptions opts, const FailureDb& db,
                           const CheckRequest& q) {
    std::ostringstream notes;
    CheckRun run;
    {
        const StopOnSignal stop;
        ProgressLine line(progress_enabled());
        opts.stop_requested = &StopOnSignal::requested;
        opts.on_progress = [&line](const CheckProgress& p) { line.check(p); };
        run = check_with_db(spec, row, opts, db, notes);
    }
    std::cerr << notes.str();
    const CheckResult& r = run.result;
    if (r.interrupted) {
        std::cerr << "permcheck check: " << r.layer << " " << property_name(r.property) << " ("
                  << arithmetic_name(r.dtype) << ") interrupted by " << StopOnSignal::name() << " after "
                  << r.cases_run << " of " << opts.cases << " cases"
                  << (r.counterexample ? ", while shrinking the counterexample it had found" : ", none of which failed")
                  << (q.report_dir.empty() ? "" : "; the report keeps what was run") << "\n";
    }
    return run;
}

void print_check(const CheckRun& run, const CheckOptions& opts) {
    const CheckResult& r = run.result;
    std::cout << r.layer << " " << property_name(r.property) << " (" << arithmetic_name(r.dtype) << "): ";
    if (r.interrupted) {
        std::cout << "INTERRUPTED after " << r.cases_run << " of " << opts.cases << " cases"
                  << (r.counterexample ? " (violated: a counterexample was found; its shrinking was stopped)"
                                       : " (none failed)")
                  << "; the theory expects it to " << (r.expected_holds ? "hold" : "be violated") << "\n";
    } else {
        std::cout << (r.holds ? "holds" : "VIOLATED") << (r.holds ? " in all " : " after ") << r.cases_run
                  << (r.cases_run == 1 ? " case" : " cases")
                  << (run.from_db ? " (replayed from the failure database " : "")
                  << (run.from_db ? run.entry.string() + ")" : "")
                  << "; the theory expects it to " << (r.expected_holds ? "hold" : "be violated")
                  << (r.as_expected() ? "" : "  <-- UNEXPECTED") << "\n";
    }
    if (r.counterexample)
        std::cout << describe(*r.counterexample, r.signature, finding_words(r.property, Verdict::violated, *r.counterexample, true));
}

// A layer that cannot run at these sizes (odd width for RoPE, more positions than a learned table holds).
int could_not_run(const CheckRequest& q, const Family& spec, const Expectation& row, const CheckOptions& opts,
                  const std::exception& e) {
    std::cerr << "permcheck check: " << spec.name << " " << property_name(row.property) << " ("
              << arithmetic_name(opts.arithmetic) << ") could not run: " << e.what() << "\n";
    if (!q.report_dir.empty()) {
        report::Record rec;
        rec.verdict = Verdict::error;
        rec.layer = spec.name;
        rec.property = row.property;
        rec.dtype = opts.arithmetic;
        rec.seed = opts.seed;
        rec.error = e.what();
        try {
            write_report(q.report_dir, rec);
        } catch (const std::exception& w) {
            std::cerr << "permcheck check: " << w.what() << "\n";
        }
    }
    return 2;
}

int run_check(const CheckRequest& q) {
    CheckOptions opts;
    const Family* spec = nullptr;
    const Expectation* row = nullptr;
    try {
        opts = options_of(q);
        spec = &find_layer(q.layer);
        row = &row_for(*spec, q);
        // Before the check runs, not after: a report directory that cannot be made is bad input.
        if (!q.report_dir.empty()) report::prepare_directory(q.report_dir);
    } catch (const std::exception& e) {
        std::cerr << "permcheck check: " << e.what() << "\n";
        return 2;
    }
    const FailureDb db{q.db_dir, !q.no_db};
    try {
        const CheckRun run = run_interruptibly(*spec, *row, opts, db, q);
        const CheckResult& r = run.result;
        print_check(run, opts);
        if (!q.report_dir.empty()) {
            report::Record rec = report::record_of(r, opts);
            if (run.from_db) rec.details["failure_db"] = run.entry.string();
            try {
                write_report(q.report_dir, rec);
            } catch (const std::exception& e) {
                std::cerr << "permcheck check: the result above stands, but its report was not written: " << e.what()
                          << "\n";
                return 2;
            }
        }
        if (r.interrupted) return exit_code(Verdict::interrupted);
        return r.holds ? 0 : 1;
    } catch (const std::exception& e) {
        return could_not_run(q, *spec, *row, opts, e);
    }
}

}  // namespace

void add_check(CLI::App& app, Outcome& outcome) {
    auto q = std::make_shared<CheckRequest>();
    CLI::App* sub = app.add_subcommand("check", "check one reference layer against one property");
    sub->add_option("layer", q->layer, "a reference layer (see `permcheck list`)")->required();
    std::vector<Choice<int>> properties;
    for (std::size_t k = 0; k < registered_properties().size(); ++k)
        properties.push_back({registered_properties()[k]->name(), static_cast<int>(k)});
    add_choice(*sub, "--property", q->property_index, properties,
               "a property of one of the layer's rows, as `permcheck list` shows them (default: the layer's first row)")
        ->default_str("");
    sub->add_option("--along", q->along, "the axis of the row, for a layer with several rows of the property "
                                         "(permcheck list names them)");
    add_choice(*sub, "--dtype", q->dtype,
               {{"float32", Arithmetic::float32}, {"float64", Arithmetic::float64}, {"exact", Arithmetic::exact}},
               "float32 | float64 | exact (GMP rationals, zero tolerance)");
    sub->add_flag("--exact", q->exact, "the same as --dtype exact");
    add_ranged(*sub, kCheckCases, q->cases, "random cases to try");
    add_seed(*sub, q->seed, "seed of the random search");
    add_ranged(*sub, kCheckMinLen, q->min_len, "fewest elements of every axis (default: the layer's own range)");
    add_ranged(*sub, kCheckMaxLen, q->max_len, "most elements of every axis (at most 256; default: the layer's own range)");
    add_ranged(*sub, kCheckD, q->d, "features per position of a layer of one sequence (at most 256)");
    sub->add_option("--report", q->report_dir, "write report.json, report.md and report.html into DIR");
    sub->add_option("--db", q->db_dir, "failure database directory")->capture_default_str();
    sub->add_flag("--no-db", q->no_db, "neither replay nor save counterexamples");
    sub->footer(
        "Exit status: 0 the property holds on every case, 1 it is violated (the shrunk counterexample is printed),\n"
        "2 bad input or the layer could not run, 130 interrupted (Ctrl-C or SIGTERM; --report keeps what was run).\n"
        "The status says whether the property holds, not whether that matches the theory: `permcheck` without\n"
        "arguments compares with the theory.");
    sub->callback([q, sub, &outcome] {
        q->property_given = sub->count("--property") > 0;
        q->min_len_given = sub->count("--min-len") > 0;
        q->max_len_given = sub->count("--max-len") > 0;
        // Either bound alone is checked against the layer's own range, with the axis named (check/check.h).
        if (q->min_len_given && q->max_len_given && q->min_len > q->max_len)
            throw BadOption("--min-len (" + std::to_string(q->min_len) + ") must not exceed --max-len (" +
                            std::to_string(q->max_len) + ")");
        outcome.exit_code = run_check(*q);
    });
}

}  // namespace permcheck::cli
