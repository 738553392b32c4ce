// permcheck-torch: the LibTorch audits behind `permcheck audit-torch` (cli/cmd_audit_torch.cpp forwards its
// arguments here): the built-in torch::nn modules, and TorchScript files over a signature (--axis, --input,
// --output, as `permcheck audit`). Exit 0 holds; 1 violated, nondeterministic or non-finite; 2 error or bad
// options, as `permcheck audit --exec`, whose options, record and printed result it shares (cli/audit_common.h).
#include "cli/audit_common.h"
#include "cli/profile.h"
#include "cli/options.h"

#include "adapters/torch_adapter.h"
#include "adapters/torch_script.h"
#include "properties/property.h"
#include "report/repro.h"
#include "report/report.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

namespace {

using namespace permcheck;
using namespace permcheck::cli;

const std::string kProgram = "permcheck audit-torch";

struct Request {
    std::string target;            // mha | encoder-layer | decoder-layer, or a TorchScript file
    adapters::TorchOptions torch;  // the built-ins'; dtype and seed are taken from flags
    AuditFlags flags;
    SignatureText signature;       // a file's --axis, --input, --output
    std::vector<std::string> arguments;  // a file's --argument NAME=SOURCE
    std::string output_index;            // a file's --output-index
    std::vector<CLI::Option*> builtin_only;  // --mask, --dropout, --dim, --heads
    CLI::Option* min_len_option = nullptr;
    CLI::Option* dtype_option = nullptr;
    std::string schema;            // a file's forward, once loaded
    std::string reference;         // --reference FILE: a TorchScript reference implementation (agreement)
};

// What the command audits: a built-in module over one input x (the shorthand), or the decoder layer or a
// TorchScript file over a signature.
struct Plan {
    std::optional<adapters::TorchLayer> layer;  // empty: a file
    std::optional<Signature> signature;
};

std::optional<adapters::TorchLayer> builtin_of(const std::string& target) {
    try {
        return adapters::parse_torch_layer(target);
    } catch (const std::invalid_argument&) {
        return std::nullopt;  // a file
    }
}

// Throws std::invalid_argument for flags that do not belong to the target.
void refuse_mix(const Request& q, const Plan& p) {
    const bool signature_given = !q.signature.axes.empty() || !q.signature.inputs.empty() || !q.signature.outputs.empty();
    if (p.layer && signature_given)
        throw std::invalid_argument("--axis, --input and --output describe a TorchScript file's signature; the built-in " +
                                    q.target + " has its own (mha, encoder-layer: x:n,DIM -> y:n,DIM; decoder-layer: "
                                    "tgt:n,DIM and memory:m,DIM -> y:n,DIM)");
    if (p.layer && (!q.arguments.empty() || !q.output_index.empty()))
        throw std::invalid_argument("--argument and --output-index apply to a TorchScript file, not to the built-in " +
                                    q.target);
    if (p.layer) return;
    std::error_code ec;
    if (!std::filesystem::exists(q.target, ec))
        throw std::invalid_argument(q.target + " is neither a built-in module (mha, encoder-layer, decoder-layer) nor "
                                    "a file: give a TorchScript file (torch.jit.script(module).save(FILE)) with its "
                                    "signature (--axis, --input, --output)");
    for (const CLI::Option* o : q.builtin_only)
        if (given(o))
            throw std::invalid_argument(o->get_name() + " applies to the built-in modules (mha, encoder-layer, "
                                        "decoder-layer), not to a TorchScript file");
    for (const CLI::Option* o : {q.min_len_option, q.flags.max_len_option})
        if (given(o))
            throw std::invalid_argument(o->get_name() + " cannot be mixed with a TorchScript file's signature: give "
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
    else if (*p.layer == adapters::TorchLayer::decoder_layer)
        p.signature = adapters::torch_decoder_signature(q.torch, q.flags.min_len, q.flags.max_len);
    else  // mha and the encoder layer: the one-tensor shorthand's signature
        p.signature = shorthand_signature(q.flags, Output::sequence);
    return p;
}

// The plan, or the shorthand's when the flags describe none: for a report of options refused.
Plan plan_or_default(const Request& q) {
    try {
        return plan_of(q);
    } catch (const std::exception&) {
        return Plan{adapters::TorchLayer::mha, std::nullopt};
    }
}

std::string replay_of(const Request& q, const Plan& p, const AuditResult& r) {
    std::ostringstream s;
    s << "permcheck audit-torch ";
    if (!p.layer) {
        s << shell_word(q.target) << signature_flags(*p.signature);
        for (const std::string& a : q.arguments) s << " --argument " << shell_word(a);
        if (!q.output_index.empty()) s << " --output-index " << shell_word(q.output_index);
        if (q.flags.property && rules_of(*q.flags.property).needs_reference())
            s << " --reference " << shell_word(q.reference);
        s << (q.torch.train ? " --train" : "")
          << replay_tail(q.flags, r, /*lengths=*/false);
        return s.str();
    }
    s << adapters::torch_layer_name(q.torch.layer) << " --mask " << adapters::torch_mask_name(q.torch.mask)
      << (q.torch.train ? " --train" : "") << " --dropout " << q.torch.dropout << " --dim " << q.flags.dim
      << " --heads " << q.torch.heads << replay_tail(q.flags, r);
    return s.str();
}

std::string name_of(const Request& q, const Plan& p) {
    if (!p.layer) return q.target + " (TorchScript)";
    return p.layer == q.torch.layer ? adapters::torch_name(q.torch)
                                    : "torch layer " + std::string(adapters::torch_layer_name(*p.layer));
}

report::Record record_of(const Request& q, const Plan& p, const AuditResult& r, double seconds) {
    nlohmann::json details;
    if (p.layer)
        details = {{"layer", adapters::torch_layer_name(*p.layer)},
                   {"mask", adapters::torch_mask_name(q.torch.mask)},
                   {"train", q.torch.train},
                   {"dropout", q.torch.dropout},
                   {"heads", q.torch.heads}};
    else
        details = {{"file", q.target}, {"forward", q.schema}, {"train", q.torch.train}};
    if (!p.layer && !q.arguments.empty()) details["arguments"] = q.arguments;
    if (!p.layer && !q.output_index.empty()) details["output_index"] = q.output_index;
    if (!q.reference.empty()) details["reference"] = q.reference;
    if (q.flags.keep_positions) details["keep_positions"] = true;
    if (!q.flags.along.empty()) details["along"] = q.flags.along;
    const Property property = p.signature ? audited_property(*p.signature, q.flags) : Property::equivariance;
    if (r.largest_shift > 0) details["largest_shift"] = r.largest_shift;
    return audit_record(r, name_of(q, p), property, q.flags, replay_of(q, p, r), "audit_torch", std::move(details),
                        seconds, p.signature ? &*p.signature : nullptr);
}

// Loads the file (throwing std::invalid_argument when it cannot serve) and settles the dtype: the module's own
// unless --dtype was given, written into the flags so that the record and the replay line name it.
adapters::TorchScriptModule load_file(Request& q, const Plan& p, const std::string& path) {
    adapters::TorchScriptOptions so;
    so.path = path;
    so.signature = *p.signature;
    if (given(q.dtype_option)) so.dtype = requested_dtype(q.flags);
    so.train = q.torch.train;
    for (const std::string& a : q.arguments) {
        const auto eq = a.find('=');
        so.arguments.emplace_back(a.substr(0, eq), a.substr(eq + 1));
    }
    so.output = q.output_index;
    so.seed = q.flags.seed;
    adapters::TorchScriptModule m = adapters::load_torch_script(so);
    if (path != q.target) return m;  // the reference's
    q.flags.dtype = dtype_choice(m.dtype);
    q.schema = m.schema;
    return m;
}

// Builds the module and runs the audit under Ctrl-C. Throws when the module cannot be built or loaded.
AuditResult audit_of(Request& q, const Plan& p) {
    AuditOptions o = audit_options(q.flags);
    o.name = name_of(q, p);
    if (!p.layer && o.property && rules_of(*o.property).needs_reference()) {
        const adapters::TorchScriptModule m = load_file(q, p, q.target), ref = load_file(q, p, q.reference);
        o.dtype = coarser(m.dtype, ref.dtype);  // judged at the coarser of the two precisions
        q.flags.dtype = dtype_choice(*o.dtype);
        return run_interruptibly([&](const AuditOptions& a) { return audit_against(m.box, ref.box, *p.signature, a); },
                                 o, kProgram, q.flags);
    }
    if (!p.layer) {
        const adapters::TorchScriptModule m = load_file(q, p, q.target);
        o.dtype = m.dtype;
        return run_interruptibly([&](const AuditOptions& a) { return audit(m.box, *p.signature, a); }, o, kProgram,
                                 q.flags);
    }
    o.amplification = adapters::torch_amplification(q.torch.layer);
    const NamedBlackBox box = p.signature->one_tensor ? one_tensor_box(adapters::torch_black_box(q.torch), Output::sequence)
                                                      : adapters::torch_decoder_black_box(q.torch);
    return run_interruptibly([&](const AuditOptions& a) { return audit(box, *p.signature, a); }, o, kProgram, q.flags);
}

std::string head_of(const Request& q, const Plan& p, const AuditResult& r) {
    const bool against = rules_of(r.property).needs_reference();
    std::string head = "audit of " + name_of(q, p) + (against ? " against " + q.reference : "") + ": ";
    if (p.signature && !p.signature->one_tensor) return head + signature_head(*p.signature, r);
    return head + property_name(Property::equivariance);
}

// One audit of the module, printed when asked, with its report record.
RowRun run_once(Request& q, const Plan& p, bool print) {
    AuditResult r;
    const auto t0 = std::chrono::steady_clock::now();
    try {
        r = audit_of(q, p);
    } catch (const std::exception& e) {  // LibTorch refusing the module (heads not dividing dim), a property refused
        r = error_result(e.what());
    }
    name_last_request(r);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (print)
        print_result(std::cout, std::cerr, kProgram, head_of(q, p, r), r, seconds, replay_of(q, p, r),
                     p.signature ? &*p.signature : nullptr);
    return RowRun{r, record_of(q, p, r, seconds)};
}

// repro.py beside the report of a TorchScript file's finding (report/repro.h); a built-in module has none (its
// weights are drawn by LibTorch: `permcheck audit-torch` replays it). Where none can be written stderr says why.
void add_repro(const Request& q, const Plan& p, const AuditResult& r, report::Record& record) {
    if (q.flags.report_dir.empty() || p.layer || !r.counterexample) return;
    if (const std::string refused = report::repro_refused(record); !refused.empty()) {
        if (exit_code(r.verdict) == 1) std::cerr << kProgram << ": no repro.py written: " << refused << "\n";
        return;
    }
    try {
        report::prepare_directory(q.flags.report_dir);
        const bool against = rules_of(r.property).needs_reference();
        report::write_torch_repro(q.flags.report_dir, record,
                                  report::TorchRepro{.file = q.target,
                                                     .reference_file = against ? q.reference : "",
                                                     .arguments = q.arguments,
                                                     .output = q.output_index,
                                                     .train = q.torch.train});
        record.repro = "repro.py";
    } catch (const std::exception& e) {
        std::cerr << kProgram << ": no repro.py written: " << e.what() << "\n";
    }
}

int run(Request q) {
    q.torch.dim = q.flags.dim;  // before the plan: the decoder layer's signature has dim features
    q.torch.dtype = requested_dtype(q.flags).value_or(Arithmetic::float64);
    q.torch.seed = q.flags.seed;
    Plan p;
    try {
        p = plan_of(q);
        q.flags.reference = !q.reference.empty();
        if (q.flags.reference && p.layer)
            throw std::invalid_argument("--reference FILE goes with a TorchScript FILE audited over a signature");
        check_reference(q.flags, "--reference FILE");
        if (!q.flags.profile) validate_audit(*p.signature, audit_options(q.flags));  // before the module loads
    } catch (const std::invalid_argument& e) {
        std::cerr << kProgram << ": " << e.what() << "\n";
        return finish(kProgram, q.flags, record_of(q, plan_or_default(q), error_result(e.what()), 0.0), 2);
    }
    if (p.layer) q.torch.layer = *p.layer;
    if (q.flags.profile)
        return run_profile(kProgram, name_of(q, p), *p.signature, q.flags, [&](const AuditFlags& f) {
            Request row = q;
            row.flags = f;
            RowRun run = run_once(row, p, /*print=*/false);
            add_repro(row, p, run.result, run.record);
            return run;
        });
    RowRun run = run_once(q, p, /*print=*/true);
    add_repro(q, p, run.result, run.record);
    return finish(kProgram, q.flags, run.record, exit_code(run.result.verdict));
}

void add_builtin_options(CLI::App& app, Request& q) {
    using adapters::TorchMask;
    q.builtin_only.push_back(add_choice(
        app, "--mask", q.torch.mask,
        {{"none", TorchMask::none},
         {"causal", TorchMask::causal},
         {"key-padding", TorchMask::key_padding, " (positions whose first feature is negative are padding)"},
         {"key-padding-fixed", TorchMask::key_padding_fixed, " (the last position is padding)"}},
        "built-ins: none | causal | key-padding (positions whose first feature is negative are padding: the mask "
        "moves with x) | key-padding-fixed (the last position is padding: it does not); decoder-layer: none | causal"));
    app.add_flag("--train", q.torch.train, "train mode (dropout active); default eval");
    q.builtin_only.push_back(add_ranged(app, kDropout, q.torch.dropout, "built-ins: dropout probability of the module"));
    q.builtin_only.push_back(add_ranged(app, kAuditDim, q.flags.dim, "built-ins: embed_dim / d_model: features per position"));
    q.builtin_only.push_back(add_ranged(app, kTorchHeads, q.torch.heads, "built-ins: attention heads (must divide --dim)"));
}

void add_options(CLI::App& app, Request& q) {
    q.flags.dim = 8;
    app.add_option("layer", q.target,
                   "mha (torch::nn::MultiheadAttention) | encoder-layer (torch::nn::TransformerEncoderLayer) | "
                   "decoder-layer (torch::nn::TransformerDecoderLayer), or FILE: a TorchScript file "
                   "(torch.jit.script(module).save(FILE)) with its signature: --axis, --input, --output")
        ->type_name("LAYER|FILE")
        ->required();
    add_builtin_options(app, q);
    add_signature_options(app, q.signature,
                          "NAME:DIMS: an output of forward (repeatable, in the order forward returns them), "
                          "equivariant along every axis it has, invariant to every axis it lacks",
                          "NAME:DIMS", [](const std::string& t) { parse_output(t); });
    add_audit_options(app, q.flags,
                      "float64 | float32 | bfloat16 | float16: the module's precision (sets the tolerance; float16 "
                      "has no CPU matrix kernels in LibTorch 1.13). Built-ins: default float64. "
                      "FILE: default the dtype of its floating parameters (float32 if none); given, the module is "
                      "converted to it",
                      "seed of the search and of torch::manual_seed (weights, dropout)");
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
                   "FILE: with --property agreement (or --profile): a TorchScript reference implementation the module "
                   "must agree with, called as the module is (the same signature, --argument and --output-index); "
                   "judged at the coarser of the two modules' precisions unless --dtype is given")
        ->type_name("REF_FILE");
    q.dtype_option = app.get_option("--dtype");
    q.min_len_option = app.get_option("--min-len");
    add_property_options(app, q.flags);
    add_report_option(app, q.flags);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"permcheck audit-torch: audits LibTorch's torch::nn layers, or a TorchScript file over its signature, "
                 "for permutation equivariance and invariance"};
    app.name(kProgram);
    Request q;
    add_options(app, q);
    app.footer("Exit status: 0 holds; 1 violated, nondeterministic, non-finite, batch-dependent or history-dependent; 2 error or bad options; "
               "3 undecided.");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        if (code == 0) return 0;
        report_bad_options(app, kProgram, q.flags,
                           [&q](const AuditResult& r) { return record_of(q, plan_or_default(q), r, 0.0); }, e.what());
        return 2;
    }
    return run(q);
}
