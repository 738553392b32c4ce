// Symbolic proofs with Z3 (issue 8): a layer evaluated on symbolic inputs and weights, and the question
// "is L(P x) != P L(x) satisfiable?" for the two generators (0 1) and (0 1 ... n-1) of S_n. Cheap evidence first: the
// exact witness search (the engine's exact check at n positions, a bounded number of cases) runs before Z3, because Z3
// rarely answers sat quickly on nonlinear arithmetic and would spend its whole timeout on a layer that a few exact
// evaluations refute. A confirmed witness ends the attempt; Z3 is asked only when none turned up, and stops at the
// first query that is not unsat (a proof needs both). unsat for both generators proves the property for every real
// input, every real weight setting and every choice of the uninterpreted functions exp, sqrt, tanh and relu, at the
// shape (n, d) asked for (proofs-notes/smt-proofs.md). sat gives a model, which is turned into a concrete input and
// weights and confirmed in exact rational arithmetic with the real functions (its "exp" need not be exp). Nothing but
// two unsat answers is ever reported as proved. The choice of what to run never reads the family's expectations.
#pragma once

#include "check/engine.h"
#include "proofs/witness.h"
#include "scalars/symbolic.h"

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace permcheck {

enum class SmtAnswer { unsat, sat, unknown };
const char* answer_name(SmtAnswer a);

// One query: is "some entry of the two sides differs" satisfiable for this permutation?
struct SmtQuery {
    Permutation perm;
    bool asked = true;  // false: not sent to Z3 (a witness or an earlier answer settled it); smtlib only
    SmtAnswer answer = SmtAnswer::unknown;
    std::string reason_unknown{};  // Z3's reason ("timeout", "incomplete"...) when unknown
    double seconds = 0;            // Z3's check() alone, wall time as Z3 measures it
    double cpu_seconds = 0;        // CPU time of the process that ran the check (the figure on a busy machine)
    std::string smtlib{};          // standalone SMT-LIB 2 (declarations, assertion, check-sat); if asked for
    bool model_confirmed = false;  // sat: the model's input and weights violate in exact arithmetic
    // A layer over named inputs with masks (proofs/signature_smt.h): the mask values this query fixes, each mask
    // as name=bits in row-major order, 1 = padding ("pad=0100"); empty for a layer without masks.
    std::string assignment{};
};

enum class SmtVerdict {
    proved,    // every generator's query unsat
    violated,  // a witness confirmed in exact rational arithmetic
    unknown,   // neither: Z3 could not decide and the exact search found no witness
};

struct SmtResult {
    std::string layer;
    Property property = Property::equivariance;  // equivariance, or invariance for pooled layers
    int n = 0, d = 0;
    bool expected_symmetric = true;
    SmtVerdict verdict = SmtVerdict::unknown;
    std::vector<SmtQuery> queries{};
    std::optional<Counterexample> counterexample{};  // when violated
    // When the witness came from a Z3 model: w0, w1, ... in draw order, every weight the witness does not need
    // set to 0 (each zeroed in turn and kept zero when the exact violation survives).
    std::vector<double> witness_weights{};
    WitnessSource witness_source = WitnessSource::none;  // exact_search or z3_model when violated

    // Symmetric layers must be proved; the others must end with a confirmed witness.
    bool as_expected() const { return verdict == (expected_symmetric ? SmtVerdict::proved : SmtVerdict::violated); }
    // One line: "proved equivariant (all real inputs and weights, uninterpreted exp/sqrt/tanh)", ...
    std::string headline() const;
};

struct SmtOptions {
    double timeout_seconds = 60;  // per query
    bool keep_smtlib = false;     // fill SmtQuery::smtlib
    // The exact witness search before Z3: this many cases at exactly n positions; 0 skips it (Z3 alone). It
    // runs on symmetric layers too, so its cost is bounded by the case count (no shrinking happens when no case
    // fails): 100 exact cases take at most 0.14 s of CPU per catalog layer (the encoder) at n = 8, d = 4.
    // Layers over named inputs run their own fixed search (signature_witnesses); 0 skips it too.
    int witness_cases = 100;
    std::uint64_t witness_seed = 1;
    // Asked between the witness search's cases and, while Z3 works, every 0.1 s: true stops the witness search
    // and kills the query, which answers unknown with the reason "interrupted". Reads no signal itself.
    std::function<bool()> stop_requested{};
};

// Throws std::invalid_argument for n < 2, d < 1 or a width the layer does not accept.
SmtResult smt_prove(const LayerFamily& family, int n, int d, const SmtOptions& opts = {});

// Multi-line details: each query's answer and time, the witness if any.
std::string describe(const SmtResult& r);
// The witness alone (r.counterexample must be set), each line after `indent`: its sizes, permutation, input, the
// largest difference of the two sides, and the weights: the seed that draws them (exact search), or only the
// nonzero ones (Z3 model).
std::string describe_witness(const SmtResult& r, const std::string& indent = "");

namespace detail {
// One solver check, run in a child process (smt_isolation.cpp): Z3 4.8.12 overruns its own timeout in some
// nonlinear-arithmetic phases, and only a process can be stopped from outside. Fills q's answer, reason and times
// (the CPU time the child's); on sat, the model's values of `constants`, each rounded to the nearest double, when
// every one has a numeric value. `stop`, when given, is asked every 0.1 s while the child works: true kills it
// (reason "interrupted").
std::optional<std::vector<double>> check_isolated(const z3::solver& solver, const std::vector<Symbolic>& constants,
                                                  double timeout_seconds, const std::function<bool()>& stop,
                                                  SmtQuery& q);

// What the proofs of one-tensor layers and of layers over named inputs share.
// The query for `perm` of "some entry of the two sides differs", paired up by the subject (proofs/identity.h):
// every entry kept, equal ones too, so that its SMT-LIB text (kept with keep_smtlib) states the whole claim.
// Sent to Z3 only when `asked`, and then on sat the model's values of `constants` in `model`.
template <class Subject, class Sides>
SmtQuery run_query(const Subject& subject, const Sides& lhs, const Sides& rhs, const std::vector<Symbolic>& constants,
                   const Permutation& perm, bool asked, const SmtOptions& opts,
                   std::optional<std::vector<double>>& model) {
    z3::expr_vector differs(smt_context());
    subject.each_pair(lhs, rhs, [&](const auto&, const Symbolic& a, const Symbolic& b) {
        differs.push_back(a.expr() != b.expr());
    });
    z3::solver solver(smt_context());
    solver.add(differs.empty() ? smt_context().bool_val(false) : z3::mk_or(differs));
    SmtQuery q{perm, asked};
    if (opts.keep_smtlib) q.smtlib = solver.to_smt2();
    if (asked) model = check_isolated(solver, constants, opts.timeout_seconds, opts.stop_requested, q);
    return q;
}
// A query's line in an account: `head` (its indent and permutation), then "unsat, Z3 0.12 s (CPU 0.1 s)", "sat,
// model confirmed, ...".
void describe_answer(std::ostream& s, const std::string& head, const SmtQuery& q);
// "w3": the name of symbolic constant k with this prefix.
std::string constant_name(const std::string& prefix, std::size_t k);
// Exact values replaying a model's `values` in order from `next` on; throws std::logic_error when `layer` draws
// more values exactly than it did symbolically.
Draw<Rational> replay_draw(const std::vector<double>& values, std::size_t& next, const std::string& layer);

// A proof's queries (a layer's generators; an axis's generators at every mask assignment) in turn, until one is not
// unsat: no proof is possible then, and the rest's timeouts would buy nothing; with keep_smtlib the rest are built
// for their SMT-LIB text but not asked. `settled`: a witness already refutes the claim, so nothing is asked.
// ask(point, asked) returns the point's query, model_confirmed when its model became a witness. True when every
// query was asked and unsat.
template <class Point, class Ask>
bool ask_in_turn(const std::vector<Point>& points, bool settled, const SmtOptions& opts, std::vector<SmtQuery>& queries,
                 Ask&& ask) {
    bool open = !settled;  // every query so far unsat
    for (const Point& p : points) {
        if (!open && !opts.keep_smtlib) break;
        SmtQuery q = ask(p, open);
        if (!q.asked) q.reason_unknown = settled ? "a witness settled it" : "an earlier query was not unsat";
        settled = settled || q.model_confirmed;
        open = open && q.answer == SmtAnswer::unsat;
        queries.push_back(std::move(q));
    }
    return open && !points.empty();
}
}  // namespace detail

}  // namespace permcheck
