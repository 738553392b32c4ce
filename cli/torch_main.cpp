// permcheck-torch: the LibTorch audits behind `permcheck audit-torch` (audit/cmd_audit_torch.cpp forwards its
// arguments here). Exit 0 holds; 1 violated, nondeterministic or non-finite; 2 error or bad options, as
// `permcheck audit --exec`.
#include "report/report.h"
#include "adapters/torch_adapter.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <sstream>

namespace {

using namespace permcheck;

struct Request {
    std::string layer, mask = "none", dtype = "float64", report_dir;
    bool train = false;
    int dim = 8, heads = 2, min_len = 1, max_len = 8, cases = 100;
    double dropout = 0.1;
    std::uint64_t seed = 1;
};

std::string replay_of(const Request& q) {
    std::ostringstream s;
    s << "permcheck audit-torch " << q.layer << " --mask " << q.mask << (q.train ? " --train" : "") << " --dropout "
      << q.dropout << " --dim " << q.dim << " --heads " << q.heads << " --dtype " << q.dtype << " --min-len " << q.min_len
      << " --max-len " << q.max_len << " --cases " << q.cases << " --seed " << q.seed;
    return s.str();
}

report::Record record_of(const Request& q, const std::string& name, const AuditResult& r, double seconds) {
    report::Record rec = report::record_of(r, name, Property::equivariance, r.dtype, q.seed, replay_of(q));
    rec.details["audit_torch"] = {{"layer", q.layer},   {"mask", q.mask},         {"train", q.train},
                                  {"dropout", q.dropout}, {"dim", q.dim},          {"heads", q.heads},
                                  {"min_len", q.min_len}, {"max_len", q.max_len}, {"evaluations", r.evaluations},
                                  {"seconds", seconds},   {"cases_per_second", seconds > 0 ? r.cases / seconds : 0.0}};
    if (!r.detail.empty()) rec.details["audit_torch"]["finding"] = r.detail;
    return rec;
}

int run(const Request& q) {
    AuditResult r;
    std::string name = "torch layer " + q.layer;
    const auto t0 = std::chrono::steady_clock::now();
    try {
        adapters::TorchOptions to;
        to.layer = adapters::parse_torch_layer(q.layer);
        to.mask = adapters::parse_torch_mask(q.mask);
        to.train = q.train;
        to.dim = q.dim;
        to.heads = q.heads;
        to.dropout = q.dropout;
        to.dtype = parse_arithmetic(q.dtype);
        to.seed = q.seed;
        name = adapters::torch_name(to);
        AuditOptions o;
        o.name = name;
        o.dtype = to.dtype;
        o.d = q.dim;
        o.min_len = q.min_len;
        o.max_len = q.max_len;
        o.cases = q.cases;
        o.seed = q.seed;
        o.amplification = adapters::torch_amplification(to.layer);
        validate(o);
        r = audit(adapters::torch_black_box(to), o);
    } catch (const std::exception& e) {  // bad options, or LibTorch refusing to build the module
        r.verdict = Verdict::error;
        r.error = e.what();
        if (q.dtype == "float32") r.dtype = Arithmetic::float32;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "audit of " << name << ": " << property_name(r.property) << " "
              << verdict_name(r.verdict) << " after " << r.cases << (r.cases == 1 ? " case" : " cases") << ", "
              << r.evaluations << " layer calls, " << seconds << " s";
    if (seconds > 0 && r.cases > 0) std::cout << " (" << r.cases / seconds << " cases/s)";
    std::cout << "\n";
    if (!r.detail.empty()) std::cout << "  " << r.detail << "\n";
    if (r.counterexample) {
        Counterexample ce = *r.counterexample;
        ce.replay = replay_of(q);
        std::cout << describe(ce);
    }
    if (r.verdict == Verdict::error && !r.error.empty()) std::cerr << "permcheck audit-torch: error: " << r.error << "\n";
    int code = exit_code(r.verdict);
    if (!q.report_dir.empty()) {
        try {
            report::write(q.report_dir, record_of(q, name, r, seconds));
        } catch (const std::exception& e) {
            std::cerr << "permcheck audit-torch: cannot write the report: " << e.what() << "\n";
            code = 2;
        }
    }
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"permcheck audit-torch: audits LibTorch's torch::nn layers for permutation equivariance"};
    app.name("permcheck audit-torch");
    Request q;
    app.add_option("layer", q.layer, "mha (torch::nn::MultiheadAttention) | encoder-layer (torch::nn::TransformerEncoderLayer)")
        ->required();
    app.add_option("--mask", q.mask,
                   "none | causal | key-padding (positions whose first feature is negative are padding: the mask "
                   "moves with x) | key-padding-fixed (the last position is padding: it does not)")
        ->capture_default_str();
    app.add_flag("--train", q.train, "train mode (dropout active); default eval");
    app.add_option("--dropout", q.dropout, "dropout probability of the module")->capture_default_str();
    app.add_option("--dim", q.dim, "embed_dim / d_model: features per position")->capture_default_str();
    app.add_option("--heads", q.heads, "attention heads (must divide --dim)")->capture_default_str();
    app.add_option("--dtype", q.dtype, "float64 | float32: the module's precision (sets the tolerance)")->capture_default_str();
    app.add_option("--min-len", q.min_len, "fewest positions of a case")->capture_default_str();
    app.add_option("--max-len", q.max_len, "most positions of a case (at most 100)")->capture_default_str();
    app.add_option("--cases", q.cases, "cases of the audit (each costs two layer calls)")->capture_default_str();
    app.add_option("--seed", q.seed, "seed of the search and of torch::manual_seed (weights, dropout)")->capture_default_str();
    app.add_option("--report", q.report_dir, "write report.json, report.md and report.html into DIR");
    app.footer("Exit status: 0 holds; 1 violated, nondeterministic or non-finite; 2 error or bad options.");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 2;
    }
    return run(q);
}
