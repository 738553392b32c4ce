// `permcheck audit-torch LAYER|FILE [options]`: audits a saved torch model (a TorchScript file or a torch.export
// program, told apart by content) over a signature, or a built-in torch.nn module (mha, encoder-layer,
// decoder-layer). No LibTorch is linked: the model is served by the Python torch of the user's environment
// (python/permcheck/_torch_serve.py) through the subprocess adapter of `permcheck audit --exec`
// (adapters/exec_adapter.h), so a file is read by the torch that wrote it, a .pt2 exported program (which
// LibTorch cannot load) works, and permcheck needs no torch to build. docs/ARCHITECTURE.md says why.
// Exit 0 holds; 1 violated, nondeterministic or non-finite; 2 error or bad options, as `permcheck audit --exec`,
// whose options, record and printed result it shares (cli/audit_common.h).
#include "cli/audit_common.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/profile.h"

#include "adapters/exec_adapter.h"
#include "adapters/python_path.h"
#include "properties/property.h"
#include "report/repro.h"
#include "report/report.h"
#include "report/text.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

namespace permcheck::cli {
namespace {

enum class TorchLayer { mha, encoder_layer, decoder_layer };
enum class TorchMask { none, causal, key_padding, key_padding_fixed };

// A built-in module: its name on the command line, its class, and the amplification of the float tolerance
// (ToleranceModel): 1 for attention (convex combinations), that of two LayerNorms for the encoder layer (as the
// catalog's encoder entry), of three for the decoder layer.
struct Builtin {
    TorchLayer layer;
    const char* name;
    const char* torch_class;
    double amplification;
};
const Builtin kBuiltins[] = {
    {TorchLayer::mha, "mha", "torch.nn.MultiheadAttention", 1.0},
    {TorchLayer::encoder_layer, "encoder-layer", "torch.nn.TransformerEncoderLayer", 256.0 * 256.0},
    {TorchLayer::decoder_layer, "decoder-layer", "torch.nn.TransformerDecoderLayer", 256.0 * 256.0 * 256.0}};

const Builtin& builtin(TorchLayer l) { return kBuiltins[static_cast<int>(l)]; }
const char* layer_name(TorchLayer l) { return builtin(l).name; }

std::optional<TorchLayer> builtin_of(const std::string& target) {
    for (const Builtin& b : kBuiltins)
        if (target == b.name) return b.layer;
    return std::nullopt;  // a file
}

// --mask's values, in the enumeration's order.
const std::vector<Choice<TorchMask>> kMasks{
    {"none", TorchMask::none},
    {"causal", TorchMask::causal},
    {"key-padding", TorchMask::key_padding, " (positions whose first feature is negative are padding)"},
    {"key-padding-fixed", TorchMask::key_padding_fixed, " (the last position is padding)"}};

const char* mask_name(TorchMask m) { return kMasks[static_cast<std::size_t>(m)].name; }

// What the command audits: a built-in module over one input x (the shorthand), or the decoder layer or a file
// over a signature.
struct Plan {
    std::optional<TorchLayer> layer;  // empty: a file
    std::optional<Signature> signature;
    bool shorthand = false;  // the signature is the one-tensor shorthand's (mha, the encoder layer)
};

// Which Python serves the model, and why that one: $PERMCHECK_PYTHON; else a python3 beside this program (a
// virtual environment's bin/, where `pip install` puts the permcheck command); else python3 on PATH.
struct Python {
    std::string path, chosen_by;
};

struct Request {
    std::string target;  // mha | encoder-layer | decoder-layer, or a saved model
    TorchMask mask = TorchMask::none;
    bool train = false;
    double dropout = 0.1;
    int heads = 2;
    AuditFlags flags;
    SignatureText signature;             // a file's --axis, --input, --output
    std::vector<std::string> arguments;  // a file's --argument NAME=SOURCE
    std::string output_index;            // a file's --output-index
    std::vector<CLI::Option*> builtin_only;  // --mask, --dropout, --dim, --heads
    CLI::Option* min_len_option = nullptr;
    CLI::Option* dtype_option = nullptr;
    std::string reference;  // --reference FILE: a saved reference implementation (agreement)
    double timeout = 120;          // --timeout: seconds one request may take (a large model's long case included)
    double startup_timeout = 300;  // --startup-timeout: the server's first answer (import torch, load the model)
    // What the server said of the model (--describe): its kind, forward, torch version, the interpreter.
    nlohmann::json described = nlohmann::json::object();
    std::vector<std::string> narrowed;  // "n narrowed to 2..8 by the export's dynamic dims"
    Plan plan;      // plan_of the flags, once they are parsed
    Python python;  // python_of()

    // What audit_and_report (cli/profile.h) asks of a command.
    static constexpr const char* program = "permcheck audit-torch";
    static constexpr const char* stopped_note = "; the Python server was stopped";
    std::string name() const;
    AuditOptions options() const;
    AuditResult run(const AuditOptions& o) const;
    void add_taps(AuditResult&, const AuditOptions&) const {}  // the server offers none
    std::string head(const AuditResult& r) const;
    std::string replay(const AuditResult& r) const;
    report::Record record(const AuditResult& r, double seconds) const;
    void add_repro(const AuditResult& r, report::Record& record) const;
    const Signature* shown_signature() const { return plan.signature && !plan.shorthand ? &*plan.signature : nullptr; }
};

// The decoder layer's signature: targets n and memory m, each in [min_len, max_len]; y equivariant in n,
// invariant to m.
Signature decoder_signature(int dim, int min_len, int max_len) {
    const std::string d = std::to_string(dim);
    Signature s;
    s.axes = {{"n", min_len, max_len}, {"m", min_len, max_len}};
    s.inputs = {parse_input("tgt:n," + d), parse_input("memory:m," + d)};
    s.outputs = {parse_output("y:n," + d)};
    return s;
}

// Throws std::invalid_argument for flags that do not belong to the target.
void refuse_mix(const Request& q, const Plan& p) {
    const bool signature_given = !q.signature.axes.empty() || !q.signature.inputs.empty() || !q.signature.outputs.empty();
    if (p.layer && signature_given)
        throw std::invalid_argument("--axis, --input and --output describe a saved model's signature; the built-in " +
                                    q.target + " has its own (mha, encoder-layer: x:n,DIM -> y:n,DIM; decoder-layer: "
                                    "tgt:n,DIM and memory:m,DIM -> y:n,DIM)");
    if (p.layer && (!q.arguments.empty() || !q.output_index.empty()))
        throw std::invalid_argument("--argument and --output-index apply to a saved model, not to the built-in " +
                                    q.target);
    if (p.layer) return;
    std::error_code ec;
    if (!std::filesystem::exists(q.target, ec))
        throw std::invalid_argument(q.target + " is neither a built-in module (mha, encoder-layer, decoder-layer) nor "
                                    "a file: give a saved model (torch.jit.save(torch.jit.script(model), FILE) or "
                                    "torch.export.save(torch.export.export(model, args), FILE)) with its signature "
                                    "(--axis, --input, --output)");
    for (const CLI::Option* o : q.builtin_only)
        if (given(o))
            throw std::invalid_argument(o->get_name() + " applies to the built-in modules (mha, encoder-layer, "
                                        "decoder-layer), not to a saved model");
    for (const CLI::Option* o : {q.min_len_option, q.flags.max_len_option})
        if (given(o))
            throw std::invalid_argument(o->get_name() + " cannot be mixed with a saved model's signature: give "
                                        "each axis its range (--axis n=1..8)");
    if (q.signature.inputs.empty())
        throw std::invalid_argument(q.target + " needs its signature: --axis NAME=MIN..MAX, --input NAME:DIMS[:KIND] "
                                    "(one per argument of forward, in order) and --output NAME:DIMS, e.g. --axis "
                                    "n=1..8 --input x:1,n,8 --output y:1,n,8");
}

// Throws std::invalid_argument for a bad combination of flags or a bad signature.
Plan plan_of(const Request& q) {
    Plan p;
    p.layer = builtin_of(q.target);
    refuse_mix(q, p);
    if (!p.layer) p.signature = signature_of(q.signature);
    else if (*p.layer == TorchLayer::decoder_layer)
        p.signature = decoder_signature(q.flags.dim, q.flags.min_len, q.flags.max_len);
    else {  // mha and the encoder layer: the one-tensor shorthand's signature
        p.signature = shorthand_signature(q.flags, Output::sequence);
        p.shorthand = true;
    }
    return p;
}

std::string Request::replay(const AuditResult& r) const {
    std::ostringstream s;
    s << "permcheck audit-torch ";
    if (!plan.layer) {
        s << shell_word(target) << signature_flags(*plan.signature);
        for (const std::string& a : arguments) s << " --argument " << shell_word(a);
        if (!output_index.empty()) s << " --output-index " << shell_word(output_index);
        if (flags.property && rules_of(*flags.property).needs_reference())
            s << " --reference " << shell_word(reference);
        s << (train ? " --train" : "") << replay_tail(flags, r, /*lengths=*/false);
        return s.str();
    }
    s << layer_name(*plan.layer) << " --mask " << mask_name(mask) << (train ? " --train" : "") << " --dropout "
      << dropout << " --dim " << flags.dim << " --heads " << heads << replay_tail(flags, r);
    return s.str();
}

std::string Request::name() const {
    if (!plan.layer) {
        const std::string kind = described.value("kind", "");
        return target + (kind == "export" ? " (exported program)" : kind == "torchscript" ? " (TorchScript)" : "");
    }
    return std::string(builtin(*plan.layer).torch_class) + "(dim=" + std::to_string(flags.dim) + ", heads=" +
           std::to_string(heads) + ", mask=" + mask_name(mask) + ", " +
           (train ? "train, dropout=" + std::to_string(dropout) : std::string("eval")) + ", " +
           arithmetic_name(requested_dtype(flags).value_or(Arithmetic::float64)) + ")";
}

report::Record Request::record(const AuditResult& r, double seconds) const {
    nlohmann::json details;
    if (plan.layer)
        details = {{"layer", layer_name(*plan.layer)}, {"mask", mask_name(mask)}, {"train", train},
                   {"dropout", dropout}, {"heads", heads}};
    else
        details = {{"file", target}, {"forward", described.value("forward", "")}, {"train", train},
                   {"format", described.value("kind", "")}};
    if (described.contains("torch")) details["torch"] = described["torch"];
    if (described.contains("python")) details["python"] = described["python"];
    if (!narrowed.empty()) details["narrowed"] = narrowed;
    if (!plan.layer && !arguments.empty()) details["arguments"] = arguments;
    if (!plan.layer && !output_index.empty()) details["output_index"] = output_index;
    if (!reference.empty()) details["reference"] = reference;
    const Property property = plan.signature ? audited_property(*plan.signature, flags) : Property{"equivariance"};
    return audit_record(r, name(), property, flags, replay(r), "audit_torch", std::move(details), seconds,
                        shown_signature());
}

// ---- the Python that serves the model

Python python_of() {
    if (const char* env = std::getenv("PERMCHECK_PYTHON"); env != nullptr && *env != '\0')
        return {env, "set by PERMCHECK_PYTHON"};
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const std::filesystem::path beside = self.parent_path() / "python3";
        if (::access(beside.c_str(), X_OK) == 0) return {beside.string(), "beside " + self.string()};
    }
    return {"python3", "first on PATH"};
}

// The server's command line for the model (a file, or a built-in), every word quoted for /bin/sh -c.
std::string server_command(const Request& q, const std::string& file, bool describe) {
    const Plan& p = q.plan;
    std::string c = shell_quote(q.python.path) + " -m permcheck._torch_serve";
    const auto add = [&c](const std::string& flag, const std::string& value) {
        c += " " + flag + " " + shell_quote(value);
    };
    if (p.layer) {
        add("--builtin", layer_name(*p.layer));
        add("--mask", mask_name(q.mask));
        add("--dim", std::to_string(q.flags.dim));
        add("--heads", std::to_string(q.heads));
        std::ostringstream dropout;
        dropout.precision(17);
        dropout << q.dropout;
        add("--dropout", dropout.str());
    } else {
        add("--file", file);
        for (const std::string& t : q.signature.inputs) add("--input", t);
        for (const std::string& a : q.arguments) add("--argument", a);
        if (!q.output_index.empty()) add("--output-index", q.output_index);
    }
    if (const auto d = requested_dtype(q.flags); d && (p.layer || given(q.dtype_option)))
        add("--dtype", arithmetic_name(*d == Arithmetic::tf32 ? Arithmetic::float32 : *d));
    add("--seed", std::to_string(q.flags.seed));
    if (q.train) c += " --train";
    if (describe) c += " --describe";
    return c;
}

// Runs /bin/sh -c command with the adapters' environment (PYTHONPATH led by the package's directory) and returns
// its stdout; its stderr is ours. Sets `status` to its wait status.
std::string output_of(const std::string& command, int& status) {
    const adapters::ChildEnvironment env;  // of which PYTHONPATH is the one variable that differs from ours
    std::string line = command;
    for (char* const* e = env.envp(); *e != nullptr; ++e)
        if (std::strncmp(*e, "PYTHONPATH=", 11) == 0) line = "PYTHONPATH=" + shell_quote(*e + 11) + " " + command;
    std::cout.flush();
    FILE* pipe = ::popen(line.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error(std::string("cannot start /bin/sh: ") + std::strerror(errno));
    std::string out;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
    status = ::pclose(pipe);
    return out;
}

// Asks the server what the model is (--describe), before any audit: that this Python has torch 2.x, that the file
// is a model it can load, its dtype, and what an exported program allows each axis. Throws std::invalid_argument
// with the sentence to print.
nlohmann::json describe(const Request& q, const std::string& file) {
    int status = 0;
    const Python& py = q.python;
    const std::string out = output_of(server_command(q, file, /*describe=*/true), status);
    const std::string which = py.path + " (" + py.chosen_by + ")";
    const std::string fix = "audit-torch serves the model through the Python torch of your environment: install "
                            "torch 2.x into that Python (" + shell_quote(py.path) + " -m pip install torch), or set "
                            "PERMCHECK_PYTHON to a Python that has it";
    nlohmann::json d;
    try {
        d = nlohmann::json::parse(out.substr(0, out.find('\n')));
    } catch (const std::exception&) {
        const bool ran = WIFEXITED(status) && WEXITSTATUS(status) != 127;
        throw std::invalid_argument(ran ? which + " could not describe the model (it " +
                                              (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                                                 : std::string("was killed")) +
                                              " without an answer; its messages are above); " + fix
                                        : "cannot run " + which + "; " + fix);
    }
    if (d.contains("error")) {
        if (d.value("no_torch", false))
            throw std::invalid_argument(which + " " + d.value("reason", "cannot import torch") + "; " + fix);
        throw std::invalid_argument(d["error"].get<std::string>());
    }
    return d;
}

std::string range_text(int lo, int hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

// An exported program's dims narrow the signature's axes: each axis to the intersection of its --axis range and
// every range the export allows a dim of it (a static dim: its one length). Throws std::invalid_argument naming
// the dim and both ranges when they do not overlap.
void narrow(Request& q, Signature& s, const nlohmann::json& axes) {
    for (Axis& axis : s.axes) {
        const int given_lo = axis.min_len, given_hi = axis.max_len;
        bool fixed = false;
        for (const nlohmann::json& a : axes) {
            if (a.value("axis", "") != axis.name) continue;
            const int lo = a.value("min", 0);
            const int hi = a["max"].is_null() ? given_hi : a["max"].get<int>();
            const bool is_static = a.value("static", false);
            const std::string dim = "dim " + std::to_string(a.value("dim", 0)) + " of " + a.value("input", "?");
            if (lo > axis.max_len || hi < axis.min_len)
                throw std::invalid_argument(
                    "the export's " + std::string(is_static ? "static " : "dynamic ") + dim + " (axis " + axis.name +
                    ") allows " + (is_static ? "only " + std::to_string(lo) : range_text(lo, hi)) + ", which --axis " +
                    axis.name + "=" + range_text(given_lo, given_hi) + " does not reach" +
                    (is_static ? ": export it with that dim dynamic (dynamic_shapes), or give --axis " + axis.name +
                                     "=" + std::to_string(lo) + ".." + std::to_string(lo)
                               : ": give --axis " + axis.name + " a range that overlaps it"));
            axis.min_len = std::max(axis.min_len, lo);
            axis.max_len = std::min(axis.max_len, hi);
            fixed = fixed || is_static;
        }
        if (axis.min_len == given_lo && axis.max_len == given_hi) continue;
        if (fixed && axis.min_len == axis.max_len)  // a static dim: the one length the export was traced at
            q.narrowed.push_back(axis.name + " fixed to " + std::to_string(axis.min_len) + " by the export's static dims");
        else
            q.narrowed.push_back(axis.name + " narrowed to " + range_text(axis.min_len, axis.max_len) +
                                 " by the export's " + (fixed ? "static and dynamic dims" : "dynamic dims"));
    }
}

// ---- the audit

adapters::ExecOptions exec_options(const Request& q, const std::string& command, const AuditOptions& o) {
    adapters::ExecOptions e;
    e.command = command;
    e.one_tensor = q.plan.shorthand;
    e.timeout_seconds = q.timeout;
    e.startup_timeout_seconds = q.startup_timeout;
    e.stop_requested = o.stop_requested;
    return e;
}

AuditOptions Request::options() const {
    AuditOptions o = audit_options(flags);
    o.name = name();
    if (plan.layer) o.amplification = builtin(*plan.layer).amplification;
    return o;
}

// The audit through the server (and the reference's).
AuditResult Request::run(const AuditOptions& o) const {
    const Signature& s = *plan.signature;
    try {  // the adapters live in this scope: stopped and reaped before the report is written
        const std::vector<BatchedNamedBlackBox> boxes{
            adapters::exec_batched_named_black_box(exec_options(*this, server_command(*this, target, false), o), s)};
        if (!o.property || !rules_of(*o.property).needs_reference()) return audit(boxes, s, o);
        const std::vector<BatchedNamedBlackBox> references{
            adapters::exec_batched_named_black_box(exec_options(*this, server_command(*this, reference, false), o), s)};
        return audit(boxes, references, s, o);
    } catch (const std::exception& e) {
        return error_result(e.what());
    }
}

std::string Request::head(const AuditResult& r) const {
    const bool against = rules_of(r.property).needs_reference();
    std::string said;
    for (const std::string& n : narrowed) said += (said.empty() ? " (" : "; ") + n;
    if (!said.empty()) said += ")";
    std::string head = "audit of " + name() + said + (against ? " against " + reference : "") + ": ";
    if (const Signature* s = shown_signature()) return head + signature_head(*s, r);
    return head + property_name(Property{"equivariance"});
}

// repro.py beside the report of a file's finding (report/repro.h); a built-in module has none (its weights are
// drawn by torch's generator: `permcheck audit-torch` replays it). Where none can be written stderr says why.
void Request::add_repro(const AuditResult& r, report::Record& record) const {
    if (flags.report_dir.empty() || plan.layer || !r.counterexample) return;
    if (!repro_allowed(program, r, record)) return;
    try {
        report::prepare_directory(flags.report_dir);
        const bool against = rules_of(r.property).needs_reference();
        report::write_torch_repro(flags.report_dir, record,
                                  report::TorchRepro{.file = target,
                                                     .reference_file = against ? reference : "",
                                                     .arguments = arguments,
                                                     .output = output_index,
                                                     .train = train,
                                                     .torch_version = described.value("torch", "")});
        record.repro = "repro.py";
    } catch (const std::exception& e) {
        std::cerr << program << ": no repro.py written: " << e.what() << "\n";
    }
}

// Asks the server about the model (and the reference), settles the dtype (the model's own unless --dtype was
// given, written into the flags so that the record and the replay line name it) and narrows the axes to what an
// exported program allows. Throws std::invalid_argument with the sentence to print.
void prepare(Request& q) {
    q.described = describe(q, q.target);
    // The reference (agreement) loads before the audit, and its export's dims narrow the axes too: both sides are
    // asked every input.
    const nlohmann::json ref = q.flags.reference ? describe(q, q.reference) : nlohmann::json::object();
    if (!q.plan.layer && !given(q.dtype_option)) {
        std::string dtype = q.described.value("dtype", "float32");
        if (q.flags.reference)  // judged at the coarser of the two precisions
            dtype = arithmetic_name(coarser(parse_arithmetic(dtype), parse_arithmetic(ref.value("dtype", "float32"))));
        q.flags.dtype = dtype_choice(parse_arithmetic(dtype));
        q.flags.dtype_source = "module";
    }
    if (q.plan.layer) return;
    nlohmann::json axes = q.described.value("axes", nlohmann::json::array());
    for (const nlohmann::json& a : ref.value("axes", nlohmann::json::array())) axes.push_back(a);
    narrow(q, *q.plan.signature, axes);
}

int run_audit(Request q) {
    q.python = python_of();
    try {
        q.plan = plan_of(q);
        q.flags.reference = !q.reference.empty();
        if (q.flags.reference && q.plan.layer)
            throw std::invalid_argument("--reference FILE goes with a saved model audited over a signature");
        check_reference(q.flags, "--reference FILE");
        if (given(q.dtype_option) && requested_dtype(q.flags) == Arithmetic::exact)
            throw std::invalid_argument("torch computes in float32, float64, bfloat16 or float16, not exact");
        if (!q.flags.profile) validate_audit(*q.plan.signature, audit_options(q.flags));  // before the model loads
        prepare(q);
        if (!q.flags.profile) validate_audit(*q.plan.signature, audit_options(q.flags));  // the narrowed axes
    } catch (const std::invalid_argument& e) {
        std::cerr << q.program << ": " << e.what() << "\n";
        if (!q.plan.signature) q.plan = Plan{TorchLayer::mha, std::nullopt, true};  // the flags describe none
        return finish(q.program, q.flags, q.record(error_result(e.what()), 0.0), 2);
    }
    return audit_and_report(q, *q.plan.signature);
}

void add_builtin_options(CLI::App& app, Request& q) {
    q.builtin_only.push_back(add_choice(
        app, "--mask", q.mask, kMasks,
        "built-ins: none | causal | key-padding (positions whose first feature is negative are padding: the mask "
        "moves with x) | key-padding-fixed (the last position is padding: it does not); decoder-layer: none | causal"));
    app.add_flag("--train", q.train, "train mode (dropout active); default eval. Not for an exported program, "
                                     "whose mode was fixed when it was exported");
    q.builtin_only.push_back(add_ranged(app, kDropout, q.dropout, "built-ins: dropout probability of the module"));
    q.builtin_only.push_back(add_ranged(app, kAuditDim, q.flags.dim, "built-ins: embed_dim / d_model: features per position"));
    q.builtin_only.push_back(add_ranged(app, kTorchHeads, q.heads, "built-ins: attention heads (must divide --dim)"));
}

void add_options(CLI::App& app, Request& q) {
    q.flags.dim = 8;
    app.add_option("layer", q.target,
                   "mha (torch.nn.MultiheadAttention) | encoder-layer (torch.nn.TransformerEncoderLayer) | "
                   "decoder-layer (torch.nn.TransformerDecoderLayer), or FILE: a saved model, told apart by its "
                   "content: a TorchScript file (torch.jit.save) or an exported program (torch.export.save, .pt2), "
                   "with its signature: --axis, --input, --output")
        ->type_name("LAYER|FILE")
        ->required();
    add_builtin_options(app, q);
    add_signature_options(app, q.signature,
                          "NAME:DIMS: an output of forward (repeatable, in the order forward returns them), "
                          "equivariant along every axis it has, invariant to every axis it lacks",
                          "NAME:DIMS", [](const std::string& t) { parse_output(t); });
    add_audit_options(app, q.flags,
                      "float64 | float32 | bfloat16 | float16: the module's precision (sets the tolerance). "
                      "Built-ins: default float64. FILE: default the dtype of its floating parameters (float32 if "
                      "none); given, the module is converted to it",
                      "seed of the search and of torch.manual_seed (weights, dropout)");
    app.add_option("--argument", q.arguments,
                   "FILE: NAME=SOURCE: pass forward's parameter NAME from SOURCE, an input's name or length:AXIS (an "
                   "int64 tensor [length] of the axis's length); repeatable. With any --argument, forward is called "
                   "by name and the inputs no SOURCE names go under their own names; without, every input "
                   "positionally in the order of --input")
        ->type_name("NAME=SOURCE")
        ->check([](const std::string& a) {
            const auto eq = a.find('=');
            return eq == std::string::npos || eq == 0 || eq + 1 == a.size()
                       ? "--argument expects NAME=SOURCE (e.g. src=x, lengths=length:n), got '" + a + "'"
                       : std::string();
        });
    app.add_option("--output-index", q.output_index,
                   "FILE: the element of forward's result that answers: an index of a tuple or list (negative from "
                   "the end: nn.MultiheadAttention returns (output, weights): 0) or a key of a dict; the outputs are "
                   "read from it as from forward's result")
        ->type_name("I|KEY");
    app.add_option("--reference", q.reference,
                   "FILE: with --property agreement (or --profile): a saved reference implementation the module "
                   "must agree with, called as the module is (the same signature, --argument and --output-index); "
                   "judged at the coarser of the two modules' precisions unless --dtype is given")
        ->type_name("REF_FILE");
    q.dtype_option = app.get_option("--dtype");
    q.min_len_option = app.get_option("--min-len");
    add_property_options(app, q.flags);
    add_ranged(app, kTimeout, q.timeout, "seconds one request to the Python server may take");
    add_ranged(app, kStartupTimeout, q.startup_timeout,
               "seconds the Python server may take for its first answer (import torch, load the model)");
    add_report_option(app, q.flags);
}

}  // namespace

void add_audit_torch(CLI::App& app, Outcome& outcome) {
    auto q = std::make_shared<Request>();
    CLI::App* sub = app.add_subcommand(
        "audit-torch",
        "audit a saved torch model (TorchScript or torch.export .pt2) or torch.nn's MultiheadAttention, "
        "TransformerEncoderLayer or TransformerDecoderLayer, served by the Python torch of your environment");
    add_options(*sub, *q);
    sub->footer(
        "The Python: $PERMCHECK_PYTHON, else a python3 beside this permcheck (a virtual environment's bin/), else\n"
        "python3 on PATH; it must import torch 2.x.\n"
        "Exit status: 0 holds; 1 violated, nondeterministic, non-finite, batch-dependent or history-dependent; 2 error\n"
        "or bad options; 3 undecided.");
    report_bad_options(*sub, outcome, Request::program, q->flags, [q](const AuditResult& r) {
        Request described = *q;  // the plan, or the shorthand's when the flags describe none
        try {
            described.plan = plan_of(*q);
        } catch (const std::exception&) {
            described.plan = Plan{TorchLayer::mha, std::nullopt, true};
        }
        return described.record(r, 0.0);
    });
    sub->callback([q, &outcome] { outcome.exit_code = run_audit(*q); });
}

}  // namespace permcheck::cli
