// `permcheck prove LAYER --smt [--emit-smt DIR]`: the Z3 prover (properties/smt.h) on catalog layers, one
// verdict line per layer, the per-generator answers and the witness underneath. cmd_prove.cpp parses the
// command line and calls prove_smt.
#include "cli/commands.h"
#include "cli/options.h"

#include "check/signature_check.h"
#include "proofs/signature_smt.h"
#include "proofs/smt.h"

#include <algorithm>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace permcheck::cli {

namespace {

namespace fs = std::filesystem;

std::string generator_tag(const Permutation& p) { return p.moved() == 2 ? "transposition" : "rotation"; }

// A standalone SMT-LIB 2 file: what it asks in comments, then Z3's declarations, assertion and (check-sat).
std::string smtlib_file(const SmtResult& r, const SmtQuery& q) {
    const bool invariance = r.property == Property::invariance;
    std::ostringstream s;
    s << "; permcheck: layer " << r.layer << " at n = " << r.n << ", d = " << r.d << ", permutation " << q.perm.cycles()
      << " (rows: (P x)[i] = x[p[i]])\n"
      << "; asserts that some entry of " << (invariance ? "L(P x) and L(x)" : "L(P x) and P L(x)") << " differs;\n"
      << "; x_i_j are the inputs, w<k> the weights in draw order, u_exp/u_sqrt/u_tanh/u_relu uninterpreted.\n"
      << "; unsat proves the " << (invariance ? "invariance" : "equivariance")
      << " for this permutation (proofs-notes/smt-proofs.md). permcheck's answer: "
      << (q.asked ? answer_name(q.answer) : "not asked") << "\n"
      << q.smtlib;
    if (q.smtlib.find("(check-sat)") == std::string::npos) s << "(check-sat)\n";
    return s.str();
}

// Written next to its final name, then renamed: a reader never sees half a file.
void write_file(const fs::path& path, const std::string& text) {
    const fs::path tmp = path.string() + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary);
        f << text;
        if (!f.flush()) throw std::runtime_error("cannot write " + tmp.string());
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) throw std::runtime_error("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

// A request may come from elsewhere than the command line (tests): it is answered in the command line's words.
std::string validate(const SmtRequest& req) {
    if (req.layers.empty()) return "no layer to prove; valid layers: " + layer_names();
    for (const std::string& problem : {range_problem(kProveN, req.n), range_problem(kProveD, req.d),
                                       range_problem(kSmtTimeout, req.timeout_seconds)})
        if (!problem.empty()) return problem;
    for (const std::string& name : req.layers) {
        try {
            find_layer(name);
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
    }
    return "";
}

std::string prepare_emit_dir(const SmtRequest& req) {
    if (req.emit_dir.empty()) return "";
    std::error_code ec;
    fs::create_directories(req.emit_dir, ec);
    if (ec || !fs::is_directory(req.emit_dir))
        return "cannot create the --emit-smt directory '" + req.emit_dir + "'" + (ec ? ": " + ec.message() : "");
    return "";
}

// The answer to each generator's query, and its SMT-LIB file with --emit-smt; returns 2 when a file could not
// be written, else 0.
int print_queries(const std::string& name, const SmtRequest& req, const SmtResult& r, std::ostream& out) {
    int code = 0;
    for (const SmtQuery& q : r.queries) {
        out << "    " << q.perm.cycles() << ": " << (q.asked ? answer_name(q.answer) : "not asked");
        if (!q.reason_unknown.empty()) out << " (" << q.reason_unknown << ")";
        if (q.answer == SmtAnswer::sat) out << (q.model_confirmed ? ", model confirmed" : ", model not confirmed");
        if (q.asked) out << ", Z3 " << q.seconds << " s (CPU " << q.cpu_seconds << " s)";
        out << "\n";
        if (req.emit_dir.empty()) continue;
        const fs::path file = fs::path(req.emit_dir) / (name + "-n" + std::to_string(req.n) + "-d" +
                                                         std::to_string(req.d) + "-" + generator_tag(q.perm) + ".smt2");
        try {
            write_file(file, smtlib_file(r, q));
            out << "      wrote " << file.string() << "\n";
        } catch (const std::exception& e) {
            out << "permcheck: " << e.what() << "\n";
            code = 2;
        }
    }
    return code;
}

void print_witness(const SmtResult& r, std::ostream& out) {
    std::istringstream lines(describe_witness(r));
    for (std::string line; std::getline(lines, line);) out << "    " << line << "\n";
}

// One layer's exit code as `permcheck check` has it: 0 proved, 1 a confirmed witness, 3 undecided.
int verdict_code(SmtVerdict v) {
    switch (v) {
        case SmtVerdict::proved: return 0;
        case SmtVerdict::violated: return 1;
        case SmtVerdict::unknown: return 3;
    }
    return 2;
}

// One layer's proof: with --all, 0 as the verdict matrix expects and 1 not; for named layers, verdict_code;
// 2 when it cannot be proved at (n, d) or a file could not be written; -1 when a stop request cut it short.
int prove_layer(const std::string& name, const SmtRequest& req, const SmtOptions& opts, std::ostream& out,
                int index) {
    const auto start = std::chrono::steady_clock::now();
    SmtResult r;
    const auto finished = [&] {  // before anything is printed, so that a progress line can be erased first
        if (req.on_layer) req.on_layer(index + 1, static_cast<int>(req.layers.size()), "");
    };
    try {
        r = smt_prove(find_layer(name), req.n, req.d, opts);
        if (req.stop_requested && req.stop_requested()) return -1;  // cut short: nothing to print
        finished();
    } catch (const std::invalid_argument& e) {
        finished();
        out << "permcheck: cannot prove " << name << " at n = " << req.n << ", d = " << req.d << ": " << e.what()
            << "\n";
        return 2;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out << (r.as_expected() ? "as expected  " : "UNEXPECTED   ") << name << ": " << r.headline() << " ["
        << std::fixed << std::setprecision(2) << seconds << " s]\n"
        << std::defaultfloat;
    const int written = print_queries(name, req, r, out);
    if (r.counterexample) print_witness(r, out);
    if (written != 0) return written;
    if (req.all) return r.as_expected() ? 0 : 1;
    return verdict_code(r.verdict);
}

// 2 (an error) outranks 1 (a witness, or with --all an unexpected verdict), which outranks 3 (undecided), then 0.
int worse(int a, int b) {
    for (int code : {2, 1, 3})
        if (a == code || b == code) return code;
    return 0;
}

}  // namespace

// --all: the rational layers over named inputs after the one-tensor ones, every axis at length min(--n, 4) (a
// proof over several axes holds a layer of every axis's length at once). 0 when each is as expected, 1 not, -1
// when a stop request cut one short.
int prove_signature_layers(const SmtRequest& req, const SmtOptions& opts, std::ostream& out) {
    int code = 0;
    for (const SignatureFamily& f : signature_catalog()) {
        const Signature s = signature_of(f);
        if (!f.rational() ||
            std::any_of(s.inputs.begin(), s.inputs.end(), [](const TensorSpec& t) { return t.kind == TensorKind::mask; }))
            continue;  // a mask: certified by enumerating its assignments (prove --all), no symbolic proof
        if (req.stop_requested && req.stop_requested()) return -1;
        const SignatureSmtResult r = smt_prove_signature(f, std::min(req.n, 4), opts);
        if (req.stop_requested && req.stop_requested()) return -1;
        out << (r.as_expected() ? "as expected  " : "UNEXPECTED   ") << describe(r);
        code = worse(code, r.as_expected() ? 0 : 1);
        out.flush();
    }
    return code;
}

int prove_smt(const SmtRequest& req, std::ostream& out) {
    std::string problem = validate(req);
    if (problem.empty()) problem = prepare_emit_dir(req);  // only for a valid request
    if (!problem.empty()) {
        out << "permcheck: " << problem << "\n";
        return 2;
    }
    SmtOptions opts;
    opts.timeout_seconds = req.timeout_seconds;
    opts.keep_smtlib = !req.emit_dir.empty();
    opts.stop_requested = req.stop_requested;
    int code = 0;
    const int total = static_cast<int>(req.layers.size());
    for (int i = 0; i < total; ++i) {
        if (req.stop_requested && req.stop_requested()) return exit_code(Verdict::interrupted);
        if (req.on_layer) req.on_layer(i, total, req.layers[i]);
        const int layer_code = prove_layer(req.layers[i], req, opts, out, i);
        if (layer_code < 0) return exit_code(Verdict::interrupted);
        code = worse(code, layer_code);
        out.flush();
    }
    if (req.all) {
        const int signature_code = prove_signature_layers(req, opts, out);
        if (signature_code < 0) return exit_code(Verdict::interrupted);
        code = worse(code, signature_code);
    }
    return code;
}

}  // namespace permcheck::cli
