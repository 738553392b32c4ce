// `permcheck audit --exec "COMMAND" --dim D`, or with a signature `--axis NAME=MIN..MAX --input NAME:DIMS[:KIND]
// --output NAME:DIMS` (each repeatable): audits a layer we did not write, through the line protocol of
// adapters/exec_adapter.h. Exit 0 holds; 1 violated, nondeterministic or non-finite; 2 error. report.json is
// written in every case, the error one included, so CI always has an artifact to show.
#include "cli/audit_common.h"
#include "cli/interrupt.h"
#include "cli/commands.h"
#include "cli/options.h"

#include "adapters/exec_adapter.h"
#include "report/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

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
    std::vector<std::string> outputs;  // --output: sequence | pooled (shorthand), or NAME:DIMS (signature)
    std::vector<std::string> axes, inputs;  // --axis, --input (signature)
    CLI::Option* dim_option = nullptr;
    CLI::Option* min_len_option = nullptr;
    int jobs = 1;
    double timeout = 30;
    double startup_timeout = 120;
    double amplification = 1;
    std::string shard = "1/1";
};

// The layer's description: the shorthand (one axis n, input x, output y) or a signature.
struct Form {
    Output output = Output::sequence;  // the shorthand's
    std::optional<Signature> signature;
};

const char* output_name(Output o) { return o == Output::pooled ? "pooled" : "sequence"; }

const std::vector<Choice<Output>> kShorthandOutputs{{"sequence", Output::sequence, " (one row per position: equivariance)"},
                                                    {"pooled", Output::pooled, " (one vector: invariance)"}};

// --output's value: with a ':' an output of a signature (NAME:DIMS), else the shorthand's sequence | pooled,
// converted through choose() as every enumeration of the command line is.
Output shorthand_output(std::string text) {
    std::vector<std::pair<std::string, std::string>> names;
    std::vector<long long> values;
    for (const Choice<Output>& c : kShorthandOutputs) {
        names.emplace_back(c.name, c.note);
        values.push_back(static_cast<long long>(c.value));
    }
    choose("--output", names, values, " (the shorthand, with --dim) or NAME:DIMS (an output of a signature, with --axis "
           "and --input)", text);
    return static_cast<Output>(std::stoll(text));
}

bool names_a_tensor(const std::string& output_text) { return output_text.find(':') != std::string::npos; }

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// A word of a replay line: as it is when it holds only characters the shell leaves alone.
std::string shell_word(const std::string& s) {
    const bool plain = !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789_.,:=-") == std::string::npos;
    return plain ? s : shell_quote(s);
}

bool given(const CLI::Option* o) { return o != nullptr && o->count() > 0; }

// The signature of --axis, --input and --output NAME:DIMS, checked whole (validate). Throws
// std::invalid_argument when the shorthand's flags are mixed in or an output is missing.
Signature signature_of(const AuditRequest& q) {
    const char* mixed = nullptr;
    if (given(q.dim_option)) mixed = "--dim";
    else if (given(q.min_len_option)) mixed = "--min-len";
    else if (q.flags.max_len_given()) mixed = "--max-len";
    if (mixed)
        throw std::invalid_argument(std::string(mixed) + " cannot be mixed with --axis/--input: the shorthand --dim D "
                                    "[--output sequence|pooled] [--min-len N --max-len N] describes one axis, one input "
                                    "and one output; a signature gives each axis its range (--axis n=1..8) and every "
                                    "input and output its dims (--input x:n,8 --output y:n,8)");
    Signature s;
    for (const std::string& a : q.axes) s.axes.push_back(parse_axis(a));
    for (const std::string& t : q.inputs) s.inputs.push_back(parse_input(t));
    for (const std::string& t : q.outputs) {
        if (!names_a_tensor(t))
            throw std::invalid_argument("--output " + t + " is the shorthand's (with --dim); with --axis/--input "
                                        "name every output with its dims, e.g. --output y:n,8");
        s.outputs.push_back(parse_output(t));
    }
    if (s.outputs.empty())
        throw std::invalid_argument("with --axis/--input, name every output with --output NAME:DIMS, e.g. --output "
                                    "y:n,8 (equivariant along n) or --output g:4 (invariant to every axis)");
    validate(s);  // the library's rules, the size of every tensor included
    return s;
}

// Which form the flags describe; throws std::invalid_argument for a mix or an incomplete description.
Form form_of(const AuditRequest& q) {
    Form f;
    const bool signature = !q.axes.empty() || !q.inputs.empty() ||
                           std::any_of(q.outputs.begin(), q.outputs.end(), names_a_tensor);
    if (signature) {
        f.signature = signature_of(q);
        return f;
    }
    if (!given(q.dim_option))
        throw std::invalid_argument("--dim is required: --dim D audits one input of D features per position (or "
                                    "describe the layer's signature with --axis, --input and --output NAME:DIMS)");
    if (q.outputs.size() > 1)
        throw std::invalid_argument("--output sequence|pooled is given " + std::to_string(q.outputs.size()) +
                                    " times; the shorthand has one output");
    if (!q.outputs.empty()) f.output = shorthand_output(q.outputs.front());
    return f;
}

// The form, or the shorthand's default when the flags describe none: for a report of options refused.
Form form_or_default(const AuditRequest& q) {
    try {
        return form_of(q);
    } catch (const std::exception&) {
        return Form{};
    }
}

// Throws std::invalid_argument with a message a user can act on (the shard's; every other option was
// checked as it was parsed, and audit() validates the whole).
AuditOptions options_of(const AuditRequest& q, const Form& f) {
    if (q.command.empty())
        throw std::invalid_argument("--exec needs a command, e.g. --exec \"python3 my_adapter.py\"");
    AuditOptions o = audit_options(q.flags);
    o.name = q.command;
    o.output = f.output;
    o.shard = parse_shard(q.shard);
    o.amplification = q.amplification;
    return o;
}

// " --axis n=1..8 --input x:n,8 --output y:n,8": the signature as flags, each text as the parser reads it.
std::string signature_flags(const Signature& s) {
    std::string out;
    for (const Axis& a : s.axes) out += " --axis " + shell_word(format(a));
    for (const TensorSpec& t : s.inputs) out += " --input " + shell_word(format_input(t));
    for (const TensorSpec& t : s.outputs) out += " --output " + shell_word(format_output(t));
    return out;
}

std::string replay_of(const AuditRequest& q, const Form& f, const AuditResult& r) {
    std::ostringstream s;
    s << "permcheck audit --exec " << shell_quote(q.command);
    if (f.signature)
        s << signature_flags(*f.signature) << replay_tail(q.flags, r, /*lengths=*/false);
    else
        s << " --dim " << q.flags.dim << " --output " << output_name(f.output) << replay_tail(q.flags, r);
    s << " --timeout " << q.timeout << " --startup-timeout " << q.startup_timeout;
    if (q.shard != "1/1") s << " --shard " << q.shard;
    if (q.amplification != 1) s << " --amplification " << q.amplification;
    return s.str();
}

// The record's one property: equivariance when some output has an axis (invariance alone otherwise); each
// output's own property follows from its dims (README).
Property property_of(const Form& f) {
    if (!f.signature) return f.output == Output::pooled ? Property::invariance : Property::equivariance;
    for (const TensorSpec& t : f.signature->outputs)
        for (const Dim& d : t.dims)
            if (d.is_axis()) return Property::equivariance;
    return Property::invariance;
}

report::Record record_of(const AuditRequest& q, const Form& f, const AuditResult& r, double seconds) {
    nlohmann::json details = {{"command", q.command},
                              {"cases_requested", q.flags.cases},
                              {"shard", q.shard},
                              {"jobs", q.jobs},
                              {"timeout_seconds", q.timeout},
                              {"startup_timeout_seconds", q.startup_timeout},
                              {"amplification", q.amplification},
                              {"last_request", r.last_request}};
    if (!f.signature) details["output"] = output_name(f.output);
    return audit_record(r, q.command, property_of(f), q.flags, replay_of(q, f, r), "audit", std::move(details),
                        seconds, f.signature ? &*f.signature : nullptr);
}

AuditResult run_boxes(const AuditRequest& q, const Form& f, const AuditOptions& opts) {
    // The adapters live in this scope: they are stopped and reaped before the report is written.
    try {
        adapters::ExecOptions eo;
        eo.command = q.command;
        eo.timeout_seconds = q.timeout;
        eo.startup_timeout_seconds = q.startup_timeout;
        const long long shard_cases = (q.flags.cases + opts.shard.count - opts.shard.index) / opts.shard.count;
        const long long processes = std::min<long long>(q.jobs, std::max(1LL, shard_cases));
        if (f.signature) {
            std::vector<NamedBlackBox> boxes;
            for (long long k = 0; k < processes; ++k) boxes.push_back(adapters::exec_named_black_box(eo, *f.signature));
            return audit(boxes, *f.signature, opts);
        }
        std::vector<BlackBox> boxes;
        for (long long k = 0; k < processes; ++k) boxes.push_back(adapters::exec_black_box(eo));
        return audit(boxes, opts);
    } catch (const std::exception& e) {
        return error_result(e.what());
    }
}

// "y equivariant along n, invariant to m; g invariant to n, m": what each output of a signature must do.
std::string signature_claims(const Signature& s) {
    std::string out;
    for (const TensorSpec& t : s.outputs) {
        std::string along, to;
        for (const Axis& a : s.axes) {
            const bool has = std::any_of(t.dims.begin(), t.dims.end(), [&a](const Dim& d) { return d.axis == a.name; });
            std::string& list = has ? along : to;
            if (!list.empty()) list += ", ";
            list += a.name;
        }
        if (!out.empty()) out += "; ";
        out += t.name;
        if (!along.empty()) out += " equivariant along " + along;
        if (!along.empty() && !to.empty()) out += ',';
        if (!to.empty()) out += " invariant to " + to;
    }
    return out;
}

std::string head_of(const AuditRequest& q, const Form& f, const AuditResult& r) {
    std::ostringstream head;
    head << "audit of " << q.command << ": ";
    if (f.signature) {
        head << signature_claims(*f.signature) << " (" << dtype_text(r);
        for (const Axis& a : f.signature->axes) head << ", " << a.name << " in [" << a.min_len << ", " << a.max_len << "]";
        head << ")";
        return head.str();
    }
    head << property_name(property_of(f)) << " (" << dtype_text(r) << ", n in [" << q.flags.min_len << ", "
         << q.flags.max_len << "]" << (q.flags.max_len_given() ? "" : " and one case in ten longer, up to 256")
         << ", d = " << q.flags.dim << ")";
    return head.str();
}

AuditResult run_with_progress(const AuditRequest& q, const Form& f, AuditOptions opts, const std::string& program) {
    const StopOnSignal stop;
    ProgressLine line(progress_enabled());
    opts.stop_requested = &StopOnSignal::requested;
    opts.on_progress = [&line](const AuditProgress& p) { line.audit(p); };
    AuditResult r = run_boxes(q, f, opts);
    if (r.verdict == Verdict::interrupted)
        std::cerr << program << ": interrupted by " << StopOnSignal::name() << " after " << r.cases
                  << (r.cases == 1 ? " case" : " cases") << "; the adapters were stopped"
                  << (q.flags.report_dir.empty() ? "" : "; the report keeps what was run") << "\n";
    return r;
}

int run_audit(const AuditRequest& q) {
    const std::string program = "permcheck audit";
    AuditOptions opts;
    Form form;
    try {
        form = form_of(q);
        opts = options_of(q, form);
    } catch (const std::invalid_argument& e) {
        std::cerr << program << ": " << e.what() << "\n";
        return finish(program, q.flags, record_of(q, form, error_result(e.what()), 0.0), 2);
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
    AuditResult r = run_with_progress(q, form, opts, program);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.verdict == Verdict::error && !r.last_request.empty() && r.error.find("last request") == std::string::npos)
        r.error += "; last request: " + r.last_request;
    print_result(std::cout, std::cerr, program, head_of(q, form, r), r, seconds, replay_of(q, form, r),
                 form.signature ? &*form.signature : nullptr);
    return finish(program, q.flags, record_of(q, form, r, seconds), exit_code(r.verdict));
}

void add_signature_options(CLI::App& sub, AuditRequest& q) {
    sub.add_option("--axis", q.axes,
                   "NAME=MIN..MAX: a set of positions whose order the layer must not care about (repeatable); each "
                   "case draws a length in [MIN, MAX] (MIN may be 0) and a permutation of every axis")
        ->allow_extra_args(false)
        ->check(parsed_by([](const std::string& t) { parse_axis(t); }));
    sub.add_option("--input", q.inputs,
                   "NAME:DIMS[:KIND]: an input (repeatable); DIMS axis names and fixed sizes, outermost first "
                   "(q:n,8  bias:n,n  edge_index:2,edges:index=nodes); KIND float (default), mask (true = padding) "
                   "or index=AXIS")
        ->allow_extra_args(false)
        ->check(parsed_by([](const std::string& t) { parse_input(t); }));
    sub.add_option("--output", q.outputs,
                   "sequence | pooled: the shorthand's output, with --dim (one row per position: equivariance; one "
                   "vector: invariance; default sequence). NAME:DIMS (a value with ':'): an output of a signature "
                   "(repeatable), equivariant along every axis it has, invariant to every axis it lacks")
        ->type_name("sequence|pooled|NAME:DIMS")
        ->allow_extra_args(false)
        ->check(parsed_by([](const std::string& t) {
            if (names_a_tensor(t)) parse_output(t);
            else shorthand_output(t);
        }));
}

void add_options(CLI::App& sub, AuditRequest& q) {
    sub.add_option("--exec", q.command, "the adapter: a shell command that speaks the line protocol (README)")
        ->required();
    q.dim_option = sub.add_option(kAuditDim.flag, q.flags.dim,
                                  "features per position of the requests (the shorthand: one axis n, input x:n,D, "
                                  "output y; required unless --axis/--input describe the signature)")
                       ->check(in_range(kAuditDim));
    add_signature_options(sub, q);
    add_audit_options(sub, q.flags,
                      "infer | float32 | float64: the precision the layer computes in (sets the tolerance); "
                      "infer: float32 when every answer is a float32 value and not every answer an integer",
                      "seed of the random search");
    q.min_len_option = sub.get_option(kAuditMinLen.flag);
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
        "Two forms: the shorthand --dim D [--output sequence|pooled] [--min-len N --max-len N] (one input x of D\n"
        "features per position, one output y), or a signature: --axis NAME=MIN..MAX, --input NAME:DIMS[:KIND] and\n"
        "--output NAME:DIMS, each repeatable, e.g. --axis n=1..8 --axis m=1..8 --input q:n,8 --input mem:m,8\n"
        "--output y:n,8. The two cannot be mixed. --output serves both: a value with ':' is NAME:DIMS.\n"
        "Exit status: 0 holds; 1 violated, nondeterministic or non-finite (shrunk counterexample printed and\n"
        "reported); 2 error (the adapter could not start, crashed, timed out or broke the protocol; or bad options).\n"
        "With --report, report.json is written in every case.");
    sub->preparse_callback([q, sub, &outcome](std::size_t) {
        outcome.bad_options = [q, sub](const std::string& message) {
            report_bad_options(*sub, "permcheck audit", q->flags,
                               [q](const AuditResult& r) { return record_of(*q, form_or_default(*q), r, 0.0); },
                               message);
        };
    });
    sub->callback([q, &outcome] { outcome.exit_code = run_audit(*q); });
}

}  // namespace permcheck::cli
