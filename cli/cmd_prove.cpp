// `permcheck prove LAYER | --all`: the certificate of each reference layer (proofs/certificate.h), or with
// --smt the symbolic proof of cmd_prove_smt.cpp.
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/options.h"

#include "proofs/certificate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

namespace permcheck::cli {
namespace {

struct ProveOptions {
    std::string layer;
    bool all = false;
    bool smt = false;
    std::string emit_smt;
    double smt_timeout = SmtRequest{}.timeout_seconds;
    int n = 8, d = 4, trials = 1;
    std::uint64_t seed = 1;
    bool n_given = false;  // --n on the command line (else a layer over named inputs is proved at length 4)
};

// Exit codes as `permcheck check` has them: 0 certified to hold, 1 an exact witness, 3 not certified.
int certificate_code(bool conclusive, bool holds) { return !conclusive ? 3 : holds ? 0 : 1; }

// The certificate of a family, its account printed with its time (a blank line after it with --all). A layer over
// named inputs (fixed widths) is certified with every axis at length min(--n, 8), since a certificate over several
// axes evaluates a layer of every axis's length at once.
Certificate certify_and_print(const Family& f, const ProveOptions& o, ProgressLine& line) {
    const CertificateOptions co{.length = f.takes_width() ? o.n : std::min(o.n, 8), .d = o.d, .trials = o.trials,
                                .seed = o.seed};
    const auto t0 = std::chrono::steady_clock::now();
    const Certificate c = certify(f, co);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    line.clear();
    std::printf("%s  time: %.3f s\n%s", describe(c).c_str(), seconds, o.all ? "\n" : "");
    std::fflush(stdout);
    return c;
}

// Ctrl-C or SIGTERM stops `prove --all` between layers (with --smt, a Z3 query in flight is killed and its layer
// left out): says so, exit 130.
int interrupted(int done, int total) {
    std::fflush(stdout);
    std::fprintf(stderr, "permcheck prove: interrupted by %s after %d of %d %s; the results above are complete\n",
                 StopOnSignal::name().c_str(), done, total, total == 1 ? "layer" : "layers");
    return exit_code(Verdict::interrupted);
}

int prove_certificates(const std::vector<std::string>& layers, const ProveOptions& o, ProgressLine& line) {
    int mismatches = 0, code = 0;
    const int total = static_cast<int>(layers.size());
    for (int i = 0; i < total; ++i) {
        if (StopOnSignal::requested()) return interrupted(i, total);
        if (o.all) line.count("prove", i, total, "layers", layers[i]);
        const Certificate c = certify_and_print(find_layer(layers[i]), o, line);
        mismatches += !c.as_expected();
        code = certificate_code(c.conclusive(), c.holds());
    }
    if (!o.all) return code;
    std::printf("%s\n", mismatches == 0 ? "every layer certified as the verdict matrix expects"
                                        : "some layers were NOT certified as the verdict matrix expects");
    return mismatches == 0 ? 0 : 1;
}

// Z3 proofs (cmd_prove_smt.cpp) of `layers`; a layer over named inputs alone at --n when given, else at 4, as with
// --all (at the default 8 the mask layer alone would ask 510 queries).
int prove_with_smt(const std::vector<std::string>& layers, const ProveOptions& o, bool named_inputs,
                   ProgressLine& line) {
    int done = 0;
    const auto on_layer = [&line, &o, &done](int finished, int total, const std::string& next) {
        done = finished;
        if (next.empty() || !o.all) return line.clear();
        line.count("prove --smt", finished, total, "layers", next);
    };
    const int n = named_inputs && !o.n_given ? std::min(o.n, 4) : o.n;
    const SmtRequest request{.layers = layers, .n = n, .d = o.d, .emit_dir = o.emit_smt,
                             .timeout_seconds = o.smt_timeout, .all = o.all,
                             .stop_requested = &StopOnSignal::requested, .on_layer = on_layer};
    const int code = prove_smt(request, std::cout);
    line.clear();
    const int total = static_cast<int>(layers.size());
    return StopOnSignal::requested() && done < total ? interrupted(done, total) : code;
}

int prove(const ProveOptions& o) {
    if (o.all == !o.layer.empty()) {
        std::fprintf(stderr, "permcheck prove: name one layer or pass --all (valid layers: %s)\n",
                     layer_names().c_str());
        return 2;
    }
    const bool smt = o.smt || !o.emit_smt.empty();
    const bool named_inputs = !o.all && !find_layer(o.layer).takes_width();  // find_layer throws, listing the names
    std::optional<StopOnSignal> stop;  // --all only: a single layer's proof stops at once on Ctrl-C, as before
    if (o.all) stop.emplace();
    ProgressLine line(o.all && progress_enabled());
    std::vector<std::string> layers;
    if (o.all) {
        // The rational layers (the others, with an edge list or over token ids, are checked by their rows of the
        // verdict table).
        for (const Family& f : catalog())
            if (f.rational()) layers.push_back(f.name);
    } else {
        layers.push_back(o.layer);
    }
    return smt ? prove_with_smt(layers, o, named_inputs, line) : prove_certificates(layers, o, line);
}

}  // namespace

void add_prove(CLI::App& app, Outcome& outcome) {
    auto o = std::make_shared<ProveOptions>();
    CLI::App* cmd = app.add_subcommand(
        "prove", "certify equivariance/invariance along every axis for every permutation, input and weight setting "
                 "at one length per axis, or give an exact witness that it fails");
    cmd->add_option("layer", o->layer, "a reference layer (see `permcheck list`)");
    cmd->add_flag("--all", o->all, "every reference layer");
    add_ranged(*cmd, kProveN, o->n, "the length of every axis (a layer over named inputs: at most 8)");
    add_ranged(*cmd, kProveD, o->d, "features per position of a layer of one sequence");
    add_ranged(*cmd, kProveTrials, o->trials, "k, independent random points; |S| is chosen so that (D'/|S|)^k <= 2^-64");
    add_seed(*cmd, o->seed, "seed of the random points and of the witness search");
    cmd->add_flag("--smt", o->smt, "prove with Z3 instead: all real inputs and weights, uninterpreted exp/sqrt/tanh");
    add_ranged(*cmd, kSmtTimeout, o->smt_timeout,
               "with --smt: seconds Z3 may spend on one query before it counts as unknown");
    cmd->add_option("--emit-smt", o->emit_smt,
                    "with --smt: write each query as an SMT-LIB 2 file into DIR (implies --smt); a layer over named "
                    "inputs writes one per axis, generator and mask assignment");
    cmd->callback([o, cmd, &outcome] {
        o->n_given = cmd->count("--n") > 0;
        outcome.exit_code = prove(*o);
    });
}

}  // namespace permcheck::cli
