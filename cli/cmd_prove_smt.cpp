// `permcheck prove LAYER --smt [--emit-smt DIR]`: the Z3 prover (proofs/smt.h) on catalog layers, one account per
// layer and axis, the per-generator answers and the witness underneath. cmd_prove.cpp parses the command line and
// calls prove_smt.
#include "cli/commands.h"
#include "cli/options.h"

#include "layers/catalog.h"
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

std::string generator_tag(const Permutation& p) { return p.moved() == 2 ? "transposition" : "rotation"; }

// The comments `head`, then permcheck's answer, then the query: Z3's declarations, assertion and (check-sat).
std::string with_query(const std::string& head, const SmtQuery& q) {
    std::string file = head + "permcheck's answer: " + (q.asked ? answer_name(q.answer) : "not asked") + "\n" + q.smtlib;
    if (q.smtlib.find("(check-sat)") == std::string::npos) file += "(check-sat)\n";
    return file;
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

// "<layer>-<axis><length>...[-d<width>]-along-<axis>-<generator>[-<masks>].smt2", the masks as in
// SmtQuery::assignment without "=" ("pad0100"), so that each mask assignment's query has its own file.
std::string file_name(const SmtResult& r, const AxisProof& a, const SmtQuery& q) {
    std::string name = r.layer;
    for (const auto& [axis, len] : r.lengths) name += "-" + axis + std::to_string(len);
    if (r.d > 0) name += "-d" + std::to_string(r.d);
    name += "-along-" + a.axis + "-" + generator_tag(q.perm);
    if (!q.assignment.empty()) name += "-";
    for (char c : q.assignment)
        if (c != '=') name += c == ',' ? '-' : c;
    return name + ".smt2";
}

// A standalone SMT-LIB 2 file: what it asks in comments, then Z3's declarations, assertion and (check-sat).
std::string smtlib_file(const SmtResult& r, const AxisProof& a, const SmtQuery& q) {
    const SideNames sides = rules_of(a.property).sides(true);
    std::ostringstream s;
    s << "; permcheck: layer " << r.layer << " at";
    for (const auto& [axis, len] : r.lengths) s << " " << axis << " = " << len;
    if (r.d > 0) s << ", d = " << r.d;
    s << ", permutation " << q.perm.cycles() << " of axis " << a.axis << " (the other axes left alone)";
    if (!q.assignment.empty()) s << ", masks " << q.assignment << " (1 = padding; the masks move with their axis)";
    s << "\n; asserts that some output entry of " << sides.lhs << " and " << sides.rhs << " differs (g for P);\n"
      << "; <input>_<k> are the real inputs (row-major), w<k> the weights in draw order, u_exp/u_sqrt/u_tanh/u_relu "
         "uninterpreted.\n"
      << "; unsat proves the " << property_name(a.property) << " along " << a.axis
      << " for this permutation" << (q.assignment.empty() ? "" : " and these masks")
      << " (proofs-notes/signature-layers.md). ";
    return with_query(s.str(), q);
}

// Every query of a layer over named inputs into the --emit-smt directory; one line says how many and where.
// Returns 2 when a file could not be written, else 0.
int write_files(const SmtResult& r, const std::string& dir, std::ostream& out) {
    int written = 0;
    for (const AxisProof& a : r.axes)
        for (const SmtQuery& q : a.queries) {
            const fs::path file = fs::path(dir) / file_name(r, a, q);
            if (!write_file(file, smtlib_file(r, a, q), out)) return 2;
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

// One layer's exit code as `permcheck check` has it: 0 proved, 1 a confirmed witness, 3 undecided.
int verdict_code(SmtVerdict v) {
    switch (v) {
        case SmtVerdict::proved: return 0;
        case SmtVerdict::violated: return 1;
        case SmtVerdict::unknown: return 3;
    }
    return 2;
}

// 2 (an error) outranks 1 (a witness, or with --all an unexpected verdict), which outranks 3 (undecided), then 0.
int worse(int a, int b) {
    for (int code : {2, 1, 3})
        if (a == code || b == code) return code;
    return 0;
}

// A layer with every axis at `length`: its account, its files with --emit-smt. With --all, 0 as the verdict matrix
// expects and 1 not; for a named layer, 0 proved, 1 an axis refuted, 3 undecided; 2 when it cannot be proved at that
// length or a file could not be written; -1 when a stop request cut it short.
int prove_layer(const Family& f, int length, const SmtRequest& req, const SmtOptions& opts, std::ostream& out) {
    SmtResult r;
    try {
        r = smt_prove(f, length, req.d, opts);
    } catch (const std::invalid_argument& e) {
        out << "permcheck: cannot prove " << f.name << " at length " << length << ": " << e.what() << "\n";
        return 2;
    }
    if (req.stop_requested && req.stop_requested()) return -1;
    out << (r.as_expected() ? "as expected  " : "UNEXPECTED   ") << describe(r);
    const int written = req.emit_dir.empty() ? 0 : write_files(r, req.emit_dir, out);
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
        const Family& f = find_layer(req.layers[i]);
        // A layer over named inputs with --all: every axis at length min(--n, 4) (a proof over several axes holds a
        // layer of every axis's length at once; a mask layer is asked once per mask assignment).
        const int length = req.all && !f.takes_width() ? std::min(req.n, 4) : req.n;
        const int layer_code = prove_layer(f, length, req, opts, out);
        if (req.on_layer) req.on_layer(i + 1, total, "");
        if (layer_code < 0) return exit_code(Verdict::interrupted);
        code = worse(code, layer_code);
        out.flush();
    }
    return code;
}

}  // namespace permcheck::cli
