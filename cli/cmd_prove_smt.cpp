// `permcheck prove LAYER --smt [--emit-smt DIR]`: the Z3 prover (proofs/smt.h) on catalog layers, one verdict
// line per layer, the per-generator answers and the witness underneath; layers over named inputs (named, or after
// the others with --all) by proofs/signature_smt.h, one account per layer and axis. cmd_prove.cpp parses the
// command line and calls prove_smt.
#include "cli/commands.h"
#include "cli/options.h"

#include "proofs/signature_smt.h"
#include "proofs/smt.h"
#include "report/report.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace permcheck::cli {

namespace {

namespace fs = std::filesystem;

bool is_signature_layer(const std::string& name) {
    return std::ranges::any_of(signature_catalog(), [&name](const SignatureFamily& f) { return f.name == name; });
}

std::string generator_tag(const Permutation& p) { return p.moved() == 2 ? "transposition" : "rotation"; }

// The comments `head`, then permcheck's answer, then the query: Z3's declarations, assertion and (check-sat).
std::string with_query(const std::string& head, const SmtQuery& q) {
    std::string file = head + "permcheck's answer: " + (q.asked ? answer_name(q.answer) : "not asked") + "\n" + q.smtlib;
    if (q.smtlib.find("(check-sat)") == std::string::npos) file += "(check-sat)\n";
    return file;
}

// A standalone SMT-LIB 2 file: what it asks in comments, then Z3's declarations, assertion and (check-sat).
std::string smtlib_file(const SmtResult& r, const SmtQuery& q) {
    const bool invariance = r.property == Property::invariance;
    std::ostringstream s;
    s << "; permcheck: layer " << r.layer << " at n = " << r.n << ", d = " << r.d << ", permutation " << q.perm.cycles()
      << " (rows: (P x)[i] = x[p[i]])\n"
      << "; asserts that some entry of " << (invariance ? "L(P x) and L(x)" : "L(P x) and P L(x)") << " differs;\n"
      << "; x_i_j are the inputs, w<k> the weights in draw order, u_exp/u_sqrt/u_tanh/u_relu uninterpreted.\n"
      << "; unsat proves the " << (invariance ? "invariance" : "equivariance")
      << " for this permutation (proofs-notes/smt-proofs.md). ";
    return with_query(s.str(), q);
}

// report::write_atomically's file (a reader never sees half of it); false, said on `out`, when it could not be
// written.
bool write_file(const fs::path& path, const std::string& text, std::ostream& out) {
    try {
        report::write_atomically(path, text);
        return true;
    } catch (const std::runtime_error& e) {
        out << "permcheck: " << e.what() << "\n";
        return false;
    }
}

// A layer over named inputs: "<layer>-<axis><length>...-along-<axis>-<generator>[-<masks>].smt2", the masks as
// in SmtQuery::assignment without "=" ("pad0100"), so that each mask assignment's query has its own file.
std::string signature_file_name(const SignatureSmtResult& r, const AxisProof& a, const SmtQuery& q) {
    std::string name = r.layer;
    for (const auto& [axis, len] : r.lengths) name += "-" + axis + std::to_string(len);
    name += "-along-" + a.axis + "-" + generator_tag(q.perm);
    if (!q.assignment.empty()) name += "-";
    for (char c : q.assignment)
        if (c != '=') name += c == ',' ? '-' : c;
    return name + ".smt2";
}

std::string signature_smtlib_file(const SignatureSmtResult& r, const AxisProof& a, const SmtQuery& q) {
    const bool invariance = a.property == Property::invariance;
    std::ostringstream s;
    s << "; permcheck: layer " << r.layer << " at";
    for (const auto& [axis, len] : r.lengths) s << " " << axis << " = " << len;
    s << ", permutation " << q.perm.cycles() << " of axis " << a.axis << " (the other axes left alone)";
    if (!q.assignment.empty()) s << ", masks " << q.assignment << " (1 = padding; the masks move with their axis)";
    s << "\n; asserts that some output entry of " << (invariance ? "L(g x) and L(x)" : "L(g x) and g L(x)")
      << " differs;\n"
      << "; <input>_<k> are the real inputs (row-major), w<k> the weights in draw order, u_exp uninterpreted.\n"
      << "; unsat proves the " << (invariance ? "invariance" : "equivariance") << " along " << a.axis
      << " for this permutation" << (q.assignment.empty() ? "" : " and these masks")
      << " (proofs-notes/signature-layers.md). ";
    return with_query(s.str(), q);
}

// Every query of a layer over named inputs into the --emit-smt directory; one line says how many and where.
// Returns 2 when a file could not be written, else 0.
int write_signature_files(const SignatureSmtResult& r, const std::string& dir, std::ostream& out) {
    int written = 0;
    for (const AxisProof& a : r.axes)
        for (const SmtQuery& q : a.queries) {
            const fs::path file = fs::path(dir) / signature_file_name(r, a, q);
            if (!write_file(file, signature_smtlib_file(r, a, q), out)) return 2;
            ++written;
        }
    out << "  wrote " << written << " SMT-LIB file" << (written == 1 ? "" : "s") << " into " << dir << " ("
        << r.layer << "-*.smt2)\n";
    return 0;
}

// A request may come from elsewhere than the command line (tests): it is answered in the command line's words.
std::string validate(const SmtRequest& req) {
    if (req.layers.empty()) return "no layer to prove; valid layers: " + layer_names();
    for (const std::string& problem : {range_problem(kProveN, req.n), range_problem(kProveD, req.d),
                                       range_problem(kSmtTimeout, req.timeout_seconds)})
        if (!problem.empty()) return problem;
    for (const std::string& name : req.layers) {
        if (is_signature_layer(name)) continue;
        try {
            find_layer(name);
        } catch (const std::invalid_argument& e) {
            return e.what() + std::string("; over named inputs: ") + signature_layer_names();
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
    int written = 0;  // 2 when a file could not be written
    for (const SmtQuery& q : r.queries) {  // each generator's answer, and its SMT-LIB file with --emit-smt
        detail::describe_answer(out, "    " + q.perm.cycles(), q);
        if (req.emit_dir.empty()) continue;
        const fs::path file = fs::path(req.emit_dir) / (name + "-n" + std::to_string(req.n) + "-d" +
                                                         std::to_string(req.d) + "-" + generator_tag(q.perm) + ".smt2");
        if (write_file(file, smtlib_file(r, q), out)) out << "      wrote " << file.string() << "\n";
        else written = 2;
    }
    if (r.counterexample) out << describe_witness(r, "    ");
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

// A layer over named inputs with every axis at `length`: its account, its files with --emit-smt. With --all, 0 as
// the verdict matrix expects and 1 not; for a named layer, 0 proved, 1 an axis refuted, 3 undecided; 2 when it
// cannot be proved at that length or a file could not be written; -1 when a stop request cut it short.
int prove_signature_layer(const SignatureFamily& f, int length, const SmtRequest& req, const SmtOptions& opts,
                          std::ostream& out) {
    SignatureSmtResult r;
    try {
        r = smt_prove_signature(f, length, opts);
    } catch (const std::invalid_argument& e) {
        out << "permcheck: cannot prove " << f.name << " at length " << length << ": " << e.what() << "\n";
        return 2;
    }
    if (req.stop_requested && req.stop_requested()) return -1;
    out << (r.as_expected() ? "as expected  " : "UNEXPECTED   ") << describe(r);
    const int written = req.emit_dir.empty() ? 0 : write_signature_files(r, req.emit_dir, out);
    out.flush();
    if (written != 0) return written;
    if (req.all) return r.as_expected() ? 0 : 1;
    int code = 0;
    for (const AxisProof& a : r.axes) code = worse(code, verdict_code(a.verdict));
    return code;
}

}  // namespace

int prove_smt(const SmtRequest& req, std::ostream& out) {
    std::string problem = validate(req);
    if (problem.empty()) problem = prepare_emit_dir(req);  // only for a valid request
    if (!problem.empty()) {
        out << "permcheck: " << problem << "\n";
        return 2;
    }
    const SmtOptions opts{.timeout_seconds = req.timeout_seconds, .keep_smtlib = !req.emit_dir.empty(),
                          .stop_requested = req.stop_requested};
    int code = 0;
    const int total = static_cast<int>(req.layers.size());
    for (int i = 0; i < total; ++i) {
        if (req.stop_requested && req.stop_requested()) return exit_code(Verdict::interrupted);
        if (req.on_layer) req.on_layer(i, total, req.layers[i]);
        const std::string& name = req.layers[i];
        int layer_code = 0;
        if (is_signature_layer(name)) {  // every axis at --n, as asked
            layer_code = prove_signature_layer(find_signature_layer(name), req.n, req, opts, out);
            if (req.on_layer) req.on_layer(i + 1, total, "");
        } else {
            layer_code = prove_layer(name, req, opts, out, i);
        }
        if (layer_code < 0) return exit_code(Verdict::interrupted);
        code = worse(code, layer_code);
        out.flush();
    }
    if (!req.all) return code;
    // --all: the rational layers over named inputs after the one-tensor ones, every axis at length min(--n, 4) (a
    // proof over several axes holds a layer of every axis's length at once; a mask layer is asked once per mask
    // assignment); an edge_index or max is checked by its rows of the verdict table.
    for (const SignatureFamily& f : signature_catalog()) {
        if (!f.rational()) continue;
        if (req.stop_requested && req.stop_requested()) return exit_code(Verdict::interrupted);
        const int layer_code = prove_signature_layer(f, std::min(req.n, 4), req, opts, out);
        if (layer_code < 0) return exit_code(Verdict::interrupted);
        code = worse(code, layer_code);
    }
    return code;
}

}  // namespace permcheck::cli
