// Position-aware audits (properties/shift.cpp, properties/padding.cpp, properties/causal.cpp): the input kinds token,
// position and mask=keep; the properties shift, padding and causal, found violated and shrunk (the smallest c, the
// fewest pads, two tokens cut after one) and found holding; order only
// through the position ids (equivariance with the ids moving) and order-aware at all (positions_stay); the
// undecided verdict; and the harness self-test: planted bugs in these transformations are caught.
#include "properties/property.h"
#include "audit/signature_audit.h"
#include "report/report.h"
#include "report/text.h"
#include "tests/support/audit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>

namespace permcheck {
namespace {

using test::finding;

// ids:n:token=50, pos:n:position=64, keep:n:mask=keep over n=1..8, and one output: y:n,3 or g:3.
Signature lm_signature(bool pooled = false, int positions = 64) {
    Signature s;
    s.axes = {parse_axis("n=1..8")};
    s.inputs = {parse_input("ids:n:token=50"), parse_input("pos:n:position=" + std::to_string(positions)),
                parse_input("keep:n:mask=keep")};
    s.outputs = {parse_output(pooled ? "g:3" : "y:n,3")};
    return s;
}

// A token's embedding: three features of its id.
std::array<double, 3> embed(double id) { return {std::sin(id), std::cos(0.7 * id), 0.01 * id}; }

// The ways order can reach a layer over ids, position ids and a keep mask.
enum class Model {
    relative,       // attention over the kept tokens with weights exp(-0.3 |pos_i - pos_j|): relative, masked
    absolute,       // each token scaled by 1 + 0.01 pos_i: absolute positions, through the ids
    by_index,       // each token scaled by 1 + 0.01 i: order from the slots, not from the ids
    masked_mean,    // pooled: the mean embedding of the kept tokens
    unmasked_mean,  // pooled: the mean embedding of every token, pads included
    causal,         // relative, over the kept tokens j <= i only; a query that sees no kept token averages every
                    // token, later ones included (a score mask of the lowest float: what libraries answer)
    packed,         // causal, within the packed sequence of i only: a sequence starts where its position id is 0
    causal_by_row,  // causal, with weights exp(-0.3 |i - j|): the position ids ignored, the row index used instead
};

NamedBlackBox model(Model m) {
    return [m](const Tensors& in) {
        const std::vector<double>& ids = in.at("ids").values;
        const std::vector<double>& pos = in.at("pos").values;
        const std::vector<double>& keep = in.at("keep").values;
        const int n = static_cast<int>(ids.size());
        if (m == Model::masked_mean || m == Model::unmasked_mean) {
            std::vector<double> g(3, 0.0);
            double count = 0;
            for (int j = 0; j < n; ++j) {
                const double w = m == Model::masked_mean ? keep[static_cast<std::size_t>(j)] : 1.0;
                for (int f = 0; f < 3; ++f) g[static_cast<std::size_t>(f)] += w * embed(ids[static_cast<std::size_t>(j)])[static_cast<std::size_t>(f)];
                count += w;
            }
            for (double& v : g) v /= count;
            return Tensors{{"g", Tensor{{3}, g}}};
        }
        std::vector<double> y(static_cast<std::size_t>(3 * n), 0.0);
        for (int i = 0; i < n; ++i) {
            const auto at = static_cast<std::size_t>(i);
            if (m == Model::relative || m == Model::causal || m == Model::packed || m == Model::causal_by_row) {
                const int seen = m == Model::relative ? n : i + 1;
                int start = 0;  // where i's packed sequence starts
                for (int j = 0; j <= i && m == Model::packed; ++j)
                    if (pos[static_cast<std::size_t>(j)] == 0) start = j;
                double kept = 0;
                for (int j = start; j < seen; ++j) kept += keep[static_cast<std::size_t>(j)];
                double total = 0;
                for (int j = kept > 0 ? start : 0; j < (kept > 0 ? seen : n); ++j) {
                    const auto k = static_cast<std::size_t>(j);
                    const double d = m == Model::causal_by_row ? std::abs(i - j) : std::abs(pos[at] - pos[k]);
                    const double w = (kept > 0 ? keep[k] : 1.0) * std::exp(-0.3 * d);
                    for (int f = 0; f < 3; ++f) y[3 * at + static_cast<std::size_t>(f)] += w * embed(ids[k])[static_cast<std::size_t>(f)];
                    total += w;
                }
                for (int f = 0; f < 3; ++f) y[3 * at + static_cast<std::size_t>(f)] /= total;
                continue;
            }
            const double scale = 1 + 0.01 * (m == Model::absolute ? pos[at] : i);
            for (int f = 0; f < 3; ++f) y[3 * at + static_cast<std::size_t>(f)] = scale * embed(ids[at])[static_cast<std::size_t>(f)];
        }
        return Tensors{{"y", Tensor{{n, 3}, y}}};
    };
}

AuditOptions with(std::optional<Property> p, std::uint64_t seed = 1) {
    AuditOptions o;
    o.name = "model";
    o.seed = seed;
    o.property = p;
    return o;
}


TEST(PositionKinds, ParseFormatAndValidate) {
    for (const char* text : {"ids:n:token=50000", "pos:n:position", "pos:1,n:position=512", "keep:n:mask=keep"})
        EXPECT_EQ(format_input(parse_input(text)), text);
    EXPECT_EQ(parse_input("ids:n:token=7").limit, 7);
    EXPECT_EQ(parse_input("pos:n:position").limit, kDefaultPositions);
    EXPECT_EQ(parse_input("keep:n:mask=keep").kind, TensorKind::mask_keep);
    for (const char* bad : {"ids:n:token", "ids:n:token=0", "ids:n:token=2147483648", "pos:n:position=x", "m:n:mask=yes"})
        EXPECT_THROW(parse_input(bad), std::invalid_argument) << bad;
    Signature s = lm_signature();
    s.inputs[1] = parse_input("pos:n,n:position");
    EXPECT_THROW(validate(s), std::invalid_argument);  // two axis dims
    s.inputs[1] = parse_input("pos:n,2:position");
    EXPECT_THROW(validate(s), std::invalid_argument);  // a fixed dim other than 1
    s.inputs[1] = parse_input("pos:n:position=4");
    try {
        validate(s);
        ADD_FAILURE() << "P = 4 below max_len 8 accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("P = 4"), std::string::npos) << e.what();
    }
}

TEST(PositionKinds, TokenAndPositionIdsMoveAsDataAndAreNeverRenumbered) {
    const Signature s = lm_signature();
    const Tensors x{{"ids", Tensor{{3}, {7, 7, 2}}}, {"pos", Tensor{{3}, {10, 11, 12}}}, {"keep", Tensor{{3}, {1, 0, 1}}}};
    const Tensors px = permute_inputs(s, {{"n", Permutation({2, 0, 1})}}, x);
    EXPECT_EQ(px.at("ids").values, (std::vector<double>{2, 7, 7}));
    EXPECT_EQ(px.at("pos").values, (std::vector<double>{12, 10, 11}));
    EXPECT_EQ(px.at("keep").values, (std::vector<double>{1, 1, 0}));
}

TEST(PositionKinds, DrawnCasesHoldIdsInRangeConsecutivePositionsAndAKeptPosition) {
    const Signature s = lm_signature();
    for (int seed = 0; seed < 200; ++seed) {
        const Case c = draw_signature_case(s, {{"n", 1 + seed % 8}}, rc::Random(static_cast<std::uint64_t>(seed)), 50);
        const std::vector<double>& pos = c.inputs.at("pos").values;
        for (std::size_t i = 1; i < pos.size(); ++i) ASSERT_EQ(pos[i], pos[0] + static_cast<double>(i));
        ASSERT_LE(pos.back(), 63);
        for (double id : c.inputs.at("ids").values) ASSERT_TRUE(id >= 0 && id < 50 && id == std::floor(id));
        bool kept = false;
        for (double v : c.inputs.at("keep").values) kept = kept || v == 1.0;
        ASSERT_TRUE(kept) << "seed " << seed;
    }
}

TEST(PositionAudit, OrderOnlyThroughThePositionIdsHoldsForIdsAndFailsForSlots) {
    const Signature s = lm_signature();
    for (Model m : {Model::relative, Model::absolute}) {
        const AuditResult r = audit(model(m), s, with(std::nullopt));
        EXPECT_EQ(r.verdict, Verdict::holds) << finding(r, s);
    }
    const AuditResult r = audit(model(Model::by_index), s, with(std::nullopt));
    EXPECT_EQ(r.verdict, Verdict::violated) << finding(r, s);
}

TEST(PositionAudit, PositionsLeftInPlaceTellAnOrderAwareModelFromABagOfTokens) {
    const Signature s = lm_signature(true);
    AuditOptions o = with(std::nullopt);
    o.settings["keep_positions"] = "true";
    EXPECT_EQ(audit(model(Model::masked_mean), s, o).verdict, Verdict::holds);  // a bag of tokens
    const Signature seq = lm_signature();
    EXPECT_EQ(audit(model(Model::absolute), seq, o).verdict, Verdict::violated);  // order-aware
}

TEST(PositionAudit, AnAbsoluteModelFailsShiftAtOneShiftedTokenAndARelativeOneHolds) {
    const Signature s = lm_signature();
    const AuditResult r = audit(model(Model::absolute), s, with(Property{"shift"}));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
    EXPECT_EQ(r.property, Property{"shift"});
    ASSERT_TRUE(r.counterexample);
    EXPECT_EQ(r.counterexample->part.number("shift"), 1) << finding(r, s);
    EXPECT_EQ(r.counterexample->lengths.at("n"), 1) << finding(r, s);
    for (const auto& [axis, p] : r.counterexample->perms) EXPECT_TRUE(p.is_identity());
    for (Model m : {Model::relative, Model::by_index}) {
        const AuditResult ok = audit(model(m), s, with(Property{"shift"}));
        EXPECT_EQ(ok.verdict, Verdict::holds) << finding(ok, s);
        EXPECT_GT(ok.largest_shift, 8) << "the shifts rise toward the room the 64 position ids leave";
        EXPECT_LT(ok.largest_shift, 64);
    }
}

TEST(PositionAudit, AShortShiftAuditReachesTheTopOfThePositionRangeEarly) {
    const Signature s = lm_signature(false, 4096);
    AuditOptions o = with(Property{"shift"});
    o.cases = 3;
    const AuditResult r = audit(model(Model::relative), s, o);
    ASSERT_EQ(r.verdict, Verdict::holds) << finding(r, s);
    EXPECT_GE(r.largest_shift, 4096 - 4096 / 8 - 8) << "three cases, one of them within an eighth of the top";
}

TEST(PositionAudit, ShiftAndPaddingRefuseASignatureThatCannotTakeThem) {
    Signature s = one_tensor_signature(4, Output::sequence, 1, 8);
    EXPECT_THROW(audit([](const Tensors& in) { return Tensors{{"y", in.at("x")}}; }, s, with(Property{"shift"})),
                 std::invalid_argument);
    EXPECT_THROW(audit([](const Tensors& in) { return Tensors{{"y", in.at("x")}}; }, s, with(Property{"padding"})),
                 std::invalid_argument);
    EXPECT_THROW(audit(model(Model::relative), lm_signature(), with(Property{"reversal"})), std::invalid_argument);
    AuditOptions o = with(std::nullopt);
    o.settings["padding"] = pad_placement_name(PadPlacement::left);
    EXPECT_THROW(audit(model(Model::relative), lm_signature(), o), std::invalid_argument);
}

TEST(PositionAudit, PaddingLeaksThroughAnUnmaskedMeanAndShrinksToOnePad) {
    const Signature s = lm_signature(true);
    for (PadPlacement where : {PadPlacement::left, PadPlacement::right, PadPlacement::any}) {
        AuditOptions o = with(Property{"padding"});
        o.settings["padding"] = pad_placement_name(where);
        const AuditResult ok = audit(model(Model::masked_mean), s, o);
        EXPECT_EQ(ok.verdict, Verdict::holds) << finding(ok, s);
        const AuditResult r = audit(model(Model::unmasked_mean), s, o);
        ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
        const Counterexample& c = *r.counterexample;
        ASSERT_TRUE(c.part.lists.count("slots"));
        EXPECT_EQ(c.part.lists.at("slots").size(), 1u) << finding(r, s);
        EXPECT_EQ(c.lengths.at("n"), 1) << finding(r, s);
        if (where == PadPlacement::left) {
            EXPECT_EQ(c.part.lists.at("slots").front(), 0);
        }
        if (where == PadPlacement::right) {
            EXPECT_EQ(c.part.lists.at("slots").front(), c.lengths.at("n"));
        }
    }
}

TEST(PositionAudit, PadsAreMaskedAndTheRealPositionsKeepTheirValues) {
    const Signature s = lm_signature();
    Case c = draw_signature_case(s, {{"n", 3}}, rc::Random(5), 50);
    c.inputs.at("keep").values = {1, 1, 1};
    rules_of(Property{"padding"}).draw(s, {"n"}, c, rc::Random(6), 50, 101);  // at RapidCheck size 50
    const Tensors padded = rules_of(Property{"padding"}).transformed(s, {"n"}, c);
    const int total = 3 + static_cast<int>(c.part.lists.at("slots").size());
    ASSERT_EQ(padded.at("ids").shape, std::vector<int>{total});
    std::size_t real = 0;
    for (int slot = 0; slot < total; ++slot) {
        const bool pad = std::count(c.part.lists.at("slots").begin(), c.part.lists.at("slots").end(), slot) > 0;
        const auto at = static_cast<std::size_t>(slot);
        EXPECT_EQ(padded.at("keep").values[at], pad ? 0.0 : 1.0);
        if (pad) continue;
        EXPECT_EQ(padded.at("ids").values[at], c.inputs.at("ids").values[real]);
        EXPECT_EQ(padded.at("pos").values[at], c.inputs.at("pos").values[real]);
        ++real;
    }
    // --pad-id: every pad carries that token id, as a tokenizer pads; one outside the vocabulary is refused.
    PropertyArgs with_id{"n"};
    with_id.settings["pad_id"] = "7";
    rules_of(Property{"padding"}).draw(s, with_id, c, rc::Random(6), 50, 101);
    const Tensors by_id = rules_of(Property{"padding"}).transformed(s, with_id, c);
    for (int slot : c.part.lists.at("slots")) EXPECT_EQ(by_id.at("ids").values[static_cast<std::size_t>(slot)], 7.0);
    // What the pads carry is in the case's words: their ids, masks and position ids.
    const std::string said = rules_of(Property{"padding"}).case_text(c);
    EXPECT_NE(said.find(" (ids 7"), std::string::npos) << said;
    EXPECT_NE(said.find("; keep 0"), std::string::npos) << said;
    with_id.settings["pad_id"] = "50";
    EXPECT_THROW(rules_of(Property{"padding"}).completed_args(s, with_id), std::invalid_argument);
}

TEST(PositionAudit, AToleranceAsLargeAsTheOutputsIsUndecidedNeverHolds) {
    // Position ids near 2^30 in float32: the rotary-angle term of the tolerance outgrows outputs of size 1e-3.
    const Signature s = lm_signature(false, 1 << 30);
    const NamedBlackBox tiny = [](const Tensors& in) {
        const int n = static_cast<int>(in.at("ids").values.size());
        return Tensors{{"y", Tensor{{n, 3}, std::vector<double>(static_cast<std::size_t>(3 * n), 1e-3)}}};
    };
    AuditOptions o = with(Property{"shift"});
    o.dtype = Arithmetic::float32;
    const AuditResult r = audit(tiny, s, o);
    EXPECT_EQ(r.verdict, Verdict::undecided) << finding(r, s);
    EXPECT_EQ(exit_code(r.verdict), 3);
    o.dtype = Arithmetic::float64;
    EXPECT_EQ(audit(tiny, lm_signature(false, 64), o).verdict, Verdict::holds);
}

// Causal attention by position id, its masked scores at -inf as common model code writes them: a pad query whose
// only visible keys are pads answers NaN. Outputs at padded slots are not the model's answers, so a NaN there is
// no non-finite verdict (both sides are still compared, NaN against NaN agreeing): the audit holds for every
// property, while a NaN at a real token is still found.
NamedBlackBox causal_by_ids(bool nan_at_real_tokens) {
    return [nan_at_real_tokens](const Tensors& in) {
        const std::vector<double>& ids = in.at("ids").values;
        const std::vector<double>& pos = in.at("pos").values;
        const std::vector<double>& keep = in.at("keep").values;
        const auto n = ids.size();
        std::vector<double> y(3 * n, 0.0);
        for (std::size_t i = 0; i < n; ++i) {
            double total = 0;
            for (std::size_t j = 0; j < n; ++j) {
                if (keep[j] == 0 || pos[j] > pos[i]) continue;  // exp(-inf) = 0
                const double w = std::exp(-0.3 * (pos[i] - pos[j]));
                for (std::size_t f = 0; f < 3; ++f) y[3 * i + f] += w * embed(ids[j])[f];
                total += w;
            }
            for (std::size_t f = 0; f < 3; ++f) y[3 * i + f] /= total;  // 0 / 0 = NaN when no key is visible
            if (nan_at_real_tokens && keep[i] != 0 && ids[i] == 3) y[3 * i] = std::nan("");
        }
        return Tensors{{"y", Tensor{{static_cast<int>(n), 3}, y}}};
    };
}

TEST(PositionAudit, NaNAtPaddedSlotsIsNoVerdictButNaNAtARealTokenIs) {
    const Signature s = lm_signature();
    int nan_seen = 0;
    const NamedBlackBox counted = [&nan_seen](const Tensors& in) {
        Tensors out = causal_by_ids(false)(in);
        nan_seen += std::any_of(out.at("y").values.begin(), out.at("y").values.end(), [](double v) { return std::isnan(v); });
        return out;
    };
    for (std::optional<Property> p : {std::optional<Property>{}, std::optional<Property>{Property{"shift"}},
                                      std::optional<Property>{Property{"padding"}}}) {
        const AuditResult r = audit(counted, s, with(p));
        EXPECT_EQ(r.verdict, Verdict::holds) << finding(r, s);
    }
    EXPECT_GT(nan_seen, 0) << "no case made a padded query see no key: the test tests nothing";
    const AuditResult r = audit(causal_by_ids(true), s, with(std::nullopt));
    EXPECT_EQ(r.verdict, Verdict::non_finite) << finding(r, s);
}

// Causal attention by slot index with its masked scores at the lowest float, as common model code writes it: a
// query that sees no kept key attends uniformly over every slot up to its own, pads included, so the answer at a
// slot x's own mask pads changes when pads are inserted. Those slots are no real tokens: padding holds, while a
// leak into the real tokens (the mean over every slot) is still found.
NamedBlackBox causal_lowest_float(bool leak) {
    return [leak](const Tensors& in) {
        const std::vector<double>& ids = in.at("ids").values;
        const std::vector<double>& keep = in.at("keep").values;
        const auto n = ids.size();
        std::vector<double> y(3 * n, 0.0);
        for (std::size_t i = 0; i < n; ++i) {
            bool sees = false;
            for (std::size_t j = 0; j <= i; ++j) sees = sees || keep[j] != 0;
            double total = 0;
            for (std::size_t j = 0; j <= i; ++j) {
                if (sees && keep[j] == 0 && !leak) continue;
                for (std::size_t f = 0; f < 3; ++f) y[3 * i + f] += embed(ids[j])[f];
                total += 1;
            }
            for (std::size_t f = 0; f < 3; ++f) y[3 * i + f] /= total;
        }
        return Tensors{{"y", Tensor{{static_cast<int>(n), 3}, y}}};
    };
}

TEST(PositionAudit, PaddingComparesTheRealTokensNotTheSlotsXsOwnMaskPads) {
    const Signature s = lm_signature();
    for (PadPlacement where : {PadPlacement::left, PadPlacement::right, PadPlacement::any}) {
        AuditOptions o = with(Property{"padding"});
        o.settings["padding"] = pad_placement_name(where);
        const AuditResult holds = audit(causal_lowest_float(false), s, o);
        EXPECT_EQ(holds.verdict, Verdict::holds) << finding(holds, s);
    }
    const AuditResult leaks = audit(causal_lowest_float(true), s, with(Property{"padding"}));
    EXPECT_EQ(leaks.verdict, Verdict::violated) << finding(leaks, s);
}

TEST(CausalAudit, ABidirectionalModelSeesTheNextTokenAtTwoTokensCutAfterOne) {
    const Signature s = lm_signature();
    const AuditResult r = audit(model(Model::relative), s, with(Property{"causal"}));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
    EXPECT_EQ(r.property, Property{"causal"});
    const Counterexample& c = *r.counterexample;
    ASSERT_TRUE(c.part.lists.count("at")) << finding(r, s);
    EXPECT_EQ(c.part.names.at("axis"), "n");
    EXPECT_EQ(c.lengths.at("n"), 2) << finding(r, s);
    EXPECT_EQ(c.part.lists.at("at"), std::vector<int>{1}) << finding(r, s);
    ASSERT_EQ(c.outputs.size(), 1u);
    EXPECT_EQ(c.outputs[0].layer_of_permuted.shape, (std::vector<int>{1, 3})) << "L(x[:1]): one position";
    EXPECT_EQ(c.outputs[0].permuted_layer.shape, (std::vector<int>{1, 3})) << "L(x)[:1]";
    for (const auto& [axis, p] : c.perms) EXPECT_TRUE(p.is_identity());
}

TEST(CausalAudit, CausalAndPerPositionModelsHoldWhateverTheMasksPad) {
    const Signature s = lm_signature();
    for (Model m : {Model::causal, Model::absolute, Model::by_index}) {
        const AuditResult r = audit(model(m), s, with(Property{"causal"}));
        EXPECT_EQ(r.verdict, Verdict::holds) << static_cast<int>(m) << "\n" << finding(r, s);
    }
}

// Over a query axis n and a memory m: y_i = x_i + (the sum of bias[i][j] over j <= i, or over every j) + the mean
// of the memory, and a pooled g = the sum of every x (not causal, never compared).
NamedBlackBox biased(bool causal) {
    return [causal](const Tensors& in) {
        const Tensor& x = in.at("x");
        const Tensor& bias = in.at("bias");
        const Tensor& mem = in.at("mem");
        const int n = x.shape[0];
        double memory = 0, all = 0;
        for (double v : mem.values) memory += v / static_cast<double>(mem.values.size());
        for (double v : x.values) all += v;
        Tensor y{{n}, std::vector<double>(static_cast<std::size_t>(n), 0.0)};
        for (int i = 0; i < n; ++i) {
            double b = 0;
            for (int j = 0; j < (causal ? i + 1 : n); ++j) b += bias.values[static_cast<std::size_t>(i * n + j)];
            y.values[static_cast<std::size_t>(i)] = x.values[static_cast<std::size_t>(i)] + b + memory;
        }
        return Tensors{{"y", y}, {"g", Tensor{{1}, {all}}}};
    };
}

TEST(CausalAudit, APairwiseInputIsCutInBothDimsAndTheOtherAxisIsLeftWhole) {
    Signature s;
    s.axes = {parse_axis("n=1..6"), parse_axis("m=1..4")};
    s.inputs = {parse_input("x:n"), parse_input("bias:n,n"), parse_input("mem:m")};
    s.outputs = {parse_output("y:n"), parse_output("g:1")};
    AuditOptions o = with(Property{"causal"});
    o.settings["causal_axis"] = "n";
    const AuditResult ok = audit(biased(true), s, o);
    EXPECT_EQ(ok.verdict, Verdict::holds) << finding(ok, s);
    const AuditResult r = audit(biased(false), s, o);
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
    EXPECT_EQ(r.counterexample->lengths.at("n"), 2) << finding(r, s);
    EXPECT_EQ(r.counterexample->part.lists.at("at"), std::vector<int>{1}) << finding(r, s);
    o.settings["causal_axis"] = "m";
    EXPECT_THROW(audit(biased(true), s, o), std::invalid_argument) << "no output lies along m";
}

TEST(CausalAudit, RefusesASignatureWithoutAnOutputAlongTheAxisOrWithAnIndexIntoIt) {
    EXPECT_THROW(audit(model(Model::masked_mean), lm_signature(true), with(Property{"causal"})), std::invalid_argument);
    Signature graph;
    graph.axes = {parse_axis("n=1..6"), parse_axis("e=0..6")};
    graph.inputs = {parse_input("x:n,2"), parse_input("src:e:index=n")};
    graph.outputs = {parse_output("y:n,2")};
    const NamedBlackBox copy = [](const Tensors& in) { return Tensors{{"y", in.at("x")}}; };
    AuditOptions o = with(Property{"causal"});
    EXPECT_THROW(audit(copy, graph, o), std::invalid_argument) << "two axes: --causal-axis names one";
    o.settings["causal_axis"] = "n";
    EXPECT_THROW(audit(copy, graph, o), std::invalid_argument) << "src names positions of n";
    o.settings["causal_axis"] = "m";
    EXPECT_THROW(audit(model(Model::causal), lm_signature(), o), std::invalid_argument) << "no axis m";
}

TEST(PackingAudit, ACausalModelWithoutABlockMaskLeaksAcrossTwoOneTokenSequences) {
    const Signature s = lm_signature();
    const AuditResult r = audit(model(Model::causal), s, with(Property{"packing"}));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
    EXPECT_EQ(r.property, Property{"packing"});
    const Counterexample& c = *r.counterexample;
    ASSERT_TRUE(c.part.lists.count("at")) << finding(r, s);
    EXPECT_EQ(c.lengths.at("n"), 2) << finding(r, s);
    EXPECT_EQ(c.part.lists.at("at"), std::vector<int>{1}) << finding(r, s);
    EXPECT_EQ(c.part.number("piece", -1), 1) << "the second sequence sees the first: " << finding(r, s);
    EXPECT_EQ(c.inputs.at("pos").values, (std::vector<double>{0, 0})) << "each sequence's ids start at 0";
}

TEST(PackingAudit, ABlockMaskByPositionRestartHoldsAndOrderByRowIndexLeaks) {
    const Signature s = lm_signature();
    for (Model m : {Model::packed, Model::absolute}) {
        const AuditResult r = audit(model(m), s, with(Property{"packing"}));
        EXPECT_EQ(r.verdict, Verdict::holds) << static_cast<int>(m) << "\n" << finding(r, s);
    }
    // Bidirectional across sequences; scaled by the row index, which packing moves (not by the position ids).
    for (Model m : {Model::relative, Model::by_index})
        EXPECT_EQ(audit(model(m), s, with(Property{"packing"})).verdict, Verdict::violated) << static_cast<int>(m);
}

TEST(PackingAudit, RefusesASignatureThatCannotTellWhereASequenceStarts) {
    Signature s;
    s.axes = {parse_axis("n=1..8")};
    s.inputs = {parse_input("ids:n:token=50"), parse_input("keep:n:mask=keep")};
    s.outputs = {parse_output("y:n,3")};
    const NamedBlackBox copy = [](const Tensors& in) { return Tensors{{"y", Tensor{{static_cast<int>(in.at("ids").values.size()), 3}, std::vector<double>(3 * in.at("ids").values.size(), 0.0)}}}; };
    EXPECT_THROW(audit(copy, s, with(Property{"packing"})), std::invalid_argument) << "neither a position nor a segment input";
    s.inputs.push_back(parse_input("doc:n:segment"));
    EXPECT_EQ(audit(copy, s, with(Property{"packing"})).verdict, Verdict::holds) << "a segment input tells it";
    s.inputs.push_back(parse_input("bias:n,n"));
    EXPECT_THROW(audit(copy, s, with(Property{"packing"})), std::invalid_argument) << "a pairwise input over n";
}

// A causal layer that decodes in chunks with a cache of the rows it has seen and their positions: y_i is the
// average of x_j over j <= i, weighted exp(-0.3 |p_i - p_j|), the positions p numbered by the layer itself from the
// chunk's offset, or (a cache whose positions restart) from 0 in every chunk.
struct Seen {
    std::vector<double> x, positions;
};
ChunkStep cached_attention(bool restart) {
    return [restart](std::any& state, const Tensors& chunk, int offset) {
        if (!state.has_value()) state = Seen{};
        Seen& seen = std::any_cast<Seen&>(state);
        const Tensor& x = chunk.at("x");
        const int n = x.shape[0], before = static_cast<int>(seen.positions.size());
        for (int i = 0; i < n; ++i) {
            seen.x.push_back(x.values[static_cast<std::size_t>(2 * i)]);
            seen.x.push_back(x.values[static_cast<std::size_t>(2 * i + 1)]);
            seen.positions.push_back(restart ? i : offset + i);
        }
        Tensor y{{n, 2}, std::vector<double>(static_cast<std::size_t>(2 * n), 0.0)};
        for (int i = 0; i < n; ++i) {
            const auto g = static_cast<std::size_t>(before + i);
            double total = 0;
            for (std::size_t j = 0; j <= g; ++j) {
                const double w = std::exp(-0.3 * std::abs(seen.positions[g] - seen.positions[j]));
                for (std::size_t f = 0; f < 2; ++f) y.values[static_cast<std::size_t>(2 * i) + f] += w * seen.x[2 * j + f];
                total += w;
            }
            for (std::size_t f = 0; f < 2; ++f) y.values[static_cast<std::size_t>(2 * i) + f] /= total;
        }
        return Tensors{{"y", y}};
    };
}

Signature sequence_signature() {
    Signature s;
    s.axes = {parse_axis("n=1..8")};
    s.inputs = {parse_input("x:n,2")};
    s.outputs = {parse_output("y:n,2")};
    return s;
}

TEST(IncrementalAudit, ACacheWithPositionsRightHoldsAndOneThatRestartsFailsAtTwoChunks) {
    const Signature s = sequence_signature();
    const AuditResult ok = audit(chunked_black_box(cached_attention(false), s), s, with(Property{"incremental"}));
    EXPECT_EQ(ok.verdict, Verdict::holds) << finding(ok, s);
    const AuditResult r = audit(chunked_black_box(cached_attention(true), s), s, with(Property{"incremental"}));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
    const Counterexample& c = *r.counterexample;
    ASSERT_TRUE(c.part.lists.count("at") && c.part.number("chunked") == 1) << finding(r, s);
    EXPECT_EQ(c.part.lists.at("at").size(), 1u) << "two chunks: " << finding(r, s);
    EXPECT_EQ(c.lengths.at("n"), 2) << finding(r, s);
}

TEST(IncrementalAudit, ALayerThatDoesNotDecodeInChunksIsAnErrorNeverAPass) {
    const Signature s = sequence_signature();
    const NamedBlackBox one_pass = [](const Tensors& in) { return Tensors{{"y", in.at("x")}}; };
    const AuditResult r = audit(one_pass, s, with(Property{"incremental"}));
    EXPECT_EQ(r.verdict, Verdict::error);
    EXPECT_NE(r.error.find("does not decode in chunks"), std::string::npos) << r.error;
    EXPECT_THROW(audit(chunked_black_box(cached_attention(false), lm_signature(true)), lm_signature(true),
                       with(Property{"incremental"})),
                 std::invalid_argument)
        << "no output along n";
}

// A cached path that takes one new token at a time (a decode-only kernel) and throws for a longer chunk after the
// first: the exception is the finding, shrunk to a one-token prefill and a two-token chunk; the one pass is answered.
TEST(IncrementalAudit, AChunkThatRaisesWhereOnePassAnswersIsAViolationNamingTheChunk) {
    const Signature s = sequence_signature();
    const ChunkStep right = cached_attention(false);
    const ChunkStep one_token_steps = [right](std::any& state, const Tensors& chunk, int offset) {
        if (offset > 0 && chunk.at("x").shape[0] > 1) throw std::runtime_error("the decode path takes one token");
        return right(state, chunk, offset);
    };
    const AuditResult r = audit(chunked_black_box(one_token_steps, s), s, with(Property{"incremental"}));
    ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
    const Counterexample& c = *r.counterexample;
    EXPECT_EQ(c.raised(), "the decode path takes one token (chunk 2 of 2, positions 1 to 2)") << finding(r, s);
    EXPECT_TRUE(c.outputs.empty()) << "nothing compared: " << finding(r, s);
    EXPECT_EQ(c.lengths.at("n"), 3) << finding(r, s);
    ASSERT_TRUE(c.part.lists.count("at")) << finding(r, s);
    EXPECT_EQ(c.part.lists.at("at"), std::vector<int>{1}) << finding(r, s);
    EXPECT_NE(detail_text(r).find("L(x in chunks) raised where L(x) was answered"), std::string::npos) << detail_text(r);
    EXPECT_NE(finding(r, s).find("RAISED:\n    the decode path takes one token"), std::string::npos) << finding(r, s);
    // The report keeps it; judged again, the layer still raises and the fix holds.
    const report::Record record = report::record_of(r, "one-token-steps", Property{"incremental"}, r.dtype, 3, "");
    const Counterexample back = report::from_json(report::to_json(record)).counterexample.value();
    EXPECT_EQ(back.raised(), c.raised());
    EXPECT_NE(report::to_markdown(record).find("L(x in chunks) raised where L(x) was answered: the decode"),
              std::string::npos);
    AuditOptions o = with(Property{"incremental"});
    o.dtype = r.dtype;
    EXPECT_EQ(reevaluate(chunked_black_box(one_token_steps, s), s, back, false, o).verdict, Verdict::violated);
    EXPECT_EQ(reevaluate(chunked_black_box(right, s), s, back, false, o).verdict, Verdict::holds);
    // A layer that raises in one pass too is an error of the audit, not a finding.
    const ChunkStep always = [](std::any&, const Tensors&, int) -> Tensors { throw std::runtime_error("no weights"); };
    const AuditResult e = audit(chunked_black_box(always, s), s, with(Property{"incremental"}));
    EXPECT_EQ(e.verdict, Verdict::error);
    EXPECT_NE(e.error.find("no weights"), std::string::npos) << e.error;
}

// The harness checks itself: each planted bug makes a layer that holds fail.
struct PlantedBug {
    test_only::HarnessBug bug;
    Model model;
    std::optional<Property> property;
    bool pooled;
};

TEST(PositionHarness, EachPlantedBugInTheTransformationsIsCaught) {
    for (const PlantedBug& p : {PlantedBug{test_only::HarnessBug::positions_kept, Model::absolute, std::nullopt, false},
                                PlantedBug{test_only::HarnessBug::shift_tokens, Model::relative, Property{"shift"}, false},
                                PlantedBug{test_only::HarnessBug::pads_unmasked, Model::masked_mean, Property{"padding"}, true},
                                PlantedBug{test_only::HarnessBug::pads_move_positions, Model::absolute, Property{"padding"}, false},
                                PlantedBug{test_only::HarnessBug::cut_keeps_later, Model::causal, Property{"causal"}, false},
                                PlantedBug{test_only::HarnessBug::packing_without_restart, Model::packed, Property{"packing"}, false}}) {
        const Signature s = lm_signature(p.pooled);
        ASSERT_EQ(audit(model(p.model), s, with(p.property)).verdict, Verdict::holds);
        test_only::plant_harness_bug(p.bug);
        const AuditResult r = audit(model(p.model), s, with(p.property));
        test_only::plant_harness_bug(test_only::HarnessBug::none);
        EXPECT_EQ(r.verdict, Verdict::violated) << static_cast<int>(p.bug) << "\n" << finding(r, s);
    }
}

// A layer with a stale table: each answer is scaled by the length of the request before it (a rotary table built
// for the last length and not rebuilt), so two asks in a row agree and an ask after another length does not.
NamedBlackBox stale_table() {
    auto last = std::make_shared<int>(0);
    return [last](const Tensors& in) {
        Tensor y = in.at("x");
        for (double& v : y.values) v *= 1.0 + 0.125 * *last;
        *last = y.shape[0];
        return Tensors{{"y", y}};
    };
}

TEST(HistoryDependence, AStaleTableIsHistoryDependentAndTheEarlierRequestIsNamed) {
    const Signature s = sequence_signature();
    const AuditResult r = audit(stale_table(), s, with(std::nullopt));
    ASSERT_EQ(r.verdict, Verdict::history_dependent) << finding(r, s);
    EXPECT_EQ(exit_code(r.verdict), 1);
    ASSERT_TRUE(r.counterexample && r.counterexample->asked_before()) << finding(r, s);
    EXPECT_NE(r.counterexample->asked_before()->lengths.at("n"), r.counterexample->lengths.at("n")) << finding(r, s);
    EXPECT_NE(detail_text(r).find("alike twice in a row"), std::string::npos) << detail_text(r);
    // Replayed: x, the earlier request, x again; a layer without the stale table holds.
    AuditOptions o = with(std::nullopt);
    o.dtype = r.dtype;
    EXPECT_EQ(reevaluate(stale_table(), s, *r.counterexample, false, o).verdict, Verdict::history_dependent);
    const NamedBlackBox fresh = [](const Tensors& in) { return Tensors{{"y", in.at("x")}}; };
    EXPECT_EQ(reevaluate(fresh, s, *r.counterexample, false, o).verdict, Verdict::holds);
    // A layer that differs even when asked twice in a row stays nondeterministic.
    auto calls = std::make_shared<int>(0);
    const NamedBlackBox drifting = [calls](const Tensors& in) {
        Tensor y = in.at("x");
        for (double& v : y.values) v += ++*calls;
        return Tensors{{"y", y}};
    };
    EXPECT_EQ(audit(drifting, s, with(std::nullopt)).verdict, Verdict::nondeterministic);
}

TEST(IncrementalHarness, ChunksThatRepeatAPositionAreCaught) {
    const Signature s = sequence_signature();
    const NamedBlackBox layer = chunked_black_box(cached_attention(false), s);
    ASSERT_EQ(audit(layer, s, with(Property{"incremental"})).verdict, Verdict::holds);
    test_only::plant_harness_bug(test_only::HarnessBug::chunks_repeat_a_position);
    const AuditResult r = audit(layer, s, with(Property{"incremental"}));
    test_only::plant_harness_bug(test_only::HarnessBug::none);
    EXPECT_EQ(r.verdict, Verdict::violated) << finding(r, s);
}

TEST(PositionAudit, ASavedShiftPaddingOrCausalCaseIsJudgedAgainAsItWasFound) {
    for (const auto& [m, p, pooled] : {std::tuple{Model::absolute, Property{"shift"}, false},
                                       std::tuple{Model::unmasked_mean, Property{"padding"}, true},
                                       std::tuple{Model::relative, Property{"causal"}, false},
                                       std::tuple{Model::causal, Property{"packing"}, false}}) {
        const Signature s = lm_signature(pooled);
        const AuditResult r = audit(model(m), s, with(p));
        ASSERT_EQ(r.verdict, Verdict::violated);
        AuditOptions o = with(p);
        o.dtype = r.dtype;
        EXPECT_EQ(reevaluate(model(m), s, *r.counterexample, false, o).verdict, Verdict::violated);
        const Model fixed = p == Property{"shift"}     ? Model::relative
                            : p == Property{"causal"}  ? Model::causal
                            : p == Property{"packing"} ? Model::packed
                                                     : Model::masked_mean;
        EXPECT_EQ(reevaluate(model(fixed), s, *r.counterexample, false, o).verdict, Verdict::holds);
    }
}

// Sliding-window attention over x:n,2: query i attends to the keys j in [i - left + 1, i + right] (softmax of
// x_i . x_j), applied `layers` times.
NamedBlackBox sliding_window(int left, int right, int layers = 1) {
    return [=](const Tensors& in) {
        std::vector<double> x = in.at("x").values;
        const int n = static_cast<int>(x.size() / 2);
        for (int layer = 0; layer < layers; ++layer) {
            std::vector<double> y(x.size(), 0.0);
            for (int i = 0; i < n; ++i) {
                double total = 0;
                for (int j = std::max(0, i - left + 1); j <= std::min(n - 1, i + right); ++j) {
                    const double w = std::exp(x[2 * i] * x[2 * j] + x[2 * i + 1] * x[2 * j + 1]);
                    total += w;
                    for (int d = 0; d < 2; ++d) y[2 * i + d] += w * x[2 * j + d];
                }
                for (int d = 0; d < 2; ++d) y[2 * i + d] /= total;
            }
            x = y;
        }
        return Tensors{{"y", Tensor{{n, 2}, x}}};
    };
}

Signature window_signature(const char* output = "y:n,2") {
    Signature s;
    s.axes = {parse_axis("n=1..12")};
    s.inputs = {parse_input("x:n,2")};
    s.outputs = {parse_output(output)};
    return s;
}

AuditOptions window(int w, int right = -1) {
    AuditOptions o = with(Property{"window"});
    o.settings["window"] = std::to_string(w);
    if (right >= 0) o.settings["window_right"] = std::to_string(right);
    return o;
}

TEST(WindowAudit, AWindowOneTooWideIsFoundAtNEqualsWPlusOneWithoutAReference) {
    const Signature s = window_signature();
    for (int w : {1, 3, 5}) {
        const AuditResult r = audit(sliding_window(w + 1, 0), s, window(w));
        ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
        EXPECT_EQ(r.counterexample->lengths.at("n"), w + 1) << finding(r, s);
        EXPECT_EQ(r.counterexample->part.number("at"), w) << finding(r, s);
        EXPECT_EQ(audit(sliding_window(w, 0), s, window(w)).verdict, Verdict::holds) << "W = " << w;
    }
}

TEST(WindowAudit, TwoLayersOfWindowThreeHoldAtTheReceptiveFieldFiveAndAreViolatedAtFour) {
    const Signature s = window_signature();
    const AuditResult five = audit(sliding_window(3, 0, 2), s, window(5));
    EXPECT_EQ(five.verdict, Verdict::holds) << finding(five, s);
    const AuditResult four = audit(sliding_window(3, 0, 2), s, window(4));
    ASSERT_EQ(four.verdict, Verdict::violated) << finding(four, s);
    EXPECT_EQ(four.counterexample->lengths.at("n"), 5) << finding(four, s);
}

TEST(WindowAudit, ABidirectionalWindowCountsItsRightSide) {
    const Signature s = window_signature();
    EXPECT_EQ(audit(sliding_window(2, 2), s, window(2, 2)).verdict, Verdict::holds);
    const AuditResult causal = audit(sliding_window(2, 2), s, window(2));
    ASSERT_EQ(causal.verdict, Verdict::violated) << finding(causal, s);
    EXPECT_EQ(causal.counterexample->lengths.at("n"), 2) << "the next token, seen from position 0";
    EXPECT_EQ(audit(sliding_window(2, 3), s, window(2, 2)).verdict, Verdict::violated);
}

TEST(WindowAudit, ASavedCaseIsJudgedAgainAsItWasFound) {
    const Signature s = window_signature();
    const AuditResult r = audit(sliding_window(4, 0), s, window(3));
    ASSERT_EQ(r.verdict, Verdict::violated);
    AuditOptions o = window(3);
    o.dtype = r.dtype;
    EXPECT_EQ(reevaluate(sliding_window(4, 0), s, *r.counterexample, false, o).verdict, Verdict::violated);
    EXPECT_EQ(reevaluate(sliding_window(3, 0), s, *r.counterexample, false, o).verdict, Verdict::holds);
}

TEST(WindowAudit, RefusesAMissingOrBadWidthAndASignatureWithoutTheAxisInItsOutputs) {
    const Signature s = window_signature();
    const auto error_of = [](const NamedBlackBox& f, const Signature& sig, const AuditOptions& o) {
        try {
            audit(f, sig, o);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(error_of(sliding_window(3, 0), s, with(Property{"window"})).find("--window W"), std::string::npos);
    EXPECT_NE(error_of(sliding_window(3, 0), s, window(0)).find("--window takes an integer"), std::string::npos);
    AuditOptions bad = window(3);
    bad.settings["window_right"] = "two";
    EXPECT_NE(error_of(sliding_window(3, 0), s, bad).find("--window-right takes an integer"), std::string::npos);
    AuditOptions unknown = window(3);
    unknown.settings["windw"] = "3";
    EXPECT_NE(error_of(sliding_window(3, 0), s, unknown).find("windw"), std::string::npos);
    const Signature pooled = window_signature("g:2");
    EXPECT_NE(error_of([](const Tensors&) { return Tensors{{"g", Tensor{{2}, {0, 0}}}}; }, pooled, window(3))
                  .find("no output has that axis"),
              std::string::npos);
}

// The gaps between the position ids: ids that reach the output (relative or absolute) are found at two tokens with
// the smallest gap; ids ignored hold (shift would hold for them too: it cannot tell).
TEST(GapsAudit, PositionIdsThatReachTheOutputAreFoundAtTwoTokensAndIgnoredOnesHold) {
    const Signature s = lm_signature();
    for (Model m : {Model::causal, Model::absolute}) {
        const AuditResult r = audit(model(m), s, with(Property{"gaps"}));
        ASSERT_EQ(r.verdict, Verdict::violated) << finding(r, s);
        EXPECT_EQ(r.counterexample->lengths.at("n"), 2) << finding(r, s);
        EXPECT_EQ(r.counterexample->part.number("gap"), 1) << finding(r, s);
        EXPECT_EQ(rules_of(Property{"gaps"}).case_text(*r.counterexample), "every position id from the 2nd smallest on + 1");
    }
    for (Model m : {Model::causal_by_row, Model::by_index}) EXPECT_EQ(audit(model(m), s, with(Property{"gaps"})).verdict, Verdict::holds);
    EXPECT_EQ(audit(model(Model::causal_by_row), s, with(Property{"shift"})).verdict, Verdict::holds);
    Signature no_ids = s;
    no_ids.inputs.erase(no_ids.inputs.begin() + 1);
    EXPECT_THROW(audit(model(Model::causal), no_ids, with(Property{"gaps"})), std::invalid_argument);
}

// The shrink's time bound: a shrink it cuts short keeps the failure found (shrunk as far as it got) and says so; a
// shrink that ran out of candidates says nothing.
TEST(ShrinkBound, AShrinkCutShortByItsTimeBoundKeepsTheFindingAndSaysSo) {
    const Signature s = lm_signature();
    const NamedBlackBox slow = [](const Tensors& in) {
        std::this_thread::sleep_for(std::chrono::milliseconds(4));
        return model(Model::absolute)(in);
    };
    AuditOptions o = with(Property{"shift"});
    o.shrink_seconds = 0.01;
    const AuditResult cut = audit(slow, s, o);
    ASSERT_EQ(cut.verdict, Verdict::violated) << finding(cut, s);
    EXPECT_EQ(cut.counterexample->shrink_cut_short, 0.01);
    EXPECT_NE(finding(cut, s).find("the shrink cut short at its bound of 0.01 s"), std::string::npos) << finding(cut, s);
    const AuditResult whole = audit(model(Model::absolute), s, with(Property{"shift"}));
    ASSERT_EQ(whole.verdict, Verdict::violated);
    EXPECT_EQ(whole.counterexample->shrink_cut_short, 0);
    EXPECT_LE(whole.counterexample->lengths.at("n"), cut.counterexample->lengths.at("n"));
    o.shrink_seconds = -1;
    EXPECT_THROW(audit(slow, s, o), std::invalid_argument);
}

// An index error names the limits of the ids sent and the kinds that set them.
TEST(ErrorHints, AnIndexErrorNamesTheLimitsOfTheIdsSent) {
    const Signature s = lm_signature();
    EXPECT_EQ(index_error_hint(s, "the layer raised: IndexError: index out of range in self"),
              "; the ids sent stay below their limits (ids < 50, pos < 64): if a table of the layer's has fewer rows, "
              "give its size in the input's kind (token=V, position=P)");
    EXPECT_EQ(index_error_hint(s, "the layer raised: ValueError: bad"), "");
    EXPECT_EQ(index_error_hint(window_signature(), "IndexError: list index out of range"), "") << "no ids sent";
}

// The profile's words say what the rows behind them checked: the order row of a causal layer reads the causal and
// the padding rows, the relative row the gaps row.
TEST(ProfileWords, ARowSaysOnlyWhatTheRowsBehindItChecked) {
    const Signature s = lm_signature();
    const auto words = [&](const char* property, const std::string& row, bool holds, const RowVerdicts& before) {
        for (const ProfileRowSpec& r : rules_of(Property{property}).profile_rows(s, {}))
            if (r.id == row) return r.words ? r.words(holds, before) : std::string();
        return std::string("no row ") + row;
    };
    const auto order = [&](const RowVerdicts& before) { return words("equivariance", "order-through-positions", false, before); };
    EXPECT_EQ(order({{"causal", true}, {"padding-left", true}, {"padding-any", true}}),
              "order by row index through the causal mask alone (the causal and padding rows held)");
    EXPECT_EQ(order({{"causal", true}, {"padding-left", false}, {"padding-any", false}}),
              "order by row index beyond the causal mask (a pad, every position id kept, changed an output)");
    EXPECT_NE(order({{"causal", true}, {"padding-left", true}, {"padding-any", false}}).find("distances between rows"),
              std::string::npos);
    EXPECT_NE(order({{"causal", true}}).find("whether alone was not checked"), std::string::npos);
    EXPECT_NE(order({{"causal", true}, {"position-ids", true}, {"padding-any", true}}).find("the position ids ignored"),
              std::string::npos);
    EXPECT_EQ(order({{"causal", false}}), "");
    EXPECT_EQ(words("equivariance", "order-through-positions", true, {{"causal", true}}), "");
    EXPECT_EQ(words("shift", "relative", true, {{"position-ids", true}}), "relative only as ids ignored are (the gaps row held)");
    EXPECT_EQ(words("shift", "relative", true, {{"position-ids", false}}), "");
    EXPECT_EQ(words("shift", "relative", false, {{"position-ids", true}}), "");
}

}  // namespace
}  // namespace permcheck
