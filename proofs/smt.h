// Symbolic proofs with Z3: a reference family evaluated on symbolic inputs and weights, and for each axis the
// question "is some entry of L(g x) != g L(x) satisfiable?" (L(x) for an output the generator leaves) for the
// generators (0 1) and (0 1 ... len-1) of that axis acting alone, on symbolic inputs and weights with uninterpreted
// exp, sqrt, tanh and relu. unsat for both generators of every axis proves the property for the product of the axes'
// symmetric groups at those lengths, for every real input and weight setting and every choice of the uninterpreted
// functions (proofs-notes/generators.md, proofs-notes/smt-proofs.md). A layer with mask inputs gets one query per
// generator and per mask assignment that pads no line entirely (the masks concrete, moved with their axis; the real
// inputs and weights symbolic): the axis is proved only when every one is unsat (proofs-notes/signature-layers.md).
// Cheap evidence first: the exact witness search (proofs/certificate.h) runs before Z3, because Z3 rarely answers sat
// quickly on nonlinear arithmetic; an axis it refutes is not sent to Z3. Z3 stops at an axis's first query that is
// not unsat (a proof needs all). A sat model becomes the axis's witness when it violates in exact arithmetic with the
// real functions (its "exp" need not be exp), every weight it does not need set to 0. Nothing but unsat answers is
// ever reported as proved. The choice of what to run never reads the family's expectations.
#pragma once

#include "check/check.h"
#include "proofs/witness.h"
#include "scalars/symbolic.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
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
    // A layer with mask inputs: the mask values this query fixes, each mask as name=bits in row-major order,
    // 1 = padding ("pad=0100"); empty for a layer without masks.
    std::string assignment{};
};

enum class SmtVerdict {
    proved,    // every generator's query unsat
    violated,  // a witness confirmed in exact rational arithmetic
    unknown,   // neither: Z3 could not decide and the exact search found no witness
};

struct SmtOptions {
    double timeout_seconds = 60;  // per query
    bool keep_smtlib = false;     // fill SmtQuery::smtlib
    // The exact witness search before Z3 (kWitnessAttempts weight settings and inputs, proofs/identity.h); false
    // skips it (Z3 alone).
    bool witness_search = true;
    std::uint64_t witness_seed = 1;
    // Asked while Z3 works, every 0.1 s: true kills the query, which answers unknown with the reason "interrupted".
    // Reads no signal itself.
    std::function<bool()> stop_requested{};
};

inline constexpr int kMaxProofLength = 64;       // of the axis of a layer of one sequence (built for any width)
inline constexpr int kMaxNamedProofLength = 8;   // of every axis of a layer over named inputs of fixed widths

struct AxisProof {
    std::string axis;
    Property property = Property{"equivariance"};
    bool expected_holds = true;
    SmtVerdict verdict = SmtVerdict::unknown;
    // The axis's generators in order (with masks, each generator over every mask assignment), until one is not
    // unsat; with SmtOptions::keep_smtlib every query, those not sent to Z3 marked `asked = false`.
    std::vector<SmtQuery> queries{};
    // When the exact witness search or a confirmed Z3 model (source z3_model) refuted the axis.
    std::optional<Witness> witness{};
    bool as_expected() const { return verdict == (expected_holds ? SmtVerdict::proved : SmtVerdict::violated); }
};

struct SmtResult {
    std::string layer;
    Lengths lengths;
    int d = 0;                 // the width, for a family built for any (0 otherwise)
    std::vector<AxisProof> axes;  // the family's rows of a property the generators decide
    int mask_assignments = 0;  // the mask assignments each generator is asked for (0: no mask input)
    double seconds = 0;
    bool as_expected() const { return !axes.empty() && std::ranges::all_of(axes, &AxisProof::as_expected); }
};

// Every axis at `length` (2 to 64 for a layer of one sequence, at width d; 2 to 8 for a layer over named inputs, whose
// every axis is that long at once). Throws std::invalid_argument for a family
// that is not rational (an edge_index, max aggregation) or with more than 12 mask entries.
SmtResult smt_prove(const Family& family, int length, int d = 4, const SmtOptions& opts = {});
// Per axis: each query's answer and time, the witness if any, the verdict.
std::string describe(const SmtResult& r);

namespace detail {
// One solver check, run in a child process (smt_isolation.cpp): Z3 4.8.12 overruns its own timeout in some
// nonlinear-arithmetic phases, and only a process can be stopped from outside. Fills q's answer, reason and times
// (the CPU time the child's); on sat, the model's values of `constants`, each rounded to the nearest double, when
// every one has a numeric value. `stop`, when given, is asked every 0.1 s while the child works: true kills it
// (reason "interrupted").
std::optional<std::vector<double>> check_isolated(const z3::solver& solver, const std::vector<Symbolic>& constants,
                                                  double timeout_seconds, const std::function<bool()>& stop,
                                                  SmtQuery& q);
}  // namespace detail

}  // namespace permcheck
