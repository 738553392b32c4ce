// `permcheck check LAYER`: one layer, one property, one arithmetic; exit 0 when the property holds, 1 when it
// is violated, 2 on bad input. A CI job asks "does my layer keep this property?", not "does it match the
// theory?": the verdict table answers the second.
#include "cli/commands.h"

#include "report/failure_db.h"
#include "report/report.h"

#include <iostream>
#include <memory>
#include <sstream>

namespace permcheck::cli {
namespace {

struct CheckRequest {
    std::string layer;
    std::string property;  // empty: the first property that applies
    std::string dtype = "float64";
    bool exact = false;
    long long cases = 100, min_len = 1, max_len = 8, d = 4;
    std::uint64_t seed = 1;
    std::string report_dir;
    std::string db_dir = ".permcheck";
    bool no_db = false;
};

// Sizes large enough for any question about order, small enough that a typo cannot make a run hang.
constexpr long long kMaxLen = 256, kMaxWidth = 256, kMaxCases = 1000000;

std::string applicable_names(const LayerFamily& spec) {
    std::string out;
    for (const Expectation& e : spec.expectations) {
        const std::string name = property_name(e.property);
        if (out.find(name) == std::string::npos) out += (out.empty() ? "" : ", ") + name;
    }
    return out;
}

// Throws std::invalid_argument with a message a user can act on.
CheckOptions options_of(const CheckRequest& q) {
    const auto require = [](bool ok, const std::string& message) {
        if (!ok) throw std::invalid_argument(message);
    };
    require(q.cases >= 1 && q.cases <= kMaxCases,
            "--cases must be between 1 and " + std::to_string(kMaxCases) + ", got " + std::to_string(q.cases));
    require(q.min_len >= 1, "--min-len must be at least 1, got " + std::to_string(q.min_len));
    require(q.max_len >= 1 && q.max_len <= kMaxLen,
            "--max-len must be between 1 and " + std::to_string(kMaxLen) + ", got " + std::to_string(q.max_len));
    require(q.min_len <= q.max_len, "--min-len (" + std::to_string(q.min_len) + ") must not exceed --max-len (" +
                                        std::to_string(q.max_len) + ")");
    require(q.d >= 1 && q.d <= kMaxWidth,
            "--d must be between 1 and " + std::to_string(kMaxWidth) + ", got " + std::to_string(q.d));
    if (q.exact && q.dtype != "float64" && q.dtype != "exact")
        throw std::invalid_argument("--exact contradicts --dtype " + q.dtype + "; give one of them");
    CheckOptions o;
    o.arithmetic = parse_arithmetic(q.exact ? "exact" : q.dtype);
    o.cases = static_cast<int>(q.cases);
    o.seed = q.seed;
    o.min_len = static_cast<int>(q.min_len);
    o.max_len = static_cast<int>(q.max_len);
    o.d = static_cast<int>(q.d);
    return o;
}

Property property_for(const LayerFamily& spec, const std::string& requested) {
    const std::vector<Expectation>& applicable = spec.expectations;
    if (requested.empty()) return applicable.front().property;
    const Property p = parse_property(requested);
    for (const Expectation& e : applicable)
        if (e.property == p) return p;
    throw std::invalid_argument("property '" + requested + "' does not apply to layer '" + spec.name + "' (" +
                                (spec.output == Output::pooled ? "pooled" : "sequence") +
                                " output); properties that apply: " + applicable_names(spec));
}

void write_report(const std::string& dir, const report::Record& r) {
    report::write(dir, r);
    std::cout << "report written to " << (std::filesystem::path(dir) / "report.{json,md,html}").string() << "\n";
}

int run_check(const CheckRequest& q) {
    CheckOptions opts;
    const LayerFamily* spec = nullptr;
    Property property{};
    try {
        opts = options_of(q);
        spec = &find_layer(q.layer);
        property = property_for(*spec, q.property);
        // Before the check runs, not after: a report directory that cannot be made is bad input.
        if (!q.report_dir.empty()) report::prepare_directory(q.report_dir);
    } catch (const std::exception& e) {
        std::cerr << "permcheck check: " << e.what() << "\n";
        return 2;
    }
    const FailureDb db{q.db_dir, !q.no_db};
    try {
        std::ostringstream notes;
        const CheckRun run = check_with_db(*spec, property, opts, db, notes);
        std::cerr << notes.str();
        const CheckResult& r = run.result;
        std::cout << r.layer << " " << r.property << " (" << r.dtype << "): " << (r.holds ? "holds" : "VIOLATED")
                  << (r.holds ? " in all " : " after ") << r.cases_run << (r.cases_run == 1 ? " case" : " cases")
                  << (run.from_db ? " (replayed from the failure database " + run.entry.string() + ")" : "")
                  << "; the theory expects it to " << (r.expected_holds ? "hold" : "be violated")
                  << (r.as_expected() ? "" : "  <-- UNEXPECTED") << "\n";
        if (r.counterexample) std::cout << describe(*r.counterexample);
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
        return r.holds ? 0 : 1;
    } catch (const std::exception& e) {
        // A layer that cannot run at these sizes (odd width for RoPE, more positions than a learned table holds).
        std::cerr << "permcheck check: " << spec->name << " " << property_name(property) << " ("
                  << arithmetic_name(opts.arithmetic) << ") could not run: " << e.what() << "\n";
        if (!q.report_dir.empty()) {
            report::Record rec;
            rec.verdict = "error";
            rec.layer = spec->name;
            rec.property = property_name(property);
            rec.dtype = arithmetic_name(opts.arithmetic);
            rec.seed = opts.seed;
            rec.error = e.what();
            rec.replay = replay_command(spec->name, property, opts);
            try {
                write_report(q.report_dir, rec);
            } catch (const std::exception& w) {
                std::cerr << "permcheck check: " << w.what() << "\n";
            }
        }
        return 2;
    }
}

}  // namespace

void add_check(CLI::App& app, Outcome& outcome) {
    auto q = std::make_shared<CheckRequest>();
    CLI::App* sub = app.add_subcommand("check", "check one reference layer against one property");
    sub->add_option("layer", q->layer, "a reference layer (see `permcheck list`)")->required();
    sub->add_option("--property", q->property,
                    "equivariance | invariance | shift | reversal | causal-prefix (default: the first that applies)");
    sub->add_option("--dtype", q->dtype, "float32 | float64 | exact (GMP rationals, zero tolerance)")
        ->capture_default_str();
    sub->add_flag("--exact", q->exact, "the same as --dtype exact");
    sub->add_option("--cases", q->cases, "random cases to try")->capture_default_str();
    sub->add_option("--seed", q->seed, "seed of the random search")->check(seed_range())->capture_default_str();
    sub->add_option("--min-len", q->min_len, "fewest positions of a case")->capture_default_str();
    sub->add_option("--max-len", q->max_len, "most positions of a case (at most 256)")->capture_default_str();
    sub->add_option("--d", q->d, "features per position (at most 256)")->capture_default_str();
    sub->add_option("--report", q->report_dir, "write report.json, report.md and report.html into DIR");
    sub->add_option("--db", q->db_dir, "failure database directory")->capture_default_str();
    sub->add_flag("--no-db", q->no_db, "neither replay nor save counterexamples");
    sub->footer(
        "Exit status: 0 the property holds on every case, 1 it is violated (the shrunk counterexample is printed),\n"
        "2 bad input or the layer could not run. The status says whether the property holds, not whether that\n"
        "matches the theory: `permcheck` without arguments compares with the theory.");
    sub->callback([q, &outcome] { outcome.exit_code = run_check(*q); });
}

}  // namespace permcheck::cli
