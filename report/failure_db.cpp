#include "report/failure_db.h"

#include "report/report.h"

#include <algorithm>
#include <stdexcept>
#include <system_error>

namespace permcheck::cli {

std::filesystem::path db_entry(const FailureDb& db, const Family& family, const Expectation& row, Arithmetic dtype) {
    const bool another = std::count_if(family.expectations.begin(), family.expectations.end(),
                                       [&](const Expectation& e) { return e.property == row.property; }) > 1;
    std::string name = family.name + "." + property_name(row.property) + (another ? "-" + row.axis : "") + "." +
                       arithmetic_name(dtype);
    for (char& ch : name)
        if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '+' || ch == '-' || ch == '.' || ch == '_'))
            ch = '_';
    return db.dir / (name + ".json");
}

namespace {

// The stored counterexample, if the entry is readable, belongs to this check and fits this run's signature; notes
// why not otherwise.
std::optional<Counterexample> load(const std::filesystem::path& entry, const Family& family, const Expectation& row,
                                   const CheckOptions& opts, std::ostream& notes) {
    std::error_code ec;
    if (!std::filesystem::exists(entry, ec)) return std::nullopt;
    report::Record r;
    try {
        r = report::read(entry);
    } catch (const std::exception& e) {
        notes << "permcheck: skipping corrupt failure database entry " << entry.string() << ": " << e.what() << "\n";
        return std::nullopt;
    }
    if (r.layer != family.name || r.dtype != opts.arithmetic || !r.counterexample) {
        notes << "permcheck: skipping failure database entry " << entry.string() << ": it does not hold a counterexample of "
              << family.name << " " << property_name(row.property) << " (" << arithmetic_name(opts.arithmetic) << ")\n";
        return std::nullopt;
    }
    const Signature s = signature_of(family, opts);
    try {
        require_case_fits(s, *r.counterexample);
        for (const Axis& a : s.axes)
            if (const int n = r.counterexample->lengths.at(a.name); n < a.min_len || n > a.max_len)
                throw std::invalid_argument("its " + a.name + " = " + std::to_string(n) + " is outside " + format(a));
    } catch (const std::invalid_argument& e) {
        notes << "permcheck: the failure database's counterexample lies outside this run's sizes (" << e.what()
              << "); searching instead\n";
        return std::nullopt;
    }
    return r.counterexample;
}

}  // namespace

CheckRun check_with_db(const Family& family, const Expectation& row, const CheckOptions& opts, const FailureDb& db,
                       std::ostream& notes) {
    CheckRun run;
    if (db.enabled) {
        run.entry = db_entry(db, family, row, opts.arithmetic);
        if (const std::optional<Counterexample> stored = load(run.entry, family, row, opts, notes)) {
            Counterexample again = counterexample_at(family, row, *stored, opts, 0, 0);
            if (std::ranges::any_of(again.outputs, [](const OutputComparison& o) { return !o.holds; })) {
                CheckResult& r = run.result;
                r = labelled(family, row, opts);
                r.holds = false;
                r.cases_run = 1;
                r.evaluations = 1;
                r.counterexample = std::move(again);
                run.from_db = true;
                return run;
            }
            std::error_code ec;
            std::filesystem::remove(run.entry, ec);
            notes << "permcheck: the failure database's counterexample no longer fails; removed " << run.entry.string()
                  << "\n";
        }
    }
    run.result = check(family, row, opts);
    if (db.enabled && run.result.counterexample && !run.result.interrupted) {  // a finished shrink only
        try {
            std::error_code ec;
            std::filesystem::create_directories(db.dir, ec);
            if (ec) throw std::runtime_error("cannot create " + db.dir.string() + ": " + ec.message());
            report::write_atomically(run.entry, report::to_json(report::record_of(run.result, opts)).dump(2) + "\n");
        } catch (const std::exception& e) {
            notes << "permcheck: could not save the counterexample to the failure database: " << e.what() << "\n";
        }
    }
    return run;
}

}  // namespace permcheck::cli
