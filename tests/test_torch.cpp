// LibTorch's own layers audited for real (adapters/torch_adapter.h): torch::nn::MultiheadAttention and
// torch::nn::TransformerEncoderLayer, with and without masks, in eval and train mode. This file includes no
// torch header: the adapter hides LibTorch behind a BlackBox.
#include "adapters/torch_adapter.h"
#include "report/text.h"
#include "tests/support/process.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>

namespace {

using namespace permcheck;
using adapters::TorchLayer;
using adapters::TorchMask;
using adapters::TorchOptions;

AuditOptions audit_options(const TorchOptions& t, int cases = 60) {
    AuditOptions o;
    o.name = adapters::torch_name(t);
    o.d = t.dim;
    o.dtype = t.dtype;
    o.cases = cases;
    o.max_len = 8;
    o.amplification = adapters::torch_amplification(t.layer);
    return o;
}

AuditResult audit_torch(const TorchOptions& t, int cases = 60) {
    return audit(adapters::torch_black_box(t), audit_options(t, cases));
}

std::string account(const AuditResult& r) {
    std::string s = std::string(verdict_name(r.verdict)) + " after " + std::to_string(r.cases) + " cases: " + r.detail + r.error;
    if (r.counterexample) {
        s += "\n";
        s += describe_finding(r);
    }
    return s;
}

TorchOptions torch_options(TorchLayer layer, TorchMask mask = TorchMask::none, bool train = false) {
    TorchOptions t;
    t.layer = layer;
    t.mask = mask;
    t.train = train;
    t.dim = 8;
    t.heads = 2;
    return t;
}

TEST(TorchAudit, MultiheadAttentionWithoutMaskIsEquivariantInEvalMode) {
    const AuditResult r = audit_torch(torch_options(TorchLayer::mha));
    EXPECT_EQ(r.verdict, Verdict::holds) << account(r);
    EXPECT_EQ(r.cases, 60);
}

TEST(TorchAudit, MultiheadAttentionInFloat32HoldsUnderTheFloat32Tolerance) {
    TorchOptions t = torch_options(TorchLayer::mha);
    t.dtype = Arithmetic::float32;
    const AuditResult r = audit_torch(t);
    EXPECT_EQ(r.verdict, Verdict::holds) << account(r);
    EXPECT_EQ(r.dtype, permcheck::Arithmetic::float32);
}

TEST(TorchAudit, EncoderLayerWithoutMaskIsEquivariantInEvalMode) {
    const AuditResult r = audit_torch(torch_options(TorchLayer::encoder_layer));
    EXPECT_EQ(r.verdict, Verdict::holds) << account(r);
}

TEST(TorchAudit, CausalMaskMakesMultiheadAttentionNotEquivariant) {
    const AuditResult r = audit_torch(torch_options(TorchLayer::mha, TorchMask::causal));
    ASSERT_EQ(r.verdict, Verdict::violated) << account(r);
    ASSERT_TRUE(r.counterexample.has_value());
    // Two positions suffice: the first attends to itself only, the second to both.
    EXPECT_EQ(r.counterexample->lengths.at("n"), 2) << account(r);
}

TEST(TorchAudit, CausalMaskMakesTheEncoderLayerNotEquivariant) {
    const AuditResult r = audit_torch(torch_options(TorchLayer::encoder_layer, TorchMask::causal));
    EXPECT_EQ(r.verdict, Verdict::violated) << account(r);
}

TEST(TorchAudit, DropoutInTrainModeIsNondeterministicNotViolated) {
    for (TorchLayer layer : {TorchLayer::mha, TorchLayer::encoder_layer}) {
        const AuditResult r = audit_torch(torch_options(layer, TorchMask::none, /*train=*/true));
        EXPECT_EQ(r.verdict, Verdict::nondeterministic) << adapters::torch_layer_name(layer) << ": " << account(r);
    }
}

TEST(TorchAudit, TrainModeWithoutDropoutIsEquivariant) {
    TorchOptions t = torch_options(TorchLayer::encoder_layer, TorchMask::none, /*train=*/true);
    t.dropout = 0.0;
    const AuditResult r = audit_torch(t);
    EXPECT_EQ(r.verdict, Verdict::holds) << account(r);
}

// The padding mask is a function of x (a negative first feature = padding), so it moves with the tokens:
// L(P x, P m) = P L(x, m) is what is audited, and it holds (torch_adapter.h, proofs-notes/torch-key-padding.md).
TEST(TorchAudit, KeyPaddingMaskCarriedThroughThePermutationIsEquivariant) {
    for (TorchLayer layer : {TorchLayer::mha, TorchLayer::encoder_layer}) {
        const TorchOptions t = torch_options(layer, TorchMask::key_padding);
        // Count the requests that had padding (some, not all, first features negative): the audit must see many.
        int padded = 0;
        const BlackBox torch_box = adapters::torch_black_box(t);
        const BlackBox counting = [&](const Mat<double>& x) {
            const auto flagged = (x.col(0).array() < 0.0).count();
            if (flagged > 0 && flagged < x.rows()) ++padded;
            return torch_box(x);
        };
        const AuditResult r = audit(counting, audit_options(t, 100));
        EXPECT_EQ(r.verdict, Verdict::holds) << adapters::torch_layer_name(layer) << ": " << account(r);
        EXPECT_GE(padded, 40) << "of " << r.evaluations << " requests";
    }
}

// The verdict above is not vacuous: the mask does change the answer on inputs with padding.
TEST(TorchAudit, KeyPaddingMaskChangesTheAnswerWhenAPositionIsPadding) {
    Mat<double> x(3, 8);
    x.setConstant(0.5);
    x(1, 0) = -1.0;  // position 1 is padding
    x(2, 3) = -1.25;
    const Mat<double> masked = adapters::torch_black_box(torch_options(TorchLayer::mha, TorchMask::key_padding))(x);
    const Mat<double> plain = adapters::torch_black_box(torch_options(TorchLayer::mha))(x);
    EXPECT_GT((masked - plain).cwiseAbs().maxCoeff(), 1e-6);
}

// A mask fixed by index does not move with the tokens: the token permuted into the last position is dropped.
TEST(TorchAudit, KeyPaddingFixedByIndexIsViolated) {
    const AuditResult r = audit_torch(torch_options(TorchLayer::mha, TorchMask::key_padding_fixed));
    EXPECT_EQ(r.verdict, Verdict::violated) << account(r);
}

TEST(TorchAudit, ExpectedVerdictsMatchTheTheory) {
    EXPECT_EQ(adapters::expected_verdict(torch_options(TorchLayer::mha)), Verdict::holds);
    EXPECT_EQ(adapters::expected_verdict(torch_options(TorchLayer::mha, TorchMask::causal)), Verdict::violated);
    EXPECT_EQ(adapters::expected_verdict(torch_options(TorchLayer::mha, TorchMask::key_padding)), Verdict::holds);
    EXPECT_EQ(adapters::expected_verdict(torch_options(TorchLayer::mha, TorchMask::none, true)), Verdict::nondeterministic);
}

TEST(TorchAudit, HeadsThatDoNotDivideTheWidthAreRefused) {
    TorchOptions t = torch_options(TorchLayer::mha);
    t.heads = 3;
    try {
        adapters::torch_black_box(t);
        FAIL() << "heads = 3 with dim = 8 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("divide --dim (8)"), std::string::npos) << e.what();
    }
}

// bfloat16 (issue 13, item 5; proofs-notes/half-precision-tolerance.md): the module and its inputs in bfloat16,
// judged with the bfloat16 tolerance. MultiheadAttention's amplification is 1, so these verdicts are sharp.
TEST(TorchAuditHalf, MultiheadAttentionInBfloat16HoldsAndItsRoundingExceedsTheFloat32Tolerance) {
    TorchOptions t = torch_options(TorchLayer::mha);
    t.dtype = Arithmetic::bfloat16;
    const AuditResult r = audit_torch(t);
    EXPECT_EQ(r.verdict, Verdict::holds) << account(r);
    EXPECT_EQ(r.dtype, Arithmetic::bfloat16);
    AuditOptions o = audit_options(t);
    o.dtype = Arithmetic::float32;  // the same bfloat16 module judged as if it computed in float32
    const AuditResult strict = audit(adapters::torch_black_box(t), o);
    EXPECT_EQ(strict.verdict, Verdict::violated)
        << "bfloat16 rounding must exceed the float32 tolerance, or the verdict above proves nothing: " << account(strict);
}

TEST(TorchAuditHalf, CausalMaskInBfloat16IsViolatedAtTwoPositions) {
    TorchOptions t = torch_options(TorchLayer::mha, TorchMask::causal);
    t.dtype = Arithmetic::bfloat16;
    const AuditResult r = audit_torch(t);
    ASSERT_EQ(r.verdict, Verdict::violated) << account(r);
    ASSERT_TRUE(r.counterexample.has_value());
    EXPECT_EQ(r.counterexample->lengths.at("n"), 2) << account(r);
    EXPECT_EQ(r.dtype, Arithmetic::bfloat16);
}

TEST(TorchAuditHalf, EncoderLayerInBfloat16Holds) {
    TorchOptions t = torch_options(TorchLayer::encoder_layer);
    t.dtype = Arithmetic::bfloat16;
    const AuditResult r = audit_torch(t, 30);
    EXPECT_EQ(r.verdict, Verdict::holds) << account(r);
    EXPECT_NE(adapters::torch_name(t).find("bfloat16"), std::string::npos) << adapters::torch_name(t);
}

TEST(TorchAuditHalf, Float16BuiltInsAreRefusedNamingWhy) {
    TorchOptions t = torch_options(TorchLayer::encoder_layer);
    t.dtype = Arithmetic::float16;
    try {
        adapters::torch_black_box(t);
        FAIL() << "a float16 built-in was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("no float16 matrix kernels on CPU"), std::string::npos) << e.what();
    }
}

int run(const std::string& args) {
    const permcheck::test::Scratch cwd("torch-command");
    return permcheck::test::run_shell(permcheck::test::shell_quote(PERMCHECK_BINARY) + " " + args, cwd.dir()).exit_code;
}

TEST(TorchAuditCommand, ExitStatusCarriesTheVerdict) {
    EXPECT_EQ(run("audit-torch mha --cases 20"), 0);
    EXPECT_EQ(run("audit-torch encoder-layer --mask causal --cases 20"), 1);
    EXPECT_EQ(run("audit-torch mha --train --cases 20"), 1);
    EXPECT_EQ(run("audit-torch mha --heads 3"), 2);
    EXPECT_EQ(run("audit-torch transformer"), 2);
}

// The replay line of an audit-torch report runs as written and finds the same verdict; its report.md offers no
// `permcheck replay report.json` line, which has no program to send a LibTorch module's case to.
TEST(TorchAuditCommand, ReplayLineOfAReportRunsAsWritten) {
    const permcheck::test::Scratch dir("torch-replay");
    ASSERT_EQ(run("audit-torch encoder-layer --mask causal --cases 20 --report " +
                  permcheck::test::shell_quote(dir.dir().string())),
              1);
    std::ifstream in(dir.dir() / "report.json");
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = "\"replay\": \"permcheck ";
    const std::size_t at = json.find(key);
    ASSERT_NE(at, std::string::npos) << json;
    const std::size_t from = at + key.size();
    const std::string args = json.substr(from, json.find('"', from) - from);
    EXPECT_NE(args.find("audit-torch encoder-layer --mask causal"), std::string::npos) << args;
    EXPECT_EQ(run(args), 1) << args;
    std::ifstream md_in(dir.dir() / "report.md");
    const std::string md((std::istreambuf_iterator<char>(md_in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(md.find("permcheck replay report.json"), std::string::npos) << md;
    EXPECT_EQ(md.find("Weight seed"), std::string::npos) << md;
}

}  // namespace
