// permcheck-torch: the LibTorch audits behind `permcheck audit-torch` (cli/cmd_audit_torch.cpp forwards its
// arguments here). Exit 0 holds; 1 violated, nondeterministic or non-finite; 2 error or bad options, as
// `permcheck audit --exec`, whose options, record and printed result it shares (cli/audit_common.h).
#include "cli/audit_common.h"
#include "cli/interrupt.h"
#include "cli/options.h"

#include "adapters/torch_adapter.h"
#include "report/report.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <sstream>

namespace {

using namespace permcheck;
using namespace permcheck::cli;

const std::string kProgram = "permcheck audit-torch";

struct Request {
    adapters::TorchOptions torch;  // dtype and seed are taken from flags
    AuditFlags flags;
};

std::string replay_of(const Request& q, const AuditResult& r) {
    std::ostringstream s;
    s << "permcheck audit-torch " << adapters::torch_layer_name(q.torch.layer) << " --mask "
      << adapters::torch_mask_name(q.torch.mask) << (q.torch.train ? " --train" : "") << " --dropout "
      << q.torch.dropout << " --dim " << q.flags.dim << " --heads " << q.torch.heads << replay_tail(q.flags, r);
    return s.str();
}

report::Record record_of(const Request& q, const std::string& name, const AuditResult& r, double seconds) {
    return audit_record(r, name, Property::equivariance, q.flags, replay_of(q, r), "audit_torch",
                        {{"layer", adapters::torch_layer_name(q.torch.layer)},
                         {"mask", adapters::torch_mask_name(q.torch.mask)},
                         {"train", q.torch.train},
                         {"dropout", q.torch.dropout},
                         {"heads", q.torch.heads}},
                        seconds);
}

// The layer's name before its module is built (and when it cannot be).
std::string plain_name(const Request& q) { return "torch layer " + std::string(adapters::torch_layer_name(q.torch.layer)); }

// The audit under StopOnSignal (Ctrl-C or SIGTERM stops it between cases: verdict interrupted, exit 130), with a
// progress line on a terminal.
AuditResult audit_interruptibly(const BlackBox& box, AuditOptions o, const AuditFlags& flags) {
    AuditResult r;
    {
        const StopOnSignal stop;
        ProgressLine line(progress_enabled());
        o.stop_requested = &StopOnSignal::requested;
        o.on_progress = [&line](const AuditProgress& p) { line.audit(p); };
        r = audit(box, o);
    }
    if (r.verdict == Verdict::interrupted)
        std::cerr << kProgram << ": interrupted by " << StopOnSignal::name() << " after " << r.cases
                  << (r.cases == 1 ? " case" : " cases") << (flags.report_dir.empty() ? "" : "; the report keeps what was run")
                  << "\n";
    return r;
}

int run(Request q) {
    AuditResult r;
    std::string name = plain_name(q);
    const auto t0 = std::chrono::steady_clock::now();
    try {
        q.torch.dim = q.flags.dim;
        q.torch.dtype = requested_dtype(q.flags).value_or(Arithmetic::float64);
        q.torch.seed = q.flags.seed;
        name = adapters::torch_name(q.torch);
        AuditOptions o = audit_options(q.flags);
        o.name = name;
        o.amplification = adapters::torch_amplification(q.torch.layer);
        r = audit_interruptibly(adapters::torch_black_box(q.torch), o, q.flags);
    } catch (const std::exception& e) {  // LibTorch refusing to build the module, e.g. heads not dividing dim
        r = error_result(e.what());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string head = "audit of " + name + ": " + property_name(Property::equivariance);
    print_result(std::cout, std::cerr, kProgram, head, r, seconds, replay_of(q, r));
    return finish(kProgram, q.flags, record_of(q, name, r, seconds), exit_code(r.verdict));
}

void add_options(CLI::App& app, Request& q) {
    using adapters::TorchLayer;
    using adapters::TorchMask;
    q.flags.dim = 8;
    add_choice(app, "layer", q.torch.layer,
               {{"mha", TorchLayer::mha, " (torch::nn::MultiheadAttention)"},
                {"encoder-layer", TorchLayer::encoder_layer, " (torch::nn::TransformerEncoderLayer)"}},
               "mha (torch::nn::MultiheadAttention) | encoder-layer (torch::nn::TransformerEncoderLayer)", "",
               "the torch layer")
        ->required();
    add_choice(app, "--mask", q.torch.mask,
               {{"none", TorchMask::none},
                {"causal", TorchMask::causal},
                {"key-padding", TorchMask::key_padding, " (positions whose first feature is negative are padding)"},
                {"key-padding-fixed", TorchMask::key_padding_fixed, " (the last position is padding)"}},
               "none | causal | key-padding (positions whose first feature is negative are padding: the mask "
               "moves with x) | key-padding-fixed (the last position is padding: it does not)");
    app.add_flag("--train", q.torch.train, "train mode (dropout active); default eval");
    add_ranged(app, kDropout, q.torch.dropout, "dropout probability of the module");
    add_ranged(app, kAuditDim, q.flags.dim, "embed_dim / d_model: features per position");
    add_ranged(app, kTorchHeads, q.torch.heads, "attention heads (must divide --dim)");
    add_audit_options(app, q.flags, "float64 | float32: the module's precision (sets the tolerance)",
                      "seed of the search and of torch::manual_seed (weights, dropout)");
    add_report_option(app, q.flags);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"permcheck audit-torch: audits LibTorch's torch::nn layers for permutation equivariance"};
    app.name(kProgram);
    Request q;
    add_options(app, q);
    app.footer("Exit status: 0 holds; 1 violated, nondeterministic or non-finite; 2 error or bad options.");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        if (code == 0) return 0;
        report_bad_options(app, kProgram, q.flags,
                           [&q](const AuditResult& r) { return record_of(q, plain_name(q), r, 0.0); }, e.what());
        return 2;
    }
    return run(q);
}
