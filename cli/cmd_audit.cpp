// `permcheck audit --exec "COMMAND" --dim D`: audits a layer we did not write, through the line protocol of
// adapters/exec_adapter.h. Exit 0 holds; 1 violated, nondeterministic or non-finite; 2 error. report.json is
// written in every case, the error one included, so CI always has an artifact to show.
#include "cli/audit_common.h"
#include "cli/interrupt.h"
#include "cli/commands.h"
#include "cli/options.h"

#include "adapters/exec_adapter.h"
#include "report/report.h"

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>

namespace permcheck::cli {
namespace {

// `audit` infers the dtype from the answers unless told (audit-torch sets its module's).
AuditFlags inferring() {
    AuditFlags f;
    f.dtype = DtypeChoice::infer;
    return f;
}

struct AuditRequest {
    std::string command;
    AuditFlags flags = inferring();
    Output output = Output::sequence;
    int jobs = 1;
    double timeout = 30;
    double startup_timeout = 120;
    double amplification = 1;
    std::string shard = "1/1";
};

const char* output_name(Output o) { return o == Output::pooled ? "pooled" : "sequence"; }

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// Throws std::invalid_argument with a message a user can act on (the shard's; every other option was
// checked as it was parsed, and audit() validates the whole).
AuditOptions options_of(const AuditRequest& q) {
    if (q.command.empty())
        throw std::invalid_argument("--exec needs a command, e.g. --exec \"python3 my_adapter.py\"");
    AuditOptions o = audit_options(q.flags);
    o.name = q.command;
    o.output = q.output;
    o.shard = parse_shard(q.shard);
    o.amplification = q.amplification;
    return o;
}

std::string replay_of(const AuditRequest& q, const AuditResult& r) {
    std::ostringstream s;
    s << "permcheck audit --exec " << shell_quote(q.command) << " --dim " << q.flags.dim << " --output "
      << output_name(q.output) << replay_tail(q.flags, r) << " --timeout " << q.timeout
      << " --startup-timeout " << q.startup_timeout;
    if (q.shard != "1/1") s << " --shard " << q.shard;
    if (q.amplification != 1) s << " --amplification " << q.amplification;
    return s.str();
}

report::Record record_of(const AuditRequest& q, const AuditResult& r, double seconds) {
    return audit_record(r, q.command, q.output == Output::pooled ? Property::invariance : Property::equivariance, q.flags,
                        replay_of(q, r), "audit",
                        {{"command", q.command},
                         {"output", output_name(q.output)},
                         {"cases_requested", q.flags.cases},
                         {"shard", q.shard},
                         {"jobs", q.jobs},
                         {"timeout_seconds", q.timeout},
                         {"startup_timeout_seconds", q.startup_timeout},
                         {"amplification", q.amplification},
                         {"last_request", r.last_request}},
                        seconds);
}

AuditResult run_boxes(const AuditRequest& q, const AuditOptions& opts) {
    // The adapters live in this scope: they are stopped and reaped before the report is written.
    std::vector<BlackBox> boxes;
    try {
        adapters::ExecOptions eo;
        eo.command = q.command;
        eo.timeout_seconds = q.timeout;
        eo.startup_timeout_seconds = q.startup_timeout;
        const long long shard_cases = (q.flags.cases + opts.shard.count - opts.shard.index) / opts.shard.count;
        for (long long k = 0; k < std::min<long long>(q.jobs, std::max(1LL, shard_cases)); ++k)
            boxes.push_back(adapters::exec_black_box(eo));
        return audit(boxes, opts);
    } catch (const std::exception& e) {
        return error_result(e.what());
    }
}

int run_audit(const AuditRequest& q) {
    const std::string program = "permcheck audit";
    AuditOptions opts;
    try {
        opts = options_of(q);
    } catch (const std::invalid_argument& e) {
        std::cerr << program << ": " << e.what() << "\n";
        return finish(program, q.flags, record_of(q, error_result(e.what()), 0.0), 2);
    }
    if (!q.flags.report_dir.empty()) {
        try {  // before the adapters start: a long audit should not end in an unwritable directory
            report::prepare_directory(q.flags.report_dir);
        } catch (const std::exception& e) {
            std::cerr << program << ": " << e.what() << "\n";
            return 2;
        }
    }
    const auto t0 = std::chrono::steady_clock::now();
    AuditResult r;
    {
        const StopOnSignal stop;
        ProgressLine line(progress_enabled());
        opts.stop_requested = &StopOnSignal::requested;
        opts.on_progress = [&line](const AuditProgress& p) { line.audit(p); };
        r = run_boxes(q, opts);
        if (r.verdict == Verdict::interrupted)
            std::cerr << program << ": interrupted by " << StopOnSignal::name() << " after " << r.cases
                      << (r.cases == 1 ? " case" : " cases") << "; the adapters were stopped"
                      << (q.flags.report_dir.empty() ? "" : "; the report keeps what was run") << "\n";
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.verdict == Verdict::error && !r.last_request.empty() && r.error.find("last request") == std::string::npos)
        r.error += "; last request: " + r.last_request;
    std::ostringstream head;
    head << "audit of " << q.command << ": "
         << property_name(q.output == Output::pooled ? Property::invariance : Property::equivariance) << " ("
         << dtype_text(r) << ", n in [" << q.flags.min_len << ", " << q.flags.max_len << "]"
         << (q.flags.max_len_given() ? "" : " and one case in ten longer, up to 256") << ", d = " << q.flags.dim << ")";
    print_result(std::cout, std::cerr, program, head.str(), r, seconds, replay_of(q, r));
    return finish(program, q.flags, record_of(q, r, seconds), exit_code(r.verdict));
}

void add_options(CLI::App& sub, AuditRequest& q) {
    sub.add_option("--exec", q.command, "the adapter: a shell command that speaks the line protocol (README)")
        ->required();
    sub.add_option(kAuditDim.flag, q.flags.dim, "features per position of the requests")
        ->check(in_range(kAuditDim))
        ->required();
    add_choice(sub, "--output", q.output, {{"sequence", Output::sequence, " (one row per position: equivariance)"},
                                           {"pooled", Output::pooled, " (one vector: invariance)"}},
               "sequence (one row per position) | pooled (one vector)");
    add_audit_options(sub, q.flags,
                      "infer | float32 | float64: the precision the layer computes in (sets the tolerance); "
                      "infer: float32 when every answer is a float32 value and not every answer an integer",
                      "seed of the random search");
    add_ranged(sub, kTimeout, q.timeout, "seconds one request may take");
    add_ranged(sub, kStartupTimeout, q.startup_timeout,
               "seconds each adapter process may take for its first answer (start-up, e.g. import torch)");
    add_ranged(sub, kAuditJobs, q.jobs, "parallel adapter processes");
    add_ranged(sub, kAmplification, q.amplification,
               "how much the layer can grow a rounding error (e.g. a LayerNorm of near-constant rows): "
               "multiplies the float tolerance (proofs-notes/float-tolerance.md)");
    sub.add_option("--shard", q.shard, "K/N: run the K-th of N deterministic shares of the cases (1-based)")
        ->capture_default_str();
    add_report_option(sub, q.flags);
}

}  // namespace

void add_audit(CLI::App& app, Outcome& outcome) {
    auto q = std::make_shared<AuditRequest>();
    CLI::App* sub = app.add_subcommand("audit", "audit a layer you did not write, through a subprocess adapter");
    add_options(*sub, *q);
    sub->footer(
        "Exit status: 0 holds; 1 violated, nondeterministic or non-finite (shrunk counterexample printed and\n"
        "reported); 2 error (the adapter could not start, crashed, timed out or broke the protocol; or bad options).\n"
        "With --report, report.json is written in every case.");
    sub->preparse_callback([q, sub, &outcome](std::size_t) {
        outcome.bad_options = [q, sub](const std::string& message) {
            report_bad_options(*sub, "permcheck audit", q->flags,
                               [q](const AuditResult& r) { return record_of(*q, r, 0.0); }, message);
        };
    });
    sub->callback([q, &outcome] { outcome.exit_code = run_audit(*q); });
}

}  // namespace permcheck::cli
