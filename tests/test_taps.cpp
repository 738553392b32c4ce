// Where symmetry first breaks (issue 13, item 3): the judgement of one tap (audit/taps.h), the axes of a tap found
// by probes (unambiguous when a length equals a feature size), the whole trace over an in-process tap source, the
// tap answer's parser (adapters/protocol.h) and the report's tap table (report/).
#include "adapters/exec_adapter.h"
#include "cases/compare.h"
#include "audit/taps.h"
#include "report/report.h"
#include "tests/support/audit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace permcheck {
namespace {

using test::tensor;
// The one-tensor shorthand's signature as an audit of a layer answering d features learned it.
Signature one_tensor_signature_of(int d, int min_len, int max_len) {
    Signature s = one_tensor_signature(d, Output::sequence, min_len, max_len);
    s.outputs[0].dims[1].size = d;
    return s;
}
}  // namespace

namespace {


// P T(x) for an n x d tensor moved along its rows: (P t)[i] = t[p[i]].
Tensor rows_moved(const Tensor& t, const Permutation& p) {
    Tensor out{t.shape, {}};
    const int d = t.shape[1];
    for (int i = 0; i < t.shape[0]; ++i)
        for (int k = 0; k < d; ++k) out.values.push_back(t.values[static_cast<std::size_t>(p[i] * d + k)]);
    return out;
}

const Permutation kSwap = Permutation(std::vector<int>{1, 0});

// ------------------------------------------------------------------------------------------ one tap judged

TEST(TapJudgement, AnEquivariantTapHolds) {
    const Tensor at_x = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
    const TapComparison c = judge_tap("blocks.0", at_x, rows_moved(at_x, kSwap), {"n", ""}, {{"n", kSwap}}, {{"n", 2}},
                                      3, 6.0, Arithmetic::float64, 1.0);
    EXPECT_EQ(c.verdict, TapVerdict::holds) << c.note;
    EXPECT_EQ(c.max_abs_diff, 0.0);
    EXPECT_GT(c.tolerance, 0.0);
}

TEST(TapJudgement, APositionEmbeddingBreaksAndItsLargestDifferenceIsReported) {
    // T(x) = x + E: at P x the embedding stays where it is, so T(P x) - P T(x) = E - P E.
    const Tensor at_x = tensor({2, 2}, {1 + 0.5, 2, 3, 4 + 0.25});
    const Tensor at_px = tensor({2, 2}, {3 + 0.5, 4, 1, 2 + 0.25});
    const TapComparison c = judge_tap("blocks.1", at_x, at_px, {"n", ""}, {{"n", kSwap}}, {{"n", 2}}, 2, 4.0,
                                      Arithmetic::float64, 1.0);
    EXPECT_EQ(c.verdict, TapVerdict::violated);
    EXPECT_DOUBLE_EQ(c.max_abs_diff, 0.5);
    // The same tap judged as invariant (no axis) also breaks: it is not P-invariant either.
    EXPECT_EQ(judge_tap("blocks.1", at_x, at_px, {"", ""}, {{"n", kSwap}}, {{"n", 2}}, 2, 4.0, Arithmetic::float64, 1.0).verdict,
              TapVerdict::violated);
}

TEST(TapJudgement, APairwiseTapIsMovedOnBothDims) {
    // Attention weights A (n x n): an equivariant layer gives A' = P A P^T at P x.
    const Permutation p = Permutation(std::vector<int>{2, 0, 1});
    const Tensor a = tensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    Tensor pap{{3, 3}, {}};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) pap.values.push_back(a.values[static_cast<std::size_t>(p[i] * 3 + p[j])]);
    EXPECT_EQ(judge_tap("attn", a, pap, {"n", "n"}, {{"n", p}}, {{"n", 3}}, 1, 1.0, Arithmetic::float32, 1.0).verdict,
              TapVerdict::holds);
    // Moved along the rows alone it is not what an equivariant layer gives: the harness would call it broken.
    EXPECT_EQ(judge_tap("attn", a, pap, {"n", ""}, {{"n", p}}, {{"n", 3}}, 1, 1.0, Arithmetic::float32, 1.0).verdict,
              TapVerdict::violated);
}

TEST(TapJudgement, ATapWhoseShapeDiffersIsNotComparable) {
    const TapComparison c = judge_tap("pool", tensor({2, 2}, {1, 2, 3, 4}), tensor({2}, {1, 2}), {"n", ""},
                                      {{"n", kSwap}}, {{"n", 2}}, 2, 1.0, Arithmetic::float64, 1.0);
    EXPECT_EQ(c.verdict, TapVerdict::not_comparable);
    EXPECT_NE(c.note.find("[2, 2] at x and [2] at P x"), std::string::npos) << c.note;
}

TEST(TapJudgement, ANonFiniteTapIsItsOwnVerdict) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const TapComparison c = judge_tap("log", tensor({2, 1}, {nan, 1}), tensor({2, 1}, {1, nan}), {"n", ""},
                                      {{"n", kSwap}}, {{"n", 2}}, 1, 1.0, Arithmetic::float64, 1.0);
    EXPECT_EQ(c.verdict, TapVerdict::non_finite);
}

TEST(TapJudgement, TheToleranceIsTheDtypes) {
    // A difference of 1e-9 at magnitude 1: within float32's rounding, far beyond float64's.
    const Tensor at_x = tensor({2, 1}, {1, 0.5});
    const Tensor at_px = tensor({2, 1}, {0.5, 1 + 1e-9});
    EXPECT_EQ(judge_tap("t", at_x, at_px, {"n", ""}, {{"n", kSwap}}, {{"n", 2}}, 1, 1.0, Arithmetic::float32, 1.0).verdict,
              TapVerdict::holds);
    EXPECT_EQ(judge_tap("t", at_x, at_px, {"n", ""}, {{"n", kSwap}}, {{"n", 2}}, 1, 1.0, Arithmetic::float64, 1.0).verdict,
              TapVerdict::violated);
}

TEST(TapJudgement, AHalfPrecisionTapIsJudgedWithItsOwnToleranceNotFloat64s) {
    // A difference of 1e-2 at magnitude 1 (k = n + widest = 3): within bfloat16's probabilistic bound (about 0.055),
    // beyond float16's (about 0.0068), float32's and float64's. Before issue 21 both half precisions fell through
    // to float64's unit roundoff here.
    const Tensor at_x = tensor({2, 1}, {1, 0.5});
    const Tensor at_px = tensor({2, 1}, {0.5, 1 + 1e-2});
    const auto judged = [&](Arithmetic a) {
        return judge_tap("t", at_x, at_px, {"n", ""}, {{"n", kSwap}}, {{"n", 2}}, 1, 1.0, a, 1.0);
    };
    const TapComparison bf16 = judged(Arithmetic::bfloat16);
    EXPECT_EQ(bf16.verdict, TapVerdict::holds) << bf16.tolerance;
    EXPECT_DOUBLE_EQ(bf16.tolerance, float_tolerance(tolerance_model(Arithmetic::bfloat16, 1.0), 2, 1, 1.01));
    EXPECT_EQ(judged(Arithmetic::float16).verdict, TapVerdict::violated) << judged(Arithmetic::float16).tolerance;
    EXPECT_EQ(judged(Arithmetic::float32).verdict, TapVerdict::violated);
    EXPECT_EQ(judged(Arithmetic::float64).verdict, TapVerdict::violated);
    // The amplification enters as it does for an output.
    const TapComparison amplified = judge_tap("t", at_x, at_px, {"n", ""}, {{"n", kSwap}}, {{"n", 2}}, 1, 1.0,
                                              Arithmetic::float16, 10.0);
    EXPECT_EQ(amplified.verdict, TapVerdict::holds) << amplified.tolerance;
}

// ------------------------------------------------------------------------------------------ axes by probes

TEST(TapAxes, ADimFollowsTheAxisWhoseLengthChangesItEvenWhenALengthEqualsAFeatureSize) {
    // n = 4 = d: the shape [4, 4] alone cannot tell; the probe with n = 5 gives [5, 4].
    EXPECT_EQ(tap_axes({4, 4}, {{"n", 4}}, {{"n", std::vector<int>{5, 4}}}), (std::vector<std::string>{"n", ""}));
    EXPECT_EQ(tap_axes({4, 4}, {{"n", 4}}, {{"n", std::vector<int>{4, 5}}}), (std::vector<std::string>{"", "n"}));
    EXPECT_EQ(tap_axes({4, 4}, {{"n", 4}}, {{"n", std::vector<int>{5, 5}}}), (std::vector<std::string>{"n", "n"}));
    EXPECT_EQ(tap_axes({1, 3, 8}, {{"n", 3}, {"m", 2}}, {{"n", std::vector<int>{1, 4, 8}}, {"m", std::vector<int>{1, 3, 8}}}),
              (std::vector<std::string>{"", "n", ""}));
}

TEST(TapAxes, WhatCannotBeToldIsRefusedSayingWhy) {
    // A dim of n * m changes with both axes.
    EXPECT_THROW(tap_axes({6}, {{"n", 3}, {"m", 2}}, {{"n", std::vector<int>{8}}, {"m", std::vector<int>{9}}}),
                 std::invalid_argument);
    try {  // a dim that grows with n but is n + 1 (a class token): no permutation of n acts on it
        tap_axes({4, 8}, {{"n", 3}}, {{"n", std::vector<int>{5, 8}}});
        ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("is not its length"), std::string::npos) << e.what();
    }
    // The probe of n failed and a dim has n's length: ambiguous. A dim of another size is no axis's.
    EXPECT_THROW(tap_axes({4, 4}, {{"n", 4}}, {{"n", std::nullopt}}), std::invalid_argument);
    EXPECT_EQ(tap_axes({1, 8}, {{"n", 4}}, {{"n", std::nullopt}}), (std::vector<std::string>{"", ""}));
}

// ------------------------------------------------------------------------------------------ the whole trace

// A stack over x (n x d): tap "a" = 2 x (equivariant), tap "pos" = a + position (breaks), tap "attn" = x x^T
// (pairwise, equivariant), tap "mean" = column means (invariant). Counts its calls.
struct Stack {
    int calls = 0;
    std::vector<Tap> operator()(const Tensors& inputs) {
        ++calls;
        const Tensor& x = inputs.at("x");
        const int n = x.shape[0], d = x.shape[1];
        Tap a{"a", {{n, d}, {}}, std::nullopt}, pos{"pos", {{n, d}, {}}, std::nullopt};
        Tap attn{"attn", {{n, n}, {}}, std::nullopt}, mean{"mean", {{d}, std::vector<double>(static_cast<std::size_t>(d))}, std::nullopt};
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < d; ++k) {
                const double v = x.values[static_cast<std::size_t>(i * d + k)];
                a.value.values.push_back(2 * v);
                pos.value.values.push_back(2 * v + i);
                mean.value.values[static_cast<std::size_t>(k)] += v / n;
            }
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                double dot = 0;
                for (int k = 0; k < d; ++k) dot += x.values[static_cast<std::size_t>(i * d + k)] * x.values[static_cast<std::size_t>(j * d + k)];
                attn.value.values.push_back(dot);
            }
        return {a, attn, mean, pos};
    }
};

TEST(TapTrace, NamesTheFirstBreakingTapWithAxesFoundByProbesWhenNEqualsD) {
    const Signature s = one_tensor_signature_of(4, 4, 4);
    auto stack = std::make_shared<Stack>();
    Tensor x{{4, 4}, {}};
    for (int e = 0; e < 16; ++e) x.values.push_back(0.25 * e - 1);
    const Permutation p = Permutation(std::vector<int>{1, 0, 3, 2});
    const TapTrace t = trace_taps([stack](const Tensors& in) { return (*stack)(in); }, s, {{"n", 4}}, {{"n", p}},
                                  {{"x", x}}, Arithmetic::float64, 1.0);
    ASSERT_EQ(t.taps.size(), 4u) << t.note;
    EXPECT_EQ(stack->calls, 3);  // x, P x and one probe (n = 5)
    EXPECT_EQ(t.taps[0].axes, (std::vector<std::string>{"n", ""}));
    EXPECT_EQ(t.taps[1].axes, (std::vector<std::string>{"n", "n"}));
    EXPECT_EQ(t.taps[2].axes, (std::vector<std::string>{""}));
    for (int k = 0; k < 3; ++k) EXPECT_EQ(t.taps[static_cast<std::size_t>(k)].verdict, TapVerdict::holds) << t.taps[static_cast<std::size_t>(k)].name;
    EXPECT_EQ(t.taps[3].verdict, TapVerdict::violated);
    EXPECT_EQ(t.first_breaking, 3);
    EXPECT_EQ(first_break_sentence(t), "symmetry first breaks at pos (tap 4 of 4); every tap before it holds");
    EXPECT_NE(describe(t).find("  >   4  pos"), std::string::npos) << describe(t);
}

// A language-model-like tap source over token ids, position ids and a keep mask, each tap declaring its dims:
// "embed" reads the ids, "table" the position ids, "pooled" the mean of every row's id, pads included.
std::vector<Tap> lm_taps(const Tensors& in) {
    const Tensor& ids = in.at("ids");
    const Tensor& pos = in.at("pos");
    const int n = ids.shape[0];
    Tensor embed{{n, 2}, {}}, table{{n, 2}, {}};
    double total = 0;
    for (int i = 0; i < n; ++i) {
        const double id = ids.values[static_cast<std::size_t>(i)], p = pos.values[static_cast<std::size_t>(i)];
        embed.values.insert(embed.values.end(), {id, 2 * id});
        table.values.insert(table.values.end(), {id + p, 0.0});
        total += id;
    }
    const Tensor pooled{{1}, {n ? total / n : 0.0}};
    return {Tap{"embed", embed, std::vector<std::string>{"n", ""}}, Tap{"table", table, std::vector<std::string>{"n", ""}},
            Tap{"pooled", pooled, std::vector<std::string>{""}}};
}

Signature lm_tap_signature() {
    Signature s;
    s.axes = {parse_axis("n=1..4")};
    s.inputs = {parse_input("ids:n:token=8"), parse_input("pos:n:position=16"), parse_input("keep:n:mask=keep")};
    s.outputs = {parse_output("y:n,2")};
    validate(s);
    return s;
}

// Two real tokens, ids 1 and 2 at positions 0 and 1.
Counterexample two_real_tokens() {
    Counterexample c;
    c.lengths = {{"n", 2}};
    c.perms = {{"n", Permutation::identity(2)}};
    c.inputs = {{"ids", tensor({2}, {1, 2})}, {"pos", tensor({2}, {0, 1})}, {"keep", tensor({2}, {1, 1})}};
    return c;
}

// Shift: the taps at x against those at x_c, elementwise: the table of positions is the first to break.
TEST(TapTrace, AShiftCaseNamesTheFirstSubmoduleThatReadsAbsolutePositions) {
    const Signature s = lm_tap_signature();
    Counterexample c = two_real_tokens();
    c.part.numbers["shift"] = 3;
    const TapTrace t = trace_taps(lm_taps, s, c, Property{"shift"}, Arithmetic::float64, 1.0);
    ASSERT_EQ(t.taps.size(), 3u) << describe(t);
    EXPECT_EQ(t.taps[0].verdict, TapVerdict::holds);
    EXPECT_EQ(t.taps[1].verdict, TapVerdict::violated);
    EXPECT_EQ(t.taps[1].max_abs_diff, 3.0);
    EXPECT_EQ(t.taps[2].verdict, TapVerdict::holds);
    EXPECT_EQ(t.first_breaking, 1);
    EXPECT_EQ(first_break_sentence(t), "symmetry first breaks at table (tap 2 of 3); every tap before it holds");
}

// Padding: the taps at pad x are taken at the real positions along n; a tap without n is compared whole, so a mean
// over the pads breaks while the per-token taps hold.
TEST(TapTrace, APaddingCaseComparesTheTapsAtTheRealPositions) {
    const Signature s = lm_tap_signature();
    Counterexample c = two_real_tokens();
    c.part.names["axis"] = "n";  // the padding property's part: one pad at slot 1, the filler's values there
    c.part.lists["slots"] = {1};
    c.part.tensors["filler"] = {{"ids", tensor({3}, {0, 7, 0})}, {"pos", tensor({3}, {0, 9, 0})}, {"keep", tensor({3}, {0, 0, 0})}};
    const TapTrace t = trace_taps(lm_taps, s, c, Property{"padding"}, Arithmetic::float64, 1.0);
    ASSERT_EQ(t.taps.size(), 3u) << describe(t);
    EXPECT_EQ(t.taps[0].verdict, TapVerdict::holds) << describe(t);
    EXPECT_EQ(t.taps[0].shape, (std::vector<int>{2, 2}));
    EXPECT_EQ(t.taps[1].verdict, TapVerdict::holds) << describe(t);  // real tokens keep their position ids
    EXPECT_EQ(t.taps[2].verdict, TapVerdict::violated) << describe(t);
    EXPECT_EQ(t.first_breaking, 2);
}

TEST(TapTrace, DeclaredDimsNeedNoProbeAndABadDeclarationIsNotComparable) {
    const Signature s = one_tensor_signature_of(2, 1, 8);
    int calls = 0;
    const TapSource declared = [&calls](const Tensors& in) {
        ++calls;
        const Tensor& x = in.at("x");
        return std::vector<Tap>{Tap{"same", x, std::vector<std::string>{"n", ""}},
                                Tap{"wrong", x, std::vector<std::string>{"m", ""}}};
    };
    const TapTrace t = trace_taps(declared, s, {{"n", 2}}, {{"n", kSwap}}, {{"x", tensor({2, 2}, {1, 2, 3, 4})}},
                                  Arithmetic::float64, 1.0);
    EXPECT_EQ(calls, 2);
    ASSERT_EQ(t.taps.size(), 2u);
    EXPECT_EQ(t.taps[0].verdict, TapVerdict::holds);
    EXPECT_EQ(t.taps[1].verdict, TapVerdict::not_comparable);
    EXPECT_NE(t.taps[1].note.find("axis m, which the signature does not have"), std::string::npos) << t.taps[1].note;
    EXPECT_EQ(t.first_breaking, -1);  // a tap that cannot be judged is no break
    EXPECT_EQ(first_break_sentence(t), "no tap breaks (2 taps, every one holds but 1 that could not be compared): the "
                                       "symmetry breaks in the layer's own code or in a submodule whose tap could not "
                                       "be compared");
    TapTrace none = t;
    none.taps.erase(none.taps.begin());
    EXPECT_EQ(first_break_sentence(none), "no tap could be compared (1 tap): where the symmetry breaks could not be located");
    TapTrace later = t;
    later.taps.push_back(TapComparison{"c", {2, 2}, {"n", ""}, TapVerdict::violated, 1.0, 1e-15, ""});
    later.first_breaking = 2;
    EXPECT_EQ(first_break_sentence(later),
              "symmetry first breaks at c (tap 3 of 3); every tap before it holds but 1 that could not be compared");
}

// A tap of each node's incoming rows, (nodes, largest in-degree, d): when every edge of the case points at one node,
// the largest in-degree equals the edge count and grows with an edge appended there; the second probe appends one
// at another node, and the dim is labelled by no axis (it follows none), nodes' dim by nodes.
TEST(TapTrace, ADimThatGrowsWithAnAxisOnlyAsTheValuesFallIsLabelledByNoAxis) {
    Signature s;
    s.axes = {{"nodes", 1, 4}, {"edges", 0, 4}};
    s.inputs = {{"x", {{"nodes", 0}, {"", 1}}, TensorKind::real, ""},
                {"edge_index", {{"", 2}, {"edges", 0}}, TensorKind::index, "nodes"}};
    s.outputs = {{"y", {{"nodes", 0}, {"", 1}}, TensorKind::real, ""}};
    const TapSource incoming = [](const Tensors& in) {
        const Tensor& x = in.at("x");
        const Tensor& e = in.at("edge_index");
        const int nodes = x.shape[0], edges = e.shape[1];
        std::vector<int> degree(static_cast<std::size_t>(nodes), 0);
        for (int k = 0; k < edges; ++k) ++degree[static_cast<std::size_t>(e.values[static_cast<std::size_t>(edges + k)])];
        const int width = *std::max_element(degree.begin(), degree.end());
        Tensor slots{{nodes, width, 1}, std::vector<double>(static_cast<std::size_t>(nodes * width), 0.0)};
        std::vector<int> filled(static_cast<std::size_t>(nodes), 0);
        for (int k = 0; k < edges; ++k) {
            const int from = static_cast<int>(e.values[static_cast<std::size_t>(k)]);
            const int to = static_cast<int>(e.values[static_cast<std::size_t>(edges + k)]);
            slots.values[static_cast<std::size_t>(to * width + filled[static_cast<std::size_t>(to)]++)] =
                x.values[static_cast<std::size_t>(from)];
        }
        return std::vector<Tap>{Tap{"gather", slots, std::nullopt}};
    };
    // Two edges, 0 -> 1 and 1 -> 1: node 1's in-degree 2 is the edge count.
    const Tensors x{{"x", tensor({2, 1}, {1, 2})}, {"edge_index", tensor({2, 2}, {0, 1, 1, 1})}};
    const TapTrace t = trace_taps(incoming, s, {{"nodes", 2}, {"edges", 2}},
                                  {{"nodes", Permutation::identity(2)}, {"edges", kSwap}}, x, Arithmetic::float64, 1.0);
    ASSERT_EQ(t.taps.size(), 1u) << describe(t);
    EXPECT_EQ(t.taps[0].axes, (std::vector<std::string>{"nodes", "", ""})) << describe(t);
}

TEST(TapTrace, ABfloat16AuditsTapsAreJudgedWithBfloat16sTolerance) {
    // A tap with a position-dependent error of bfloat16's size (1e-2 at magnitude 1.01, k = 2 + 2): holds in a
    // bfloat16 audit's trace, breaks in a float64 audit's, where it would be a real position leak.
    const Signature s = one_tensor_signature_of(2, 1, 8);
    const TapSource rounding = [](const Tensors& in) {
        Tap t{"rounded", in.at("x"), std::vector<std::string>{"n", ""}};
        for (std::size_t e = 0; e < t.value.values.size(); e += 2) t.value.values[e] += 1e-2 * static_cast<double>(e / 2);
        return std::vector<Tap>{t};
    };
    const Tensors x{{"x", tensor({2, 2}, {1, 0.5, -0.75, 0.25})}};
    const TapTrace bf16 = trace_taps(rounding, s, {{"n", 2}}, {{"n", kSwap}}, x, Arithmetic::bfloat16, 1.0);
    ASSERT_EQ(bf16.taps.size(), 1u) << bf16.note;
    EXPECT_EQ(bf16.taps[0].verdict, TapVerdict::holds) << describe(bf16);
    EXPECT_EQ(bf16.first_breaking, -1);
    EXPECT_DOUBLE_EQ(bf16.taps[0].tolerance, float_tolerance(tolerance_model(Arithmetic::bfloat16, 1.0), 2, 2, 1.01));
    const TapTrace f64 = trace_taps(rounding, s, {{"n", 2}}, {{"n", kSwap}}, x, Arithmetic::float64, 1.0);
    ASSERT_EQ(f64.taps.size(), 1u) << f64.note;
    EXPECT_EQ(f64.taps[0].verdict, TapVerdict::violated) << describe(f64);
    EXPECT_EQ(f64.first_breaking, 0);
}

TEST(TapTrace, ASourceThatFailsOrOffersNoneLeavesANoteNotAnException) {
    const Signature s = one_tensor_signature_of(2, 1, 8);
    const Tensors x{{"x", tensor({2, 2}, {1, 2, 3, 4})}};
    const TapTrace failed = trace_taps([](const Tensors&) -> std::vector<Tap> { throw AdapterError("it died"); }, s,
                                       {{"n", 2}}, {{"n", kSwap}}, x, Arithmetic::float64, 1.0);
    EXPECT_TRUE(failed.taps.empty());
    EXPECT_TRUE(failed.offered);
    EXPECT_EQ(first_break_sentence(failed), "no taps: the tap request failed: it died");
    const TapTrace none = trace_taps([](const Tensors&) -> std::vector<Tap> { throw NoTapsOffered("none offered"); },
                                     s, {{"n", 2}}, {{"n", kSwap}}, x, Arithmetic::float64, 1.0);
    EXPECT_FALSE(none.offered);
}

TEST(TapTrace, ATapTheAdapterCouldNotSendIsListedNotComparableWithItsReason) {
    const Signature s = one_tensor_signature_of(2, 1, 8);
    const Tensors x{{"x", tensor({2, 2}, {1, 2, 3, 4})}};
    int calls = 0;
    const TapSource source = [&calls](const Tensors& in) {
        ++calls;
        Tap nested{"encoder.layers.0", {}, std::nullopt, "a nested tensor (its items have different lengths)"};
        return std::vector<Tap>{nested, Tap{"same", in.at("x"), std::vector<std::string>{"n", ""}}};
    };
    const TapTrace t = trace_taps(source, s, {{"n", 2}}, {{"n", kSwap}}, x, Arithmetic::float64, 1.0);
    EXPECT_EQ(calls, 2) << "every tap usable or declared: no probe";
    ASSERT_EQ(t.taps.size(), 2u);
    EXPECT_EQ(t.taps[0].verdict, TapVerdict::not_comparable);
    EXPECT_EQ(t.taps[0].note, "a nested tensor (its items have different lengths)");
    EXPECT_EQ(t.taps[1].verdict, TapVerdict::holds);
    EXPECT_NE(describe(t).find("not comparable"), std::string::npos) << describe(t);
    // Every tap unusable (or every probe refused): the break cannot be located, and the sentence says so.
    const TapSource nothing = [](const Tensors&) {
        return std::vector<Tap>{Tap{"a", {}, std::nullopt, "a value the adapter cannot convert"}};
    };
    const TapTrace none = trace_taps(nothing, s, {{"n", 2}}, {{"n", kSwap}}, x, Arithmetic::float64, 1.0);
    EXPECT_EQ(first_break_sentence(none), "no tap could be compared (1 tap): where the symmetry breaks could not be located");
}

// The index-leak of fault.py: row i times 1 + 1e-3 i (not equivariant).
Tensor leaked(const Tensor& x) {
    Tensor y = x;
    const int d = x.shape.at(1);
    for (std::size_t k = 0; k < y.values.size(); ++k) y.values[k] *= 1 + 1e-3 * static_cast<double>(k / d);
    return y;
}

TEST(TapTrace, TwoTapsOfOneNameAreMatchedByPositionAndTheOneThatBreaksIsBlamed) {
    const Signature s = one_tensor_signature_of(2, 1, 8);
    const Tensors x{{"x", tensor({2, 2}, {1, 2, 3, 4})}};
    // Two submodules answering as `block`: the first equivariant, the second the leak. Matched by name (first
    // wins), both would be compared with the equivariant one and the blame would go to it.
    const TapSource source = [](const Tensors& in) {
        return std::vector<Tap>{Tap{"block", in.at("x"), std::nullopt}, Tap{"block", leaked(in.at("x")), std::nullopt}};
    };
    const TapTrace t = trace_taps(source, s, {{"n", 2}}, {{"n", kSwap}}, x, Arithmetic::float64, 1.0);
    ASSERT_EQ(t.taps.size(), 2u);
    EXPECT_EQ(t.taps[0].verdict, TapVerdict::holds);
    EXPECT_EQ(t.taps[1].verdict, TapVerdict::violated);
    EXPECT_EQ(t.first_breaking, 1);
    EXPECT_EQ(t.taps[0].axes, (std::vector<std::string>{"n", ""})) << "the probe matched by position too";
    EXPECT_EQ(first_break_sentence(t), "symmetry first breaks at block (tap 2 of 2); every tap before it holds");
}

TEST(TapTrace, TapsOfOneNameInAnotherOrderAtPxAreNotComparableSayingWhy) {
    const Signature s = one_tensor_signature_of(2, 1, 8);
    const Tensors x{{"x", tensor({2, 2}, {1, 2, 3, 4})}};
    int calls = 0;
    // At P x the adapter lists its taps in another order: the two `block`s cannot be told apart; `head`, whose
    // name is its own, is still matched by name.
    const TapSource source = [&calls](const Tensors& in) {
        const Tap a{"block", in.at("x"), std::vector<std::string>{"n", ""}};
        const Tap b{"block", leaked(in.at("x")), std::vector<std::string>{"n", ""}};
        const Tap head{"head", leaked(in.at("x")), std::vector<std::string>{"n", ""}};
        return ++calls == 1 ? std::vector<Tap>{a, b, head} : std::vector<Tap>{head, b, a};
    };
    const TapTrace t = trace_taps(source, s, {{"n", 2}}, {{"n", kSwap}}, x, Arithmetic::float64, 1.0);
    ASSERT_EQ(t.taps.size(), 3u);
    for (int k : {0, 1}) {
        EXPECT_EQ(t.taps[k].verdict, TapVerdict::not_comparable) << k;
        EXPECT_EQ(t.taps[k].note, "2 taps at x and 2 at P x have this name, and the two answers list their taps in "
                                  "different orders: which is which cannot be told");
    }
    EXPECT_EQ(t.taps[2].verdict, TapVerdict::violated);
    EXPECT_EQ(first_break_sentence(t),
              "symmetry first breaks at head (tap 3 of 3); every tap before it holds but 2 that could not be compared");
}

TEST(TapTrace, ALongTableIsCutOnTheTerminalAroundTheFirstBreakAndWholeOtherwise) {
    TapTrace t;
    for (int k = 0; k < 100000; ++k)
        t.taps.push_back(TapComparison{"layer." + std::to_string(k), {2, 2}, {"n", ""},
                                       k == 50000 ? TapVerdict::violated
                                                  : k % 1000 == 7 ? TapVerdict::not_comparable : TapVerdict::holds,
                                       0.0, 1e-15, ""});
    t.first_breaking = 50000;
    const std::string cut = describe(t, kTerminalTapRows);
    const auto lines = std::count(cut.begin(), cut.end(), '\n');
    EXPECT_LE(lines, 48) << cut;
    EXPECT_NE(cut.find("  > 50001  layer.50000"), std::string::npos) << cut;
    EXPECT_NE(cut.find("      1  layer.0 "), std::string::npos) << cut;
    EXPECT_NE(cut.find("  100000  layer.99999 "), std::string::npos) << cut;
    EXPECT_NE(cut.find("    ... taps 6 to 49985 not shown: 49930 hold, 50 not comparable\n"), std::string::npos) << cut;
    EXPECT_NE(cut.find("symmetry first breaks at layer.50000 (tap 50001 of 100000)"), std::string::npos) << cut;
    EXPECT_NE(cut.find("(41 of the 100000 taps shown; the report, --report DIR, lists every one)"), std::string::npos) << cut;
    const std::string whole = describe(t);
    EXPECT_EQ(std::count(whole.begin(), whole.end(), '\n'), 100000 + 2) << "a header, every row, the sentence";
    t.taps.resize(40);  // within the limit: every row
    t.first_breaking = -1;
    EXPECT_EQ(describe(t, kTerminalTapRows), describe(t));
}

// ------------------------------------------------------------------------------------------ the tap answer

TEST(TapAnswer, ParsesNamesShapesValuesAndDims) {
    const adapters::TapResponse r = adapters::parse_tap_response(
        R"({"id": 3, "y": [[1]], "taps_offered": true, "taps": [{"name": "b.0", "shape": [2, 1], "values": [[1.5], [NaN]]},)"
        R"( {"name": "s", "shape": [], "values": 2, "dims": []}, {"name": "p", "shape": [1, 2], "values": [[1, 2]], "dims": [null, "n"]}]})");
    EXPECT_EQ(r.id, 3);
    EXPECT_TRUE(r.taps_offered);
    ASSERT_EQ(r.taps.size(), 3u);
    EXPECT_EQ(r.taps[0].name, "b.0");
    EXPECT_EQ(r.taps[0].value.shape, (std::vector<int>{2, 1}));
    EXPECT_TRUE(std::isnan(r.taps[0].value.values[1]));
    EXPECT_FALSE(r.taps[0].dims.has_value());
    EXPECT_EQ(r.taps[1].value.values, (std::vector<double>{2}));
    EXPECT_EQ(*r.taps[2].dims, (std::vector<std::string>{"", "n"}));
    EXPECT_EQ(adapters::with_taps(R"({"id":1,"x":[[1]]})"), R"({"id":1,"x":[[1]],"taps":true})");
    const adapters::TapResponse unusable = adapters::parse_tap_response(
        R"({"id": 4, "taps": [{"name": "enc", "not_comparable": "a nested tensor"}]})");
    ASSERT_EQ(unusable.taps.size(), 1u);
    EXPECT_EQ(unusable.taps[0].unusable, "a nested tensor");
    EXPECT_TRUE(unusable.taps[0].value.shape.empty());
}

TEST(TapAnswer, MalformedTapsAreRefusedNamingTheTap) {
    const auto refused = [](const std::string& line, const std::string& words) {
        try {
            adapters::parse_tap_response(line);
            ADD_FAILURE() << "accepted: " << line;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        }
    };
    refused(R"({"id": 1, "y": [[1]]})", "no \"taps\" array");
    refused(R"({"id": 1, "taps": [{"shape": [1], "values": [1]}]})", "tap 0 has no string \"name\"");
    refused(R"({"id": 1, "taps": [{"name": "a", "shape": [2], "values": [1]}]})", "tap 'a', dim 0");
    refused(R"({"id": 1, "taps": [{"name": "a", "shape": [-1], "values": []}]})", "expected sizes");
    refused(R"({"id": 1, "taps": [{"name": "a", "shape": [1], "values": [1], "dims": ["n", null]}]})", "one axis name or null per dim");
    refused(R"({"id": 1, "taps": [{"name": "a", "shape": [1], "values": ["x"]}]})", "tap 'a'");
    refused(R"({"id": 1, "taps": [{"name": "a", "not_comparable": ""}]})", "must be a non-empty string");
    refused(R"({"id": 1, "taps": [{"name": "a", "not_comparable": 3}]})", "must be a non-empty string");
    EXPECT_TRUE(adapters::parse_tap_response(R"({"id": 1, "error": "boom"})").is_error);
}

// ------------------------------------------------------------------------------------------ the report

TEST(TapReport, TheTableIsWrittenReadBackAndMarksTheFirstBreakingTap) {
    report::Record r;
    r.verdict = Verdict::violated;
    r.layer = "python3 stack.py";
    TapTrace t;
    t.taps.push_back(TapComparison{"blocks.0", {2, 4}, {"n", ""}, TapVerdict::holds, 0.0, 1e-15, ""});
    t.taps.push_back(TapComparison{"blocks.1", {2, 4}, {"n", ""}, TapVerdict::violated, 0.75, 1e-15, ""});
    t.taps.push_back(TapComparison{"blocks|2", {2, 4}, {"n", ""}, TapVerdict::not_comparable,
                                   std::numeric_limits<double>::infinity(), 0.0, "a | b"});
    t.first_breaking = 1;
    r.taps = t;
    const nlohmann::json j = report::to_json(r);
    EXPECT_EQ(j["first_breaking_tap"], "blocks.1");
    EXPECT_EQ(j["taps"][1]["verdict"], "violated");
    EXPECT_EQ(j["taps"][0]["axes"], nlohmann::json::parse(R"(["n", null])"));
    const report::Record back = report::from_json(j);
    ASSERT_TRUE(back.taps.has_value());
    EXPECT_EQ(back.taps->first_breaking, 1);
    EXPECT_EQ(back.taps->taps[2].verdict, TapVerdict::not_comparable);
    EXPECT_TRUE(std::isinf(back.taps->taps[2].max_abs_diff));
    EXPECT_EQ(back.taps->taps[0].axes, (std::vector<std::string>{"n", ""}));
    const std::string md = report::to_markdown(r), html = report::to_html(r);
    EXPECT_NE(md.find("| 2 ◀ first break | `blocks.1` |"), std::string::npos) << md;
    EXPECT_NE(md.find("a \\| b"), std::string::npos) << md;
    EXPECT_NE(html.find("<tr class=\"first-break\"><td>2 &#9664; first break</td><td><code>blocks.1</code>"),
              std::string::npos) << html;
    EXPECT_NE(html.find("symmetry first breaks at blocks.1 (tap 2 of 3); every tap before it holds"), std::string::npos);
    // Names an adapter chose: no raw HTML, no broken table row, no line break on the terminal.
    TapTrace hostile;
    hostile.taps.push_back(TapComparison{"<script>alert(1)</script>", {2}, {"n"}, TapVerdict::violated, 1.0, 1e-15, ""});
    hostile.taps.push_back(TapComparison{"a|b\nc", {2}, {"n"}, TapVerdict::holds, 0.0, 1e-15, ""});
    hostile.first_breaking = 0;
    r.taps = hostile;
    const std::string hmd = report::to_markdown(r), hhtml = report::to_html(r), terminal = describe(hostile);
    EXPECT_EQ(hmd.find("at <script>"), std::string::npos) << hmd;  // outside code it is escaped text
    EXPECT_NE(hmd.find("at &lt;script&gt;alert(1)"), std::string::npos) << hmd;
    EXPECT_NE(hmd.find("| `<script>alert(1)</script>` |"), std::string::npos) << hmd;  // in code it is shown as code
    EXPECT_EQ(hhtml.find("<script>alert"), std::string::npos) << hhtml;
    EXPECT_NE(hmd.find("`a\\|b\\nc`"), std::string::npos) << hmd;
    EXPECT_EQ(terminal.find("b\nc"), std::string::npos) << terminal;
    EXPECT_NE(terminal.find("a|b\\nc"), std::string::npos) << terminal;
    nlohmann::json bad = j;
    bad["taps"][0]["verdict"] = "fine";
    EXPECT_THROW(report::from_json(bad), std::invalid_argument);
}

}  // namespace
}  // namespace permcheck
