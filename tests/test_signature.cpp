// Audits of real layer signatures (issue 12): the flag grammar (check/signature.h), the transformation of named
// inputs and outputs, the case generator and shrinker per axis, the signature audit on the multi-input reference
// layers (layers/cross_attention.h, layers/message_passing.h), the harness self-test with planted bugs, and the
// in-process API (<permcheck/audit.h> audit_signature, <permcheck/gtest.h>).
#include "check/signature.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace permcheck {
namespace {

Tensor tensor(std::vector<int> shape, std::vector<double> values) { return Tensor{std::move(shape), std::move(values)}; }

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

}  // namespace
}  // namespace permcheck
