// `permcheck audit --exec "COMMAND" --dim D`, or with a signature `--axis NAME=MIN..MAX --input NAME:DIMS[:KIND]
// --output NAME:DIMS` (each repeatable): audits a layer we did not write, through the line protocol of
// adapters/exec_adapter.h. Exit 0 holds; 1 violated, nondeterministic or non-finite; 2 error. report.json is
// written in every case, the error one included, so CI always has an artifact to show.
#include "cli/audit_common.h"
#include "cli/profile.h"
#include "cli/commands.h"
#include "cli/options.h"

#include "adapters/exec_adapter.h"
#include "adapters/protocol.h"
#include "audit/evaluator.h"
#include "properties/property.h"
#include "report/repro.h"
#include "report/report.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

namespace permcheck::cli {
namespace {

// The layer's description: the shorthand (one axis n, input x, output y: one_tensor_signature's) or a signature.
struct Form {
    Output output = Output::sequence;  // the shorthand's
    Signature signature;
    bool shorthand = false;  // the signature is the shorthand's: spoken in its dialect, recorded and shown as it
};

struct AuditRequest {
    std::string command;
    std::string socket;  // --connect: a serving process's Unix socket instead of a command
    std::string label;   // --name: the layer's name in the output and the report
    // The reference implementation (--reference-exec, --reference-connect, --reference-name): the agreement
    // property's second black box.
    std::string reference_command, reference_socket, reference_label;
    std::string device;  // --device: where the served layer runs (a label: the report and the verdict line say it)
    std::string call;    // --call: how the serving process calls the layer, as it says (recorded for its replay)
    std::string reference_name() const {
        if (!reference_label.empty()) return reference_label;
        return reference_socket.empty() ? reference_command : "the served reference";
    }
    // The layer's name: --name, else the command (or, connected, "the served layer").
    std::string name() const {
        if (!label.empty()) return label;
        return socket.empty() ? command : "the served layer";
    }
    AuditFlags flags;
    SignatureText signature;  // --output: sequence | pooled (shorthand), or NAME:DIMS (signature)
    CLI::Option* dim_option = nullptr;
    CLI::Option* min_len_option = nullptr;
    int jobs = 1;
    double timeout = 30;
    double startup_timeout = 120;
    double amplification = 1;
    std::string shard = "1/1";
    // Set by the audit's adapters when an answer offers taps: only then add_taps starts a process for them.
    std::shared_ptr<std::atomic<bool>> taps_offered = std::make_shared<std::atomic<bool>>(false);
    // Counted by the audit's adapters for each stacked request answered item by item: the verdict line says so.
    std::shared_ptr<std::atomic<int>> unstacked = std::make_shared<std::atomic<int>>(0);
    Form form;  // form_of the flags, once they are parsed

    // What audit_and_report (cli/profile.h) asks of a command.
    static constexpr const char* program = "permcheck audit";
    static constexpr const char* stopped_note = "; the adapters were stopped";
    AuditOptions options() const;
    AuditResult run(const AuditOptions& o) const;
    void add_taps(AuditResult& r, const AuditOptions& o) const;
    std::string head(const AuditResult& r) const;
    std::string replay(const AuditResult& r) const;
    report::Record record(const AuditResult& r, double seconds) const;
    void add_repro(const AuditResult& r, report::Record& record) const;
    const Signature* shown_signature() const { return form.shorthand ? nullptr : &form.signature; }
};

const char* output_name(Output o) { return o == Output::pooled ? "pooled" : "sequence"; }

const std::vector<Choice<Output>> kShorthandOutputs{{"sequence", Output::sequence, " (one row per position: equivariance)"},
                                                    {"pooled", Output::pooled, " (one vector: invariance)"}};

// --output's value: with a ':' an output of a signature (NAME:DIMS), else the shorthand's sequence | pooled,
// converted through choose() as every enumeration of the command line is.
Output shorthand_output(std::string text) {
    choose("--output", kShorthandOutputs, " (the shorthand, with --dim) or NAME:DIMS (an output of a signature, with "
           "--axis and --input)", text);
    return static_cast<Output>(std::stoll(text));
}

// The shorthand with this output: --dim, --min-len and --max-len's one-tensor signature.
Form shorthand_form(const AuditRequest& q, Output output) {
    return Form{output, shorthand_signature(q.flags, output), true};
}

// Which form the flags describe; throws std::invalid_argument for a mix (the shorthand's flags with a signature's)
// or an incomplete description (a signature without an output).
Form form_of(const AuditRequest& q) {
    const std::vector<std::string>& outputs = q.signature.outputs;
    const bool signature = !q.signature.axes.empty() || !q.signature.inputs.empty() ||
                           std::any_of(outputs.begin(), outputs.end(), names_a_tensor);
    const char* mixed = given(q.dim_option)       ? "--dim"
                        : given(q.min_len_option) ? "--min-len"
                        : q.flags.max_len_given() ? "--max-len"
                                                  : nullptr;
    if (signature && mixed)
        throw std::invalid_argument(std::string(mixed) + " cannot be mixed with --axis/--input: the shorthand --dim D "
                                    "[--output sequence|pooled] [--min-len N --max-len N] describes one axis, one input "
                                    "and one output; a signature gives each axis its range (--axis n=1..8) and every "
                                    "input and output its dims (--input x:n,8 --output y:n,8)");
    if (signature) return Form{Output::sequence, signature_of(q.signature)};
    if (!given(q.dim_option))
        throw std::invalid_argument("--dim is required: --dim D audits one input of D features per position (or "
                                    "describe the layer's signature with --axis, --input and --output NAME:DIMS)");
    if (outputs.size() > 1)
        throw std::invalid_argument("--output sequence|pooled is given " + std::to_string(outputs.size()) +
                                    " times; the shorthand has one output");
    return shorthand_form(q, outputs.empty() ? Output::sequence : shorthand_output(outputs.front()));
}

// Throws std::invalid_argument with a message a user can act on (the shard's; every other option was
// checked as it was parsed, and audit() validates the whole).
AuditOptions AuditRequest::options() const {
    if (command.empty() && socket.empty())
        throw std::invalid_argument("--exec needs a command, e.g. --exec \"python3 my_adapter.py\" (or --connect "
                                    "SOCKET, a serving process's Unix socket)");
    if (!command.empty() && !socket.empty())
        throw std::invalid_argument("--exec and --connect cannot both be given: the layer is a program's, or served "
                                    "by the process that listens on the socket");
    if (!reference_command.empty() && !reference_socket.empty())
        throw std::invalid_argument("--reference-exec and --reference-connect cannot both be given");
    AuditOptions o = audit_options(flags);
    o.name = name();
    o.output = form.output;
    o.shard = parse_shard(shard);
    o.amplification = amplification;
    return o;
}

// A Python string literal of s (JSON's, which Python reads alike).
std::string python_string(const std::string& s) { return nlohmann::json(s).dump(); }

std::string AuditRequest::replay(const AuditResult& r) const {
    std::ostringstream s;
    if (!socket.empty()) {  // the layer lives in the process that served it: no shell line can reach it
        s << "permcheck.replay(" << python_string(flags.report_dir.empty() ? "REPORT" : flags.report_dir)
          << (flags.property && rules_of(*flags.property).needs_reference() ? ", layer, reference=reference)"
                                                                                 : ", layer)")
          << "  # in Python, with the layer that was audited: an audit served in process has no shell replay line";
        return s.str();
    }
    s << "permcheck audit --exec " << shell_quote(command);
    if (flags.property && rules_of(*flags.property).needs_reference())
        s << " --reference-exec " << shell_quote(reference_command);
    if (!form.shorthand)
        s << signature_flags(form.signature) << replay_tail(flags, r, /*lengths=*/false);
    else
        s << " --dim " << flags.dim << " --output " << output_name(form.output) << replay_tail(flags, r);
    s << " --timeout " << timeout << " --startup-timeout " << startup_timeout;
    if (shard != "1/1") s << " --shard " << shard;
    if (amplification != 1) s << " --amplification " << amplification;
    return s.str();
}

report::Record AuditRequest::record(const AuditResult& r, double seconds) const {
    nlohmann::json details = {{"command", socket.empty() ? command : ""},
                              {"cases_requested", flags.cases},
                              {"shard", shard},
                              {"jobs", jobs},
                              {"timeout_seconds", timeout},
                              {"startup_timeout_seconds", startup_timeout},
                              {"amplification", amplification},
                              {"last_request", r.last_request}};
    if (form.shorthand) details["output"] = output_name(form.output);
    if (!socket.empty()) details["served_in_process"] = true;
    if (flags.reference) details["reference"] = reference_name();
    if (!device.empty()) details["device"] = device;
    if (!call.empty()) details["call"] = nlohmann::json::parse(call);
    return audit_record(r, name(), audited_property(form.signature, flags), flags, replay(r), "audit",
                        std::move(details), seconds, shown_signature());
}

// The adapter processes' options: the command, its time limits, and the audit's stop flag (a stop ends a
// request in flight, not only the run between cases).
adapters::ExecOptions exec_options(const AuditRequest& q, const AuditOptions& o) {
    return {.command = q.command,
            .socket_path = q.socket,
            .timeout_seconds = q.timeout,
            .startup_timeout_seconds = q.startup_timeout,
            .stop_requested = o.stop_requested,
            .one_tensor = q.form.shorthand};
}

AuditResult AuditRequest::run(const AuditOptions& opts) const {
    // The adapters live in this scope: they are stopped and reaped before the report is written.
    try {
        adapters::ExecOptions eo = exec_options(*this, opts);
        eo.taps_offered = taps_offered;
        eo.unstacked = unstacked;
        const long long shard_cases = (flags.cases + opts.shard.count - opts.shard.index) / opts.shard.count;
        const long long processes = std::min<long long>(jobs, std::max(1LL, shard_cases));
        std::vector<BatchedNamedBlackBox> boxes;  // batched once an adapter announces it takes several cases
        for (long long k = 0; k < processes; ++k)
            boxes.push_back(adapters::exec_batched_named_black_box(eo, form.signature));
        if (!opts.property || !rules_of(*opts.property).needs_reference()) return audit(boxes, form.signature, opts);
        adapters::ExecOptions theirs = exec_options(*this, opts);  // the reference's processes, one per worker
        theirs.command = reference_command;
        theirs.socket_path = reference_socket;
        std::vector<BatchedNamedBlackBox> references;
        for (long long k = 0; k < processes; ++k)
            references.push_back(adapters::exec_batched_named_black_box(theirs, form.signature));
        return audit(boxes, references, form.signature, opts);
    } catch (const std::exception& e) {
        return error_result(e.what());
    }
}

// After a violation or a non-finite output: the counterexample's taps (audit/taps.h), from an adapter process of their
// own, when the audit's answers offered them (r.taps stays empty otherwise, and no process is started). A stop
// (o.stop_requested) while they are taken kills that process and makes the verdict `interrupted`, the
// counterexample kept: a tap table cut short would blame the wrong submodule.
void AuditRequest::add_taps(AuditResult& r, const AuditOptions& o) const {
    if ((r.verdict != Verdict::violated && r.verdict != Verdict::non_finite) || !*taps_offered) return;
    if (rules_of(r.property).needs_reference()) return;  // both sides answered x: no submodule breaks a symmetry
    if (!r.counterexample) return;
    const Signature& s = r.signature ? *r.signature : form.signature;  // the one-tensor form's width as answered
    // Each submodule's output at x against its output at the property's transformed inputs (P x, x_c or pad x).
    TapTrace trace = trace_taps(adapters::exec_tap_source(exec_options(*this, o), s), s, *r.counterexample,
                                r.property, r.dtype, amplification, o.settings);
    if (o.stop_requested && o.stop_requested()) {
        r.detail = "interrupted while the taps of the " + std::string(verdict_name(r.verdict)) +
                   " counterexample below were taken (it is the audit's, shrunk; where the symmetry breaks was not "
                   "located)";
        r.verdict = Verdict::interrupted;
        return;
    }
    if (trace.offered) r.taps = std::move(trace);
}

// repro.py beside the report of an adapter program's finding (report/repro.h; a served layer's is the Python
// package's to write), named by the record. Where none can be written stderr says why, and the report stands
// without it.
void AuditRequest::add_repro(const AuditResult& r, report::Record& record) const {
    if (flags.report_dir.empty() || command.empty() || !r.counterexample) return;
    const bool against = rules_of(r.property).needs_reference();
    if (against && reference_command.empty()) return;  // a served reference: no command to ask
    if (!repro_allowed(program, r, record)) return;
    try {
        report::prepare_directory(flags.report_dir);  // a profile's row: its own report directory
        const AuditOptions opts = options();
        const Signature& s = form.signature;
        const Counterexample& c = *r.counterexample;
        const bool free = !free_axes(s).empty();
        const auto asked = [&](const Tensors& inputs, const Lengths& lengths) {
            return free ? with_free_lengths(s, inputs, lengths) : inputs;
        };
        const auto request = [&](std::int64_t id, const Tensors& inputs) {
            return adapters::request_line(id, s, inputs, form.shorthand);
        };
        report::AdapterRepro a{.command = command,
                               .reference_command = against ? reference_command : "",
                               .directory = std::filesystem::current_path().string(),
                               .requests = {{"x", request(1, asked(c.inputs, c.lengths))}},
                               .batch_dims = form.shorthand ? std::map<std::string, int>{} : adapters::batch_dims_of(s)};
        const PropertyRules& rules = engine::audited_rules(opts);
        if (r.verdict != Verdict::nondeterministic && r.verdict != Verdict::history_dependent && !against)
            a.requests.emplace_back("transformed", request(2, asked(rules.transformed(
                                                           s, engine::audited_args(s, opts), c), rules.transformed_lengths(c))));
        if (const PriorRequest* before = c.asked_before())
            a.requests.emplace_back("before", request(2, asked(before->inputs, before->lengths)));
        for (std::size_t k = 0; k < c.batches().size(); ++k) {
            const BatchedRequest& b = c.batches()[k];
            std::vector<Tensors> items;
            for (const Tensors& item : b.items) items.push_back(asked(item, b.lengths));
            a.requests.emplace_back("batch " + std::to_string(k),
                                    adapters::batch_request_line(static_cast<std::int64_t>(3 + k), s, items, b.stacked,
                                                                         form.shorthand));
        }
        report::write_adapter_repro(flags.report_dir, record, a);
        record.repro = "repro.py";
    } catch (const std::exception& e) {
        std::cerr << "permcheck audit: no repro.py written: " << e.what() << "\n";
    }
}

std::string AuditRequest::head(const AuditResult& r) const {
    const std::string against = rules_of(r.property).needs_reference() ? " against " + reference_name() : "";
    const std::string on = device.empty() ? "" : " on " + device;
    const int items = *unstacked;  // the layer refused batches: the requests the verdict stands on went one by one
    const std::string one_by_one = items == 0 ? "" : " [" + std::to_string(items) + " batched request" +
                                                          (items == 1 ? "" : "s") + " answered item by item: the layer "
                                                          "refused one forward pass over a batch (batch= smaller, or "
                                                          "the layer's own limit)]";
    return "audit of " + name() + on + against + ": " +
           (form.shorthand ? shorthand_head(form.signature, r) : signature_head(form.signature, r)) + one_by_one;
}

int run_audit(AuditRequest q) {
    try {
        q.form = form_of(q);
        const AuditOptions opts = q.options();
        check_reference(q.flags, "--reference-exec");  // the command's flags; a profile's rows each take one property
        if (!q.flags.profile) validate_audit(q.form.signature, opts);  // before any adapter starts
    } catch (const std::invalid_argument& e) {
        std::cerr << q.program << ": " << e.what() << "\n";
        return finish(q.program, q.flags, q.record(error_result(e.what()), 0.0), 2);
    }
    if (!q.flags.report_dir.empty()) {
        try {  // before the adapters start: a long audit should not end in an unwritable directory
            report::prepare_directory(q.flags.report_dir);
        } catch (const std::exception& e) {
            std::cerr << q.program << ": " << e.what() << "\n";
            return 2;
        }
    }
    return audit_and_report(q, q.form.signature);
}

void add_signature_options(CLI::App& sub, AuditRequest& q) {
    cli::add_signature_options(
        sub, q.signature,
        "sequence | pooled: the shorthand's output, with --dim (one row per position: equivariance; one vector: "
        "invariance; default sequence). NAME:DIMS (a value with ':'): an output of a signature (repeatable), "
        "equivariant along every axis it has, invariant to every axis it lacks",
        "sequence|pooled|NAME:DIMS", [](const std::string& t) {
            if (names_a_tensor(t)) parse_output(t);
            else shorthand_output(t);
        });
}

void add_options(CLI::App& sub, AuditRequest& q) {
    q.flags.dtype = DtypeChoice::infer;  // inferred from the answers unless told (audit-torch sets its module's)
    CLI::Option* exec = sub.add_option("--exec", q.command,
                                       "the adapter: a shell command that speaks the line protocol (docs/protocol.md)");
    CLI::Option* connect =
        sub.add_option("--connect", q.socket,
                       "instead of --exec: the Unix socket a serving process listens on, one connection per adapter "
                       "(how the Python package audits a layer in its own process)");
    exec->excludes(connect);
    sub.add_option("--name", q.label, "the layer's name in the output and the report (default: the command)");
    CLI::Option* reference =
        sub.add_option("--reference-exec", q.reference_command,
                       "with --property agreement (or --profile): the reference implementation the layer must agree "
                       "with, an adapter command as --exec's (its own processes, one per job)");
    CLI::Option* reference_connect = sub.add_option(
        "--reference-connect", q.reference_socket, "instead of --reference-exec: the Unix socket the reference is served on");
    reference->excludes(reference_connect);
    sub.add_option("--device", q.device,
                   "where the layer runs (cuda:0, ...), as the process that serves it says: a label that the verdict "
                   "line and the report carry (the Python package gives it)");
    sub.add_option("--call", q.call,
                   "how the process serving the layer calls it, a JSON object the report keeps as details.audit.call "
                   "(the Python package gives its arguments, output, cache and cumulative, and replays with them)")
        ->check([](const std::string& text) {
            const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
            return j.is_object() ? std::string() : "--call takes a JSON object, got: " + text;
        });
    sub.add_option("--reference-name", q.reference_label,
                   "the reference's name in the output and the report (default: its command)");
    q.dim_option = sub.add_option(kAuditDim.flag, q.flags.dim,
                                  "features per position of the requests (the shorthand: one axis n, input x:n,D, "
                                  "output y; required unless --axis/--input describe the signature)")
                       ->check(in_range(kAuditDim));
    add_signature_options(sub, q);
    add_audit_options(sub, q.flags,
                      "infer | float32 | float64 | float16 | bfloat16 | tf32: the precision the layer computes in (sets the "
                      "tolerance; the adapter is not told it); infer: float32 when some answer shows float32 rounding "
                      "(a float32 value of more than " + std::to_string(kShortDyadicBits) + " significant bits) and "
                      "every answer is a float32 value; else float64, also when every value is a short dyadic number "
                      "(at most " + std::to_string(kShortDyadicBits) + " significant bits, as "
                      "exact arithmetic on the requests' values gives in any precision), said so; never a half "
                      "precision or tf32 (float32 whose matrix products round their inputs to 10 bits of mantissa, a "
                      "GPU's TensorFloat-32): give it",
                      "seed of the random search");
    q.min_len_option = sub.get_option(kAuditMinLen.flag);
    add_property_options(sub, q.flags);
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
        "Exit status: 0 holds; 1 violated, nondeterministic, non-finite, history-dependent or batch-dependent (an item's answer in a\n"
        "batched request differs from its answer alone; the counterexample printed and reported); 2 error (the adapter could not start, crashed, timed out or broke the protocol; or bad options);\n"
        "3 undecided (the tolerance position ids need was as large as the outputs). With --profile: 0 when every\n"
        "row ran to a verdict, whatever the verdicts; 2 when a row erred or an option was bad.\n"
        "With --report, report.json is written in every case.");
    report_bad_options(*sub, outcome, AuditRequest::program, q->flags, [q](const AuditResult& r) {
        AuditRequest described = *q;  // the form, or the shorthand's default when the flags describe none
        try {
            described.form = form_of(*q);
        } catch (const std::exception&) {
            described.form = shorthand_form(*q, Output::sequence);
        }
        return described.record(r, 0.0);
    });
    sub->callback([q, &outcome] {
        q->flags.reference = !q->reference_command.empty() || !q->reference_socket.empty();
        outcome.exit_code = run_audit(*q);
    });
}

}  // namespace permcheck::cli
