#include "cli/audit_common.h"

#include "cli/options.h"

#include <filesystem>
#include <iostream>
#include <sstream>

namespace permcheck::cli {
namespace {

// The counterexample as text. describe() speaks of a violated property; a nondeterministic layer needs the
// input and its two answers instead, and a black box has no exact evaluation to confirm with.
std::string describe_finding(const AuditResult& r, const std::string& replay) {
    Counterexample ce = *r.counterexample;
    ce.replay = replay;
    if (r.verdict == Verdict::nondeterministic) {
        std::ostringstream s;
        s << "nondeterministic: " << ce.layer << " (" << arithmetic_name(ce.dtype) << ") answered one input twice, n = " << ce.n()
          << ", d = " << ce.d() << "\n  x =\n"
          << format_matrix(ce.x) << "  first answer =\n"
          << format_matrix(ce.lhs) << "  second answer =\n"
          << format_matrix(ce.rhs) << "  largest |difference| = " << ce.comparison.max_abs_diff << " at position "
          << ce.comparison.row << ", feature " << ce.comparison.col << " (tolerance " << ce.comparison.tolerance
          << ")\n  replay: " << replay << "\n";
        return s.str();
    }
    std::string text = describe(ce);
    const std::string exact_line = "  NOT confirmed in exact arithmetic\n";
    if (const auto at = text.find(exact_line); at != std::string::npos)
        text.replace(at, exact_line.size(), "  (a black box: there is no exact evaluation to confirm with)\n");
    const std::string violated = property_name(ce.property) + std::string(" violated by ");
    if (r.verdict == Verdict::non_finite && text.rfind(violated, 0) == 0)
        text.replace(0, violated.size(), "non-finite output from ");
    return text;
}

// "2-8, 13, 19": ascending lengths with their runs joined.
std::string lengths_text(const std::vector<int>& lengths) {
    std::ostringstream s;
    for (std::size_t i = 0; i < lengths.size();) {
        std::size_t j = i;
        while (j + 1 < lengths.size() && lengths[j + 1] == lengths[j] + 1) ++j;
        s << (i ? ", " : "") << lengths[i];
        if (j > i) s << "-" << lengths[j];
        i = j + 1;
    }
    return s.str();
}

}  // namespace

void add_audit_options(CLI::App& app, AuditFlags& f, const std::string& dtype_help, const std::string& seed_help) {
    add_choice(app, "--dtype", f.dtype, {{"float32", Arithmetic::float32}, {"float64", Arithmetic::float64}},
               dtype_help, " (the precision the layer computes in)");
    add_ranged(app, kAuditMinLen, f.min_len, "fewest positions of a case");
    f.max_len_option = add_ranged(app, kAuditMaxLen, f.max_len,
                                  "most positions of a case; given, a hard cap (default 8, and every tenth case a long "
                                  "one, up to 256 positions)");
    f.max_len_option->check(not_below_min_len(f.min_len))
        ->force_callback();  // checked against --min-len also when it is not given
    add_ranged(app, kAuditCases, f.cases, "cases of the audit (each costs two layer calls)");
    add_seed(app, f.seed, seed_help);
}

void add_report_option(CLI::App& app, AuditFlags& f) {
    app.add_option("--report", f.report_dir, "write report.json, report.md and report.html into DIR");
}

AuditOptions audit_options(const AuditFlags& f) {
    AuditOptions o;
    o.dtype = f.dtype;
    o.d = f.dim;
    o.min_len = f.min_len;
    o.max_len = f.max_len;
    if (f.max_len_given()) o.long_len = 0;  // the user's --max-len is a hard cap
    o.cases = f.cases;
    o.seed = f.seed;
    return o;
}

std::string replay_tail(const AuditFlags& f) {
    std::ostringstream s;
    s << " --dtype " << arithmetic_name(f.dtype) << " --min-len " << f.min_len;
    if (f.max_len_given()) s << " --max-len " << f.max_len;  // without it, the schedule's long cases too
    s << " --cases " << f.cases << " --seed " << f.seed;
    return s.str();
}

report::Record audit_record(const AuditResult& r, const std::string& name, Property property,
                            const AuditFlags& f, const std::string& replay, const std::string& key,
                            nlohmann::json details, double seconds) {
    report::Record rec = report::record_of(r, name, property, f.dtype, f.seed, replay);
    details["dim"] = f.dim;
    details["min_len"] = f.min_len;
    details["max_len"] = f.max_len;
    details["max_len_is_cap"] = f.max_len_given();
    details["lengths"] = r.lengths;
    details["evaluations"] = r.evaluations;
    details["seconds"] = seconds;
    details["cases_per_second"] = seconds > 0 ? r.cases / seconds : 0.0;
    if (!r.detail.empty()) details["finding"] = r.detail;
    rec.details[key] = std::move(details);
    return rec;
}

void print_result(std::ostream& out, std::ostream& err, const std::string& program, const std::string& head,
                  const AuditResult& r, double seconds, const std::string& replay) {
    out << head << " " << verdict_name(r.verdict) << " after " << r.cases << (r.cases == 1 ? " case" : " cases")
        << ", " << r.evaluations << " layer calls, " << seconds << " s";
    if (seconds > 0 && r.cases > 0) out << " (" << r.cases / seconds << " cases/s)";
    out << "\n";
    if (!r.lengths.empty()) out << "  lengths sent: " << lengths_text(r.lengths) << "\n";
    if (!r.detail.empty()) out << "  " << r.detail << "\n";
    if (r.counterexample) out << describe_finding(r, replay);
    if (r.verdict == Verdict::error && !r.error.empty()) err << program << ": error: " << r.error << "\n";
}

AuditResult error_result(const std::string& message) {
    AuditResult r;
    r.verdict = Verdict::error;
    r.error = message;
    return r;
}

int finish(const std::string& program, const AuditFlags& f, const report::Record& record, int code) {
    if (f.report_dir.empty()) return code;
    try {
        report::write(f.report_dir, record);
        std::cout << "report written to " << (std::filesystem::path(f.report_dir) / "report.{json,md,html}").string()
                  << "\n";
    } catch (const std::exception& e) {
        std::cerr << program << ": cannot write the report: " << e.what() << "\n";
        return 2;
    }
    return code;
}

void report_bad_options(CLI::App& app, const std::string& program, const AuditFlags& f,
                        const std::function<report::Record(const AuditResult&)>& record_of,
                        const std::string& message) {
    for (CLI::Option* opt : app.get_options()) {
        if (opt->count() == 0 || opt->get_callback_run()) continue;
        try {
            opt->run_callback();
        } catch (const CLI::Error&) {  // the bad value itself, or another: its default stays in the record
        }
    }
    finish(program, f, record_of(error_result(message)), 2);
}

}  // namespace permcheck::cli
