// Audits of real layer signatures (issue 12): the flag grammar (cases/signature.h), the transformation of named
// inputs and outputs, the case generator and shrinker per axis, the signature audit on the multi-input reference
// layers (layers/cross_attention.h, layers/message_passing.h), the harness self-test with planted bugs, and the
// in-process API (<permcheck/audit.h> audit_signature, <permcheck/gtest.h>).
#include "audit/signature_audit.h"
#include "cases/signature.h"
#include "cases/signature_case.h"
#include "layers/cross_attention.h"
#include "layers/message_passing.h"
#include "report/report.h"
#include "report/repro.h"
#include "report/text.h"
#include "report/views.h"
#include "tests/support/audit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

namespace permcheck {
namespace {

using test::finding;
using test::tensor;

// A finding of this case with no outputs compared yet.
Counterexample finding_of(Lengths lengths, Permutations perms, Tensors inputs) {
    Counterexample c;
    c.lengths = std::move(lengths);
    c.perms = std::move(perms);
    c.inputs = std::move(inputs);
    c.axis_at_fault = std::string("n");  // (assigning the literal trips GCC 12's -Wrestrict false positive)
    return c;
}

// ------------------------------------------------------------------------------------------------- grammar

TEST(SignatureGrammar, FlagsRoundTripThroughParseAndFormat) {
    for (const std::string text : {"n=1..8", "edges=0..16", "m=2..2"}) EXPECT_EQ(format(parse_axis(text)), text);
    for (const std::string text : {"q:n,8", "bias:n,n", "x:1,n,8", "pad:n:mask", "edge_index:2,edges:index=nodes",
                                   "scalar:"})
        EXPECT_EQ(format_input(parse_input(text)), text);
    EXPECT_EQ(format_input(parse_input("q:n,8:float")), "q:n,8");  // float is the default kind
    for (const std::string text : {"y:n,8", "g:4"}) EXPECT_EQ(format_output(parse_output(text)), text);
}

TEST(SignatureGrammar, ParsedFieldsAreTheOnesWritten) {
    const Axis a = parse_axis("edges=0..16");
    EXPECT_EQ(a.name, "edges");
    EXPECT_EQ(a.min_len, 0);
    EXPECT_EQ(a.max_len, 16);
    const TensorSpec e = parse_input("edge_index:2,edges:index=nodes");
    ASSERT_EQ(e.dims.size(), 2u);
    EXPECT_FALSE(e.dims[0].is_axis());
    EXPECT_EQ(e.dims[0].size, 2);
    EXPECT_EQ(e.dims[1].axis, "edges");
    EXPECT_EQ(e.kind, TensorKind::index);
    EXPECT_EQ(e.index_axis, "nodes");
    EXPECT_EQ(parse_input("pad:n:mask").kind, TensorKind::mask);
}

// The message names the flag, quotes the text and says what was expected.
void expect_refused(const std::function<void()>& parse, const std::string& flag, const std::string& text,
                    const std::string& expected_part) {
    try {
        parse();
        ADD_FAILURE() << flag << " accepted '" << text << "'";
    } catch (const std::invalid_argument& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(flag), std::string::npos) << m;
        EXPECT_NE(m.find("'" + text + "'"), std::string::npos) << m;
        EXPECT_NE(m.find(expected_part), std::string::npos) << m;
    }
}

TEST(SignatureGrammar, BadFlagsAreRefusedNamingTheFlagTheTextAndTheGrammar) {
    for (const std::string text : {"n", "n=1-8", "n=8..1", "=1..8", "n=a..8", "n=0..0", "n=1..5000", "1n=1..2"})
        expect_refused([&] { parse_axis(text); }, "--axis", text, "NAME=MIN..MAX");
    for (const std::string text : {"q", "q:n,0", "q:n,-3", "q:n:bool", "q:n:index=", "q:n,8:mask:x", ":n"})
        expect_refused([&] { parse_input(text); }, "--input", text, "NAME:DIMS[:KIND]");
    for (const std::string text : {"y", "y:n,8:mask", "y:n,x y"})
        expect_refused([&] { parse_output(text); }, "--output", text, "NAME:DIMS");
}

Signature cross_attention_signature() {
    return Signature{{parse_axis("n=1..8"), parse_axis("m=1..8")},
                     {parse_input("q:n,8"), parse_input("mem:m,8")},
                     {parse_output("y:n,8")}};
}

void expect_invalid(const Signature& s, const std::string& part) {
    try {
        validate(s);
        ADD_FAILURE() << "accepted a signature that should fail with '" << part << "'";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

TEST(SignatureGrammar, ValidateNamesWhatIsWrong) {
    EXPECT_NO_THROW(validate(cross_attention_signature()));
    Signature s = cross_attention_signature();
    s.inputs.push_back(parse_input("q:n,4"));
    expect_invalid(s, "'q' is given twice");
    s = cross_attention_signature();
    s.inputs[1] = parse_input("mem:k,8");
    expect_invalid(s, "'k', which no --axis declares");
    s = cross_attention_signature();
    s.axes.push_back(parse_axis("unused=1..3"));
    expect_invalid(s, "'unused' is a dim of no --input");
    s = cross_attention_signature();
    s.inputs.push_back(parse_input("e:2,m:index=nodes"));
    expect_invalid(s, "index into the axis 'nodes'");
    s = cross_attention_signature();
    s.inputs.push_back(parse_input("flag:4:mask"));
    expect_invalid(s, "mask with no axis dim");
    s = cross_attention_signature();
    s.outputs.clear();
    expect_invalid(s, "at least one --output");
    s = cross_attention_signature();
    s.outputs.push_back(parse_output("y:n"));
    expect_invalid(s, "'y' is given twice");
}

// ---------------------------------------------------------------------------------------------- transformation

TEST(SignaturePermute, APairwiseInputGetsPBPTranspose) {
    const Signature s{{parse_axis("n=1..8")}, {parse_input("bias:n,n")}, {parse_output("y:n,1")}};
    // B[i][j] = 10 i + j; p = (0 1 2) in one-line [1, 2, 0]: (P B P^T)[i][j] = B[p[i]][p[j]].
    Tensor b = tensor({3, 3}, {0, 1, 2, 10, 11, 12, 20, 21, 22});
    const Permutations perms{{"n", Permutation({1, 2, 0})}};
    const Tensor moved = permute_inputs(s, perms, {{"bias", b}}).at("bias");
    EXPECT_EQ(moved.shape, (std::vector<int>{3, 3}));
    EXPECT_EQ(moved.values, (std::vector<double>{11, 12, 10, 21, 22, 20, 1, 2, 0}));
}

TEST(SignaturePermute, IndexValuesMapThroughTheInverseWhichA3CycleTellsFromP) {
    const Signature s{{parse_axis("nodes=1..8"), parse_axis("edges=0..8")},
                      {parse_input("x:nodes,1"), parse_input("edge_index:2,edges:index=nodes")},
                      {parse_output("y:nodes,1")}};
    // Node features x[v] = 100 + v; edges 0->1, 1->2, 2->2 (a self-loop), as columns of edge_index.
    const Tensors in{{"x", tensor({3, 1}, {100, 101, 102})}, {"edge_index", tensor({2, 3}, {0, 1, 2, 1, 2, 2})}};
    // p = [1, 2, 0]: new node i is old node p[i], so old node v is new node p^-1[v] = [2, 0, 1][v].
    const Permutations perms{{"nodes", Permutation({1, 2, 0})}, {"edges", Permutation::identity(3)}};
    const Tensors out = permute_inputs(s, perms, in);
    EXPECT_EQ(out.at("x").values, (std::vector<double>{101, 102, 100}));
    EXPECT_EQ(out.at("edge_index").values, (std::vector<double>{2, 0, 1, 0, 1, 1}));
    // The edges still join the same features: edge (a -> b) of the new graph joins x'[a] and x'[b].
    for (int e = 0; e < 3; ++e) {
        const auto src = static_cast<int>(out.at("edge_index").values[static_cast<std::size_t>(e)]);
        const auto dst = static_cast<int>(out.at("edge_index").values[static_cast<std::size_t>(3 + e)]);
        EXPECT_EQ(out.at("x").values[static_cast<std::size_t>(src)], 100 + in.at("edge_index").values[static_cast<std::size_t>(e)]);
        EXPECT_EQ(out.at("x").values[static_cast<std::size_t>(dst)], 100 + in.at("edge_index").values[static_cast<std::size_t>(3 + e)]);
    }
}

TEST(SignaturePermute, EdgeOrderMovesColumnsAndAMaskMovesWithItsAxis) {
    const Signature s{{parse_axis("n=1..8"), parse_axis("edges=0..8")},
                      {parse_input("pad:n:mask"), parse_input("e:2,edges:index=n")},
                      {parse_output("y:n,1")}};
    const Tensors in{{"pad", tensor({3}, {0, 0, 1})}, {"e", tensor({2, 2}, {0, 1, 2, 0})}};
    const Permutations perms{{"n", Permutation({2, 0, 1})}, {"edges", Permutation({1, 0})}};
    const Tensors out = permute_inputs(s, perms, in);
    EXPECT_EQ(out.at("pad").values, (std::vector<double>{1, 0, 0}));
    // Columns swapped: (1, 0) then (0, 2); values renumbered by p^-1 = [1, 2, 0].
    EXPECT_EQ(out.at("e").values, (std::vector<double>{2, 1, 1, 0}));
}

TEST(SignaturePermute, AnOutputMovesAlongItsAxesOnlyAndShapeOfReadsTheLengths) {
    const TensorSpec y = parse_output("y:n,2"), g = parse_output("g:2");
    const Permutations perms{{"n", Permutation({1, 0})}, {"m", Permutation({2, 0, 1})}};
    EXPECT_EQ(permute_output(y, perms, tensor({2, 2}, {1, 2, 3, 4})).values, (std::vector<double>{3, 4, 1, 2}));
    EXPECT_EQ(permute_output(g, perms, tensor({2}, {5, 6})).values, (std::vector<double>{5, 6}));
    EXPECT_EQ(shape_of(parse_input("x:1,n,8"), {{"n", 5}}), (std::vector<int>{1, 5, 8}));
    EXPECT_EQ(tensor({3, 0}, {}).size(), 0u);
    EXPECT_EQ(tensor({}, {7}).size(), 1u);
}

// ------------------------------------------------------------------------------------------ reference layers

constexpr int kD = 4;       // model width of the reference layers below
constexpr int kEdgeD = 3;   // edge feature width

// A 2-D tensor as a matrix, and back.
Mat<double> matrix(const Tensor& t) {
    Mat<double> m(t.shape.at(0), t.shape.at(1));
    for (int i = 0; i < t.shape[0]; ++i)
        for (int j = 0; j < t.shape[1]; ++j) m(i, j) = t.values[static_cast<std::size_t>(i * t.shape[1] + j)];
    return m;
}
Tensor tensor_of(const Mat<double>& m, bool as_vector = false) {
    Tensor t{as_vector ? std::vector<int>{static_cast<int>(m.cols())} : std::vector<int>{static_cast<int>(m.rows()), static_cast<int>(m.cols())}, {}};
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) t.values.push_back(m(i, j));
    return t;
}
std::vector<bool> flags(const Tensor& t) {
    std::vector<bool> out;
    for (double v : t.values) out.push_back(v != 0.0);
    return out;
}

Signature signature_of(std::vector<std::string> axes, std::vector<std::string> inputs, std::vector<std::string> outputs) {
    Signature s;
    for (const std::string& a : axes) s.axes.push_back(parse_axis(a));
    for (const std::string& t : inputs) s.inputs.push_back(parse_input(t));
    for (const std::string& t : outputs) s.outputs.push_back(parse_output(t));
    return s;
}

// Cross-attention: q over n, memory over m (memory positions: the broken counterpart).
Signature cross_signature() { return signature_of({"n=1..8", "m=1..8"}, {"q:n,4", "mem:m,4"}, {"y:n,4"}); }
NamedBlackBox cross_attention(bool memory_positions, std::uint64_t seed = 11) {
    Draw<double> draw = dyadic_draw<double>(seed);
    const auto layer = CrossAttention<double>::random(kD, draw, memory_positions);
    return [layer](const Tensors& in) {
        return Tensors{{"y", tensor_of(layer(matrix(in.at("q")), matrix(in.at("mem"))))}};
    };
}

// Self-attention with a key-padding mask.
Signature masked_signature() { return signature_of({"n=1..8"}, {"x:n,4", "pad:n:mask"}, {"y:n,4"}); }
NamedBlackBox masked_self_attention(std::uint64_t seed = 12) {
    Draw<double> draw = dyadic_draw<double>(seed);
    const auto layer = CrossAttention<double>::random(kD, draw);
    return [layer](const Tensors& in) {
        const Mat<double> x = matrix(in.at("x"));
        return Tensors{{"y", tensor_of(layer(x, x, flags(in.at("pad"))))}};
    };
}

// Self-attention with a pairwise score bias.
Signature bias_signature() { return signature_of({"n=1..8"}, {"x:n,4", "bias:n,n"}, {"y:n,4"}); }
NamedBlackBox bias_attention(std::uint64_t seed = 13) {
    Draw<double> draw = dyadic_draw<double>(seed);
    const auto layer = CrossAttention<double>::random(kD, draw);
    return [layer](const Tensors& in) {
        const Mat<double> x = matrix(in.at("x"));
        return Tensors{{"y", tensor_of(layer(x, x, {}, matrix(in.at("bias"))))}};
    };
}

// Message passing over an edge list, node outputs and a graph readout.
Signature graph_signature() {
    return signature_of({"nodes=1..8", "edges=0..16"}, {"x:nodes,4", "edge_index:2,edges:index=nodes", "edge_attr:edges,3"},
                        {"y:nodes,4", "g:4"});
}
struct GraphFlaws {
    bool node_index_feature = false, edge_order = false;
};
// A message-passing layer computed in S, over named tensors (edge_index rows: sources, destinations).
template <class S> NamedBlackBox named_graph_layer(const MessagePassing<S>& layer) {
    return [layer](const Tensors& in) {
        const Tensor& e = in.at("edge_index");
        const auto edges = static_cast<std::size_t>(e.shape[1]);
        std::vector<int> src(edges), dst(edges);
        for (std::size_t k = 0; k < edges; ++k) {
            src[k] = static_cast<int>(e.values[k]);
            dst[k] = static_cast<int>(e.values[edges + k]);
        }
        const Mat<S> a = edges == 0 ? Mat<S>(0, kEdgeD) : Mat<S>(matrix(in.at("edge_attr")).cast<S>());
        const Mat<S> y = layer(matrix(in.at("x")).cast<S>(), src, dst, a);
        return Tensors{{"y", tensor_of(y.template cast<double>())},
                       {"g", tensor_of(MessagePassing<S>::readout(y).template cast<double>(), true)}};
    };
}

NamedBlackBox message_passing(Aggregation aggregation, GraphFlaws flaws = {}, std::uint64_t seed = 14) {
    Draw<double> draw = dyadic_draw<double>(seed);
    auto layer = MessagePassing<double>::random(kD, kEdgeD, draw, aggregation);
    layer.node_index_feature = flaws.node_index_feature;
    layer.edge_order = flaws.edge_order;
    return named_graph_layer(layer);
}

AuditOptions named(const std::string& name, std::uint64_t seed = 1) {
    AuditOptions o;
    o.name = name;
    o.seed = seed;
    return o;
}


struct Holding {
    const char* name;
    Signature signature;
    NamedBlackBox layer;
};
std::vector<Holding> holding_layers() {
    return {{"cross-attention", cross_signature(), cross_attention(false)},
            {"self-attention with a key-padding mask", masked_signature(), masked_self_attention()},
            {"attention with a pairwise bias", bias_signature(), bias_attention()},
            {"message passing, sum", graph_signature(), message_passing(Aggregation::sum)},
            {"message passing, mean", graph_signature(), message_passing(Aggregation::mean)},
            {"message passing, max", graph_signature(), message_passing(Aggregation::max)}};
}

TEST(SignatureAudit, EveryHoldingReferenceLayerHoldsForSeveralSeeds) {
    for (const Holding& h : holding_layers())
        for (std::uint64_t seed : {1u, 2u, 3u}) {
            const AuditResult r = audit(h.layer, h.signature, named(h.name, seed));
            EXPECT_EQ(r.verdict, Verdict::holds) << h.name << ", seed " << seed << "\n" << finding(r, h.signature);
            EXPECT_FALSE(r.counterexample.has_value());
            EXPECT_EQ(r.cases, 100);
            EXPECT_EQ(r.dtype, Arithmetic::float64) << h.name;
        }
}

// An output whose shape follows the signature for x and not for P x (a readout that sizes its answer from the
// order of its inputs) is a violation, that output's two sides shown in their shapes; its shape on x's side stays
// an error. Here the layer drops its last row unless the position ids come in order, which x's do and P x's not.
TEST(SignatureAudit, AnOutputWhoseShapeChangesOnlyOnTheTransformedSideIsAViolation) {
    Signature s;
    s.axes = {parse_axis("n=1..6")};
    s.inputs = {parse_input("x:n,2"), parse_input("pos:n:position=16")};
    s.outputs = {parse_output("y:n,2")};
    validate(s);
    const NamedBlackBox ordered_only = [](const Tensors& in) {
        Tensor y = in.at("x");
        const std::vector<double>& pos = in.at("pos").values;
        if (!std::is_sorted(pos.begin(), pos.end())) {
            y.shape[0] -= 1;
            y.values.resize(y.size());
        }
        return Tensors{{"y", y}};
    };
    const AuditResult r = audit(ordered_only, s, named("ordered only"));
    ASSERT_EQ(r.verdict, Verdict::violated) << r.error;
    ASSERT_TRUE(r.counterexample);
    const OutputComparison& y = r.counterexample->outputs.at(0);
    EXPECT_TRUE(y.shape_mismatch);
    EXPECT_FALSE(y.holds);
    EXPECT_EQ(y.layer_of_permuted.shape[0] + 1, y.permuted_layer.shape[0]) << "the transformed side's row is missing";
    EXPECT_EQ(r.counterexample->lengths.at("n"), 2) << "shrunk to the smallest case that reorders the positions";
    const std::string md = report::to_markdown(report::record_of(r, "ordered only", Property{"equivariance"}, r.dtype, 1, ""));
    EXPECT_NE(md.find("| not taken | shapes differ |"), std::string::npos) << "no difference of two shapes: " << md;
    EXPECT_NE(md.find(report::detail::untaken_note), std::string::npos) << md;
    EXPECT_EQ(md.find("Infinity"), std::string::npos) << md;
    const NamedBlackBox never = [](const Tensors& in) {
        Tensor y = in.at("x");
        y.shape[0] += 1;
        y.values.resize(y.size());
        return Tensors{{"y", y}};
    };
    const AuditResult x_side = audit(never, s, named("never"));
    EXPECT_EQ(x_side.verdict, Verdict::error);
    // Found at n = 2, shrunk to n = 1, which errs the same way: the message is the shrunk case's.
    EXPECT_EQ(x_side.error.rfind("the layer answered output 'y' with shape (2, 2) where the signature says (1, 2): dim 0, "
                                 "the axis n, has 2 of its 1 positions", 0), 0u) << x_side.error;
    EXPECT_NE(x_side.error.find("which erred the same way: the layer answered output 'y' with shape (3, 2)"),
              std::string::npos) << x_side.error;
    EXPECT_TRUE(x_side.counterexample && x_side.counterexample->is<found::Erred>()) << "the case it erred on, recorded";
}

// An error on an input of a kind the audit draws on purpose names that input: here one token (a length of 1, drawn
// where another axis is permuted).
TEST(SignatureAudit, AnErrorOnAnInputTheAuditDrawsOnPurposeNamesIt) {
    Signature s;
    s.axes = {parse_axis("n=1..6"), parse_axis("m=1..4")};
    s.inputs = {parse_input("x:n,2"), parse_input("mem:m,2")};
    s.outputs = {parse_output("y:n,2")};
    validate(s);
    const NamedBlackBox one_token = [](const Tensors& in) {
        if (in.at("x").shape[0] == 1) throw std::runtime_error("softmax over one entry");
        return Tensors{{"y", in.at("x")}};
    };
    const AuditResult short_one = audit(one_token, s, named("one token"));
    ASSERT_EQ(short_one.verdict, Verdict::error);
    EXPECT_NE(short_one.error.find("(the case it erred on has "), std::string::npos) << short_one.error;
    EXPECT_NE(short_one.error.find("n of length 1"), std::string::npos) << short_one.error;
    ASSERT_TRUE(short_one.counterexample && short_one.counterexample->is<found::Erred>());
    EXPECT_EQ(short_one.counterexample->lengths.at("n"), 1);
}

// An error is a finding a maintainer can act on: the erring case, asked again alone, is shrunk to the smallest case
// that still errs the same way (the same exception and message but for its numbers), the side that raised named,
// and the report, its words and its repro plan say so.
TEST(SignatureAudit, AnErrorIsShrunkToItsSmallestErringCaseWithTheSideThatRaised) {
    const Signature s = signature_of({"n=1..8"}, {"x:n,2"}, {"y:n,2"});
    // Raises on a sequence of 4 or more whose first row's first value is not 0 (an index it reads past its table).
    const NamedBlackBox table = [](const Tensors& in) {
        const Tensor& x = in.at("x");
        if (x.shape[0] >= 4 && x.values[0] != 0.0)
            throw LayerRaised("IndexError: index " + std::to_string(x.shape[0] + 60) + " is out of bounds for size 64");
        return Tensors{{"y", x}};
    };
    const AuditResult r = audit(table, s, named("table"));
    ASSERT_EQ(r.verdict, Verdict::error) << detail_text(r);
    ASSERT_TRUE(r.counterexample && r.counterexample->is<found::Erred>()) << r.error;
    const Counterexample& c = *r.counterexample;
    EXPECT_EQ(c.lengths.at("n"), 4) << "shrunk to the shortest sequence that errs";
    EXPECT_GT(c.shrink_steps, 0);
    EXPECT_EQ(c.as<found::Erred>()->side, "x") << "x asked first, and raised";
    EXPECT_EQ(std::count_if(c.inputs.at("x").values.begin(), c.inputs.at("x").values.end(), [](double v) { return v != 0; }), 1)
        << "every value the error does not need is simplified away";
    EXPECT_NE(r.error.find("index 64 is out of bounds"), std::string::npos) << "the error of the case recorded: " << r.error;
    EXPECT_NE(r.error.find("which erred the same way"), std::string::npos) << r.error;
    EXPECT_EQ(exit_code(r.verdict), 2);
    const report::Record record = report::record_of(r, "table", Property{"equivariance"}, r.dtype, 1, "");
    EXPECT_EQ(report::repro_refused(record), "") << "its repro.py asks x again, and fails while it raises";
    const report::Record back = report::from_json(report::to_json(record));
    ASSERT_TRUE(back.counterexample && back.counterexample->is<found::Erred>());
    EXPECT_EQ(back.counterexample->as<found::Erred>()->side, "x");
    EXPECT_NE(report::to_markdown(back).find("raising answering x; shrunk in"), std::string::npos) << report::to_markdown(back);
    // Another error on a smaller case (a different exception) is not the same error: the shrink keeps to its own.
    const NamedBlackBox two = [](const Tensors& in) {
        const int n = in.at("x").shape[0];
        if (n >= 5) throw LayerRaised("IndexError: index " + std::to_string(n) + " out of range");
        if (n == 2) throw std::runtime_error("a different bug");
        return Tensors{{"y", in.at("x")}};
    };
    const AuditResult other = audit(two, s, named("two errors"));
    ASSERT_EQ(other.verdict, Verdict::error);
    ASSERT_TRUE(other.counterexample);
    if (other.error.find("IndexError") != std::string::npos)
        EXPECT_EQ(other.counterexample->lengths.at("n"), 5) << other.error;
    else
        EXPECT_EQ(other.counterexample->lengths.at("n"), 2) << other.error;
}

TEST(SignatureAudit, EveryLengthOfEachAxisIsCoveredWithinItsRange) {
    const AuditResult r = audit(message_passing(Aggregation::sum), graph_signature(), named("graph"));
    ASSERT_EQ(r.verdict, Verdict::holds);
    // Every length of each range, a graph without edges and a single node included (nodes and edges move with
    // each other's help); a one-axis signature skips the lengths where only the identity exists.
    EXPECT_EQ(r.axis_lengths.at("nodes"), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
    std::vector<int> every_edge_count(17);
    std::iota(every_edge_count.begin(), every_edge_count.end(), 0);
    EXPECT_EQ(r.axis_lengths.at("edges"), every_edge_count);
    const AuditResult one = audit(masked_self_attention(), masked_signature(), named("masked"));
    EXPECT_EQ(one.axis_lengths.at("n"), (std::vector<int>{2, 3, 4, 5, 6, 7, 8}));
}

// A layer that breaks only on a graph of exactly one edge between two nodes (it adds the edge's source to its
// first node's features): a schedule that drew each axis's lengths independently met that pair only by chance.
NamedBlackBox breaks_on_one_edge_and_two_nodes() {
    return [](const Tensors& in) {
        Tensor y = in.at("x");
        const Tensor& e = in.at("edge_index");
        if (e.shape[1] == 1 && y.shape[0] == 2) y.values[0] += 1 + e.values[0];
        return Tensors{{"y", y}};
    };
}

TEST(SignatureAudit, OneEdgeBetweenTwoNodesIsSentForEverySeed) {
    const Signature s = signature_of({"nodes=1..8", "edges=1..10"}, {"x:nodes,2", "edge_index:2,edges:index=nodes"},
                                     {"y:nodes,2"});
    for (int cases : {10, 100})
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
            AuditOptions o = named("one edge, two nodes", seed);
            o.cases = cases;
            const AuditResult r = audit(breaks_on_one_edge_and_two_nodes(), s, o);
            ASSERT_EQ(r.verdict, Verdict::violated) << "seed " << seed << ", " << cases << " cases\n" << finding(r, s);
            EXPECT_EQ(r.counterexample->lengths.at("edges"), 1);
            EXPECT_EQ(r.counterexample->lengths.at("nodes"), 2);
        }
    // Each small length of each axis meets every other axis at its smallest movable length, 0 included, with the
    // index input emptied with the axis it points into.
    const Signature graph = signature_of({"nodes=0..8", "edges=0..16"}, {"x:nodes,2", "edge_index:2,edges:index=nodes"},
                                         {"y:nodes,2"});
    const LengthSchedule lengths = signature_lengths(graph, 100, 7);
    const auto sent = [&](int nodes, int edges) {
        for (std::size_t i = 0; i < lengths.size(); ++i)
            if (lengths[i] == Lengths{{"edges", edges}, {"nodes", nodes}}) return true;
        return false;
    };
    EXPECT_TRUE(sent(2, 0) && sent(2, 1) && sent(1, 2));
    EXPECT_TRUE(sent(3, 0) && sent(3, 1) && sent(1, 3)) << "the corners step through the movable lengths";
    EXPECT_TRUE(sent(0, 0)) << "no nodes: no edges either";
    EXPECT_EQ(lengths.size(), 100u);
}

// The one permuted axis of the counterexample, checked to be a single transposition.
void expect_one_transposition_on(const Counterexample& c, const std::string& axis) {
    EXPECT_EQ(c.axis_at_fault, axis);
    for (const auto& [a, p] : c.perms) {
        if (a == axis)
            EXPECT_EQ(p.moved(), 2) << a << " " << p.cycles();
        else
            EXPECT_TRUE(p.is_identity()) << a << " " << p.cycles();
    }
}

TEST(SignatureAudit, CrossAttentionWithMemoryPositionsIsViolatedAtTwoMemoryItems) {
    const Signature s = cross_signature();
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const AuditResult r = audit(cross_attention(true), s, named("cross-attention with memory positions", seed));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
    ASSERT_TRUE(r.counterexample);
    const Counterexample& c = *r.counterexample;
    EXPECT_EQ(c.lengths.at("m"), 2) << finding(r, s);
    EXPECT_EQ(c.lengths.at("n"), 1) << finding(r, s);
    expect_one_transposition_on(c, "m");
    EXPECT_NE(detail_text(r).find("output y"), std::string::npos) << detail_text(r);
    }
}

TEST(SignatureAudit, ANodeIndexFeatureIsViolatedAtTwoNodes) {
    const Signature s = graph_signature();
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const AuditResult r = audit(message_passing(Aggregation::sum, {true, false}), s, named("node-index feature", seed));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
    const Counterexample& c = *r.counterexample;
    EXPECT_EQ(c.lengths.at("nodes"), 2) << finding(r, s);
    EXPECT_EQ(c.lengths.at("edges"), 0) << finding(r, s);
    expect_one_transposition_on(c, "nodes");
    }
}

TEST(SignatureAudit, AnEdgeOrderAggregatorIsViolatedAtTwoEdges) {
    const Signature s = graph_signature();
    for (Aggregation agg : {Aggregation::sum, Aggregation::mean, Aggregation::max})
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const AuditResult r = audit(message_passing(agg, {false, true}), s, named("edge-order aggregator", seed));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
    const Counterexample& c = *r.counterexample;
    EXPECT_EQ(c.lengths.at("edges"), 2) << finding(r, s);
    // Two messages into one node: one node (two self-loops told apart by their edge features) or two (a message
    // from a node with features and one from a node without); greedy shrinking stops at either.
    EXPECT_LE(c.lengths.at("nodes"), 2) << finding(r, s);
    expect_one_transposition_on(c, "edges");
    // The graph-level readout is invariant to the edges too, and is broken by the same pair.
    for (const OutputComparison& o : c.outputs) EXPECT_FALSE(o.holds) << o.name;
    }
}

TEST(SignatureAudit, NondeterminismNonFiniteOutputsAndWrongShapesGetTheirVerdicts) {
    const Signature s = cross_signature();
    const NamedBlackBox exact = cross_attention(false);
    auto rng = std::make_shared<std::mt19937_64>(3);
    const NamedBlackBox noisy = [exact, rng](const Tensors& in) {
        Tensors out = exact(in);
        for (double& v : out.at("y").values) v += std::uniform_real_distribution<double>(-1e-3, 1e-3)(*rng);
        return out;
    };
    const AuditResult nd = audit(noisy, s, named("noisy"));
    EXPECT_EQ(nd.verdict, Verdict::nondeterministic) << finding(nd, s);
    EXPECT_NE(detail_text(nd).find("answered twice"), std::string::npos) << detail_text(nd);
    const NamedBlackBox nan_at_3 = [exact](const Tensors& in) {
        Tensors out = exact(in);
        if (in.at("q").shape[0] >= 3) out.at("y").values[0] = std::numeric_limits<double>::quiet_NaN();
        return out;
    };
    const AuditResult nf = audit(nan_at_3, s, named("nan"));
    EXPECT_EQ(nf.verdict, Verdict::non_finite) << finding(nf, s);
    ASSERT_TRUE(nf.counterexample);
    EXPECT_EQ(nf.counterexample->lengths.at("n"), 3);
    const NamedBlackBox short_rows = [exact](const Tensors& in) {
        Tensors out = exact(in);
        out.at("y").shape[1] = 2;
        out.at("y").values.resize(out.at("y").size());
        return out;
    };
    const AuditResult bad = audit(short_rows, s, named("short"));
    EXPECT_EQ(bad.verdict, Verdict::error);
    EXPECT_NE(bad.error.find("): dim 1, of fixed size 4, has 2 (y:"), std::string::npos) << bad.error;
    const NamedBlackBox missing = [](const Tensors&) { return Tensors{}; };
    EXPECT_NE(audit(missing, s, named("missing")).error.find("no output 'y'"), std::string::npos);
}

TEST(SignatureAudit, ShardsAndWorkersGiveTheCasesAndCounterexampleOfOneRun) {
    const Signature s = cross_signature();
    AuditOptions o = named("cross-attention with memory positions");
    const AuditResult one = audit(cross_attention(true), s, o);
    const AuditResult two = audit(std::vector<NamedBlackBox>{cross_attention(true), cross_attention(true)}, s, o);
    EXPECT_EQ(two.verdict, one.verdict);
    EXPECT_EQ(two.cases, one.cases);
    ASSERT_TRUE(one.counterexample && two.counterexample);
    EXPECT_EQ(two.counterexample->case_index, one.counterexample->case_index);
    EXPECT_EQ(two.counterexample->inputs.at("mem").values, one.counterexample->inputs.at("mem").values);
    o.shard = Shard{2, 3};
    const AuditResult shard = audit(cross_attention(false), s, o);
    EXPECT_EQ(shard.verdict, Verdict::holds);
    EXPECT_EQ(shard.cases, 33);
}

TEST(SignatureAudit, AStopRequestEndsTheAuditAsInterrupted) {
    AuditOptions o = named("stopped");
    int calls = 0;
    o.stop_requested = [&calls] { return ++calls > 5; };
    const AuditResult r = audit(cross_attention(false), cross_signature(), o);
    EXPECT_EQ(r.verdict, Verdict::interrupted);
    EXPECT_LT(r.cases, 100);
}

// ---------------------------------------------------------------------------------------------------------
// Batching never changes a verdict: a batched side that answers otherwise than the layer alone is caught

// The layer with a batched side (16 items a call) whose answers `touch` may change, given the batch's inputs.
using Touch = std::function<void(const std::vector<Tensors>&, std::vector<Answer<Tensors>>&)>;
BatchedNamedBlackBox with_batches(const NamedBlackBox& one, Touch touch) {
    Batching<Tensors> many;
    many.capacity = [] { return 16; };
    many.call = [one, touch](const std::vector<Tensors>& inputs) {
        std::vector<Answer<Tensors>> out;
        for (const Tensors& in : inputs) out.push_back(Answer<Tensors>{one(in), "", ""});
        touch(inputs, out);
        return out;
    };
    return {one, many};
}

AuditResult batched_audit(const BatchedNamedBlackBox& box, const Signature& s, int cases = 100) {
    AuditOptions o = named("batched");
    o.cases = cases;
    return audit(std::vector<BatchedNamedBlackBox>{box}, s, o);
}

TEST(SignatureAuditBatched, AgreeingBatchesHoldAfterMax8OrATenthOfTheCasesAskedAlone) {
    const BatchedNamedBlackBox box = with_batches(cross_attention(false), [](const auto&, auto&) {});
    for (int cases : {30, 100, 300}) {
        const AuditResult r = batched_audit(box, cross_signature(), cases);
        EXPECT_EQ(r.verdict, Verdict::holds) << finding(r, cross_signature());
        EXPECT_EQ(r.confirmed_alone, std::max(8, cases / 10)) << cases << " cases";
    }
    const AuditResult unbatched = audit(cross_attention(false), cross_signature(), named("one by one"));
    EXPECT_EQ(unbatched.confirmed_alone, 0) << "nothing batched, nothing to confirm";
}

TEST(SignatureAuditBatched, AStopWhileTheCasesAreAskedAloneIsInterruptedNotHolds) {
    // The run holds in its batches; a stop after a few calls alone must not leave `holds` standing on fewer
    // confirmations than promised.
    const NamedBlackBox layer = cross_attention(false);
    int batched_calls = 0, alone_after = 0;
    BatchedNamedBlackBox box = with_batches(layer, [&batched_calls](const auto&, auto&) { ++batched_calls; });
    box.one = [&, layer](const Tensors& in) {
        if (batched_calls > 0) ++alone_after;
        return layer(in);
    };
    AuditOptions o = named("stopped while confirming");
    o.cases = 100;
    o.stop_requested = [&alone_after] { return alone_after >= 3; };
    const AuditResult r = audit(std::vector<BatchedNamedBlackBox>{box}, cross_signature(), o);
    EXPECT_EQ(r.verdict, Verdict::interrupted) << detail_text(r);
    EXPECT_EQ(exit_code(r.verdict), 130);
    EXPECT_GE(alone_after, 3);
    EXPECT_LT(r.confirmed_alone, 10);
    EXPECT_NE(detail_text(r).find("interrupted while asking cases of the batched run alone"), std::string::npos) << detail_text(r);
}

TEST(SignatureAuditBatched, AnItemThatSeesItsBatchIsBatchDependentNotHolds) {
    // A batch statistic (BatchNorm in training mode): every item gets the batch's mean of the first feature, so
    // each case holds within its batch (both sides see the same batch) but no answer is the layer's alone.
    const Touch batch_mean = [](const std::vector<Tensors>&, std::vector<Answer<Tensors>>& out) {
        double mean = 0;
        for (const auto& a : out) mean += a.value->at("y").values[0] / static_cast<double>(out.size());
        for (auto& a : out)
            for (double& v : a.value->at("y").values) v += mean;
    };
    const AuditResult r = batched_audit(with_batches(cross_attention(false), batch_mean), cross_signature());
    EXPECT_EQ(r.verdict, Verdict::batch_dependent) << finding(r, cross_signature());
    EXPECT_EQ(exit_code(r.verdict), 1);
    EXPECT_NE(detail_text(r).find("differs between its batched request and its request alone"), std::string::npos) << detail_text(r);
    EXPECT_NE(detail_text(r).find("batched with positions"), std::string::npos) << detail_text(r);
    ASSERT_TRUE(r.counterexample);
    const OutputComparison& y = r.counterexample->outputs.at(0);
    EXPECT_FALSE(y.holds);
    EXPECT_NE(y.layer_of_permuted.values, y.permuted_layer.values) << "both answers shown: in the batch and alone";
    EXPECT_EQ(r.confirmed_alone, 1) << "the first case confirmed alone already disagrees";
    // The batched requests the case was answered in, as they were sent (what its repro.py sends again): x's and
    // the transformed inputs', each with the case's own item at `at`; report.json keeps them whole.
    const Counterexample& c = *r.counterexample;
    ASSERT_EQ(c.batches().size(), 2u);
    EXPECT_FALSE(c.batches()[0].transformed_side);
    EXPECT_TRUE(c.batches()[1].transformed_side);
    for (const BatchedRequest& b : c.batches()) {
        EXPECT_GT(b.items.size(), 1u);
        ASSERT_LT(b.at, b.items.size());
        EXPECT_EQ(b.lengths, c.lengths);
        const Tensors& own = b.transformed_side ? c.transformed : c.inputs;
        for (const auto& [name, t] : own) EXPECT_EQ(b.items[b.at].at(name).values, t.values) << name;
    }
    const report::Record back =
        report::from_json(report::to_json(report::record_of(r, "batch mean", Property{"equivariance"}, r.dtype, 1, "")));
    ASSERT_TRUE(back.counterexample);
    ASSERT_EQ(back.counterexample->batches().size(), 2u);
    for (std::size_t k = 0; k < 2; ++k) {
        const BatchedRequest &was = c.batches()[k], &read = back.counterexample->batches()[k];
        EXPECT_EQ(read.at, was.at);
        EXPECT_EQ(read.transformed_side, was.transformed_side);
        ASSERT_EQ(read.items.size(), was.items.size());
        for (std::size_t i = 0; i < was.items.size(); ++i)
            for (const auto& [name, t] : was.items[i]) EXPECT_EQ(read.items[i].at(name).values, t.values) << name;
    }
}

// A grow-only table (a rotary table rebuilt, NTK-scaled, once a longer sequence has been seen): every answer is
// scaled by the longest length asked so far, so x and P x of one length read the same table and two asks in a row
// agree; only an input asked before and after a longer one tells.
NamedBlackBox grow_only_table() {
    auto longest = std::make_shared<int>(0);
    return [longest](const Tensors& in) {
        Tensor y = in.at("x");
        *longest = std::max(*longest, y.shape[0]);
        for (double& v : y.values) v *= 1.0 + 0.125 * *longest;
        return Tensors{{"y", y}};
    };
}

TEST(SignatureAuditHistory, AGrowOnlyTableIsHistoryDependentAloneAndInBatches) {
    const Signature s = signature_of({"n=1..8"}, {"x:n,2"}, {"y:n,2"});
    // Alone: the first case, asked again once the longest requests have run, is answered otherwise.
    const AuditResult r = audit(grow_only_table(), s, named("grow-only"));
    ASSERT_EQ(r.verdict, Verdict::history_dependent) << finding(r, s);
    ASSERT_TRUE(r.counterexample && r.counterexample->asked_before()) << finding(r, s);
    EXPECT_EQ(r.counterexample->asked_before()->lengths.at("n"), 8) << "the longest request is named";
    EXPECT_LT(r.counterexample->lengths.at("n"), 8) << finding(r, s);
    EXPECT_NE(detail_text(r).find("alike twice in a row"), std::string::npos) << detail_text(r);
    // Replayed on a fresh layer (x, the longest request, x again) it reproduces; a layer without the table holds.
    AuditOptions o = named("grow-only");
    o.dtype = r.dtype;
    EXPECT_EQ(reevaluate(grow_only_table(), s, *r.counterexample, false, o).verdict, Verdict::history_dependent);
    const NamedBlackBox fresh = [](const Tensors& in) { return Tensors{{"y", in.at("x")}}; };
    EXPECT_EQ(reevaluate(fresh, s, *r.counterexample, false, o).verdict, Verdict::holds);
    EXPECT_EQ(audit(fresh, s, named("no table")).verdict, Verdict::holds);
    // In batches: the case asked alone differs from its batched answer, and its batch sent again answers as alone
    // does: the layer changed since, not the batch (which the batch-mean test above tells).
    const AuditResult b = batched_audit(with_batches(grow_only_table(), [](const auto&, auto&) {}), s);
    EXPECT_EQ(b.verdict, Verdict::history_dependent) << finding(b, s);
}


TEST(SignatureAuditBatched, AViolationOnlyABatchShowsIsBatchDependentAndOneTheLayerHasAloneStaysViolated) {
    // Items after the first of a batch get the batch position added to a value: L(P x) and P L(x) sit at
    // different places of their batch, so the case fails batched and holds alone.
    const Touch by_place = [](const std::vector<Tensors>&, std::vector<Answer<Tensors>>& out) {
        for (std::size_t k = 0; k < out.size(); ++k) out[k].value->at("y").values[0] += static_cast<double>(k);
    };
    const AuditResult dependent = batched_audit(with_batches(cross_attention(false), by_place), cross_signature());
    EXPECT_EQ(dependent.verdict, Verdict::batch_dependent) << finding(dependent, cross_signature());
    EXPECT_NE(detail_text(dependent).find("the failing one"), std::string::npos) << detail_text(dependent);
    ASSERT_TRUE(dependent.counterexample);
    EXPECT_EQ(dependent.counterexample->batches().size(), 2u) << "found in a batch: both of its batched requests kept";
    const AuditResult own = batched_audit(with_batches(cross_attention(true), [](const auto&, auto&) {}), cross_signature());
    EXPECT_EQ(own.verdict, Verdict::violated) << finding(own, cross_signature());
    ASSERT_TRUE(own.counterexample);
    EXPECT_EQ(own.counterexample->lengths.at("m"), 2) << "shrunk alone as before";
}

TEST(SignatureAuditBatched, ACaseThatErrsAloneIsAnErrorEvenWhenItsBatchAnswered) {
    // The layer refuses n = 3 alone; its batched side answers everything (a fast path decided for the batch).
    const NamedBlackBox exact = cross_attention(false);
    const NamedBlackBox refuses_3 = [exact](const Tensors& in) {
        if (in.at("q").shape[0] == 3) throw AdapterError("the layer returned 2 rows for 3");
        return exact(in);
    };
    BatchedNamedBlackBox box = with_batches(exact, [](const auto&, auto&) {});
    box.one = refuses_3;
    AuditOptions o = named("fast path");
    o.cases = 300;  // 30 confirmed alone: one of them at n = 3
    const AuditResult r = audit(std::vector<BatchedNamedBlackBox>{box}, cross_signature(), o);
    EXPECT_EQ(r.verdict, Verdict::error) << finding(r, cross_signature());
    EXPECT_NE(r.error.find("the layer returned 2 rows for 3"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("asked alone; its answers in a batched request were accepted"), std::string::npos) << r.error;
    EXPECT_EQ(exit_code(r.verdict), 2);
}

// The same layers computed in float: judged with the float32 tolerance inferred from their answers, they hold;
// the tolerance's k (every axis's length plus the widest fixed size) covers their reductions.
TEST(SignatureAudit, Float32LayersHoldWithTheInferredFloat32Tolerance) {
    Draw<float> draw = dyadic_draw<float>(11);
    const auto cross = CrossAttention<float>::random(kD, draw);
    const NamedBlackBox cross_f32 = [cross](const Tensors& in) {
        const Mat<float> y = cross(matrix(in.at("q")).cast<float>(), matrix(in.at("mem")).cast<float>());
        return Tensors{{"y", tensor_of(y.cast<double>())}};
    };
    Signature wide = cross_signature();
    wide.axes = {parse_axis("n=1..32"), parse_axis("m=1..64")};
    const AuditResult r = audit(cross_f32, wide, named("cross-attention in float"));
    EXPECT_EQ(r.verdict, Verdict::holds) << finding(r, wide);
    EXPECT_EQ(r.dtype, Arithmetic::float32);
    EXPECT_TRUE(r.dtype_inferred);
    EXPECT_EQ(r.axis_lengths.at("m").back(), 64);
    EXPECT_EQ(r.evaluations, 2 * 100 + 3 + 1);  // the repeated cases, and the first asked again at the end
    const auto mp = MessagePassing<float>::random(kD, kEdgeD, draw, Aggregation::mean);
    const NamedBlackBox mp_f32 = named_graph_layer(mp);
    Signature graph = graph_signature();
    graph.axes = {parse_axis("nodes=1..32"), parse_axis("edges=0..128")};
    const AuditResult g = audit(mp_f32, graph, named("message passing in float"));
    EXPECT_EQ(g.verdict, Verdict::holds) << finding(g, graph);
    EXPECT_EQ(g.dtype, Arithmetic::float32);
    EXPECT_EQ(g.axis_lengths.at("edges").back(), 128);
}

// ... and the float64 tolerance is not loose: a leak of relative size 1e-7 per memory position is seen.
TEST(SignatureAudit, AFloat64MemoryLeakOfRelativeSize1e7IsViolated) {
    const NamedBlackBox exact = cross_attention(false);
    const NamedBlackBox leak = [exact](const Tensors& in) {
        Tensors moved = in;
        Tensor& mem = moved.at("mem");
        for (std::size_t k = 0; k < mem.values.size(); ++k)
            mem.values[k] *= 1.0 + 1e-7 * static_cast<double>(k / static_cast<std::size_t>(mem.shape[1]));
        return exact(moved);
    };
    const AuditResult r = audit(leak, cross_signature(), named("tiny memory leak"));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, cross_signature());
    EXPECT_EQ(r.counterexample->axis_at_fault, "m");
}

TEST(SignatureAudit, TheCounterexampleTextNamesLengthsCyclesInputsBothSidesAndWhere) {
    const Signature s = cross_signature();
    const AuditResult r = audit(cross_attention(true), s, named("cross-attention with memory positions"));
    ASSERT_TRUE(r.counterexample);
    const std::string text = describe(*r.counterexample, s);
    for (const std::string part : {"lengths: m = 2 n = 1", "m (0 1), n ()", "the axis at fault: m", "input q (1, 4) =",
                                   "input mem (2, 4) =", "output y (DIFFERS):", "L(P x) (1, 4) =", "P L(x) (1, 4) =",
                                   "largest |difference| = ", " at (0, "})
        EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
    EXPECT_NE(describe_finding(r).find("violated (float64)"), std::string::npos) << describe_finding(r);
}

// A matrix's values in columns that line up whatever their lengths: every value padded to the longest one's
// width ("-0.0620512", "-1.23457e-05"), never below 9; the matrices of one counterexample share one width.
TEST(SignatureAudit, MatrixColumnsLineUpWhateverTheValuesLengths) {
    const double narrow[] = {0.048128, 0.5, -0.25};
    EXPECT_EQ(column_width(narrow, 3), kTerminalValueWidth);
    const double wide[] = {0.048128, -0.0620512, -1.23456789e-5};
    EXPECT_EQ(column_width(wide, 3), 12);  // "-1.23457e-05"
    const Tensor m{{2, 3}, {0.048128, -0.0620512, 1, -1.23456789e-5, 0.024064, 0}};
    const std::string text = format_tensor(m, "");
    const std::size_t newline = text.find('\n');
    ASSERT_NE(newline, std::string::npos);
    EXPECT_EQ(text.substr(0, newline), "[    0.048128   -0.0620512            1]");
    EXPECT_EQ(text.substr(newline + 1), "[-1.23457e-05     0.024064            0]\n");
    // A signature counterexample: an output's two sides share their columns' width.
    Counterexample sc = finding_of({{"n", 1}}, {{"n", Permutation::identity(1)}}, {{"x", Tensor{{1, 2}, {0.5, 0.25}}}});
    OutputComparison y;
    y.name = "y";
    y.layer_of_permuted = Tensor{{1, 2}, {0.5, 0.25}};
    y.permuted_layer = Tensor{{1, 2}, {-1.23456789e-5, 0.25}};
    sc.outputs.push_back(y);
    Signature sig;
    sig.axes = {parse_axis("n=1..4")};
    sig.inputs = {parse_input("x:n,2")};
    sig.outputs = {parse_output("y:n,2")};
    const std::string both = describe(sc, sig);
    EXPECT_NE(both.find("      [         0.5         0.25]\n"), std::string::npos) << both;
    EXPECT_NE(both.find("      [-1.23457e-05         0.25]\n"), std::string::npos) << both;
}

// The terminal's rows (format_row, the one function of every view of values there): a wide row keeps its first and
// last three values and says how many it has, every value at 6 significant digits, each line within 120 columns;
// a row of at most kTerminalRowValues values is shown whole.
TEST(SignatureAudit, WideRowsAreElidedOnTheTerminalAtSixSignificantDigits) {
    std::vector<double> row(50);
    for (std::size_t j = 0; j < row.size(); ++j) row[j] = 0.1 * static_cast<double>(j + 1);
    EXPECT_EQ(format_row(row.data(), row.size()), "[0.1 0.2 0.3 ... 4.8 4.9 5] (50 values)");
    EXPECT_EQ(format_row(row.data(), kTerminalRowValues), "[0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8]");
    EXPECT_EQ(format_row(row.data(), 0), "[]");
    // The feature of the largest difference stays in view, with its index.
    EXPECT_EQ(format_row(row.data(), row.size(), 0, 6, 43), "[0.1 0.2 0.3 ... 43: 4.4 ... 4.8 4.9 5] (50 values)");
    EXPECT_EQ(format_row(row.data(), row.size(), 0, 6, 3), "[0.1 0.2 0.3 3: 0.4 ... 4.8 4.9 5] (50 values)");
    EXPECT_EQ(format_row(row.data(), row.size(), 0, 6, 46), "[0.1 0.2 0.3 ... 46: 4.7 4.8 4.9 5] (50 values)");
    EXPECT_EQ(format_row(row.data(), row.size(), 0, 6, 1), format_row(row.data(), row.size())) << "shown anyway";
    const double digits[] = {1.0 / 3.0, -123456789.0, 1e-9 / 3.0};
    EXPECT_EQ(format_row(digits, 3), "[0.333333 -1.23457e+08 3.33333e-10]");
    EXPECT_EQ(format_row(digits, 1, 12, 9), "[ 0.333333333]") << "a width and another precision when asked";
    // A finding's text: an input with rows of 200 values and an output with rows of 50.
    const Permutation swap = Permutation::transposition(2, 0, 1);
    Counterexample sc = finding_of({{"n", 2}}, {{"n", swap}}, {{"x", Tensor{{2, 200}, std::vector<double>(400, 2.0 / 3.0)}}});
    OutputComparison y;
    y.name = "y";
    y.layer_of_permuted = y.permuted_layer = Tensor{{2, 50}, std::vector<double>(100, 1e5 / 3.0)};
    sc.outputs.push_back(y);
    Signature wide;
    wide.axes = {parse_axis("n=1..8")};
    wide.inputs = {parse_input("x:n,200")};
    wide.outputs = {parse_output("y:n,50")};
    const std::string text = describe(sc, wide);
    EXPECT_NE(text.find(" values)"), std::string::npos) << text;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        EXPECT_LE(line.size(), 120u) << line;
        EXPECT_EQ(line.find("0.6666666"), std::string::npos) << line;
        EXPECT_EQ(line.find("33333.33"), std::string::npos) << line;
    }
    EXPECT_NE(text.find("] (200 values)"), std::string::npos) << text;
    EXPECT_NE(text.find("33333.3 ... "), std::string::npos) << text;
    // The column of the largest difference is shown in every row of both sides.
    sc.outputs[0].where = {1, 30};
    sc.outputs[0].layer_of_permuted.values[80] = -2.5;
    EXPECT_NE(describe(sc, wide).find("33333.3 ... 30:      -2.5 ... "), std::string::npos) << describe(sc, wide);
}

// An output without an axis is invariant: the text names its sides L(P x) and L(x), an equivariant output's L(P x)
// and P L(x).
TEST(SignatureAudit, TheCounterexampleTextNamesEachOutputsSidesByItsOwnAxes) {
    const AuditResult r = audit(message_passing(Aggregation::sum, {true, false}), graph_signature(), named("node index"));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, graph_signature());
    const std::string text = describe(*r.counterexample, graph_signature());
    const std::size_t g = text.find("output g ");
    ASSERT_NE(g, std::string::npos) << text;
    const std::string y_part = text.substr(0, g), g_part = text.substr(g);
    EXPECT_NE(y_part.find("    P L(x) ("), std::string::npos) << text;
    EXPECT_NE(g_part.find("    L(x)   ("), std::string::npos) << text;
    EXPECT_EQ(g_part.find("P L(x)"), std::string::npos) << text;
}

// describe_finding has only the result: the result keeps the signature, so the C++ API's text shows the inputs
// in the signature's order with their kinds, and the outputs in its order, as the terminal does.
TEST(SignatureAudit, DescribeFindingShowsInputsWithTheirKindsAndOutputsInTheSignaturesOrder) {
    const AuditResult r = audit(message_passing(Aggregation::sum, {true, false}), graph_signature(), named("node index"));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, graph_signature());
    ASSERT_TRUE(r.signature);
    const std::string text = describe_finding(r);
    EXPECT_EQ(text.substr(text.find('\n') + 1), describe(*r.counterexample, graph_signature()));
    const auto at = [&text](const std::string& part) { return text.find(part); };
    ASSERT_NE(at("input x "), std::string::npos) << text;
    EXPECT_LT(at("input x "), at("input edge_index ")) << text;
    EXPECT_LT(at("input edge_index "), at("input edge_attr ")) << text;
    EXPECT_NE(at("), index into nodes =\n"), std::string::npos) << text;
    EXPECT_LT(at("output y "), at("output g ")) << text;
    const AuditResult masked = audit(masked_self_attention(), masked_signature(), named("masked"));
    AuditResult shown = masked;
    shown.verdict = Verdict::violated;  // describe a case of the holding layer, as if it failed
    shown.counterexample = finding_of({{"n", 2}}, {{"n", Permutation::transposition(2, 0, 1)}},
                                      {{"x", Tensor{{2, 4}, {0, 0, 0, 0, 1, 1, 1, 1}}}, {"pad", Tensor{{2}, {0, 1}}}});
    EXPECT_NE(describe_finding(shown).find("input pad (2), mask (1 = padding) =\n"), std::string::npos)
        << describe_finding(shown);
}

// One case evaluated against two black boxes: the expected side from the reference's answer to x. The same layer as
// its own reference is the plain audit; another layer (other weights) is found out at once, on a small case, and a
// layer with a position signal against its position-free twin differs where the order matters.
TEST(SignatureAudit, AgainstAReferenceTheExpectedSideIsTheReferencesAnswer) {
    const Signature s = cross_signature();
    const AuditResult same = audit_against(cross_attention(false), cross_attention(false), s, named("itself"));
    EXPECT_EQ(same.verdict, Verdict::holds) << detail_text(same);
    const AuditResult plain = audit(cross_attention(false), s, named("itself"));
    EXPECT_EQ(same.cases, plain.cases);
    EXPECT_EQ(same.checked.size(), plain.checked.size());
    const AuditResult other = audit_against(cross_attention(false), cross_attention(false, 12), s, named("other weights"));
    ASSERT_EQ(other.verdict, Verdict::violated) << detail_text(other);
    ASSERT_TRUE(other.counterexample);
    EXPECT_EQ(other.counterexample->lengths.at("n"), 1) << finding(other, s);
    EXPECT_EQ(other.counterexample->lengths.at("m"), 1) << finding(other, s);
    EXPECT_NE(detail_text(other).find("output y: L(P x) and P L(x) differ by"), std::string::npos) << detail_text(other);
    // The reference's own permutation symmetry is not what is judged: a layer that is equivariant against a
    // reference that is not (memory positions) differs.
    const AuditResult twin = audit_against(cross_attention(false), cross_attention(true), s, named("twin"));
    EXPECT_EQ(twin.verdict, Verdict::violated) << detail_text(twin);
}

// The agreement property: a layer and a reference implementation of one signature, every input answered alike.
// The layers below are windowed sums along n, y[i] = the sum of x[j] over i - w <= j <= i, with a mask whose padded
// positions a fast path answers with NaN (a query that sees no key) where the reference answers 0.
Signature window_signature(int max_len = 8) {
    return Signature{{parse_axis("n=1.." + std::to_string(max_len))}, {parse_input("x:n,2"), parse_input("pad:n:mask")},
                     {parse_output("y:n,2")}};
}

// `nan_at_pads`: NaN at the padded positions (else 0); `raise_past`: throws on a sequence longer than that.
NamedBlackBox window_sum(int w, bool nan_at_pads = false, int raise_past = 1 << 20) {
    return [=](const Tensors& in) {
        const Tensor& x = in.at("x");
        const Tensor& pad = in.at("pad");
        const int n = x.shape[0];
        if (n > raise_past) throw LayerRaised("IndexError: the window runs off a table of " + std::to_string(raise_past));
        Tensor y{{n, 2}, std::vector<double>(static_cast<std::size_t>(2 * n), 0.0)};
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < 2; ++k) {
                double& out = y.values[static_cast<std::size_t>(2 * i + k)];
                if (pad.values[static_cast<std::size_t>(i)] != 0.0) {
                    out = nan_at_pads ? std::numeric_limits<double>::quiet_NaN() : 0.0;
                    continue;
                }
                for (int j = std::max(0, i - w); j <= i; ++j)
                    if (pad.values[static_cast<std::size_t>(j)] == 0.0) out += x.values[static_cast<std::size_t>(2 * j + k)];
            }
        return Tensors{{"y", y}};
    };
}

AuditOptions agreement(const std::string& name) {
    AuditOptions o = named(name);
    o.property = Property{"agreement"};
    return o;
}

TEST(Agreement, TheSameFunctionAgreesAndAWindowOffByOneIsShownAtTheShortestLengthThatShowsIt) {
    const Signature s = window_signature();
    const AuditResult same = audit_against(window_sum(3), window_sum(3), s, agreement("window 3"));
    EXPECT_EQ(same.verdict, Verdict::holds) << detail_text(same);
    EXPECT_EQ(same.property, Property{"agreement"});
    // Window 4 against 3 differs only where a position sees 5 back: n >= 5, met by the first cases at the axis's
    // longest, and shrunk to n = 5 (no shorter sequence shows it).
    const AuditResult off = audit_against(window_sum(4), window_sum(3), s, agreement("window 4"));
    ASSERT_EQ(off.verdict, Verdict::violated) << detail_text(off);
    ASSERT_TRUE(off.counterexample);
    // The longest sequence within the first cases: a three-case audit covers n = 8.
    AuditOptions three = agreement("window 3, three cases");
    three.cases = 3;
    const AuditResult short_run = audit_against(window_sum(3), window_sum(3), s, three);
    ASSERT_EQ(short_run.verdict, Verdict::holds) << detail_text(short_run);
    EXPECT_EQ(short_run.axis_lengths.at("n").back(), 8);
    EXPECT_EQ(off.counterexample->lengths.at("n"), 5) << finding(off, s);
    EXPECT_NE(detail_text(off).find("output y: L(x) and R(x) differ by"), std::string::npos) << detail_text(off);
    EXPECT_NE(detail_text(off).find("the same input to both"), std::string::npos) << detail_text(off);
    const std::string text = describe(*off.counterexample, s, finding_words(off.property, off.verdict, *off.counterexample));
    EXPECT_NE(text.find("R(x)"), std::string::npos) << text;
}

// Attention of x (n x 2) over itself with an additive bias (n x n); `drops_past`: a fast path that leaves the
// bias out for n above it. `differs_every`: a disagreement at the lengths that are multiples of it, and only there.
NamedBlackBox biased_attention(int drops_past = 1 << 20, int differs_every = 0) {
    return [=](const Tensors& in) {
        const Tensor& x = in.at("x");
        const Tensor& bias = in.at("bias");
        const int n = x.shape[0];
        Tensor y{{n, 2}, std::vector<double>(static_cast<std::size_t>(2 * n), 0.0)};
        for (int i = 0; i < n; ++i) {
            std::vector<double> w(static_cast<std::size_t>(n));
            double total = 0;
            for (int j = 0; j < n; ++j) {
                const double b = n > drops_past ? 0.0 : bias.values[static_cast<std::size_t>(i * n + j)];
                w[static_cast<std::size_t>(j)] = std::exp(x.values[static_cast<std::size_t>(2 * i)] *
                                                          x.values[static_cast<std::size_t>(2 * j)] + b);
                total += w[static_cast<std::size_t>(j)];
            }
            for (int j = 0; j < n; ++j)
                for (int k = 0; k < 2; ++k)
                    y.values[static_cast<std::size_t>(2 * i + k)] +=
                        w[static_cast<std::size_t>(j)] / total * x.values[static_cast<std::size_t>(2 * j + k)];
        }
        if (differs_every > 0 && n % differs_every == 0) y.values[0] += 1.0;
        return Tensors{{"y", y}};
    };
}

TEST(Agreement, TheFirstCasesAreGenericSoABiasLeftOutPastALengthIsFoundInFourCases) {
    // A bias that is constant along a row cancels in the softmax: drawn from few values (the early cases' small
    // sizes, a palette), a dropped bias can hide. The cases at the axis's longest are drawn generic.
    const Signature s = signature_of({"n=1..16"}, {"x:n,2", "bias:n,n"}, {"y:n,2"});
    AuditOptions four = agreement("bias dropped past 8");
    four.cases = 4;
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        four.seed = seed;
        const AuditResult r = audit_against(biased_attention(8), biased_attention(), s, four);
        ASSERT_EQ(r.verdict, Verdict::violated) << "seed " << seed << "\n" << detail_text(r);
        EXPECT_EQ(r.counterexample->lengths.at("n"), 9) << "seed " << seed << "\n" << finding(r, s);
        EXPECT_EQ(audit_against(biased_attention(), biased_attention(), s, four).verdict, Verdict::holds);
    }
}

TEST(Agreement, ADisagreementAtSomeLengthsOnlyShrinksToTheShortestOfThemForEverySeed) {
    // Lengths 16, 32, 48 and 64 disagree and no other: single deletions stop at the length found; the shorter
    // lengths, tried first, reach 16.
    const Signature s = signature_of({"n=1..64"}, {"x:n,2", "bias:n,n"}, {"y:n,2"});
    AuditOptions o = agreement("every sixteenth");
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        o.seed = seed;
        const AuditResult r = audit_against(biased_attention(1 << 20, 16), biased_attention(), s, o);
        ASSERT_EQ(r.verdict, Verdict::violated) << "seed " << seed << "\n" << detail_text(r);
        EXPECT_EQ(r.counterexample->lengths.at("n"), 16) << "seed " << seed << "\n" << finding(r, s);
    }
}

TEST(Agreement, ASideThatRaisesWhereTheOtherAnswersIsTheFindingAndBothRaisingIsAnError) {
    const Signature s = window_signature();
    const AuditResult layer = audit_against(window_sum(3, false, 6), window_sum(3), s, agreement("raises past 6"));
    ASSERT_EQ(layer.verdict, Verdict::violated) << detail_text(layer);
    ASSERT_TRUE(layer.counterexample);
    EXPECT_EQ(layer.counterexample->lengths.at("n"), 7) << finding(layer, s);
    EXPECT_NE(layer.counterexample->raised().find("IndexError"), std::string::npos) << layer.counterexample->raised();
    EXPECT_FALSE(layer.counterexample->raised_by_reference());
    EXPECT_NE(detail_text(layer).find("L(x) raised where R(x) was answered"), std::string::npos) << detail_text(layer);
    const AuditResult reference = audit_against(window_sum(3), window_sum(3, false, 6), s, agreement("reference raises"));
    ASSERT_EQ(reference.verdict, Verdict::violated) << detail_text(reference);
    EXPECT_TRUE(reference.counterexample->raised_by_reference());
    EXPECT_NE(reference.counterexample->raised().find("the reference raised: IndexError"), std::string::npos)
        << reference.counterexample->raised();
    EXPECT_NE(detail_text(reference).find("R(x) raised where L(x) was answered"), std::string::npos) << detail_text(reference);
    const AuditResult both = audit_against(window_sum(3, false, 6), window_sum(3, false, 6), s, agreement("both"));
    EXPECT_EQ(both.verdict, Verdict::error);
    EXPECT_NE(both.error.find("both raised on the same input"), std::string::npos) << both.error;
    // Raising is no finding of an equivariance audit: an error, as before.
    const NamedBlackBox identity = [](const Tensors& in) {
        if (in.at("x").shape[0] > 6) throw LayerRaised("IndexError: too long");
        return Tensors{{"y", in.at("x")}};
    };
    const AuditResult plain = audit(identity, s, named("raises"));
    EXPECT_EQ(plain.verdict, Verdict::error) << detail_text(plain);
    EXPECT_NE(plain.error.find("IndexError: too long"), std::string::npos) << plain.error;
}

TEST(Agreement, PaddedSlotsAreComparedByDefaultNanEqualOnlyToNanAndSkipPaddedLeavesThemOut) {
    const Signature s = window_signature();
    const AuditResult nan = audit_against(window_sum(3, true), window_sum(3), s, agreement("NaN at pads"));
    ASSERT_EQ(nan.verdict, Verdict::violated) << detail_text(nan);
    AuditOptions skip = agreement("NaN at pads, pads skipped");
    skip.skip_padded = true;
    EXPECT_EQ(audit_against(window_sum(3, true), window_sum(3), s, skip).verdict, Verdict::holds);
    // NaN against NaN agrees: no non-finite verdict of its own.
    const AuditResult both = audit_against(window_sum(3, true), window_sum(3, true), s, agreement("NaN both"));
    EXPECT_EQ(both.verdict, Verdict::holds) << detail_text(both);
}

TEST(Agreement, AnAnswerThatChangesWhenAskedAgainIsNondeterministicNeverADisagreement) {
    const Signature s = window_signature();
    auto calls = std::make_shared<int>(0);
    const NamedBlackBox noisy = [calls, inner = window_sum(3)](const Tensors& in) {
        Tensors out = inner(in);
        out.at("y").values[0] += 1e-3 * (++*calls % 7);  // another answer at almost every call
        return out;
    };
    const AuditResult layer = audit_against(noisy, window_sum(3), s, agreement("noisy"));
    EXPECT_EQ(layer.verdict, Verdict::nondeterministic) << detail_text(layer);
    const AuditResult reference = audit_against(window_sum(3), noisy, s, agreement("noisy reference"));
    EXPECT_EQ(reference.verdict, Verdict::nondeterministic) << detail_text(reference);
    EXPECT_NE(detail_text(reference).find("R(x)"), std::string::npos) << detail_text(reference);
}

TEST(Agreement, EachSideIsBatchedAsItsBoxAllowsWithTheUnbatchedVerdictAndCase) {
    const Signature s = window_signature();
    auto calls = std::make_shared<int>(0);
    const auto batched = [calls](NamedBlackBox one) {
        BatchedNamedBlackBox b{one, {}};
        b.many.capacity = [] { return 4; };
        b.many.call = [calls, one](const std::vector<Tensors>& items) {
            ++*calls;
            std::vector<Answer<Tensors>> out;
            for (const Tensors& t : items) out.push_back({one(t), "", ""});
            return out;
        };
        return b;
    };
    const AuditOptions o = agreement("window 4, batched");
    const AuditResult plain = audit_against(window_sum(4), window_sum(3), s, o);
    const AuditResult both = audit({batched(window_sum(4))}, {batched(window_sum(3))}, s, o);
    EXPECT_GT(*calls, 0);
    ASSERT_EQ(both.verdict, plain.verdict) << detail_text(both);
    EXPECT_EQ(both.counterexample->case_index, plain.counterexample->case_index);
    EXPECT_EQ(both.counterexample->lengths, plain.counterexample->lengths);
    const AuditResult one_side = audit({batched(window_sum(3, false, 6))}, {BatchedNamedBlackBox{window_sum(3), {}}}, s,
                                       agreement("raises past 6, batched"));
    ASSERT_EQ(one_side.verdict, Verdict::violated) << detail_text(one_side);
    EXPECT_NE(one_side.counterexample->raised().find("IndexError"), std::string::npos);
}

// A float32 kernel against a float64 original: the precision inferred is the coarser side's, float32, where the
// answers of both together would say float64 (the original's are not float32 values).
TEST(Agreement, TheInferredPrecisionIsTheCoarserSides) {
    const auto thirds = [](bool single) {
        return NamedBlackBox([single, inner = window_sum(3)](const Tensors& in) {
            Tensors out = inner(in);
            for (double& v : out.at("y").values) v = single ? static_cast<double>(static_cast<float>(v / 3.0)) : v / 3.0;
            return out;
        });
    };
    const AuditResult r = audit_against(thirds(true), thirds(false), window_signature(), agreement("float32 kernel"));
    EXPECT_EQ(r.verdict, Verdict::holds) << detail_text(r);
    EXPECT_EQ(r.dtype, Arithmetic::float32);
    EXPECT_TRUE(r.dtype_inferred);
    AuditOptions strict = agreement("float32 kernel judged as float64");
    strict.dtype = Arithmetic::float64;
    EXPECT_EQ(audit_against(thirds(true), thirds(false), window_signature(), strict).verdict, Verdict::violated);
}

TEST(Agreement, WithoutAReferenceTheAuditIsRefusedWithWhatToGive) {
    try {
        audit(window_sum(3), window_signature(), agreement("alone"));
        FAIL() << "an agreement audit without a reference ran";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("reference implementation"), std::string::npos) << e.what();
    }
}

// A batch of graphs as PyG holds one: node features, a `batch` vector naming each node's graph, one output row per
// graph. The axis graphs is a dim of no input: a permutation of it renumbers the batch vector and moves the rows.
Signature graph_batch_signature() {
    return Signature{{parse_axis("nodes=1..8"), parse_axis("graphs=1..4")},
                     {parse_input("x:nodes,3"), parse_input("batch:nodes:index=graphs")},
                     {parse_output("g:graphs,3")}};
}

// The mean of each graph's nodes (global_mean_pool); `count_from_max`: the number of graphs read as max(batch) + 1,
// as PyG does without `size`, else from the length the request carries; `order_aware`: graph k's row + k.
NamedBlackBox mean_pool(bool count_from_max, bool order_aware = false) {
    return [=](const Tensors& in) {
        const Tensor& x = in.at("x");
        const Tensor& batch = in.at("batch");
        int graphs = 0;
        if (count_from_max)
            for (double b : batch.values) graphs = std::max(graphs, static_cast<int>(b) + 1);
        else
            graphs = static_cast<int>(in.at(kLengthInput + "graphs").values.at(0));
        Tensor g{{graphs, 3}, std::vector<double>(static_cast<std::size_t>(3 * graphs), 0.0)};
        std::vector<double> count(static_cast<std::size_t>(graphs), 0.0);
        for (std::size_t v = 0; v < batch.values.size(); ++v) {
            const auto k = static_cast<std::size_t>(batch.values[v]);
            count[k] += 1;
            for (std::size_t c = 0; c < 3; ++c) g.values[3 * k + c] += x.values[3 * v + c];
        }
        for (std::size_t k = 0; k < count.size(); ++k)
            for (std::size_t c = 0; c < 3; ++c)
                g.values[3 * k + c] = g.values[3 * k + c] / std::max(count[k], 1.0) + (order_aware ? static_cast<double>(k) : 0.0);
        return Tensors{{"g", g}};
    };
}

TEST(SignatureAudit, AGraphBatchMovesTheGraphsOnlyTheBatchVectorNames) {
    const Signature s = graph_batch_signature();
    EXPECT_NO_THROW(validate(s));
    EXPECT_EQ(free_axes(s), std::vector<std::string>{"graphs"});
    const AuditResult carried = audit(mean_pool(false), s, named("mean pool, the number of graphs carried"));
    EXPECT_EQ(carried.verdict, Verdict::holds) << detail_text(carried) << carried.error;
    EXPECT_EQ(carried.axis_lengths.at("graphs").back(), 4);
    // Every graph has a node in every case and every shrink, so max(batch) + 1 is the number of graphs.
    const AuditResult counted = audit(mean_pool(true), s, named("mean pool, max(batch) + 1 graphs"));
    EXPECT_EQ(counted.verdict, Verdict::holds) << detail_text(counted) << counted.error;
    const AuditResult aware = audit(mean_pool(true, true), s, named("a readout that sees the graphs' order"));
    ASSERT_EQ(aware.verdict, Verdict::violated) << detail_text(aware) << aware.error;
    EXPECT_EQ(aware.counterexample->axis_at_fault, "graphs") << finding(aware, s);
    EXPECT_EQ(aware.counterexample->lengths.at("graphs"), 2) << finding(aware, s);
    EXPECT_TRUE(covers_free_axes(s, aware.counterexample->inputs, aware.counterexample->lengths));
    // An axis that nothing names still moves nothing.
    const Signature idle{{parse_axis("n=1..4"), parse_axis("m=1..4")}, {parse_input("x:n,2")}, {parse_output("y:n,2")}};
    EXPECT_THROW(validate(idle), std::invalid_argument);
}

// A graph with a batch vector kept sorted (PyG's batch) and an edge list kept sorted by target (PyG's aggregations'
// index): x:nodes,2, w:edges (an edge weight), batch:nodes:index=graphs,sorted, edge_index:2,edges:index=nodes,sorted=1.
Signature sorted_graph_signature() {
    return Signature{{parse_axis("nodes=1..6"), parse_axis("edges=0..8"), parse_axis("graphs=1..3")},
                     {parse_input("x:nodes,2"), parse_input("w:edges"), parse_input("batch:nodes:index=graphs,sorted"),
                      parse_input("edge_index:2,edges:index=nodes,sorted=1")},
                     {parse_output("y:nodes,2"), parse_output("m:edges,2"), parse_output("g:graphs,2")}};
}

bool ascending(const std::vector<double>& v, std::size_t first, std::size_t count) {
    for (std::size_t i = first + 1; i < first + count; ++i)
        if (v[i] < v[i - 1]) return false;
    return true;
}

// An aggregation that, as library code does, raises unless its index is sorted: y[v] sums w[e] x[src] over the edges
// into v, each times its rank among them when `ranked` (an LSTM-like order dependence within a neighbourhood); the
// message m[e] = w[e] (x[src] - x[dst]) of every edge; g sums y over each graph, the batch vector required sorted.
NamedBlackBox sorted_aggregation(bool ranked) {
    return [ranked](const Tensors& in) {
        const Tensor& x = in.at("x");
        const Tensor& w = in.at("w");
        const Tensor& batch = in.at("batch");
        const Tensor& ei = in.at("edge_index");
        const std::size_t n = batch.values.size(), e = w.values.size();
        if (!ascending(ei.values, e, e)) throw std::runtime_error("the 'index' tensor is not sorted");
        if (!ascending(batch.values, 0, n)) throw std::runtime_error("the batch vector is not sorted");
        const int graphs = static_cast<int>(in.at(kLengthInput + "graphs").values.at(0));
        Tensor y{{static_cast<int>(n), 2}, std::vector<double>(2 * n, 0.0)};
        Tensor m{{static_cast<int>(e), 2}, std::vector<double>(2 * e, 0.0)};
        Tensor g{{graphs, 2}, std::vector<double>(2 * static_cast<std::size_t>(graphs), 0.0)};
        std::vector<double> rank(n, 0.0);
        for (std::size_t k = 0; k < e; ++k) {
            const auto src = static_cast<std::size_t>(ei.values[k]), dst = static_cast<std::size_t>(ei.values[e + k]);
            const double r = ranked ? ++rank[dst] : 1.0;
            for (std::size_t c = 0; c < 2; ++c) {
                y.values[2 * dst + c] += r * w.values[k] * x.values[2 * src + c];
                m.values[2 * k + c] = w.values[k] * (x.values[2 * src + c] - x.values[2 * dst + c]);
            }
        }
        for (std::size_t v = 0; v < n; ++v)
            for (std::size_t c = 0; c < 2; ++c) g.values[2 * static_cast<std::size_t>(batch.values[v]) + c] += y.values[2 * v + c];
        return Tensors{{"y", y}, {"m", m}, {"g", g}};
    };
}

TEST(SignatureAudit, ASortedIndexInputIsKeptInOrderAndItsSortMovesWhatLiesAlongIt) {
    // The grammar: index=AXIS,sorted[=ROW], read back as written.
    const TensorSpec by_target = parse_input("edge_index:2,edges:index=nodes,sorted=1");
    EXPECT_EQ(by_target.sorted_row, 1);
    EXPECT_EQ(format_input(by_target), "edge_index:2,edges:index=nodes,sorted=1");
    EXPECT_EQ(parse_input("batch:nodes:index=graphs,sorted").sorted_row, 0);
    EXPECT_EQ(format_input(parse_input("batch:nodes:index=graphs,sorted=0")), "batch:nodes:index=graphs,sorted");
    EXPECT_EQ(parse_input("edge_index:2,edges:index=nodes").sorted_row, -1);
    for (const char* bad : {"e:2,edges:index=nodes,sortd", "e:2,edges:index=nodes,sorted=x", "e:2,edges:index=nodes,",
                            "x:n:mask,sorted"})
        EXPECT_THROW(parse_input(bad), std::invalid_argument) << bad;
    const Signature s = sorted_graph_signature();
    ASSERT_NO_THROW(validate(s));
    ASSERT_EQ(sorted_inputs(s).size(), 2u);
    EXPECT_EQ(sorted_inputs(s)[0]->name, "batch") << "edge_index names nodes, along which batch is kept: batch first";
    const auto refused = [&](std::vector<std::string> inputs) {
        Signature t{{parse_axis("nodes=1..4"), parse_axis("edges=0..4"), parse_axis("graphs=1..2")}, {}, {parse_output("y:nodes")}};
        for (const std::string& i : inputs) t.inputs.push_back(parse_input(i));
        EXPECT_THROW(validate(t), std::invalid_argument) << ::testing::PrintToString(inputs);
    };
    refused({"x:nodes", "e:2,edges:index=nodes,sorted=2"});                       // no row 2
    refused({"x:nodes", "e:edges,edges:index=nodes,sorted"});                     // along two axes
    refused({"x:nodes", "p:nodes:index=nodes,sorted"});                           // names its own axis
    refused({"x:nodes", "a:edges:index=nodes,sorted", "b:edges:index=nodes,sorted"});  // two orders of one axis
    refused({"x:nodes", "a:edges:index=nodes,sorted", "b:nodes:index=edges,sorted"});  // a cycle

    // Every case the audit asks is in order (the box raises otherwise), and its sort moves the edge weights, the
    // messages and the nodes with it: a sum aggregation holds with every axis moving.
    const AuditResult sum = audit(sorted_aggregation(false), s, named("a sum over sorted edges"));
    EXPECT_EQ(sum.verdict, Verdict::holds) << detail_text(sum) << sum.error;
    // Without the qualifier the permuted edge lists come unsorted, and the layer raises.
    Signature unsorted = s;
    for (TensorSpec& t : unsorted.inputs) t.sorted_row = -1;
    const AuditResult raised = audit(sorted_aggregation(false), unsorted, named("a sum over unsorted edges"));
    EXPECT_EQ(raised.verdict, Verdict::error);
    EXPECT_NE(raised.error.find("not sorted"), std::string::npos) << raised.error;

    // An order within a neighbourhood: along the nodes alone the sort keeps each neighbourhood's edges in the order x
    // gives them (what the library's users run) and it holds; along the edges (or every axis) it is violated at two
    // edges into one node.
    AuditOptions nodes = named("a ranked aggregation, along the nodes");
    nodes.settings["along"] = "nodes";
    const AuditResult canonical = audit(sorted_aggregation(true), s, nodes);
    EXPECT_EQ(canonical.verdict, Verdict::holds) << detail_text(canonical) << canonical.error;
    // The verdict line claims what was moved (the nodes alone) and names the option it ran with.
    const std::string head = signature_head(s, canonical);
    EXPECT_EQ(head.rfind(s.outputs[0].name + " equivariant along nodes;", 0), 0u) << head;
    EXPECT_EQ(head.find("to edges"), std::string::npos) << head;
    EXPECT_NE(head.find("; along=nodes)"), std::string::npos) << head;
    for (const char* along : {"edges", ""}) {
        AuditOptions o = named(std::string("a ranked aggregation, along ") + along);
        o.settings["along"] = along;
        const AuditResult ranked = audit(sorted_aggregation(true), s, o);
        ASSERT_EQ(ranked.verdict, Verdict::violated) << along << detail_text(ranked) << ranked.error;
        const Counterexample& c = *ranked.counterexample;
        EXPECT_EQ(c.lengths.at("edges"), 2) << finding(ranked, s);
        EXPECT_EQ(c.axis_at_fault, "edges") << finding(ranked, s);
        const Tensor& ei = c.inputs.at("edge_index");
        EXPECT_EQ(ei.values[2], ei.values[3]) << "both edges into one node: " << finding(ranked, s);
        const Tensors px = permute_inputs(s, c.perms, c.inputs);
        EXPECT_TRUE(ascending(px.at("edge_index").values, 2, 2)) << "P x in order: " << finding(ranked, s);
        EXPECT_TRUE(ascending(px.at("batch").values, 0, px.at("batch").values.size())) << finding(ranked, s);
        EXPECT_NO_THROW(require_case_fits(s, Case{c.lengths, c.perms, c.inputs}));
    }
    // settle_case puts a hand-made case in order and is idempotent: the edges (0 -> 1, 1 -> 0, 1 -> 1) sorted by
    // target are (1 -> 0, 0 -> 1, 1 -> 1), their weights with them; swapping the two nodes makes them (0 -> 1, 1 -> 0,
    // 0 -> 0), which the edges' permutation sorts to (1 -> 0, 0 -> 0, 0 -> 1). A saved case out of order is refused.
    Case c{{{"nodes", 2}, {"edges", 3}, {"graphs", 1}},
           {{"nodes", Permutation::transposition(2, 0, 1)}, {"edges", Permutation::identity(3)}, {"graphs", Permutation::identity(1)}},
           {{"x", tensor({2, 2}, {1, 2, 3, 4})}, {"w", tensor({3}, {10, 20, 30})}, {"batch", tensor({2}, {0, 0})},
            {"edge_index", tensor({2, 3}, {0, 1, 1, 1, 0, 1})}}};
    EXPECT_THROW(require_case_fits(s, c), std::invalid_argument);
    settle_case(s, c);
    EXPECT_EQ(c.inputs.at("edge_index").values, (std::vector<double>{1, 0, 1, 0, 1, 1}));
    EXPECT_EQ(c.inputs.at("w").values, (std::vector<double>{20, 10, 30})) << "the weights move with their edges";
    EXPECT_EQ(c.perms.at("edges"), Permutation(std::vector<int>{1, 2, 0}));
    EXPECT_EQ(permute_inputs(s, c.perms, c.inputs).at("edge_index").values, (std::vector<double>{1, 0, 0, 0, 0, 1}));
    EXPECT_NO_THROW(require_case_fits(s, c));
    const Case again = [&] {
        Case k = c;
        settle_case(s, k);
        return k;
    }();
    EXPECT_TRUE(same_case(again, c));
    // A property that inserts along the sorted axis refuses it.
    Signature padded = s;
    padded.inputs.push_back(parse_input("pad:edges:mask"));
    AuditOptions pads = named("pads");
    pads.property = Property{"padding"};
    pads.settings["padding_axis"] = "edges";
    EXPECT_THROW(audit(sorted_aggregation(false), padded, pads), std::invalid_argument);
    AuditOptions shifted = named("along with a property that moves no axis");
    shifted.property = Property{"agreement"};
    shifted.settings["along"] = "nodes";
    EXPECT_THROW(audit(sorted_aggregation(false), s, shifted), std::invalid_argument);
}

// Each graph's sorted in-degrees, read as a dense per-graph adjacency is (to_dense_adj(edge_index, batch)): an edge
// is counted in its source's graph, at the place its target has inside the target's own graph. An edge between two
// graphs lands at a place that depends on the numbering; inside its graph, it does not.
NamedBlackBox in_degrees() {
    return [](const Tensors& in) {
        const Tensor& batch = in.at("batch");
        const Tensor& ei = in.at("edge_index");
        const std::size_t n = batch.values.size(), e = ei.values.size() / 2, width = 8;
        const int graphs = static_cast<int>(in.at(kLengthInput + "graphs").values.at(0));
        std::vector<std::size_t> place(n), seen(static_cast<std::size_t>(graphs), 0);
        for (std::size_t v = 0; v < n; ++v) place[v] = seen[static_cast<std::size_t>(batch.values[v])]++;
        Tensor d{{graphs, static_cast<int>(width)}, std::vector<double>(static_cast<std::size_t>(graphs) * width, 0.0)};
        for (std::size_t k = 0; k < e; ++k) {
            const auto src = static_cast<std::size_t>(ei.values[k]), dst = static_cast<std::size_t>(ei.values[e + k]);
            d.values[static_cast<std::size_t>(batch.values[src]) * width + place[dst]] += 1.0;
        }
        for (int g = 0; g < graphs; ++g)
            std::sort(d.values.begin() + g * static_cast<long>(width), d.values.begin() + (g + 1) * static_cast<long>(width));
        return Tensors{{"d", d}};
    };
}

TEST(SignatureAudit, EdgesWithinTheirGraphStayInsideEveryCaseShrinkAndProbe) {
    // The grammar: index=AXIS,within=INPUT, with sorted or alone, read back as written.
    const TensorSpec both = parse_input("edge_index:2,edges:index=nodes,sorted=1,within=batch");
    EXPECT_EQ(both.within, "batch");
    EXPECT_EQ(both.sorted_row, 1);
    EXPECT_EQ(format_input(both), "edge_index:2,edges:index=nodes,sorted=1,within=batch");
    EXPECT_THROW(parse_input("e:2,edges:index=nodes,within="), std::invalid_argument);
    const auto signature = [](const std::string& edges, const std::string& batch) {
        return Signature{{parse_axis("nodes=1..8"), parse_axis("graphs=1..3"), parse_axis("edges=0..8")},
                         {parse_input(edges), parse_input(batch)},
                         {parse_output("d:graphs,8")}};
    };
    const Signature s = signature("edge_index:2,edges:index=nodes,within=batch", "batch:nodes:index=graphs");
    ASSERT_NO_THROW(validate(s));
    // within= names an index input along the named axis alone: not a real input, one along another axis, none.
    for (const char* group : {"g:nodes", "g:edges:index=nodes", "g:2,nodes:index=graphs", ""}) {
        Signature bad = s;
        bad.inputs[0].within = "g";
        if (*group) bad.inputs.push_back(parse_input(group));
        EXPECT_THROW(validate(bad), std::invalid_argument) << group;
    }
    // settle_within moves an edge's end that leaves its source's graph into it: nodes 0, 1 in graph 0, node 2 in
    // graph 1; the edge 0 -> 2 becomes 0 -> 0 (2 modulo graph 0's two nodes), 2 -> 1 becomes 2 -> 2.
    Tensors inputs{{"batch", tensor({3}, {0, 0, 1})}, {"edge_index", tensor({2, 3}, {0, 2, 1, 2, 1, 0})}};
    settle_within(s, inputs);
    EXPECT_EQ(inputs.at("edge_index").values, (std::vector<double>{0, 2, 1, 0, 2, 0}));
    // The audit: every case, shrink and probe inside the graphs, so the readout holds; without the qualifier an
    // edge between graphs breaks it, shrunk to two graphs.
    const AuditResult inside = audit(in_degrees(), s, named("in-degrees within"));
    EXPECT_EQ(inside.verdict, Verdict::holds) << detail_text(inside) << inside.error;
    const Signature across = signature("edge_index:2,edges:index=nodes", "batch:nodes:index=graphs");
    const AuditResult crossing = audit(in_degrees(), across, named("in-degrees across"));
    ASSERT_EQ(crossing.verdict, Verdict::violated) << detail_text(crossing) << crossing.error;
    EXPECT_EQ(crossing.counterexample->lengths.at("graphs"), 2) << finding(crossing, across);
    // A saved case with an edge between graphs is refused where the qualifier stands.
    const Counterexample& c = *crossing.counterexample;
    EXPECT_THROW(require_case_fits(s, Case{c.lengths, c.perms, c.inputs}), std::invalid_argument);
}

TEST(SignatureAudit, ReevaluateJudgesASavedCaseAgainAsTheAuditDid) {
    const Signature s = cross_signature();
    const AuditResult found = audit(cross_attention(true), s, named("memory positions"));
    ASSERT_EQ(found.verdict, Verdict::violated);
    AuditOptions o;
    o.dtype = found.dtype;
    const Counterexample& saved = *found.counterexample;
    const AuditResult again = reevaluate(cross_attention(true), s, saved, false, o);
    EXPECT_EQ(again.verdict, Verdict::violated) << detail_text(again);
    EXPECT_EQ(again.evaluations, 2);
    ASSERT_EQ(again.counterexample->outputs.size(), 1u);
    EXPECT_EQ(again.counterexample->outputs[0].max_abs_diff, saved.outputs[0].max_abs_diff);
    const AuditResult fixed = reevaluate(cross_attention(false), s, saved, false, o);
    EXPECT_EQ(fixed.verdict, Verdict::holds) << detail_text(fixed);
    ASSERT_EQ(fixed.counterexample->outputs.size(), 1u);
    EXPECT_TRUE(fixed.counterexample->outputs[0].holds);
    EXPECT_EQ(reevaluate(cross_attention(true), s, saved, true, o).verdict, Verdict::holds) << "deterministic";
    auto calls = std::make_shared<int>(0);
    const NamedBlackBox drifting = [calls, inner = cross_attention(false)](const Tensors& in) {
        Tensors out = inner(in);
        for (double& v : out.at("y").values) v += ++*calls;  // every answer another
        return out;
    };
    const AuditResult twice = reevaluate(drifting, s, saved, true, o);
    EXPECT_EQ(twice.verdict, Verdict::nondeterministic);
    EXPECT_NE(detail_text(twice).find("answered twice with different results"), std::string::npos) << detail_text(twice);
    Counterexample bad = saved;
    bad.inputs.at("mem").shape[0] += 1;
    EXPECT_THROW(reevaluate(cross_attention(true), s, bad, false, o), std::invalid_argument);
    o.dtype.reset();
    EXPECT_THROW(reevaluate(cross_attention(true), s, saved, false, o), std::invalid_argument);
}

TEST(SignatureAudit, ABadSignatureOrBadOptionsAreRefusedBeforeAnyCall) {
    int calls = 0;
    const NamedBlackBox counting = [&calls](const Tensors&) {
        ++calls;
        return Tensors{};
    };
    Signature s = cross_signature();
    s.outputs[0] = parse_output("y:k,4");
    EXPECT_THROW(audit(counting, s, named("bad")), std::invalid_argument);
    AuditOptions o = named("bad");
    o.cases = 0;
    EXPECT_THROW(audit(counting, cross_signature(), o), std::invalid_argument);
    EXPECT_EQ(calls, 0);
}

// The size rule is the library's: a C++ caller gets the error `permcheck audit` gives, before any call.
TEST(SignatureAudit, ATensorOfMoreThan2To22ValuesAtTheLongestLengthsIsRefusedByValidate) {
    int calls = 0;
    const NamedBlackBox counting = [&calls](const Tensors&) {
        ++calls;
        return Tensors{};
    };
    const auto refusal = [&](const Signature& s) {
        try {
            audit(counting, s, named("too large"));
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("<accepted>");
    };
    EXPECT_EQ(refusal(signature_of({"n=1..1024"}, {"q:n,8"}, {"y:n,n,n"})),
              "--output y:n,n,n holds up to 1073741824 values at the longest lengths; at most 4194304 are sent or "
              "read in one tensor (shorten the axes or the fixed sizes)");
    EXPECT_NE(refusal(signature_of({"n=1..1024"}, {"q:n,4096,2"}, {"y:n,1"})).find("--input q:n,4096,2 holds up to 8388608"),
              std::string::npos);
    EXPECT_THROW(validate(signature_of({"n=1..1024"}, {"q:n,4097"}, {"y:n,1"})), std::invalid_argument);
    EXPECT_NO_THROW(validate(signature_of({"n=1..1024"}, {"q:n,4096"}, {"y:n,1"})));  // 2^22 exactly
    Signature negative = signature_of({"n=1..8"}, {"q:n,4"}, {"y:n,4"});
    negative.inputs[0].dims[1].size = -4;  // a C++ caller's, which no flag can write
    EXPECT_THROW(validate(negative), std::invalid_argument);
    EXPECT_EQ(calls, 0);
}

TEST(SignatureLayers, AMeanOrMaxOverNoNeighboursIsZeroAndEdgesInAnyOrderGiveTheSameNodes) {
    Draw<double> draw = dyadic_draw<double>(3);
    for (Aggregation agg : {Aggregation::sum, Aggregation::mean, Aggregation::max}) {
        const auto mp = MessagePassing<double>::random(kD, kEdgeD, draw, agg);
        Mat<double> messages(2, kD);
        messages << 1, -2, 3, 0.5, 3, 4, -1, 0.25;
        // Node 0 receives both messages, node 1 none.
        const Mat<double> agg01 = mp.aggregate(messages, {0, 0}, 2);
        EXPECT_TRUE(agg01.row(1).isZero()) << agg01;
        const Mat<double> reversed = mp.aggregate(messages.colwise().reverse(), {0, 0}, 2);
        EXPECT_EQ(agg01, reversed);
        const Mat<double> expected = agg == Aggregation::sum    ? Mat<double>(messages.colwise().sum())
                                     : agg == Aggregation::mean ? Mat<double>(messages.colwise().mean())
                                                                : Mat<double>(messages.colwise().maxCoeff());
        EXPECT_EQ(Mat<double>(agg01.row(0)), expected);
    }
}

// ---------------------------------------------------------------------------------------- harness self-test

// Plants a harness bug for one test and takes it out again, whatever the test does.
class HarnessSelfTest : public ::testing::Test {
protected:
    void TearDown() override { test_only::plant_harness_bug(test_only::HarnessBug::none); }
};

TEST_F(HarnessSelfTest, RenumberingIndicesWithPInsteadOfItsInverseMakesMessagePassingFailOnA3Cycle) {
    const Signature s = graph_signature();
    for (Aggregation agg : {Aggregation::sum, Aggregation::mean, Aggregation::max}) {
        test_only::plant_harness_bug(test_only::HarnessBug::index_with_p);
        const AuditResult r = audit(message_passing(agg), s, named("message passing"));
        test_only::plant_harness_bug(test_only::HarnessBug::none);
        ASSERT_EQ(r.verdict, Verdict::violated) << "the planted bug was not seen\n" << finding(r, s);
        const Permutation& p = r.counterexample->perms.at("nodes");
        // p and p^-1 agree on involutions: only a permutation that is not its own inverse can show the bug.
        EXPECT_FALSE(p.then(p).is_identity()) << p.cycles();
        EXPECT_GE(p.moved(), 3) << p.cycles();
        // Without the planted bug the same layer holds.
        EXPECT_EQ(audit(message_passing(agg), s, named("message passing")).verdict, Verdict::holds);
    }
}

TEST_F(HarnessSelfTest, MovingAPairwiseInputWithoutTheTransposeMakesBiasAttentionFail) {
    test_only::plant_harness_bug(test_only::HarnessBug::pairwise_without_transpose);
    const AuditResult r = audit(bias_attention(), bias_signature(), named("bias attention"));
    EXPECT_EQ(r.verdict, Verdict::violated) << finding(r, bias_signature());
    ASSERT_TRUE(r.counterexample);
    EXPECT_EQ(r.counterexample->lengths.at("n"), 2);
}

TEST_F(HarnessSelfTest, LeavingAMaskWhereItWasMakesMaskedSelfAttentionFail) {
    test_only::plant_harness_bug(test_only::HarnessBug::mask_wrong_axis);
    const AuditResult r = audit(masked_self_attention(), masked_signature(), named("masked self-attention"));
    EXPECT_EQ(r.verdict, Verdict::violated) << finding(r, masked_signature());
    ASSERT_TRUE(r.counterexample);
    const Tensor& pad = r.counterexample->inputs.at("pad");
    EXPECT_NE(std::count(pad.values.begin(), pad.values.end(), 1.0), 0) << "a bug in moving a mask needs padding";
}

TEST_F(HarnessSelfTest, EachPlantedBugChangesWhatPermuteInputsReturnsAndNothingElse) {
    const Signature s = signature_of({"n=1..8"}, {"x:n,1", "pad:n:mask", "bias:n,n", "e:n:index=n"}, {"y:n,1"});
    const Tensors in{{"x", tensor({3, 1}, {0, 1, 2})},
                     {"pad", tensor({3}, {0, 0, 1})},
                     {"bias", tensor({3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8})},
                     {"e", tensor({3}, {0, 1, 2})}};
    const Permutations cycle{{"n", Permutation({1, 2, 0})}};
    const Tensors right = permute_inputs(s, cycle, in);
    for (auto [bug, differs] : {std::pair{test_only::HarnessBug::index_with_p, "e"},
                                std::pair{test_only::HarnessBug::pairwise_without_transpose, "bias"},
                                std::pair{test_only::HarnessBug::mask_wrong_axis, "pad"}}) {
        test_only::plant_harness_bug(bug);
        const Tensors wrong = permute_inputs(s, cycle, in);
        test_only::plant_harness_bug(test_only::HarnessBug::none);
        for (const auto& [name, t] : right)
            EXPECT_EQ(wrong.at(name).values != t.values, name == differs) << name << " under bug " << differs;
    }
}

// ---------------------------------------------------------------------------------- generator and shrinker

TEST(SignatureCases, MasksPadARealisticShareAndNeverAWholeLine) {
    const Signature s = signature_of({"n=1..8", "m=1..8"}, {"pad:n:mask", "pair:n,m:mask"}, {"y:n,1"});
    rc::Random random(5);
    int padded = 0, total = 0, cases_with_padding = 0;
    for (int i = 0; i < 400; ++i) {
        const Lengths lengths{{"n", 1 + i % 8}, {"m", 1 + (i / 8) % 8}};
        const Case c = draw_signature_case(s, lengths, random.split(), 100);
        ASSERT_TRUE(masks_keep_a_position(s, c.inputs)) << "case " << i;
        const auto& pad = c.inputs.at("pad").values;
        EXPECT_NE(std::count(pad.begin(), pad.end(), 0.0), 0);
        const auto p = std::count(pad.begin(), pad.end(), 1.0);
        padded += static_cast<int>(p);
        total += static_cast<int>(pad.size());
        cases_with_padding += p > 0;
    }
    EXPECT_GT(cases_with_padding, 150);  // most masks with room for padding pad something
    EXPECT_GT(padded * 5, total);        // more than a fifth of the positions
    EXPECT_LT(padded * 2, total);        // and fewer than half
}

TEST(SignatureCases, GraphsHaveRepeatedEdgesSelfLoopsAndValidIndices) {
    const Signature s = graph_signature();
    rc::Random random(9);
    int repeated = 0, loops = 0;
    for (int i = 0; i < 200; ++i) {
        const Case c = draw_signature_case(s, {{"nodes", 6}, {"edges", 12}}, random.split(), 100);
        const std::vector<double>& e = c.inputs.at("edge_index").values;
        std::set<std::pair<int, int>> seen;
        for (std::size_t k = 0; k < 12; ++k) {
            ASSERT_GE(e[k], 0);
            ASSERT_LT(e[k + 12], 6);
            loops += e[k] == e[k + 12];
            repeated += !seen.insert({static_cast<int>(e[k]), static_cast<int>(e[k + 12])}).second;
        }
    }
    EXPECT_GT(repeated, 200);
    EXPECT_GT(loops, 200);
}

TEST(SignatureCases, DeletingANodeDeletesItsEdgesRenumbersTheRestAndKeepsThePairsOfPx) {
    const Signature s = graph_signature();
    Case c;
    c.lengths = {{"nodes", 3}, {"edges", 3}};
    c.inputs["x"] = tensor({3, 4}, {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
    c.inputs["edge_index"] = tensor({2, 3}, {0, 1, 2, 2, 2, 0});  // 0->2, 1->2, 2->0
    c.inputs["edge_attr"] = tensor({3, 3}, {10, 10, 10, 11, 11, 11, 12, 12, 12});
    c.perms = {{"nodes", Permutation({2, 0, 1})}, {"edges", Permutation({1, 2, 0})}};
    const std::optional<Case> smaller = without_elements(s, c, "nodes", {0});
    ASSERT_TRUE(smaller);
    EXPECT_EQ(smaller->lengths, (Lengths{{"nodes", 2}, {"edges", 1}}));
    EXPECT_EQ(smaller->inputs.at("x").values, (std::vector<double>{1, 1, 1, 1, 2, 2, 2, 2}));
    EXPECT_EQ(smaller->inputs.at("edge_index").values, (std::vector<double>{0, 1}));  // 1->2 renumbered
    EXPECT_EQ(smaller->inputs.at("edge_attr").values, (std::vector<double>{11, 11, 11}));
    // P x kept its other pairs: new node 0 (old 1) is still sent to the row that received old 1.
    EXPECT_EQ(smaller->perms.at("nodes").one_line(), (std::vector<int>{1, 0}));
    EXPECT_EQ(smaller->perms.at("edges").one_line(), (std::vector<int>{0}));
    // Below an axis's minimum: refused.
    EXPECT_FALSE(without_elements(s, c, "nodes", {0, 1, 2}));
}

}  // namespace
}  // namespace permcheck
