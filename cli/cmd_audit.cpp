// `permcheck audit --exec "COMMAND" --dim D`: audits a layer we did not write, through the line protocol of
// audit/exec_adapter.h. Exit 0 holds; 1 violated, nondeterministic or non-finite; 2 error. report.json is
// written in every case, the error one included, so CI always has an artifact to show.
#include "cli/commands.h"

#include "adapters/exec_adapter.h"
#include "report/report.h"

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>

namespace permcheck::cli {
namespace {

struct AuditRequest {
    std::string command;
    long long dim = 0;
    std::string output = "sequence";
    std::string dtype = "float64";
    long long min_len = 1, max_len = 8, cases = 100, jobs = 1;
    std::uint64_t seed = 1;
    double timeout = 30;
    double amplification = 1;
    std::string shard = "1/1";
    std::string report_dir;
};

constexpr long long kMaxCases = 1000000, kMaxWidth = 4096, kMaxJobs = 64;

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// Throws std::invalid_argument with a message a user can act on.
AuditOptions options_of(const AuditRequest& q) {
    const auto require = [](bool ok, const std::string& message) {
        if (!ok) throw std::invalid_argument(message);
    };
    require(!q.command.empty(), "--exec needs a command, e.g. --exec \"python3 my_adapter.py\"");
    require(q.dim >= 1 && q.dim <= kMaxWidth,
            "--dim must be between 1 and " + std::to_string(kMaxWidth) + ", got " + std::to_string(q.dim));
    require(q.output == "sequence" || q.output == "pooled",
            "--output must be sequence (one row per position: equivariance) or pooled (one vector: invariance), got '" +
                q.output + "'");
    require(q.dtype == "float32" || q.dtype == "float64",
            "--dtype must be float32 or float64 (the precision the layer computes in), got '" + q.dtype + "'");
    require(q.cases >= 1 && q.cases <= kMaxCases,
            "--cases must be between 1 and " + std::to_string(kMaxCases) + ", got " + std::to_string(q.cases));
    require(q.min_len >= 1 && q.min_len <= 100, "--min-len must be between 1 and 100, got " + std::to_string(q.min_len));
    require(q.max_len >= 1 && q.max_len <= 100, "--max-len must be between 1 and 100, got " + std::to_string(q.max_len));
    require(q.min_len <= q.max_len, "--min-len (" + std::to_string(q.min_len) + ") must not exceed --max-len (" +
                                        std::to_string(q.max_len) + ")");
    require(q.jobs >= 1 && q.jobs <= kMaxJobs,
            "--jobs must be between 1 and " + std::to_string(kMaxJobs) + ", got " + std::to_string(q.jobs));
    require(std::isfinite(q.timeout) && q.timeout > 0 && q.timeout <= 86400,
            "--timeout must be a number of seconds in (0, 86400], got " + std::to_string(q.timeout));
    require(std::isfinite(q.amplification) && q.amplification >= 1 && q.amplification <= 1e15,
            "--amplification must be a number in [1, 1e15] (how much the layer can grow a rounding error), got " +
                std::to_string(q.amplification));
    AuditOptions o;
    o.name = q.command;
    o.output = q.output == "pooled" ? Output::pooled : Output::sequence;
    o.dtype = parse_arithmetic(q.dtype);
    o.d = static_cast<int>(q.dim);
    o.min_len = static_cast<int>(q.min_len);
    o.max_len = static_cast<int>(q.max_len);
    o.cases = static_cast<int>(q.cases);
    o.seed = q.seed;
    o.shard = parse_shard(q.shard);
    o.amplification = q.amplification;
    validate(o);
    return o;
}

std::string replay_of(const AuditRequest& q) {
    std::ostringstream s;
    s << "permcheck audit --exec " << shell_quote(q.command) << " --dim " << q.dim << " --output " << q.output
      << " --dtype " << q.dtype << " --min-len " << q.min_len << " --max-len " << q.max_len << " --cases " << q.cases
      << " --seed " << q.seed << " --timeout " << q.timeout;
    if (q.shard != "1/1") s << " --shard " << q.shard;
    if (q.amplification != 1) s << " --amplification " << q.amplification;
    return s.str();
}

report::Record record_of(const AuditRequest& q, const AuditResult& r, double seconds) {
    report::Record rec = report::record_of(r, q.command, q.output == "pooled" ? Property::invariance : Property::equivariance,
                                           r.dtype, q.seed, replay_of(q));
    rec.details["audit"] = {{"command", q.command},
                            {"dim", q.dim},
                            {"output", q.output},
                            {"min_len", q.min_len},
                            {"max_len", q.max_len},
                            {"cases_requested", q.cases},
                            {"shard", q.shard},
                            {"jobs", q.jobs},
                            {"timeout_seconds", q.timeout},
                            {"amplification", q.amplification},
                            {"evaluations", r.evaluations},
                            {"last_request", r.last_request},
                            {"seconds", seconds},
                            {"cases_per_second", seconds > 0 ? r.cases / seconds : 0.0}};
    if (!r.detail.empty()) rec.details["audit"]["finding"] = r.detail;
    return rec;
}

// Writes the report if asked; a report that cannot be written turns the run into an error.
int finish(const AuditRequest& q, const AuditResult& r, double seconds) {
    int code = exit_code(r.verdict);
    if (q.report_dir.empty()) return code;
    try {
        report::write(q.report_dir, record_of(q, r, seconds));
        std::cout << "report written to " << (std::filesystem::path(q.report_dir) / "report.{json,md,html}").string()
                  << "\n";
    } catch (const std::exception& e) {
        std::cerr << "permcheck audit: cannot write the report: " << e.what() << "\n";
        code = 2;
    }
    return code;
}

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

// An audit that could not run still reports what it was asked to check.
AuditResult error_result(const AuditRequest& q, const std::string& message) {
    AuditResult r;
    r.verdict = Verdict::error;
    r.error = message;
    r.property = q.output == "pooled" ? Property::invariance : Property::equivariance;
    if (q.dtype == "float32") r.dtype = Arithmetic::float32;
    return r;
}

int run_audit(const AuditRequest& q) {
    AuditOptions opts;
    try {
        opts = options_of(q);
    } catch (const std::invalid_argument& e) {
        std::cerr << "permcheck audit: " << e.what() << "\n";
        return std::max(2, finish(q, error_result(q, e.what()), 0.0));
    }
    if (!q.report_dir.empty()) {
        try {  // before the adapters start: a long audit should not end in an unwritable directory
            report::prepare_directory(q.report_dir);
        } catch (const std::exception& e) {
            std::cerr << "permcheck audit: " << e.what() << "\n";
            return 2;
        }
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    AuditResult r;
    {
        // The adapters live in this scope: they are stopped and reaped before the report is written.
        std::vector<BlackBox> boxes;
        try {
            adapters::ExecOptions eo;
            eo.command = q.command;
            eo.timeout_seconds = q.timeout;
            const long long shard_cases = (q.cases + opts.shard.count - opts.shard.index) / opts.shard.count;
            for (long long k = 0; k < std::min(q.jobs, std::max(1LL, shard_cases)); ++k)
                boxes.push_back(adapters::exec_black_box(eo));
            r = audit(boxes, opts);
        } catch (const std::exception& e) {
            r = error_result(q, e.what());
        }
    }
    const double seconds = elapsed();
    if (r.verdict == Verdict::error && !r.last_request.empty() && r.error.find("last request") == std::string::npos)
        r.error += "; last request: " + r.last_request;

    std::cout << "audit of " << q.command << ": " << property_name(r.property) << " (" << arithmetic_name(r.dtype) << ", n in [" << q.min_len << ", "
              << q.max_len << "], d = " << q.dim << ") " << verdict_name(r.verdict) << " after " << r.cases
              << (r.cases == 1 ? " case" : " cases") << ", " << r.evaluations << " layer calls, " << seconds << " s";
    if (seconds > 0 && r.cases > 0) std::cout << " (" << r.cases / seconds << " cases/s)";
    std::cout << "\n";
    if (!r.detail.empty()) std::cout << "  " << r.detail << "\n";
    if (r.counterexample) std::cout << describe_finding(r, replay_of(q));
    if (r.verdict == Verdict::error) std::cerr << "permcheck audit: error: " << r.error << "\n";
    return finish(q, r, seconds);
}

}  // namespace

void add_audit(CLI::App& app, Outcome& outcome) {
    auto q = std::make_shared<AuditRequest>();
    CLI::App* sub = app.add_subcommand("audit", "audit a layer you did not write, through a subprocess adapter");
    sub->add_option("--exec", q->command, "the adapter: a shell command that speaks the line protocol (README)")
        ->required();
    sub->add_option("--dim", q->dim, "features per position of the requests")->required();
    sub->add_option("--output", q->output, "sequence (one row per position) | pooled (one vector)")
        ->capture_default_str();
    sub->add_option("--dtype", q->dtype, "float32 | float64: the precision the layer computes in (sets the tolerance)")
        ->capture_default_str();
    sub->add_option("--min-len", q->min_len, "fewest positions of a case")->capture_default_str();
    sub->add_option("--max-len", q->max_len, "most positions of a case (at most 100)")->capture_default_str();
    sub->add_option("--cases", q->cases, "cases of the audit (each costs two layer calls)")->capture_default_str();
    sub->add_option("--seed", q->seed, "seed of the random search")->check(seed_range())->capture_default_str();
    sub->add_option("--timeout", q->timeout, "seconds one request may take")->capture_default_str();
    sub->add_option("--jobs", q->jobs, "parallel adapter processes")->capture_default_str();
    sub->add_option("--amplification", q->amplification,
                    "how much the layer can grow a rounding error (e.g. a LayerNorm of near-constant rows): "
                    "multiplies the float tolerance (proofs-notes/float-tolerance.md)")
        ->capture_default_str();
    sub->add_option("--shard", q->shard, "K/N: run the K-th of N deterministic shares of the cases (1-based)")
        ->capture_default_str();
    sub->add_option("--report", q->report_dir, "write report.json, report.md and report.html into DIR");
    sub->footer(
        "Exit status: 0 holds; 1 violated, nondeterministic or non-finite (shrunk counterexample printed and\n"
        "reported); 2 error (the adapter could not start, crashed, timed out or broke the protocol; or bad options).\n"
        "With --report, report.json is written in every case.");
    sub->callback([q, &outcome] { outcome.exit_code = run_audit(*q); });
}

}  // namespace permcheck::cli
