// `permcheck audit --exec` as a user runs it, a subprocess of this build's binary: exit codes and verdicts of the
// example and fault adapters, report.json and its views, replay lines and the report's case replay run as written,
// options (timeouts, jobs, shards, amplification, --max-len, --dtype), PyTorch's layers through the examples.
#include "tests/support/fault_adapter.h"
#include "tests/support/process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <unistd.h>

namespace permcheck {
namespace {

namespace fs = std::filesystem;
using test::kFault;
using test::kPython;
using test::kSource;

// ---------------------------------------------------------------------------------------------------------
// The command

struct CommandRun {
    int status = -1;
    std::string output;  // stdout and stderr
    double seconds = 0;
    nlohmann::json report;
};

fs::path scratch_dir(const std::string& name) {
    return fs::temp_directory_path() / ("permcheck-audit-test-" + std::to_string(getpid())) / name;
}

fs::path fresh_dir(const std::string& name) {
    const fs::path dir = scratch_dir(name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

std::string quote(const std::string& s) { return permcheck::test::shell_quote(s); }

// Runs `permcheck ARGS`, stdout and stderr together.
CommandRun permcheck_command(const std::string& args) {
    const permcheck::test::Scratch cwd("audit-command");
    const permcheck::test::Run r =
        permcheck::test::run_shell(quote(PERMCHECK_BINARY) + " " + args, cwd.dir(), /*merge_stderr=*/true);
    CommandRun run;
    run.status = r.exit_code;
    run.output = r.out;
    run.seconds = r.seconds;
    return run;
}

CommandRun permcheck_audit(const std::string& name, const std::string& command, const std::string& args) {
    const fs::path dir = fresh_dir(name);
    CommandRun run = permcheck_command("audit --exec " + quote(command) + " " + args + " --report " + quote(dir.string()));
    std::ifstream in(dir / "report.json");
    if (in) run.report = nlohmann::json::parse(in, nullptr, false);
    return run;
}

TEST(AuditCommand, PythonAttentionExampleHolds) {
    const CommandRun r = permcheck_audit("holds", kPython + " " + kSource + "/examples/adapters/attention.py",
                                  "--dim 3 --cases 40");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.report.value("verdict", ""), "holds") << r.output;
    EXPECT_EQ(r.report.value("cases", 0), 40);
    EXPECT_EQ(r.report["details"]["audit"]["evaluations"], 84) << "two calls a case, three repeats, the first again";
    // Without --max-len, one case in ten is a long one, up to 256 positions; the report lists the lengths sent.
    const nlohmann::json& lengths = r.report["details"]["audit"]["axis_lengths"]["n"];
    ASSERT_TRUE(lengths.is_array()) << r.output;
    EXPECT_EQ(lengths.front(), 2);
    EXPECT_EQ(lengths.back(), 256) << lengths.dump();
    EXPECT_FALSE(r.report["details"]["audit"]["max_len_is_cap"].get<bool>());
}

TEST(AuditCommand, AGivenMaxLenIsAHardCapAndTheReplayLineKeepsIt) {
    const CommandRun r = permcheck_audit("capped", kPython + " " + kSource + "/examples/adapters/attention.py",
                                         "--dim 3 --cases 40 --max-len 8");
    EXPECT_EQ(r.status, 0) << r.output;
    const nlohmann::json& lengths = r.report["details"]["audit"]["axis_lengths"]["n"];
    ASSERT_TRUE(lengths.is_array()) << r.output;
    EXPECT_EQ(lengths.back(), 8) << lengths.dump();
    EXPECT_TRUE(r.report["details"]["audit"]["max_len_is_cap"].get<bool>());
    EXPECT_NE(r.report.value("replay", "").find("--max-len 8"), std::string::npos) << r.report.value("replay", "");
    const CommandRun uncapped = permcheck_audit("uncapped", kPython + " " + kSource + "/examples/adapters/attention.py",
                                                "--dim 3 --cases 40");
    EXPECT_EQ(uncapped.report.value("replay", "").find("--max-len"), std::string::npos) << uncapped.report.value("replay", "");
}

TEST(AuditCommand, PythonCausalAttentionIsViolatedAndShrunkToTwoPositions) {
    const CommandRun r = permcheck_audit("causal", kPython + " " + kSource + "/examples/adapters/attention.py --causal",
                                  "--dim 3 --cases 40");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(r.report.value("verdict", ""), "violated") << r.output;
    EXPECT_EQ(r.report["counterexample"]["lengths"]["n"], 2) << r.output;
    EXPECT_NE(r.output.find("permcheck audit --exec"), std::string::npos) << "a replay line";
    // A reproduction without permcheck beside the report (tests/python/test_repro.py runs it): repro.py, the two
    // requests (x's, then P x's), the adapter helper; report.json names it, and the output's comparison plan says
    // where each compared entry of P L(x) comes from in L(P x) and in L(x).
    const fs::path dir = scratch_dir("causal");
    EXPECT_NE(r.output.find("reproduce without permcheck: python3 " + (dir / "repro.py").string()), std::string::npos)
        << r.output;
    EXPECT_EQ(r.report.value("repro", ""), "repro.py");
    EXPECT_TRUE(fs::exists(dir / "repro.py") && fs::exists(dir / "permcheck_adapter.py"));
    std::ifstream requests(dir / "requests.jsonl");
    std::vector<nlohmann::json> lines;
    for (std::string line; std::getline(requests, line);) lines.push_back(nlohmann::json::parse(line, nullptr, false));
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0]["x"].size(), 2u) << "x's request first, at the shrunk length";
    const nlohmann::json& plan = r.report["counterexample"]["outputs"]["y"]["repro"];
    EXPECT_EQ(plan["sides"], nlohmann::json({"L(P x)", "P L(x)"})) << plan.dump();
    EXPECT_EQ(plan["compared_from"], nlohmann::json({0, 1, 2, 3, 4, 5})) << plan.dump();
    EXPECT_EQ(plan["expected_from"], nlohmann::json({3, 4, 5, 0, 1, 2})) << "the two rows swapped: " << plan.dump();
}

TEST(AuditCommand, PythonMeanPooledAttentionIsInvariant) {
    const CommandRun r = permcheck_audit("pooled", kPython + " " + kSource + "/examples/adapters/attention.py --pool mean",
                                  "--dim 3 --cases 40 --output pooled");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.report.value("property", ""), "invariance");
}

struct Fault {
    const char* mode;
    int exit_status;
    const char* verdict;
    const char* says;
};

TEST(AuditCommand, EveryFaultGetsItsVerdictExitCodeAndAReportOnDisk) {
    const Fault faults[] = {
        {"crash 4", 2, "error", "adapter exited with status 3 after 5 requests (4 answered); last request: id 5"},
        {"garbage 2", 2, "error", "not JSON"},
        {"few-rows", 2, "error", "for a request of n="},
        {"exit", 2, "error", "adapter exited with status 0 after 1 request"},
        {"error", 2, "error", "adapter answered with an error: model not loaded"},
        {"wrong-id", 2, "error", "answered id 2 to request id 1"},
        {"nan", 1, "non-finite", "non-finite"},
        {"noisy", 1, "nondeterministic", "answered twice"},
        {"index-leak", 1, "violated", "evaluated again"},
        {"identity", 0, "holds", "holds"},
    };
    for (const Fault& f : faults) {
        const CommandRun r = permcheck_audit(std::string("fault-") + f.mode, kFault + " " + f.mode, "--dim 2 --cases 30");
        EXPECT_EQ(r.status, f.exit_status) << f.mode << "\n" << r.output;
        EXPECT_EQ(r.report.value("verdict", ""), f.verdict) << f.mode << "\n" << r.output;
        EXPECT_NE(r.output.find(f.says), std::string::npos) << f.mode << "\n" << r.output;
        if (f.exit_status == 2) {
            EXPECT_NE(r.report.value("error", "").find(f.says), std::string::npos) << f.mode;
        }
        if (f.exit_status == 1) {
            EXPECT_TRUE(r.report["counterexample"].is_object()) << f.mode;
        }
    }
}

TEST(AuditCommand, HangIsAnErrorWithinSecondsOfTheTimeout) {
    const CommandRun r = permcheck_audit("hang", kFault + " hang 3", "--dim 2 --cases 30 --timeout 2");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_EQ(r.report.value("verdict", ""), "error");
    EXPECT_NE(r.report.value("error", "").find("did not answer within 2 s"), std::string::npos) << r.output;
    EXPECT_NE(r.report.value("error", "").find("last request: id 4"), std::string::npos) << r.output;
    EXPECT_LT(r.seconds, 2 + 10.0) << "python startup, three answers, the timeout, the cleanup";
}

TEST(AuditCommand, TwoTapsOfOneNameAreToldApartByPositionAndTheLeakIsBlamed) {
    const CommandRun r = permcheck_audit("taps-dup", kFault + " taps-dup", "--dim 2 --cases 30");
    ASSERT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("symmetry first breaks at block (tap 2 of 2); every tap before it holds"), std::string::npos)
        << r.output;
    ASSERT_TRUE(r.report.contains("taps")) << r.output;
    ASSERT_EQ(r.report["taps"].size(), 2u);
    EXPECT_EQ(r.report["taps"][0]["verdict"], "holds");
    EXPECT_EQ(r.report["taps"][1]["verdict"], "violated");
}

TEST(AuditCommand, ALongTapTableIsCutOnTheTerminalAndWholeInTheReport) {
    const CommandRun r = permcheck_audit("taps-many", kFault + " taps-many 3000", "--dim 2 --cases 30");
    ASSERT_EQ(r.status, 1) << r.output;
    EXPECT_LT(std::count(r.output.begin(), r.output.end(), '\n'), 100) << r.output;
    EXPECT_NE(r.output.find("symmetry first breaks at layer.1500 (tap 1501 of 3000); every tap before it holds"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("    ... taps 6 to 1485 not shown: 1480 hold\n"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("(41 of the 3000 taps shown; the report, --report DIR, lists every one)"), std::string::npos)
        << r.output;
    ASSERT_TRUE(r.report.contains("taps")) << r.output;
    EXPECT_EQ(r.report["taps"].size(), 3000u);
    EXPECT_EQ(r.report["first_breaking_tap"], "layer.1500");
}

TEST(AuditCommand, TapsOfAFixedLengthAxisWhoseProbeIsRefusedSayTheBreakCouldNotBeLocated) {
    // n = 5 only: the probe at n = 6 is refused, so whether the tap's 5 rows follow n cannot be told. The
    // sentence must not conclude that the break is outside the submodules.
    const CommandRun r = permcheck_audit("taps-fixed", kFault + " taps-fixed 5", "--dim 2 --min-len 5 --max-len 5 --cases 30");
    ASSERT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("no tap could be compared (1 tap): where the symmetry breaks could not be located"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("the probe with axis n one longer failed"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("outside its submodules"), std::string::npos) << r.output;
}

TEST(AuditCommand, BadOptionsAreAnErrorWithAReport) {
    const CommandRun r = permcheck_audit("bad-shard", kFault + " identity", "--dim 2 --shard 3/2");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.report.value("verdict", ""), "error");
    EXPECT_NE(r.output.find("--shard must be K/N"), std::string::npos) << r.output;
}

TEST(AuditCommand, JobsGiveTheSameVerdictAndCounterexample) {
    const std::string leak = kFault + " index-leak";
    const CommandRun one = permcheck_audit("jobs1", leak, "--dim 2 --cases 30");
    const CommandRun two = permcheck_audit("jobs2", leak, "--dim 2 --cases 30 --jobs 2");
    EXPECT_EQ(one.status, 1);
    EXPECT_EQ(two.status, 1);
    EXPECT_EQ(one.report["counterexample"]["inputs"]["x"], two.report["counterexample"]["inputs"]["x"]);
    EXPECT_EQ(one.report["counterexample"]["permutations"], two.report["counterexample"]["permutations"]);
    EXPECT_EQ(one.report["cases"], two.report["cases"]);
}

TEST(AuditCommand, AmplificationWidensTheToleranceByItsFactor) {
    // index-leak grows row i by 1e-3 i: at most 7e-3 relative at n = 8. The float64 tolerance, about
    // 4 A (n + d) 2^-53 M, misses it by far with A = 1; with A = 1e13 it is 0.013 M to 0.044 M for n + d from
    // 3 to 10, and the leak, 1e-3 (n - 1) M at most, is within it.
    const std::string leak = kFault + " index-leak";
    const CommandRun plain = permcheck_audit("plain", leak, "--dim 2 --cases 30");
    const CommandRun wide = permcheck_audit("wide", leak, "--dim 2 --cases 30 --amplification 1e13");
    EXPECT_EQ(plain.status, 1) << plain.output;
    EXPECT_EQ(wide.status, 0) << wide.output;
    EXPECT_EQ(wide.report["details"]["audit"].value("amplification", 0.0), 1e13) << wide.output;
    EXPECT_NE(wide.report.value("replay", "").find("--amplification 1e+13"), std::string::npos) << wide.report.dump(2);
}

TEST(AuditCommand, ReplayOfAnAuditReportSendsTheSavedCaseToTheProgramTheUserNames) {
    const std::string leak = kFault + " index-leak", fixed = kFault + " identity";
    const CommandRun found = permcheck_audit("replay", leak, "--dim 2 --cases 30");
    ASSERT_EQ(found.status, 1) << found.output;
    const std::string report = quote(scratch_dir("replay").string());

    const CommandRun unnamed = permcheck_command("replay " + report);
    EXPECT_EQ(unnamed.status, 2) << unnamed.output;
    EXPECT_NE(unnamed.output.find("--exec \"COMMAND\" (a report never chooses the program it runs)"), std::string::npos)
        << unnamed.output;

    const CommandRun again = permcheck_command("replay " + report + " --exec " + quote(leak));
    EXPECT_EQ(again.status, 1) << again.output;
    EXPECT_NE(again.output.find("still fails: L(P x) against P L(x)"), std::string::npos) << again.output;
    EXPECT_NE(again.output.find("of the saved case (n=2; permutations n (0 1); float64)"), std::string::npos) << again.output;
    EXPECT_NE(again.output.find("output y: differ by "), std::string::npos) << again.output;

    const CommandRun after_fix = permcheck_command("replay " + report + " --exec " + quote(fixed));
    EXPECT_EQ(after_fix.status, 0) << after_fix.output;
    EXPECT_NE(after_fix.output.find("now holds"), std::string::npos) << after_fix.output;

    const CommandRun broken = permcheck_command("replay " + report + " --exec " + quote(kFault + " crash 0"));
    EXPECT_EQ(broken.status, 2) << broken.output;
    EXPECT_NE(broken.output.find("could not be evaluated through"), std::string::npos) << broken.output;
}

// Runs a report's replay line as written (its leading "permcheck" is this build's binary).
CommandRun run_replay_line(const std::string& line) {
    const std::string prefix = "permcheck ";
    EXPECT_EQ(line.rfind(prefix, 0), 0u) << line;
    return permcheck_command(line.substr(prefix.size()));
}

// The "re-evaluate this exact case" command of report.md, run in the report's directory as written.
permcheck::test::Run run_markdown_case_replay(const fs::path& dir) {
    std::ifstream in(dir / "report.md");
    const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string lead = "or re-evaluate this exact case: `";
    const std::size_t at = md.find(lead);
    EXPECT_NE(at, std::string::npos) << md;
    if (at == std::string::npos) return {};
    const std::size_t from = at + lead.size(), to = md.find('`', from);
    std::string line = md.substr(from, to - from);
    EXPECT_EQ(line.rfind("permcheck replay report.json --exec ", 0), 0u) << line;
    line.replace(0, std::string("permcheck").size(), quote(PERMCHECK_BINARY));
    return permcheck::test::run_shell(line, dir, /*merge_stderr=*/true);
}

TEST(AuditCommand, Float32AdapterHoldsByDefaultSayingTheDtypeWasInferred) {
    const std::string f32 = kFault + " float32";
    const CommandRun r = permcheck_audit("float32", f32, "--dim 4 --max-len 50 --cases 60");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("(float32, inferred from the answers, n in [1, 50]"), std::string::npos) << r.output;
    EXPECT_EQ(r.report.value("dtype", ""), "float32");
    EXPECT_EQ(r.report["details"]["audit"].value("dtype_inferred", false), true);
    EXPECT_EQ(r.report["details"]["audit"].value("dtype_evidence", ""), "float32 rounding seen");
    const std::string replay = r.report.value("replay", "");
    EXPECT_NE(replay.find("--dtype float32"), std::string::npos) << replay;
    const CommandRun again = run_replay_line(replay);
    EXPECT_EQ(again.status, 0) << again.output;
    EXPECT_NE(again.output.find("equivariance (float32, n in"), std::string::npos) << again.output;
    // The same answers under a float64 tolerance are a false alarm: the default avoids it.
    const CommandRun strict = permcheck_audit("float32-strict", f32, "--dim 4 --max-len 50 --cases 60 --dtype float64");
    EXPECT_EQ(strict.status, 1) << strict.output;
    EXPECT_EQ(strict.report["details"]["audit"].value("dtype_inferred", true), false);
    EXPECT_EQ(strict.report["details"]["audit"].value("dtype_evidence", ""), "given");
}

// A copy of the requests answers short dyadic numbers, which any precision computes exactly: judged as float64
// and said so in the header, a line of its own and report.json; a run that holds shows its throughput.
TEST(AuditCommand, ShortDyadicAnswersAreJudgedAsFloat64AndSaidSo) {
    const CommandRun r = permcheck_audit("short-dyadic", kFault + " identity", "--dim 4 --cases 30");
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("(float64, as the answers were short dyadic numbers, n in [1, 8]"), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("\n  dtype: the answers were short dyadic numbers (at most 23 significant bits), which "
                            "any precision computes exactly: judged as float64"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("inferred from the answers"), std::string::npos) << r.output;
    EXPECT_EQ(r.report.value("dtype", ""), "float64");
    EXPECT_EQ(r.report["details"]["audit"].value("dtype_inferred", false), true);
    EXPECT_EQ(r.report["details"]["audit"].value("dtype_evidence", ""), "short dyadic answers, judged as float64");
    EXPECT_NE(r.report.value("replay", "").find("--dtype float64"), std::string::npos) << r.report.value("replay", "");
    // "30 cases, 63 layer calls, 0.123 s (244 cases/s)": three significant digits, whole numbers from 100 on.
    const auto rate_at = r.output.find(" cases/s)");
    ASSERT_NE(rate_at, std::string::npos) << r.output;
    const std::string rate = r.output.substr(r.output.rfind('(', rate_at) + 1, rate_at - r.output.rfind('(', rate_at) - 1);
    std::string digits;
    for (char ch : rate) if (ch != '.') digits += ch;
    digits.erase(0, digits.find_first_not_of('0'));
    EXPECT_TRUE(rate.find('.') == std::string::npos || digits.size() <= 3) << rate;
}

// An adapter that never answers: no precision is inferred from nothing (no "inferred", no --dtype in the replay).
TEST(AuditCommand, NoAnswerInfersNoPrecision) {
    const CommandRun r = permcheck_audit("no-answer", kFault + " error", "--dim 2 --cases 30");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("(no answer came, so no precision was inferred, n in [1, 8]"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("inferred from the answers"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("cases/s"), std::string::npos) << r.output;
    EXPECT_EQ(r.report["details"]["audit"].value("dtype_inferred", true), false);
    EXPECT_EQ(r.report["details"]["audit"].value("dtype_evidence", ""), "no answer");
    EXPECT_EQ(r.report.value("replay", "").find("--dtype"), std::string::npos) << r.report.value("replay", "");
}

// A violated run: no throughput (it stopped at the failure and shrank it), and its rows of 50 features elided to
// the first and last three values (and the feature of the largest difference) at 6 significant digits, each row
// within 120 columns.
TEST(AuditCommand, AViolatedRunPrintsNoThroughputAndElidesWideRows) {
    const CommandRun r = permcheck_audit("wide", kFault + " index-leak", "--dim 50 --cases 30");
    ASSERT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(r.output.find("cases/s"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("] (50 values)\n"), std::string::npos) << r.output;
    std::istringstream lines(r.output);
    int rows = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.find_first_not_of(' ') == std::string::npos || line[line.find_first_not_of(' ')] != '[') continue;
        ++rows;  // "    [0] [...]": a row of x or of a side
        EXPECT_LE(line.size(), 120u) << line;
        EXPECT_NE(line.find(" values)"), std::string::npos) << line;
        std::istringstream values(line);  // "    [0] [-0.25 1.00025 ... 3.5] (50 values)"
        for (std::string v; values >> v && v[0] != '(';) {
            v.erase(std::remove_if(v.begin(), v.end(), [](char ch) { return ch == '[' || ch == ']'; }), v.end());
            if (v.empty() || v == "...") continue;
            std::string digits = v.substr(0, v.find('e'));
            digits.erase(std::remove_if(digits.begin(), digits.end(), [](char ch) { return ch == '-' || ch == '.'; }),
                         digits.end());
            digits.erase(0, digits.find_first_not_of('0'));
            EXPECT_LE(digits.size(), 6u) << v << " in " << line;
        }
    }
    EXPECT_EQ(rows, 3 * r.report["counterexample"]["lengths"].value("n", 0)) << r.output;
    EXPECT_EQ(r.report["counterexample"]["inputs"]["x"][0].size(), 50u) << "the report keeps every value";
}

TEST(AuditCommand, EveryReplayHintOfAViolationRunsAsWrittenAndFindsTheSameVerdict) {
    const CommandRun r = permcheck_audit("replay-hints", kFault + " index-leak", "--dim 2 --cases 30");
    ASSERT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(r.report.value("dtype", ""), "float64") << "a float64 leak is judged as float64";
    const CommandRun again = run_replay_line(r.report.value("replay", ""));
    EXPECT_EQ(again.status, 1) << again.output;
    EXPECT_NE(again.output.find(" violated after " + std::to_string(r.report.value("cases", 0)) + " case"),
              std::string::npos) << again.output;
    const permcheck::test::Run exact = run_markdown_case_replay(scratch_dir("replay-hints"));
    EXPECT_EQ(exact.exit_code, 1) << exact.out;
    EXPECT_NE(exact.out.find("still fails"), std::string::npos) << exact.out;
}

TEST(AuditCommand, BlackBoxReportsOmitExactConfirmationAndWeightSeed) {
    for (const char* mode : {"index-leak", "noisy"}) {
        const CommandRun r = permcheck_audit(std::string("views-") + mode, kFault + " " + mode, "--dim 2 --cases 30");
        ASSERT_EQ(r.status, 1) << r.output;
        for (const char* file : {"report.md", "report.html"}) {
            std::ifstream in(scratch_dir(std::string("views-") + mode) / file);
            const std::string view((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            EXPECT_EQ(view.find("exact rational arithmetic"), std::string::npos) << mode << " " << file;
            EXPECT_EQ(view.find("Weight seed"), std::string::npos) << mode << " " << file;
            EXPECT_NE(view.find("--exec"), std::string::npos) << mode << " " << file << ": the case replay";
            const bool twice = std::string(mode) == "noisy";
            EXPECT_EQ(view.find("first answer") != std::string::npos, twice) << mode << " " << file;
            EXPECT_EQ(view.find("second answer") != std::string::npos, twice) << mode << " " << file;
            EXPECT_EQ(view.find("P L(x)") != std::string::npos, !twice) << mode << " " << file;
            EXPECT_EQ(view.find("class=\"permutation\"") != std::string::npos, !twice && file[7] == 'h')
                << mode << " " << file << ": a permutation is drawn only for a violation";
        }
    }
}

TEST(AuditCommand, AnswerWithABatchDimensionIsAnErrorSayingToDropIt) {
    const CommandRun r = permcheck_audit("batch", kFault + " batch", "--dim 2 --cases 5");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("drop the batch dimension"), std::string::npos) << r.output;
}

TEST(AuditCommand, LogHintOnlyForALineThatIsNoJsonObject) {
    const CommandRun str = permcheck_audit("string", kFault + " string", "--dim 2 --cases 5");
    EXPECT_EQ(str.status, 2) << str.output;
    EXPECT_NE(str.output.find("\"y\" is string"), std::string::npos) << str.output;
    EXPECT_EQ(str.output.find("write logs to stderr"), std::string::npos) << str.output;
    const CommandRun log = permcheck_audit("log-line", kFault + " garbage 1", "--dim 2 --cases 5");
    EXPECT_EQ(log.status, 2) << log.output;
    EXPECT_NE(log.output.find("write logs to stderr"), std::string::npos) << log.output;
}

TEST(AuditCommand, OneCallAndOneRowAreSingular) {
    const CommandRun crash = permcheck_audit("one-call", kFault + " crash 0", "--dim 2 --cases 5");
    EXPECT_EQ(crash.status, 2) << crash.output;
    EXPECT_NE(crash.output.find("after 1 case, 1 layer call,"), std::string::npos) << crash.output;
    const CommandRun rows = permcheck_audit("one-row", kFault + " few-rows", "--dim 2 --cases 5 --min-len 2 --max-len 2");
    EXPECT_EQ(rows.status, 2) << rows.output;
    EXPECT_NE(rows.output.find("answered 1 row for a request of n=2"), std::string::npos) << rows.output;
}

TEST(AuditCommand, StartupTimeoutCoversTheFirstAnswerAndTimeoutTheOthers) {
    const std::string slow = kFault + " slow-start 3";
    const CommandRun patient = permcheck_audit("slow-ok", slow, "--dim 2 --cases 5 --timeout 1 --startup-timeout 20");
    EXPECT_EQ(patient.status, 0) << patient.output;
    EXPECT_NE(patient.report.value("replay", "").find("--startup-timeout 20"), std::string::npos);
    const CommandRun hasty = permcheck_audit("slow-bad", slow, "--dim 2 --cases 5 --timeout 20 --startup-timeout 1");
    EXPECT_EQ(hasty.status, 2) << hasty.output;
    EXPECT_NE(hasty.output.find("did not answer within 1 s (--startup-timeout"), std::string::npos) << hasty.output;
    const CommandRun bad = permcheck_audit("slow-zero", slow, "--dim 2 --startup-timeout 0");
    EXPECT_EQ(bad.status, 2) << bad.output;
    EXPECT_NE(bad.output.find("--startup-timeout must be a number of seconds in (0, 86400]"), std::string::npos)
        << bad.output;
}

TEST(AuditCommand, ExecIsRefusedForAReferenceLayersReport) {
    const fs::path dir = fresh_dir("reference");
    const CommandRun check = permcheck_command("check causal-attention --no-db --report " + quote(dir.string()));
    ASSERT_EQ(check.status, 1) << check.output;
    const CommandRun r = permcheck_command("replay " + quote(dir.string()) + " --exec cat");
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("holds one of the reference layer 'causal-attention'"), std::string::npos) << r.output;
}

TEST(AuditCommand, ShardsSplitTheCases) {
    int total = 0;
    for (const char* shard : {"1/3", "2/3", "3/3"}) {
        const CommandRun r = permcheck_audit(std::string("shard") + shard[0], kFault + " identity",
                                      std::string("--dim 2 --cases 31 --shard ") + shard);
        EXPECT_EQ(r.status, 0) << r.output;
        total += r.report.value("cases", 0);
    }
    EXPECT_EQ(total, 31);
}

// PyTorch's own layer, through the example adapter (torch from the project's Python environment).
TEST(AuditCommand, TorchMultiheadAttentionVerdicts) {
    const std::string mha = kPython + " " + kSource + "/examples/adapters/torch_mha.py --dim 4";
    const std::string args = "--dim 4 --dtype float32 --cases 60 --timeout 120";
    const CommandRun eval = permcheck_audit("torch-eval", mha, args);
    EXPECT_EQ(eval.status, 0) << eval.output;
    const CommandRun causal = permcheck_audit("torch-causal", mha + " --causal", args);
    EXPECT_EQ(causal.status, 1) << causal.output;
    EXPECT_EQ(causal.report.value("verdict", ""), "violated");
    const CommandRun train = permcheck_audit("torch-train", mha + " --train", args);
    EXPECT_EQ(train.status, 1) << train.output;
    EXPECT_EQ(train.report.value("verdict", ""), "nondeterministic") << train.output;
}

// The most common model there is, audited as a new user would (no --dtype): float32 is inferred and it holds,
// where a float64 tolerance calls its rounding a violation.
TEST(AuditCommand, Float32TorchModelHoldsWithDefaultOptions) {
    const std::string mha = kPython + " " + kSource + "/examples/adapters/torch_mha.py --dim 4";
    const CommandRun plain = permcheck_audit("torch-default", mha, "--dim 4 --cases 60");
    EXPECT_EQ(plain.status, 0) << plain.output;
    EXPECT_EQ(plain.report.value("dtype", ""), "float32") << plain.output;
    EXPECT_NE(plain.output.find("float32, inferred from the answers"), std::string::npos) << plain.output;
    const CommandRun strict = permcheck_audit("torch-float64", mha, "--dim 4 --cases 60 --dtype float64");
    EXPECT_EQ(strict.status, 1) << strict.output;
}

}  // namespace
}  // namespace permcheck
