#include "report/failure_db.h"

#include "report/report.h"

#include <stdexcept>
#include <system_error>

namespace permcheck::cli {

MatrixCase case_of(const Counterexample& c) {
    return MatrixCase{c.x, c.perm, c.weight_seed, c.property == Property::shift ? c.shift : 1, c.weights};
}

Counterexample counterexample_at(const LayerFamily& spec, Property property, const MatrixCase& c, const CheckOptions& opts,
                                 int case_index, int shrink_steps) {
    return counterexample_of(spec, property, c, opts, case_index, shrink_steps);
}

std::filesystem::path db_entry(const FailureDb& db, const std::string& layer, Property property, Arithmetic dtype) {
    std::string name = layer + "." + property_name(property) + "." + arithmetic_name(dtype);
    for (char& ch : name)
        if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '+' || ch == '-' || ch == '.' || ch == '_'))
            ch = '_';
    return db.dir / (name + ".json");
}

namespace {

// The stored counterexample, if the entry is readable and belongs to this check; notes why not otherwise.
std::optional<Counterexample> load(const std::filesystem::path& entry, const LayerFamily& spec, Property property,
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
    if (r.layer != spec.name || r.property != property || r.dtype != opts.arithmetic ||
        !r.counterexample) {
        notes << "permcheck: skipping failure database entry " << entry.string()
              << ": it does not hold a counterexample of " << spec.name << " " << property_name(property) << " ("
              << arithmetic_name(opts.arithmetic) << ")\n";
        return std::nullopt;
    }
    const Counterexample& c = *r.counterexample;
    if (c.n() < opts.min_len || c.n() > opts.max_len || c.d() != opts.d) {
        notes << "permcheck: the failure database's counterexample (n = " << c.n() << ", d = " << c.d()
              << ") lies outside this run's sizes; searching instead\n";
        return std::nullopt;
    }
    return c;
}

}  // namespace

CheckRun check_with_db(const LayerFamily& spec, Property property, const CheckOptions& opts, const FailureDb& db,
                       std::ostream& notes) {
    CheckRun run;
    if (db.enabled) {
        run.entry = db_entry(db, spec.name, property, opts.arithmetic);
        if (const std::optional<Counterexample> stored = load(run.entry, spec, property, opts, notes)) {
            const MatrixCase c = case_of(*stored);
            if (!evaluate_case(spec, property, c, opts.arithmetic).comparison.holds) {
                CheckResult& r = run.result;
                r.layer = spec.name;
                r.property = property;
                r.dtype = opts.arithmetic;
                r.expected_holds = spec.expected_to_hold(property);
                r.holds = false;
                r.cases_run = 1;
                r.evaluations = 1;
                r.counterexample = counterexample_at(spec, property, c, opts, 0, 0);
                run.from_db = true;
                return run;
            }
            std::error_code ec;
            std::filesystem::remove(run.entry, ec);
            notes << "permcheck: the failure database's counterexample no longer fails; removed " << run.entry.string()
                  << "\n";
        }
    }
    run.result = check(spec, property, opts);
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
