// Symbolic proofs with Z3 (issue 8, proofs-notes/smt-proofs.md): every layer the verdict matrix calls
// equivariant or invariant is proved; no other layer and no planted mutant ever is.
#include "cases/signature.h"
#include "cli/commands.h"
#include "layers/layers.h"
#include "layers/make_family.h"
#include "proofs/smt.h"
#include "tests/support/process.h"
#include "tests/support/sequence.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace permcheck {
namespace {

// A non-equivariant layer's query may run to the limit, and then the exact witness search must take over:
// a short limit keeps those tests short.
SmtOptions test_options() {
    SmtOptions o;
    o.timeout_seconds = 3;
    return o;
}

// Proofs of symmetric layers take well under a second of CPU, but Z3's limit is wall time, and on a machine
// shared by many builds a second of CPU can take ten: a generous limit, so a proof is never cut off.
SmtOptions proof_options() {
    SmtOptions o = test_options();
    o.timeout_seconds = 300;
    return o;
}

// The catalog's layers of one sequence the theory calls equivariant or invariant (`symmetric`), or not.
std::vector<std::string> catalog_names(bool symmetric) {
    std::vector<std::string> names;
    for (const Family& f : test::sequence_families())
        if (f.expected_to_hold(test::is_pooled(f) ? Property{"invariance"} : Property{"equivariance"}) == symmetric)
            names.push_back(f.name);
    return names;
}

// A proof's only axis (a layer of one sequence).
const AxisProof& only_axis(const SmtResult& r) {
    if (r.axes.size() != 1) throw std::logic_error(r.layer + " has " + std::to_string(r.axes.size()) + " axes");
    return r.axes.front();
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
    std::string s = info.param;
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return s;
}

// ---------------------------------------------------------------------------------------------------------
// The symbolic scalar

TEST(SymbolicScalar, FromDoubleIsTheExactRationalOfTheDouble) {
    const Symbolic tenth = sc::from_double<Symbolic>(0.1);
    ASSERT_TRUE(tenth.is_numeral());
    EXPECT_EQ(std::string(Z3_get_numeral_string(smt_context(), tenth.expr())), "3602879701896397/36028797018963968");
}

TEST(SymbolicScalar, NumeralsFoldSoConstantsStayNumerals) {
    const Symbolic v = Symbolic(2) * Symbolic(3) + Symbolic(1) / Symbolic(4);
    EXPECT_TRUE(v == sc::from_double<Symbolic>(6.25)) << v.expr();
    const Symbolic a = symbolic_constant("a");
    EXPECT_TRUE(a * Symbolic(1) + Symbolic(0) == a);  // Eigen's 0 + 1 * (...) leaves no trace
}

TEST(SymbolicScalar, EqualityIsStructuralNotNumeric) {
    const Symbolic a = symbolic_constant("a"), b = symbolic_constant("b");
    EXPECT_TRUE(a + b == a + b);
    EXPECT_FALSE(a + b == b + a);  // equal reals, different terms: Eigen only uses == for shortcuts
}

TEST(SymbolicScalar, ExpIsUninterpretedSoExpOfASumNeedNotBeAProduct) {
    // sat: some function "exp" has exp(a + b) != exp(a) exp(b). A proof that never uses such a law holds for
    // every elementwise function, the real exp among them.
    const Symbolic a = symbolic_constant("a"), b = symbolic_constant("b");
    z3::solver s(smt_context());
    s.add(sc::exp(a + b).expr() != (sc::exp(a) * sc::exp(b)).expr());
    EXPECT_EQ(s.check(), z3::sat);
}

TEST(SymbolicScalar, MaxIsTheRealMaximumSymmetricAndAssociative) {
    // unsat: max pooling's invariance needs exactly these two laws, which an uninterpreted symbol lacks.
    const Symbolic a = symbolic_constant("a"), b = symbolic_constant("b"), c = symbolic_constant("c");
    z3::solver s(smt_context());
    s.add(sc::max(a, b).expr() != sc::max(b, a).expr() ||
          sc::max(sc::max(a, b), c).expr() != sc::max(a, sc::max(b, c)).expr());
    EXPECT_EQ(s.check(), z3::unsat);
}

TEST(SymbolicScalar, ANonNumeralHasNoDoubleValue) {
    EXPECT_THROW(sc::to_double(symbolic_constant("a")), std::domain_error);
    EXPECT_EQ(sc::to_double(sc::from_double<Symbolic>(-0.375)), -0.375);
}

// ---------------------------------------------------------------------------------------------------------
// The catalog, against the verdict matrix

class SymmetricCatalogLayer : public testing::TestWithParam<std::string> {};

TEST_P(SymmetricCatalogLayer, IsProvedForAllRealInputsAndWeights) {
    const Family& subject = find_layer(GetParam());
    for (const auto& [n, d] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{6, 4}}) {
        const SmtResult r = smt_prove(subject, n, d, proof_options());
        const AxisProof& a = only_axis(r);
        EXPECT_EQ(a.verdict, SmtVerdict::proved) << describe(r);
        // At length 2 both generators are (0 1), asked once.
        ASSERT_EQ(a.queries.size(), n == 2 ? 1u : 2u) << describe(r);
        for (const SmtQuery& q : a.queries) EXPECT_EQ(q.answer, SmtAnswer::unsat) << q.perm.cycles();
        EXPECT_FALSE(a.witness);
        EXPECT_TRUE(r.as_expected());
        EXPECT_NE(describe(r).find("n: proved " + std::string(property_adjective(a.property))), std::string::npos)
            << describe(r);
    }
}

INSTANTIATE_TEST_SUITE_P(Smt, SymmetricCatalogLayer, testing::ValuesIn(catalog_names(true)), test_name);

class AsymmetricCatalogLayer : public testing::TestWithParam<std::string> {};

TEST_P(AsymmetricCatalogLayer, IsNeverProvedAndGetsAnExactWitness) {
    const SmtResult r = smt_prove(find_layer(GetParam()), 4, 2, test_options());
    const AxisProof& a = only_axis(r);
    EXPECT_NE(a.verdict, SmtVerdict::proved) << describe(r);
    EXPECT_EQ(a.verdict, SmtVerdict::violated) << describe(r);
    ASSERT_TRUE(a.witness) << describe(r);
    EXPECT_NE(a.witness->lhs, a.witness->rhs) << describe(r);
    EXPECT_GT(a.witness->max_abs_diff, 0.0) << describe(r);
    EXPECT_EQ(r.lengths.at("n"), 4);
    EXPECT_EQ(r.d, 2);
    EXPECT_TRUE(r.as_expected());
    EXPECT_NE(describe(r).find("n: not " + std::string(property_adjective(a.property))), std::string::npos)
        << describe(r);
    // Cheap evidence first: the exact witness search settles every catalog layer that is not symmetric, so Z3
    // is never asked to spend its timeout on it.
    EXPECT_EQ(a.witness->source, WitnessSource::exact_search) << describe(r);
    EXPECT_TRUE(a.queries.empty()) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Smt, AsymmetricCatalogLayer, testing::ValuesIn(catalog_names(false)), test_name);

TEST(SmtWitness, AZ3ModelOfCausalAttentionIsConfirmedWithTheRealExp) {
    // Causal attention at n = 2 is small enough that Z3 finds a model at once. The model's u_exp is some
    // function, not exp; the witness counts only because the exact evaluation with exp disagrees too. The
    // witness search is switched off, or it would settle the layer before Z3 is asked.
    SmtOptions opts = test_options();
    opts.witness_search = false;
    opts.timeout_seconds = 300;  // the model takes about 0.6 s of CPU; the limit only guards a loaded machine
    const SmtResult r = smt_prove(find_layer("causal-attention"), 2, 1, opts);
    const AxisProof& a = only_axis(r);
    ASSERT_EQ(a.verdict, SmtVerdict::violated) << describe(r);
    ASSERT_TRUE(a.witness) << describe(r);
    ASSERT_EQ(a.witness->source, WitnessSource::z3_model) << describe(r);
    EXPECT_TRUE(a.queries.front().model_confirmed);
    EXPECT_EQ(a.witness->weights.size(), 4u);  // wq, wk, wv, wo, each 1 x 1
    EXPECT_NE(a.witness->lhs, a.witness->rhs);
    // The weights the witness does not need are zeroed, and the witness with the rest still violates exactly.
    const std::string text = describe(r);
    EXPECT_NE(text.find("n = 2, d = 1"), std::string::npos) << text;
    EXPECT_NE(text.find("(those not listed are 0)"), std::string::npos) << text;
    for (std::size_t k = 0; k < a.witness->weights.size(); ++k)
        EXPECT_EQ(text.find("w" + std::to_string(k) + " = ") != std::string::npos, a.witness->weights[k] != 0) << text;
}

TEST(SmtWitness, AModelWithManyWeightsShowsOnlyThoseTheWitnessNeeds) {
    // attention+learned at n = 3, d = 2 (issue 14): every weight of the model was printed, the position table's
    // included, though a witness rarely needs them all.
    SmtOptions opts = test_options();
    opts.witness_search = false;
    opts.timeout_seconds = 300;
    const SmtResult r = smt_prove(find_layer("attention+learned"), 3, 2, opts);
    const AxisProof& a = only_axis(r);
    ASSERT_TRUE(a.witness) << describe(r);
    ASSERT_EQ(a.witness->source, WitnessSource::z3_model) << describe(r);
    std::size_t nonzero = 0;
    for (double w : a.witness->weights) nonzero += w != 0;
    EXPECT_LT(nonzero, a.witness->weights.size()) << describe(r);
    EXPECT_NE(a.witness->lhs, a.witness->rhs);
}

TEST(SmtWitness, TheWitnessSearchRunsBeforeZ3OnAUsersOwnLayerToo) {
    // A family outside the catalog whose expectation claims symmetry: what runs never depends on that claim,
    // so the witness search still refutes it and Z3 is not asked.
    const Family liar = make_family("liar", Output::sequence,
                                    []<class S>(std::type_identity<S>, Eigen::Index, Draw<S>&, long) {
        return test::SequenceFn<S>([](const Mat<S>& x) {
            Mat<S> y = x;
            for (Eigen::Index j = 0; j < y.cols(); ++j) y(0, j) += S(1);
            return y;
        });
    }, {{Property{"equivariance"}, "n", true}});
    const SmtResult r = smt_prove(liar, 4, 2, test_options());
    const AxisProof& a = only_axis(r);
    EXPECT_EQ(a.verdict, SmtVerdict::violated) << describe(r);
    ASSERT_TRUE(a.witness);
    EXPECT_EQ(a.witness->source, WitnessSource::exact_search);
    EXPECT_TRUE(a.queries.empty());
    EXPECT_FALSE(r.as_expected());
}

// ---------------------------------------------------------------------------------------------------------
// Planted mutants: single-head attention with one bug each. None may ever be proved.

enum class Mutant { marker_at_position_0, scale_at_position_0, off_by_one_mask, leak_from_position_4 };

const char* mutant_name(Mutant m) {
    switch (m) {
        case Mutant::marker_at_position_0: return "marker-at-position-0";
        case Mutant::scale_at_position_0: return "scale-at-position-0";
        case Mutant::off_by_one_mask: return "off-by-one-mask";
        case Mutant::leak_from_position_4: return "leak-from-position-4";
    }
    return "?";
}

// Full attention whose key loop stops one short: the last position is never attended to.
template <class S> Mat<S> attention_skipping_last_key(const Attention<S>& a, const Mat<S>& x) {
    const Eigen::Index n = x.rows();
    const Mat<S> s = a.scores(x, 0);
    Mat<S> w = Mat<S>::Zero(n, n);
    for (Eigen::Index i = 0; i < n; ++i) {
        S total = S(0);
        for (Eigen::Index j = 0; j + 1 < n; ++j) {  // the bug: j < n
            w(i, j) = sc::exp<S>(s(i, j));
            total += w(i, j);
        }
        for (Eigen::Index j = 0; j + 1 < n; ++j) w(i, j) /= total;
    }
    const Mat<S> v = x * a.wv;
    const Mat<S> mixed = w * v;
    Mat<S> y = mixed * a.wo;
    return y;
}

Family mutant_family(Mutant m) {
    return make_family(mutant_name(m), Output::sequence,
                       [m]<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) -> test::SequenceFn<S> {
        const Attention<S> a = Attention<S>::random({d, 1, false}, draw);
        switch (m) {
            case Mutant::marker_at_position_0:
                return [a](const Mat<S>& x) {
                    Mat<S> marked = x;
                    for (Eigen::Index j = 0; j < x.cols(); ++j) marked(0, j) += S(1);
                    return a(marked);
                };
            case Mutant::scale_at_position_0:
                return [a](const Mat<S>& x) {
                    Mat<S> y = a(x);
                    for (Eigen::Index j = 0; j < y.cols(); ++j) y(0, j) *= sc::from_double<S>(1.5);
                    return y;
                };
            case Mutant::off_by_one_mask:
                return [a](const Mat<S>& x) { return attention_skipping_last_key<S>(a, x); };
            case Mutant::leak_from_position_4:
                return [a](const Mat<S>& x) {
                    Mat<S> y = a(x);
                    for (Eigen::Index i = 4; i < x.rows(); ++i)
                        for (Eigen::Index j = 0; j < x.cols(); ++j) y(i, j) += x(i, j) / S(2);
                    return y;
                };
        }
        throw std::logic_error("unknown mutant");
    }, {{Property{"equivariance"}, "n", false}});
}

class PlantedMutant : public testing::TestWithParam<Mutant> {};

TEST_P(PlantedMutant, IsNeverProvedAndGetsAnExactWitness) {
    const SmtResult r = smt_prove(mutant_family(GetParam()), 6, 2, test_options());
    const AxisProof& a = only_axis(r);
    EXPECT_NE(a.verdict, SmtVerdict::proved) << describe(r);
    EXPECT_EQ(a.verdict, SmtVerdict::violated) << describe(r);
    ASSERT_TRUE(a.witness) << describe(r);
    EXPECT_NE(a.witness->lhs, a.witness->rhs) << describe(r);
    EXPECT_EQ(r.lengths.at("n"), 6);
}

INSTANTIATE_TEST_SUITE_P(Smt, PlantedMutant,
                         testing::Values(Mutant::marker_at_position_0, Mutant::scale_at_position_0,
                                         Mutant::off_by_one_mask, Mutant::leak_from_position_4),
                         [](const testing::TestParamInfo<Mutant>& info) {
                             std::string s = mutant_name(info.param);
                             for (char& c : s)
                                 if (c == '-') c = '_';
                             return s;
                         });

TEST(PlantedMutant, LeakFromPosition4IsInvisibleAtFourPositionsSoAProofHoldsOnlyForItsShape) {
    // At n = 4 the leak never fires and the layer is plain attention: a true proof, of that shape only.
    const Family leak = mutant_family(Mutant::leak_from_position_4);
    EXPECT_EQ(only_axis(smt_prove(leak, 4, 2, proof_options())).verdict, SmtVerdict::proved);
    EXPECT_NE(only_axis(smt_prove(leak, 5, 2, test_options())).verdict, SmtVerdict::proved);
}

// ---------------------------------------------------------------------------------------------------------
// The command's handler and the emitted SMT-LIB files

// Runs a command, returns its standard output.
std::string run(const std::string& command) {
    const permcheck::test::Scratch cwd("smt-command");
    return permcheck::test::run_shell(command, cwd.dir()).out;
}

std::filesystem::path fresh_dir(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / ("permcheck-test-smt-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    return dir;
}

TEST(SmtLibFiles, EmittedProofsRecheckUnsatWithTheZ3CommandLineTool) {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/z3")) << "Debian's z3 package is needed (scripts/install-deps)";
    const auto dir = fresh_dir("unsat");
    cli::SmtRequest req;
    req.layers = {"attention", "encoder", "attention-max-pool", "deepsets"};
    req.n = 3;
    req.d = 2;
    req.emit_dir = dir.string();
    req.timeout_seconds = 300;
    std::ostringstream out;
    ASSERT_EQ(cli::prove_smt(req, out), 0) << out.str();
    EXPECT_NE(out.str().find("proved equivariant (all real inputs and weights, uninterpreted exp/sqrt/tanh)"),
              std::string::npos)
        << out.str();
    EXPECT_NE(out.str().find("proved invariant"), std::string::npos) << out.str();
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        ++files;
        EXPECT_EQ(entry.path().extension(), ".smt2");
        EXPECT_EQ(run("/usr/bin/z3 -T:120 '" + entry.path().string() + "'"), "unsat\n") << entry.path();
    }
    EXPECT_EQ(files, 8);  // four layers, two generators each
    std::filesystem::remove_all(dir);
}

TEST(SmtLibFiles, AnEmittedQueryOfANonEquivariantLayerDoesNotRecheckUnsat) {
    const auto dir = fresh_dir("sat");
    cli::SmtRequest req;
    req.layers = {"causal-attention"};
    req.n = 2;
    req.d = 1;
    req.emit_dir = dir.string();
    req.timeout_seconds = 3;
    std::ostringstream out;
    EXPECT_EQ(cli::prove_smt(req, out), 1) << out.str();  // 1: a confirmed witness, as `permcheck check`
    EXPECT_NE(out.str().find("not equivariant"), std::string::npos) << out.str();
    // The witness search settled it before Z3; the query is still written, and says it was not asked.
    EXPECT_NE(out.str().find("not asked"), std::string::npos) << out.str();
    const auto file = dir / "causal-attention-n2-d1-along-n-transposition.smt2";
    ASSERT_TRUE(std::filesystem::exists(file)) << out.str();
    const std::string answer = run("/usr/bin/z3 -T:20 '" + file.string() + "'");
    EXPECT_NE(answer, "unsat\n");
    EXPECT_TRUE(answer == "sat\n" || answer == "unknown\n" || answer == "timeout\n") << answer;
    std::filesystem::remove_all(dir);
}

TEST(ProveSmtCommand, ExitCodesFollowCheck0Proved1Witness3Undecided) {
    cli::SmtRequest req;
    req.n = 3;
    req.d = 2;
    req.timeout_seconds = 300;
    std::ostringstream proved, witness, undecided, all;
    req.layers = {"attention"};
    EXPECT_EQ(cli::prove_smt(req, proved), 0) << proved.str();

    req.layers = {"causal-attention"};
    EXPECT_EQ(cli::prove_smt(req, witness), 1) << witness.str();
    // The witness with its sizes and its weight seed; no "case -1", no weight dump.
    EXPECT_NE(witness.str().find("causal-attention at n = 3, d = 2"), std::string::npos) << witness.str();
    EXPECT_NE(witness.str().find("n witness (exact witness search, Z3 not asked): permutation"), std::string::npos)
        << witness.str();
    EXPECT_NE(witness.str().find("dyadic weights of seed"), std::string::npos) << witness.str();
    EXPECT_EQ(witness.str().find("case -1"), std::string::npos) << witness.str();

    // The encoder is equivariant, so no witness exists, and Z3 cannot prove it in a millisecond: undecided.
    req.layers = {"encoder"};
    req.n = 6;
    req.d = 4;
    req.timeout_seconds = 0.001;
    EXPECT_EQ(cli::prove_smt(req, undecided), 3) << undecided.str();
    EXPECT_NE(undecided.str().find("not proved"), std::string::npos) << undecided.str();

    // --all is judged against the verdict matrix, like the verdict table: a witness for causal attention is
    // what the theory expects.
    req.all = true;
    req.n = 3;
    req.d = 2;
    req.timeout_seconds = 300;
    req.layers = {"attention", "causal-attention"};
    EXPECT_EQ(cli::prove_smt(req, all), 0) << all.str();
}

TEST(ProveSmtCommand, BadInputIsRejectedWithExitCode2AndSaysWhatWasExpected) {
    cli::SmtRequest req;
    std::ostringstream unknown_layer;
    req.layers = {"attentoin"};
    EXPECT_EQ(cli::prove_smt(req, unknown_layer), 2);
    EXPECT_NE(unknown_layer.str().find("valid layers"), std::string::npos) << unknown_layer.str();

    std::ostringstream one_position;
    req.layers = {"attention"};
    req.n = 1;
    EXPECT_EQ(cli::prove_smt(req, one_position), 2);
    EXPECT_NE(one_position.str().find("--n must be between 2 and 64"), std::string::npos) << one_position.str();

    std::ostringstream odd_width;
    req.layers = {"mha"};
    req.n = 2;
    req.d = 3;
    EXPECT_EQ(cli::prove_smt(req, odd_width), 2);
    EXPECT_NE(odd_width.str().find("not a multiple of the head count"), std::string::npos) << odd_width.str();

    std::ostringstream bad_timeout;
    req.layers = {"linear"};
    req.d = 2;
    req.timeout_seconds = 0;
    EXPECT_EQ(cli::prove_smt(req, bad_timeout), 2);
    EXPECT_NE(bad_timeout.str().find("timeout"), std::string::npos) << bad_timeout.str();
}

}  // namespace
}  // namespace permcheck

// ------------------------------------------------------------------ layers over named inputs (issue 12)

// Every rational layer over named inputs: each axis that holds proved by unsat answers for its two generators (with
// a mask, for each generator at every mask assignment), each broken axis refuted by the exact witness search before
// Z3 (proofs-notes/signature-audit.md).
TEST(SignatureSmt, EveryRationalLayerOverNamedInputsIsProvedOrRefutedAsExpected) {
    int proved_axes = 0, refuted_axes = 0;
    for (const permcheck::Family& f : permcheck::catalog()) {
        if (!f.rational() || f.takes_width()) continue;  // an edge_index or max: no symbolic proof
        const permcheck::SmtResult r = permcheck::smt_prove(f, 3);
        EXPECT_TRUE(r.as_expected()) << permcheck::describe(r);
        const std::size_t per_generator = r.mask_assignments > 0 ? static_cast<std::size_t>(r.mask_assignments) : 1u;
        for (const permcheck::AxisProof& a : r.axes) {
            if (a.expected_holds) {
                ++proved_axes;
                ASSERT_EQ(a.queries.size(), 2u * per_generator) << permcheck::describe(r);
                for (const permcheck::SmtQuery& q : a.queries) EXPECT_EQ(q.answer, permcheck::SmtAnswer::unsat);
                EXPECT_FALSE(a.witness.has_value());
            } else {
                ++refuted_axes;
                EXPECT_EQ(a.verdict, permcheck::SmtVerdict::violated);
                EXPECT_TRUE(a.queries.empty()) << "Z3 asked although a witness settled it";
                ASSERT_TRUE(a.witness.has_value());
                EXPECT_EQ(a.witness->axis, a.axis) << permcheck::describe(*a.witness);
                EXPECT_NE(permcheck::describe(*a.witness).find("of axis " + a.axis), std::string::npos);
            }
        }
    }
    EXPECT_EQ(proved_axes, 13);
    EXPECT_EQ(refuted_axes, 3);
}

// The key-padding mask: one query per generator and per mask assignment that pads no line entirely, 2^n - 1 of
// them at length n, each a different assignment, all unsat, the mask named in each.
TEST(SignatureSmt, TheKeyPaddingMaskIsProvedOncePerGeneratorAndMaskAssignment) {
    const permcheck::SmtResult r =
        permcheck::smt_prove(permcheck::find_layer("attention+key-padding-mask"), 3);
    ASSERT_EQ(r.axes.size(), 1u);
    const permcheck::AxisProof& a = r.axes.front();
    EXPECT_EQ(a.verdict, permcheck::SmtVerdict::proved) << permcheck::describe(r);
    EXPECT_EQ(r.mask_assignments, 7);
    ASSERT_EQ(a.queries.size(), 14u) << permcheck::describe(r);
    std::set<std::pair<std::string, std::string>> asked;
    for (const permcheck::SmtQuery& q : a.queries) {
        EXPECT_TRUE(q.asked);
        EXPECT_EQ(q.answer, permcheck::SmtAnswer::unsat) << q.assignment;
        ASSERT_EQ(q.assignment.rfind("pad=", 0), 0u) << q.assignment;
        EXPECT_EQ(q.assignment.size(), 7u) << q.assignment;
        EXPECT_NE(q.assignment, "pad=111") << "an assignment that pads every key has no softmax";
        asked.insert({q.perm.cycles(), q.assignment});
    }
    EXPECT_EQ(asked.size(), 14u) << "every (generator, assignment) pair once";
    EXPECT_TRUE(asked.count({"(0 1)", "pad=000"}));
    EXPECT_TRUE(asked.count({"(0 1 2)", "pad=110"}));
    const std::string text = permcheck::describe(r);
    EXPECT_NE(text.find("7 mask assignments"), std::string::npos) << text;
    EXPECT_NE(text.find("unsat for 7 mask assignments"), std::string::npos) << text;
    EXPECT_NE(text.find("proved equivariant (all real inputs and weights, every mask assignment"), std::string::npos)
        << text;
}

// Z3 cannot decide a mask query in a millisecond: the axis is not proved, and the account names the generator and
// the mask assignment of the query that was not unsat (the first one asked, no padding), and asks no other.
TEST(SignatureSmt, AnUndecidedMaskQueryNamesItsGeneratorAndAssignment) {
    permcheck::SmtOptions hurried;
    hurried.timeout_seconds = 0.001;
    const permcheck::SmtResult r =
        permcheck::smt_prove(permcheck::find_layer("attention+key-padding-mask"), 4, 4, hurried);
    const permcheck::AxisProof& a = r.axes.front();
    EXPECT_EQ(a.verdict, permcheck::SmtVerdict::unknown) << permcheck::describe(r);
    ASSERT_FALSE(a.queries.empty()) << permcheck::describe(r);
    // The first undecided query ends the axis. Z3 checks its deadline only now and then, so on a busy machine it
    // may still settle an easy assignment (unsat) before one times out: the undecided one is not always the first.
    const permcheck::SmtQuery& undecided = a.queries.back();
    EXPECT_EQ(undecided.answer, permcheck::SmtAnswer::unknown);
    for (std::size_t k = 0; k + 1 < a.queries.size(); ++k)
        EXPECT_EQ(a.queries[k].answer, permcheck::SmtAnswer::unsat) << k;
    const std::string text = permcheck::describe(r);
    EXPECT_NE(text.find("n (0 1) masks " + undecided.assignment + ": unknown ("), std::string::npos) << text;
    EXPECT_EQ(undecided.assignment.rfind("pad=", 0), 0u) << undecided.assignment;
    EXPECT_NE(text.find("n: not proved"), std::string::npos) << text;
}

std::string read_text(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Plants a harness bug for one test and takes it out again, whatever the test does.
struct PlantedHarnessBug {
    explicit PlantedHarnessBug(permcheck::test_only::HarnessBug bug) { permcheck::test_only::plant_harness_bug(bug); }
    ~PlantedHarnessBug() { permcheck::test_only::plant_harness_bug(permcheck::test_only::HarnessBug::none); }
    PlantedHarnessBug(const PlantedHarnessBug&) = delete;
    PlantedHarnessBug& operator=(const PlantedHarnessBug&) = delete;
};

// A prover that never fails is a defect: with the mask left where it was (a planted bug in permcheck's own moving of
// inputs) the layer is not equivariant under the permutation the harness applies. Z3 alone (no witness search)
// must not answer unsat at a padded assignment; it answers sat there (in a fresh process, as ctest runs it, at
// once), and the model replays exactly as the axis's witness. Z3's nonlinear search depends on the state of the
// process (after other tests it has run to its limit once in ten runs), so an unknown is tolerated, a proof or an
// unconfirmed model never. With the witness search, the bug is refuted every time.
TEST(SignatureSmt, AMaskLeftInPlaceByAPlantedHarnessBugIsNeverProvedAndZ3sModelReplaysAsAWitness) {
    const permcheck::Family& f = permcheck::find_layer("attention+key-padding-mask");
    permcheck::SmtOptions z3_alone;
    z3_alone.witness_search = false;
    z3_alone.timeout_seconds = 30;
    permcheck::SmtResult r;
    {
        const PlantedHarnessBug planted(permcheck::test_only::HarnessBug::mask_wrong_axis);
        r = permcheck::smt_prove(f, 2, 4, z3_alone);
    }
    ASSERT_EQ(r.axes.size(), 1u);
    const permcheck::AxisProof& a = r.axes.front();
    EXPECT_NE(a.verdict, permcheck::SmtVerdict::proved) << permcheck::describe(r);
    EXPECT_FALSE(r.as_expected()) << permcheck::describe(r);
    ASSERT_FALSE(a.queries.empty());
    const permcheck::SmtQuery& last = a.queries.back();
    EXPECT_NE(last.answer, permcheck::SmtAnswer::unsat) << permcheck::describe(r);
    EXPECT_NE(last.assignment, "pad=00") << "a bug in moving a mask needs padding";
    if (last.answer == permcheck::SmtAnswer::sat) {
        EXPECT_TRUE(last.model_confirmed) << permcheck::describe(r);
        EXPECT_EQ(a.verdict, permcheck::SmtVerdict::violated) << permcheck::describe(r);
        ASSERT_TRUE(a.witness.has_value());
        EXPECT_EQ(a.witness->source, permcheck::WitnessSource::z3_model);
        EXPECT_EQ(a.witness->masks, last.assignment);
        EXPECT_NE(permcheck::describe(*a.witness).find("masks " + last.assignment), std::string::npos);
        EXPECT_NE(permcheck::describe(r).find("witness (Z3 model)"), std::string::npos) << permcheck::describe(r);
    } else {
        EXPECT_TRUE(last.reason_unknown == "timeout" || last.reason_unknown == "canceled") << permcheck::describe(r);
    }

    // With the witness search (the default), the same planted bug is refuted before Z3 is asked.
    {
        const PlantedHarnessBug planted(permcheck::test_only::HarnessBug::mask_wrong_axis);
        r = permcheck::smt_prove(f, 3);
    }
    EXPECT_EQ(r.axes.front().verdict, permcheck::SmtVerdict::violated) << permcheck::describe(r);
    EXPECT_TRUE(r.axes.front().queries.empty());
    // And without the planted bug every query is unsat.
    EXPECT_EQ(permcheck::smt_prove(f, 2, 4, z3_alone).axes.front().verdict, permcheck::SmtVerdict::proved);
}

// An edge_index (discrete) or max aggregation is not a rational function: covered by the verdict table's rows.
TEST(SignatureSmt, AnEdgeIndexOrMaxAggregationHasNoSymbolicProof) {
    for (const char* name : {"message-passing-max", "message-passing-sum"}) {
        try {
            permcheck::smt_prove(permcheck::find_layer(name), 3);
            ADD_FAILURE() << name << " was not refused";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("no symbolic proof"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(permcheck::smt_prove(permcheck::find_layer("attention+key-padding-mask"), 9),
                 std::invalid_argument);
}

// --emit-smt for a layer over named inputs: one file per axis, generator and mask assignment, named so that they
// can be told apart, each re-checked unsat by the z3 command-line tool (here: one per generator).
TEST(SignatureSmtLibFiles, TheMaskLayerWritesOneFilePerGeneratorAndAssignmentAndOneRechecksUnsat) {
    ASSERT_TRUE(std::filesystem::exists("/usr/bin/z3")) << "Debian's z3 package is needed (scripts/install-deps)";
    const auto dir = permcheck::fresh_dir("mask");
    permcheck::cli::SmtRequest req;
    req.layers = {"attention+key-padding-mask", "cross-attention"};
    req.n = 3;
    req.emit_dir = dir.string();
    req.timeout_seconds = 300;
    std::ostringstream out;
    ASSERT_EQ(permcheck::cli::prove_smt(req, out), 0) << out.str();
    EXPECT_NE(out.str().find("wrote 14 SMT-LIB files into " + dir.string()), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("wrote 4 SMT-LIB files"), std::string::npos) << out.str();
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.insert(entry.path().filename().string());
    EXPECT_EQ(names.size(), 18u);
    const std::string mask_file = "attention+key-padding-mask-n3-along-n-transposition-pad010.smt2";
    for (const std::string& name : {mask_file, std::string("attention+key-padding-mask-n3-along-n-rotation-pad000.smt2"),
                                    std::string("cross-attention-m3-n3-along-m-rotation.smt2"),
                                    std::string("cross-attention-m3-n3-along-n-transposition.smt2")})
        EXPECT_TRUE(names.count(name)) << name;
    EXPECT_FALSE(names.count("attention+key-padding-mask-n3-along-n-transposition-pad111.smt2"));
    const std::string text = read_text(dir / mask_file);
    EXPECT_NE(text.find("masks pad=010"), std::string::npos) << text;
    EXPECT_NE(text.find("permcheck's answer: unsat"), std::string::npos) << text;
    for (const std::string& name : {mask_file, std::string("cross-attention-m3-n3-along-m-rotation.smt2")})
        EXPECT_EQ(permcheck::run("/usr/bin/z3 -T:120 '" + (dir / name).string() + "'"), "unsat\n") << name;
    std::filesystem::remove_all(dir);
}

// A layer over named inputs named on the command line: proved at --n, exit codes as `permcheck check`.
TEST(SignatureSmtCommand, ANamedLayerOverNamedInputsExits0Proved1Refuted2Refused) {
    permcheck::cli::SmtRequest req;
    req.n = 2;
    req.timeout_seconds = 300;
    std::ostringstream proved, refuted, refused, too_long;
    req.layers = {"attention+key-padding-mask"};
    EXPECT_EQ(permcheck::cli::prove_smt(req, proved), 0) << proved.str();
    EXPECT_NE(proved.str().find("at n = 2, 3 mask assignments"), std::string::npos) << proved.str();
    // At length 2 the two generators are both (0 1): asked once per assignment.
    EXPECT_NE(proved.str().find("n (0 1): unsat for 3 mask assignments"), std::string::npos) << proved.str();
    req.layers = {"cross-attention+memory-positions"};
    EXPECT_EQ(permcheck::cli::prove_smt(req, refuted), 1) << refuted.str();
    EXPECT_NE(refuted.str().find("m: not invariant"), std::string::npos) << refuted.str();
    req.layers = {"message-passing-max"};
    EXPECT_EQ(permcheck::cli::prove_smt(req, refused), 2) << refused.str();
    EXPECT_NE(refused.str().find("no symbolic proof"), std::string::npos) << refused.str();
    req.layers = {"attention+key-padding-mask"};
    req.n = 9;
    EXPECT_EQ(permcheck::cli::prove_smt(req, too_long), 2) << too_long.str();
    EXPECT_NE(too_long.str().find("length 2 to 8, got 9"), std::string::npos) << too_long.str();
}
