// `permcheck check LAYER`: one layer, one property, one arithmetic; exit 0 when the property holds, 1 when it
// is violated, 2 on bad input. A CI job asks "does my layer keep this property?", not "does it match the
// theory?": the verdict table answers the second.
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/options.h"

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
    Property property = Property::equivariance;
    bool property_given = false;  // otherwise: the first property that applies
    Arithmetic dtype = Arithmetic::float64;
    bool exact = false;
    int cases = 100, min_len = 1, max_len = 8, d = 4;
    std::uint64_t seed = 1;
    std::string report_dir;
    std::string db_dir = ".permcheck";
    bool no_db = false;
};

std::string applicable_names(const LayerFamily& spec) {
    std::string out;
    for (const Expectation& e : spec.expectations) {
        const std::string name = property_name(e.property);
        if (out.find(name) == std::string::npos) out += (out.empty() ? "" : ", ") + name;
    }
    return out;
}

// Throws std::invalid_argument with a message a user can act on; each option's own range was checked as it
// was parsed.
CheckOptions options_of(const CheckRequest& q) {
    if (q.exact && q.dtype == Arithmetic::float32)
        throw std::invalid_argument("--exact contradicts --dtype float32; give one of them");
    return CheckOptions{.arithmetic = q.exact ? Arithmetic::exact : q.dtype, .cases = q.cases, .seed = q.seed,
                        .min_len = q.min_len, .max_len = q.max_len, .d = q.d};
}

Property property_for(const LayerFamily& spec, const CheckRequest& q) {
    const std::vector<Expectation>& applicable = spec.expectations;
    if (!q.property_given) return applicable.front().property;
    for (const Expectation& e : applicable)
        if (e.property == q.property) return q.property;
    throw std::invalid_argument("property '" + std::string(property_name(q.property)) + "' does not apply to layer '" + spec.name + "' (" +
                                (spec.output == Output::pooled ? "pooled" : "sequence") +
                                " output); properties that apply: " + applicable_names(spec));
}

void write_report(const std::string& dir, const report::Record& r) {
    report::write(dir, r);
    std::cout << "report written to " << (std::filesystem::path(dir) / "report.{json,md,html}").string() << "\n";
}

// The check under StopOnSignal, with a progress line on a terminal; says on stderr what an interruption stopped.
CheckRun run_interruptibly(const LayerFamily& spec, Property property, CheckOptions opts, const FailureDb& db,
                           const CheckRequest& q) {
    std::ostringstream notes;
    CheckRun run;
    {
        const StopOnSignal stop;
        ProgressLine line(progress_enabled());
        opts.stop_requested = &StopOnSignal::requested;
        opts.on_progress = [&line](const CheckProgress& p) { line.check(p); };
        run = check_with_db(spec, property, opts, db, notes);
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
    if (r.counterexample) std::cout << describe(*r.counterexample);
}

// A layer that cannot run at these sizes (odd width for RoPE, more positions than a learned table holds).
int could_not_run(const CheckRequest& q, const LayerFamily& spec, Property property, const CheckOptions& opts,
                  const std::exception& e) {
    std::cerr << "permcheck check: " << spec.name << " " << property_name(property) << " ("
              << arithmetic_name(opts.arithmetic) << ") could not run: " << e.what() << "\n";
    if (!q.report_dir.empty()) {
        report::Record rec;
        rec.verdict = Verdict::error;
        rec.layer = spec.name;
        rec.property = property;
        rec.dtype = opts.arithmetic;
        rec.seed = opts.seed;
        rec.error = e.what();
        rec.replay = replay_command(spec.name, property, opts);
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
    const LayerFamily* spec = nullptr;
    Property property{};
    try {
        opts = options_of(q);
        spec = &find_layer(q.layer);
        property = property_for(*spec, q);
        // Before the check runs, not after: a report directory that cannot be made is bad input.
        if (!q.report_dir.empty()) report::prepare_directory(q.report_dir);
    } catch (const std::exception& e) {
        std::cerr << "permcheck check: " << e.what() << "\n";
        return 2;
    }
    const FailureDb db{q.db_dir, !q.no_db};
    try {
        const CheckRun run = run_interruptibly(*spec, property, opts, db, q);
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
        return could_not_run(q, *spec, property, opts, e);
    }
}

}  // namespace

void add_check(CLI::App& app, Outcome& outcome) {
    auto q = std::make_shared<CheckRequest>();
    CLI::App* sub = app.add_subcommand("check", "check one reference layer against one property");
    sub->add_option("layer", q->layer, "a reference layer (see `permcheck list`)")->required();
    std::vector<Choice<Property>> properties;
    for (Property p : {Property::equivariance, Property::invariance, Property::shift, Property::reversal,
                       Property::causal_prefix})
        properties.push_back({property_name(p), p});
    add_choice(*sub, "--property", q->property, properties,
               "equivariance | invariance | shift | reversal | causal-prefix (default: the first that applies)")
        ->default_str("");
    add_choice(*sub, "--dtype", q->dtype,
               {{"float32", Arithmetic::float32}, {"float64", Arithmetic::float64}, {"exact", Arithmetic::exact}},
               "float32 | float64 | exact (GMP rationals, zero tolerance)");
    sub->add_flag("--exact", q->exact, "the same as --dtype exact");
    add_ranged(*sub, kCheckCases, q->cases, "random cases to try");
    add_seed(*sub, q->seed, "seed of the random search");
    add_ranged(*sub, kCheckMinLen, q->min_len, "fewest positions of a case");
    add_ranged(*sub, kCheckMaxLen, q->max_len, "most positions of a case (at most 256)")
        ->check(not_below_min_len(q->min_len))
        ->force_callback();  // checked against --min-len also when it is not given
    add_ranged(*sub, kCheckD, q->d, "features per position (at most 256)");
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
        outcome.exit_code = run_check(*q);
    });
}

}  // namespace permcheck::cli
