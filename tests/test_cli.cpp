// The permcheck command as a user and a CI job meet it: the built binary run as a subprocess, its exit codes,
// messages, reports and failure database; and the report record's JSON round trip, in process.
#include "check/check.h"
#include "layers/catalog.h"
#include "properties/property.h"
#include "report/failure_db.h"
#include "report/report.h"
#include "tests/support/process.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PERMCHECK_BIN
#error "PERMCHECK_BIN (the path of the permcheck binary) must be defined by CMake"
#endif

namespace fs = std::filesystem;
using nlohmann::json;
using permcheck::report::Record;

namespace {

using permcheck::test::shell_quote;
using permcheck::test::slurp;

// The command's answer: exit status and both streams (tests/support/process.h).
struct Invocation {
    int code = -1;
    std::string out, err;
};

std::string quote(const std::string& s) { return shell_quote(s); }

// A fresh directory per test, so failure databases and reports never leak between tests.
class Cli : public ::testing::Test {
protected:
    Invocation run(const std::string& args) const {
        const permcheck::test::Run r = permcheck::test::run_shell(quote(PERMCHECK_BIN) + " " + args, dir);
        return Invocation{r.exit_code, r.out, r.err};
    }

    std::set<std::string> files_in(const fs::path& p) const {
        std::set<std::string> names;
        for (const auto& e : fs::directory_iterator(p)) names.insert(e.path().filename().string());
        return names;
    }

    permcheck::test::Scratch scratch_{"cli"};
    const fs::path dir = scratch_.dir();
};

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
    return count;
}

std::string show(const Invocation& r) { return "exit " + std::to_string(r.code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err; }

// ---- help, names and bad input --------------------------------------------------------------------------------

TEST_F(Cli, EverySubcommandHasHelpStatingItsExitStatus) {
    const Invocation top = run("--help");
    EXPECT_EQ(top.code, 0) << show(top);
    for (const char* sub : {"list", "check", "replay", "demo"}) {
        EXPECT_NE(top.out.find(sub), std::string::npos) << sub << "\n" << show(top);
        const Invocation r = run(std::string(sub) + " --help");
        EXPECT_EQ(r.code, 0) << sub << "\n" << show(r);
        EXPECT_NE(r.out.find("Exit status"), std::string::npos) << sub << "\n" << show(r);
    }
}

TEST_F(Cli, ListNamesEveryReferenceLayerAndProperty) {
    const Invocation r = run("list");
    ASSERT_EQ(r.code, 0) << show(r);
    for (const permcheck::Family& spec : permcheck::catalog())
        EXPECT_NE(r.out.find(spec.name), std::string::npos) << spec.name;
    for (const char* p : {"equivariance", "invariance", "shift", "reversal", "causal-prefix"})
        EXPECT_NE(r.out.find(p), std::string::npos) << p;
    EXPECT_NE(r.out.find("causal-prefix(n) holds"), std::string::npos) << r.out;
}

// describe --json lists each property's declared options first (flag, keyword, value name, help; a value-less one
// a "bool"), then the axis flags its yes/no methods imply; each declared option is one `permcheck audit` takes.
TEST_F(Cli, DescribeListsEveryOptionOfEachPropertyAsItDeclaresIt) {
    const Invocation r = run("describe --json");
    ASSERT_EQ(r.code, 0) << show(r);
    const json described = json::parse(r.out);
    const json& listed = described.at("properties");
    const Invocation audit_help = run("audit --help");
    ASSERT_EQ(listed.size(), permcheck::registered_properties().size()) << r.out;
    for (std::size_t k = 0; k < listed.size(); ++k) {
        const permcheck::PropertyRules& rules = *permcheck::registered_properties()[k];
        const json& p = listed[k];
        ASSERT_EQ(p.at("name"), rules.name());
        std::vector<std::string> flags;
        for (const json& o : p.at("options")) flags.push_back(o.at("flag"));
        const std::vector<permcheck::PropertyOption> declared = rules.options();
        ASSERT_EQ(flags.size(), declared.size()) << "every option a property's run takes is its own: " << p.dump();
        for (std::size_t d = 0; d < declared.size(); ++d) {
            const json& o = p.at("options")[d];
            EXPECT_EQ(o.at("flag"), declared[d].flag) << p.dump();
            EXPECT_EQ(o.at("keyword"), declared[d].keyword) << p.dump();
            EXPECT_EQ(o.at("value"), !*declared[d].value              ? "bool"
                                     : declared[d].choices.empty() ? "string"
                                                                   : "choice")
                << p.dump();
            if (*declared[d].value) {
                EXPECT_EQ(o.at("value_name"), declared[d].value) << p.dump();
            }
            EXPECT_NE(o.at("help").get<std::string>().find(declared[d].help), std::string::npos) << p.dump();
            EXPECT_NE(audit_help.out.find(declared[d].flag), std::string::npos) << declared[d].flag;
        }
    }
}

TEST_F(Cli, UnknownLayerExitsTwoListingTheValidNames) {
    const Invocation r = run("check transformer-xl");
    EXPECT_EQ(r.code, 2) << show(r);
    EXPECT_NE(r.err.find("unknown layer 'transformer-xl'"), std::string::npos) << show(r);
    EXPECT_NE(r.err.find("causal-attention"), std::string::npos) << show(r);
    EXPECT_NE(r.err.find("rnn-final-state"), std::string::npos) << show(r);
}

TEST_F(Cli, UnknownPropertyExitsTwoListingTheValidNames) {
    const Invocation r = run("check attention --property symmetry");
    EXPECT_EQ(r.code, 2) << show(r);
    EXPECT_NE(r.err.find("--property must be"), std::string::npos) << show(r);
    EXPECT_NE(r.err.find("'symmetry'"), std::string::npos) << show(r);
    EXPECT_NE(r.err.find("causal-prefix"), std::string::npos) << show(r);
}

TEST_F(Cli, PropertyThatDoesNotApplyExitsTwoNamingThoseThatDo) {
    const Invocation r = run("check attention --property invariance");
    EXPECT_EQ(r.code, 2) << show(r);
    EXPECT_NE(r.err.find("does not apply"), std::string::npos) << show(r);
    EXPECT_NE(r.err.find("equivariance"), std::string::npos) << show(r);
}

TEST_F(Cli, BadNumbersExitTwoNamingTheFlag) {
    const std::pair<const char*, const char*> cases[] = {
        {"--cases 0", "--cases"},           {"--cases -3", "--cases"},
        {"--max-len 0", "--max-len"},       {"--min-len 0", "--min-len"},
        {"--min-len 5 --max-len 3", "--min-len (5) must not exceed --max-len (3)"},
        {"--d 0", "--d"},                   {"--d -4", "--d"},
        {"--max-len 100000", "--max-len"},  {"--dtype float16", "float16"},
        {"--exact --dtype float32", "--exact"}, {"--cases many", "many"},
    };
    for (const auto& [flags, says] : cases) {
        const Invocation r = run(std::string("check attention --no-db ") + flags);
        EXPECT_EQ(r.code, 2) << flags << "\n" << show(r);
        EXPECT_NE((r.err + r.out).find(says), std::string::npos) << flags << "\n" << show(r);
    }
}

TEST_F(Cli, LayerThatCannotRunAtTheseSizesExitsTwoWithAnErrorReport) {
    // RoPE turns feature pairs: an odd width is an error of the request, reported, not a crash.
    const Invocation r = run("check attention+rope --d 3 --no-db --report out");
    EXPECT_EQ(r.code, 2) << show(r);
    EXPECT_NE(r.err.find("even"), std::string::npos) << show(r);
    const Record rec = permcheck::report::read(dir / "out");
    EXPECT_EQ(rec.verdict, permcheck::Verdict::error);
    EXPECT_NE(rec.error.find("even"), std::string::npos) << rec.error;
    EXPECT_FALSE(rec.counterexample.has_value());
    const Invocation replay = run("replay out/report.json");
    EXPECT_EQ(replay.code, 2) << show(replay);
    EXPECT_NE(replay.err.find("holds no counterexample"), std::string::npos) << show(replay);
}

// ---- check: exit status is the verdict --------------------------------------------------------------------

TEST_F(Cli, CheckOfAHoldingPropertyExitsZero) {
    const Invocation r = run("check attention --cases 30 --no-db");
    EXPECT_EQ(r.code, 0) << show(r);
    EXPECT_NE(r.out.find("attention equivariance (float64): holds in all 30 cases"), std::string::npos) << show(r);
}

TEST_F(Cli, CheckOfAViolatedPropertyExitsOneEvenWhenTheTheoryExpectsIt) {
    const Invocation r = run("check attention+sinusoidal --exact --cases 30 --no-db");
    EXPECT_EQ(r.code, 1) << show(r);
    EXPECT_NE(r.out.find("VIOLATED"), std::string::npos) << show(r);
    EXPECT_NE(r.out.find("confirmed in exact rational arithmetic"), std::string::npos) << show(r);
    EXPECT_EQ(r.out.find("UNEXPECTED"), std::string::npos) << show(r);
}

TEST_F(Cli, CausalAttentionReportHoldsACounterexampleOfTwoPositions) {
    const Invocation r = run("check causal-attention --report out --no-db");
    ASSERT_EQ(r.code, 1) << show(r);
    const fs::path out = dir / "out";
    // Exactly the three files: no temporary file is left behind by the atomic writes.
    EXPECT_EQ(files_in(out), (std::set<std::string>{"report.html", "report.json", "report.md"}));

    const json j = json::parse(slurp(out / "report.json"));
    EXPECT_EQ(j["schema"], "permcheck.report/1");
    EXPECT_EQ(slurp(out / "report.json").rfind("{\n  \"schema\": \"permcheck.report/1\"", 0), 0u) << "schema first";
    EXPECT_EQ(j["verdict"], "violated");
    EXPECT_EQ(j["layer"], "causal-attention");
    EXPECT_EQ(j["property"], "equivariance");
    EXPECT_EQ(j["dtype"], "float64");
    const json& ce = j["counterexample"];
    EXPECT_EQ(ce["lengths"], json({{"n", 2}}));
    EXPECT_EQ(ce["permutations"]["n"], json::array({1, 0}));
    EXPECT_EQ(ce["cycles"]["n"], "(0 1)");
    EXPECT_EQ(ce["axis_at_fault"], "n");
    EXPECT_EQ(ce["inputs"]["x"].size(), 2u);
    EXPECT_EQ(ce["inputs"]["x"][0].size(), 4u);
    const json& y = ce["outputs"]["y"];
    EXPECT_EQ(y["layer_of_permuted"].size(), 2u);
    EXPECT_EQ(y["permuted_layer"].size(), 2u);
    EXPECT_GT(y["max_abs_diff"].get<double>(), y["tolerance"].get<double>());
    EXPECT_FALSE(y["holds"].get<bool>());
    EXPECT_TRUE(ce["confirmed_exactly"].get<bool>());
    EXPECT_GE(y["where"][0].get<int>(), 0);
    EXPECT_LT(y["where"][0].get<int>(), 2);
    EXPECT_EQ(j["signature"]["inputs"], json::array({"x:n,4"}));
    EXPECT_NE(j["replay"].get<std::string>().find("permcheck check causal-attention --property equivariance"),
              std::string::npos);
    EXPECT_EQ(j["error"], "");

    const std::string md = slurp(out / "report.md");
    EXPECT_NE(md.find("#### Counterexample: n = 2"), std::string::npos) << md;
    EXPECT_NE(md.find("`(0 1)`"), std::string::npos) << md;

    const std::string html = slurp(out / "report.html");
    EXPECT_NE(html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"permutation\""), std::string::npos);
    EXPECT_NE(html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\""), std::string::npos);
    EXPECT_EQ(html.find("<script"), std::string::npos);
    EXPECT_EQ(html.find("src="), std::string::npos);  // nothing loaded from anywhere
    EXPECT_EQ(occurrences(html, "<rect class=\"cell\""), 2 * 4);  // positions x features
    EXPECT_EQ(occurrences(html, "<line class=\"arrow moved\""), 2);  // (0 1) moves both positions
}

TEST_F(Cli, DimIsTheWidthInEverySubcommandWithDKeptAsAnAlias) {
    for (const char* args : {"check attention --dim 4 --cases 5 --no-db", "check attention --d 4 --cases 5 --no-db",
                             "prove attention --n 3 --dim 2", "prove attention --n 3 --d 2"}) {
        const Invocation r = run(args);
        EXPECT_EQ(r.code, 0) << args << "\n" << show(r);
    }
    const Invocation check = run("check attention --dim 0 --no-db");
    EXPECT_EQ(check.code, 2) << show(check);
    EXPECT_NE(check.err.find("--dim must be between 1 and 256, got 0"), std::string::npos) << show(check);
    const Invocation prove = run("prove attention --n 3 --d 100");
    EXPECT_EQ(prove.code, 2) << show(prove);
    EXPECT_NE(prove.err.find("--dim must be between 1 and 64, got 100"), std::string::npos) << show(prove);
}

TEST_F(Cli, EveryReplayHintOfACheckReportRunsAsWrittenAndFindsTheSameVerdict) {
    ASSERT_EQ(run("check causal-attention --report out --no-db").code, 1);
    const json j = json::parse(slurp(dir / "out" / "report.json"));
    const std::string replay = j["replay"].get<std::string>();
    ASSERT_EQ(replay.rfind("permcheck ", 0), 0u) << replay;
    EXPECT_NE(replay.find(" --dim 4"), std::string::npos) << replay;
    const Invocation again = run(replay.substr(std::string("permcheck ").size()));
    EXPECT_EQ(again.code, 1) << replay << "\n" << show(again);
    EXPECT_NE(again.out.find("violated"), std::string::npos) << show(again);
    const std::string md = slurp(dir / "out" / "report.md");
    EXPECT_NE(md.find("or re-evaluate this exact case: `permcheck replay report.json`"), std::string::npos) << md;
    const permcheck::test::Run exact = permcheck::test::run_shell(quote(PERMCHECK_BIN) + " replay report.json", dir / "out");
    EXPECT_EQ(exact.exit_code, 1) << permcheck::test::show(exact);
    const std::string html = slurp(dir / "out" / "report.html");
    EXPECT_NE(html.find("confirmed in exact rational arithmetic."), std::string::npos) << "a reference layer keeps it";
    EXPECT_EQ(html.find("NOT confirmed"), std::string::npos);
}

TEST_F(Cli, ReplayOfTheCausalAttentionReportStillFails) {
    ASSERT_EQ(run("check causal-attention --report out --no-db").code, 1);
    for (const char* target : {"out/report.json", "out"}) {
        const Invocation r = run(std::string("replay ") + target);
        EXPECT_EQ(r.code, 1) << show(r);
        EXPECT_NE(r.out.find("still fails"), std::string::npos) << show(r);
        EXPECT_NE(r.out.find("n = 2"), std::string::npos) << show(r);
    }
}

TEST_F(Cli, ReplayOnALayerWithoutTheFlawNowHolds) {
    // The same saved case, relabelled as the unmasked layer: what a user sees after fixing the bug.
    ASSERT_EQ(run("check causal-attention --report out --no-db").code, 1);
    json j = json::parse(slurp(dir / "out" / "report.json"));
    j["layer"] = "attention";
    std::ofstream(dir / "fixed.json") << j.dump();
    const Invocation r = run("replay fixed.json");
    EXPECT_EQ(r.code, 0) << show(r);
    EXPECT_NE(r.out.find("now holds"), std::string::npos) << show(r);
}

TEST_F(Cli, ReplayOfAnUnreadableFileExitsTwo) {
    std::ofstream(dir / "garbage.json") << "{ not json";
    std::ofstream(dir / "other.json") << R"({"schema": "someone-else/3", "verdict": "holds"})";
    std::ofstream(dir / "partial.json") << R"({"schema": "permcheck.report/1", "verdict": "violated"})";
    const std::pair<const char*, const char*> cases[] = {{"missing.json", "cannot read"},
                                                         {"garbage.json", "not valid JSON"},
                                                         {"other.json", "unsupported schema 'someone-else/3'"},
                                                         {"partial.json", "missing field 'layer'"}};
    for (const auto& [file, says] : cases) {
        const Invocation r = run(std::string("replay ") + file);
        EXPECT_EQ(r.code, 2) << file << "\n" << show(r);
        EXPECT_NE(r.err.find(says), std::string::npos) << file << "\n" << show(r);
    }
}

TEST_F(Cli, ReplayRefusesCheckOptionsOutOfRangeNamingTheField) {
    ASSERT_EQ(run("check causal-attention --report out --no-db").code, 1);
    const json saved = json::parse(slurp(dir / "out" / "report.json"));
    const std::tuple<const char*, json, const char*> cases[] = {
        {"cases", -3, "details.check.cases must be an integer >= 1, got -3"},
        {"min_len", "two", "details.check.min_len must be an integer >= 1, got \"two\""},
        {"min_len", 0, "details.check.min_len must be an integer >= 1, got 0"},
        {"max_len", 1e300, "details.check.max_len must be an integer"},
        {"d", 7, "details.check.d is 7 but the saved input has 4 features"},
    };
    for (const auto& [key, value, says] : cases) {
        json j = saved;
        j["details"]["check"][key] = value;
        std::ofstream(dir / "edited.json") << j.dump();
        const Invocation r = run("replay edited.json");
        EXPECT_EQ(r.code, 2) << key << "\n" << show(r);
        EXPECT_NE(r.err.find(says), std::string::npos) << key << "\n" << show(r);
    }
    json j = saved;
    j["details"]["check"] = "all of them";
    std::ofstream(dir / "edited.json") << j.dump();
    const Invocation r = run("replay edited.json");
    EXPECT_EQ(r.code, 2) << show(r);
    EXPECT_NE(r.err.find("details.check is string, not an object"), std::string::npos) << show(r);
}

// ---- the failure database ---------------------------------------------------------------------------------

TEST_F(Cli, FailureDatabaseReplaysTheCounterexampleAtCaseZero) {
    const Invocation first = run("check causal-attention --db db");
    ASSERT_EQ(first.code, 1) << show(first);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(first.out, m, std::regex("VIOLATED after (\\d+) cases"))) << show(first);
    EXPECT_GT(std::stoi(m[1]), 1) << "the first run must have searched";
    ASSERT_TRUE(std::regex_search(first.out, m, std::regex(", case (\\d+), (\\d+) shrink steps"))) << show(first);
    EXPECT_GT(std::stoi(m[1]), 0) << "a one-position case cannot fail, so the search cannot find it at case 0";
    const fs::path entry = dir / "db" / "causal-attention.equivariance.float64.json";
    ASSERT_TRUE(fs::exists(entry));
    EXPECT_EQ(files_in(dir / "db"), (std::set<std::string>{entry.filename().string()}));

    const Invocation second = run("check causal-attention --db db");
    EXPECT_EQ(second.code, 1) << show(second);
    EXPECT_NE(second.out.find("VIOLATED after 1 case (replayed from the failure database"), std::string::npos)
        << show(second);
    EXPECT_NE(second.out.find(", case 0, 0 shrink steps"), std::string::npos) << show(second);
    EXPECT_NE(second.out.find("n = 2"), std::string::npos) << show(second);
}

TEST_F(Cli, FailureDatabaseDefaultsToDotPermcheckAndNoDbWritesNothing) {
    ASSERT_EQ(run("check causal-attention --no-db").code, 1);
    EXPECT_FALSE(fs::exists(dir / ".permcheck"));
    ASSERT_EQ(run("check causal-attention").code, 1);
    EXPECT_TRUE(fs::exists(dir / ".permcheck" / "causal-attention.equivariance.float64.json"));
}

TEST_F(Cli, CorruptFailureDatabaseEntryIsReportedAndSkipped) {
    fs::create_directories(dir / "db");
    const fs::path entry = dir / "db" / "causal-attention.equivariance.float64.json";
    std::ofstream(entry) << "{\"schema\": \"permcheck.report/1\", \"verd";
    const Invocation r = run("check causal-attention --db db");
    EXPECT_EQ(r.code, 1) << show(r);
    EXPECT_NE(r.err.find("skipping corrupt failure database entry"), std::string::npos) << show(r);
    EXPECT_EQ(r.out.find("replayed from the failure database"), std::string::npos) << show(r);
    // The search found the counterexample again and replaced the corrupt entry with a readable one.
    EXPECT_TRUE(permcheck::report::read(entry).counterexample.has_value());
}

TEST_F(Cli, FailureDatabaseEntryThatNoLongerFailsIsRemoved) {
    ASSERT_EQ(run("check causal-attention --db db").code, 1);
    json j = json::parse(slurp(dir / "db" / "causal-attention.equivariance.float64.json"));
    j["layer"] = "attention";
    const fs::path entry = dir / "db" / "attention.equivariance.float64.json";
    std::ofstream(entry) << j.dump();
    const Invocation r = run("check attention --db db --cases 20");
    EXPECT_EQ(r.code, 0) << show(r);
    EXPECT_NE(r.err.find("no longer fails; removed"), std::string::npos) << show(r);
    EXPECT_FALSE(fs::exists(entry));
}

// ---- the verdict table's reports ----------------------------------------------------------------------------

TEST_F(Cli, TableReportWritesASummaryAndOneReportPerCounterexample) {
    const Invocation r = run("--cases 8 --report rep");
    ASSERT_EQ(r.code, 0) << show(r);
    const json summary = json::parse(slurp(dir / "rep" / "summary.json"));
    EXPECT_EQ(summary["schema"], "permcheck.table/1");
    EXPECT_TRUE(summary["as_expected"].get<bool>());
    std::set<std::string> expected_dirs{"summary.json"};
    for (const json& row : summary["rows"]) {
        EXPECT_EQ(row["as_expected"], row["expected"] == row["verdict"]) << row.dump();
        if (row["report"].is_null()) {
            EXPECT_EQ(row["verdict"], "holds") << row.dump();
            continue;
        }
        expected_dirs.insert(row["report"].get<std::string>());
        const Record rec = permcheck::report::read(dir / "rep" / row["report"].get<std::string>());
        EXPECT_EQ(rec.verdict, permcheck::Verdict::violated);
        EXPECT_EQ(rec.layer, row["layer"]);
        // Every finding by name, with the signature it is shown with.
        EXPECT_TRUE(rec.counterexample.has_value()) << row.dump();
        EXPECT_TRUE(rec.signature.has_value()) << row.dump();
    }
    EXPECT_TRUE(expected_dirs.count("causal-attention.equivariance.exact")) << summary.dump(1);
    EXPECT_TRUE(expected_dirs.count("message-passing+edge-order.invariance-edges.exact")) << summary.dump(1);
    EXPECT_EQ(files_in(dir / "rep"), expected_dirs);  // nothing else: no temporary files
}

// ---- demo ---------------------------------------------------------------------------------------------------

// The vector printed on the line labelled `label` after the heading that starts with `section`.
std::string vector_after(const std::string& out, const std::string& section, const std::string& label) {
    const auto at = out.find("\n" + section);
    if (at == std::string::npos) return "<no section " + section + ">";
    const auto line = out.find(label, at);
    if (line == std::string::npos) return "<no line " + label + ">";
    return out.substr(line, out.find('\n', line) - line).substr(label.size());
}

TEST_F(Cli, DemoShowsTheSameVectorWithoutPositionAndDifferentOnesWithIt) {
    const Invocation r = run("demo");
    ASSERT_EQ(r.code, 0) << show(r);
    const auto same = [&](const char* section) {
        return vector_after(r.out, section, "dog bites man") == vector_after(r.out, section, "man bites dog");
    };
    EXPECT_TRUE(same("1.")) << r.out;
    EXPECT_FALSE(same("3.")) << r.out;
    EXPECT_FALSE(same("4.")) << r.out;
    EXPECT_NE(r.out.find("   -> IDENTICAL, every bit: attention"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("   -> DIFFERENT: the position signal"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("   -> DIFFERENT: the RNN"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("2. no position signal, float32"), std::string::npos) << r.out;
}

// The remedy made checkable: position ids given as data tell the sentences apart, the same sentence listed
// backwards with its ids moved along gives the same vector, and a model reading the row index does not.
TEST_F(Cli, DemoShowsPositionIdsMovingWithTheTokensAndAModelThatReadsTheRowIndex) {
    const Invocation r = run("demo");
    ASSERT_EQ(r.code, 0) << show(r);
    const auto vector_of = [&](const std::string& section, const std::string& listing) -> std::string {
        const auto at = r.out.find("\n" + section);
        const auto line = at == std::string::npos ? at : r.out.find(listing, at);
        if (line == std::string::npos) return "<no " + listing + " in section " + section + ">";
        const auto next = r.out.find('\n', line) + 1;
        return r.out.substr(next, r.out.find('\n', next) - next);
    };
    const std::string forward = "dog bites man: ids [0 1 2] at positions [0 1 2]";
    const std::string backwards = "dog bites man: ids [2 1 0] at positions [2 1 0]";
    EXPECT_NE(vector_of("5.", forward), vector_of("5.", "man bites dog: ids [2 1 0] at positions [0 1 2]")) << r.out;
    EXPECT_EQ(vector_of("5.", forward), vector_of("5.", backwards)) << r.out;
    EXPECT_NE(vector_of("6.", forward), vector_of("6.", backwards)) << r.out;
    EXPECT_NE(r.out.find("order reaches the model only through the position ids"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("not from its position id"), std::string::npos) << r.out;
}

// ---- the record, in process ------------------------------------------------------------------------------

// A tensor of rank 2 from its rows.
permcheck::Tensor rows_of(std::vector<std::vector<double>> rows) {
    permcheck::Tensor t;
    t.shape = {static_cast<int>(rows.size()), static_cast<int>(rows.front().size())};
    for (const auto& row : rows) t.values.insert(t.values.end(), row.begin(), row.end());
    return t;
}

Record sample_record() {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    const double biggest = std::numeric_limits<double>::max();
    Record r;
    r.verdict = permcheck::Verdict::violated;
    r.layer = "causal-attention";
    r.property = permcheck::Property{"equivariance"};
    r.dtype = permcheck::Arithmetic::float64;
    r.cases = 7;
    r.seed = 18446744073709551615ull;  // the largest seed must survive
    r.signature = permcheck::one_tensor_signature(2, permcheck::Output::sequence, 1, 8);
    r.signature->outputs[0].dims.back().size = 2;  // the width, as a check knows it and an audit learns it
    r.one_tensor = true;
    permcheck::Counterexample c;
    c.lengths = {{"n", 3}};
    c.perms = {{"n", permcheck::Permutation({2, 0, 1})}};
    c.inputs["x"] = rows_of({{0.1, -0.0}, {1e-310, biggest}, {1.0 / 3.0, -2.5}});
    permcheck::OutputComparison y;
    y.name = "y";
    y.layer_of_permuted = rows_of({{nan, -0.0}, {1e-310, inf}, {1.0 / 3.0, -2.5}});
    y.permuted_layer = rows_of({{0.1, -0.0}, {1e-310, biggest}, {-inf, -2.5}});
    y.holds = false;
    y.max_abs_diff = inf;
    y.where = {0, 0};
    y.tolerance = 3.3306690738754716e-15;
    c.outputs = {y};
    c.axis_at_fault = "n";
    c.weight_seed = 12345;
    c.case_index = 4;
    c.shrink_steps = 9;
    c.confirmed_exactly = true;
    r.counterexample = c;
    r.weights = permcheck::kWeightsVersion;
    r.replay = "permcheck check causal-attention --property equivariance";
    r.details["note"] = "extras survive";
    return r;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}
bool same_bits(const permcheck::Tensor& a, const permcheck::Tensor& b) {
    return a.shape == b.shape && same_bits(a.values, b.values);
}

TEST(ReportRecord, JsonRoundTripKeepsEveryBitIncludingNonFiniteNumbers) {
    const Record r = sample_record();
    const std::string text = permcheck::report::to_json(r).dump(2);
    EXPECT_NE(text.find("\"NaN\""), std::string::npos);
    EXPECT_NE(text.find("\"-Infinity\""), std::string::npos);
    const Record back = permcheck::report::from_json(json::parse(text));
    EXPECT_EQ(permcheck::report::to_json(back), permcheck::report::to_json(r));
    ASSERT_TRUE(back.counterexample);
    const permcheck::Counterexample &b = *back.counterexample, &c = *r.counterexample;
    EXPECT_TRUE(same_bits(b.inputs.at("x"), c.inputs.at("x")));  // -0.0 and the subnormal too
    ASSERT_EQ(b.outputs.size(), 1u);
    EXPECT_TRUE(same_bits(b.outputs[0].layer_of_permuted, c.outputs[0].layer_of_permuted));
    EXPECT_TRUE(same_bits(b.outputs[0].permuted_layer, c.outputs[0].permuted_layer));
    EXPECT_EQ(back.seed, r.seed);
    EXPECT_EQ(b.perms.at("n"), c.perms.at("n"));
    EXPECT_EQ(b.weight_seed, c.weight_seed);
    EXPECT_EQ(b.outputs[0].tolerance, c.outputs[0].tolerance);
    EXPECT_TRUE(std::isinf(b.outputs[0].max_abs_diff));
    EXPECT_EQ(back.details["note"], "extras survive");
}

TEST(ReportRecord, AuditErrorReportWithoutCounterexampleRoundTrips) {
    Record r;
    r.verdict = permcheck::Verdict::error;
    r.layer = "./my-layer --port 3";
    r.property = permcheck::Property{"equivariance"};
    r.dtype = permcheck::Arithmetic::float32;
    r.error = "adapter exited with status 3 after 4 requests; last request: n=5";
    r.details = {{"command", "./my-layer --port 3"}, {"last_request", {{"n", 5}, {"d", 4}}}};
    const Record back = permcheck::report::from_json(json::parse(permcheck::report::to_json(r).dump()));
    EXPECT_EQ(permcheck::report::to_json(back), permcheck::report::to_json(r));
    EXPECT_FALSE(back.counterexample);
    EXPECT_EQ(back.details["last_request"]["n"], 5);
    for (const char* verdict : {"holds", "nondeterministic", "non-finite"}) {
        r.verdict = permcheck::parse_verdict(verdict);
        EXPECT_EQ(permcheck::report::to_json(r)["verdict"], verdict);
        EXPECT_EQ(permcheck::report::from_json(permcheck::report::to_json(r)).verdict, r.verdict);
    }
}

TEST(ReportRecord, MalformedJsonIsRejectedNamingTheField) {
    const json good = permcheck::report::to_json(sample_record());
    const auto message = [](const json& j) {
        try {
            permcheck::report::from_json(j);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("<accepted>");
    };
    json j = good;
    j.erase("verdict");
    EXPECT_NE(message(j).find("missing field 'verdict'"), std::string::npos) << message(j);
    j = good;
    j["verdict"] = "fine";
    EXPECT_NE(message(j).find("field 'verdict'"), std::string::npos) << message(j);
    j = good;
    j["counterexample"]["inputs"]["x"][1] = json::array({1.0});
    EXPECT_NE(message(j).find("counterexample.inputs.x"), std::string::npos) << message(j);
    j = good;
    j["counterexample"]["permutations"]["n"] = json::array({0, 0, 1});
    EXPECT_NE(message(j).find("counterexample.permutations.n"), std::string::npos) << message(j);
    j = good;
    j["counterexample"]["outputs"]["y"]["max_abs_diff"] = "big";
    EXPECT_NE(message(j).find("counterexample.outputs.y.max_abs_diff"), std::string::npos) << message(j);
    j = good;
    j["counterexample"]["outputs"]["y"].erase("permuted_layer");
    EXPECT_NE(message(j).find("missing field 'counterexample.outputs.y.permuted_layer'"), std::string::npos) << message(j);
}

TEST_F(Cli, WritingAReportTwiceReplacesItAndLeavesNoTemporaryFiles) {
    Record r = sample_record();
    permcheck::report::write(dir / "rep", r);
    r.verdict = permcheck::Verdict::holds;
    r.counterexample.reset();
    permcheck::report::write(dir / "rep", r);
    EXPECT_EQ(files_in(dir / "rep"), (std::set<std::string>{"report.html", "report.json", "report.md"}));
    EXPECT_EQ(permcheck::report::read(dir / "rep").verdict, permcheck::Verdict::holds);
    EXPECT_THROW(permcheck::report::write_atomically(dir / "no" / "such" / "dir" / "f.json", "{}"),
                 std::runtime_error);
}

TEST_F(Cli, AWriteRemovesTheTemporaryFilesOfAKilledRunAndKeepsThoseOfRunningOnes) {
    const std::filesystem::path rep = dir / "killed";
    std::filesystem::create_directories(rep);
    const pid_t child = fork();  // a process that has ended: the run that was killed
    ASSERT_GE(child, 0);
    if (child == 0) _exit(0);
    ASSERT_EQ(waitpid(child, nullptr, 0), child);
    const std::string dead = std::to_string(child), alive = std::to_string(getppid());
    // A killed run's files of any name (a failure database's entry too) go; a running process's stay, and so
    // does every name of another shape.
    for (const std::string& name : {".report.json.tmp." + dead + ".0", ".report.md.tmp." + dead + ".3",
                                    ".entry-7.json.tmp." + dead + ".12", ".report.json.tmp." + alive + ".0",
                                    std::string(".report.json.tmp.x.0"), "notes.tmp." + dead + ".0",
                                    ".report.json.tmp." + dead + ".0.bak"})
        std::ofstream(rep / name) << "half";
    permcheck::report::write(rep, sample_record());
    EXPECT_EQ(files_in(rep), (std::set<std::string>{".report.json.tmp." + alive + ".0", ".report.json.tmp.x.0",
                                                    ".report.json.tmp." + dead + ".0.bak", "notes.tmp." + dead + ".0",
                                                    "report.html", "report.json", "report.md"}));
}

// ---- the weight draw's version (scalars/weights.h) ---------------------------------------------------------

// A violated check's record whose case draws its weights with version 1 (one 64-bit word per weight).
Record version_1_record() {
    using namespace permcheck;
    Case c;
    c.lengths = {{"n", 2}};
    c.perms = {{"n", Permutation({1, 0})}};
    c.inputs["x"] = rows_of({{0.5, -1, 0.25, 2}, {1, 0, -0.5, 0.75}});
    c.weight_seed = 12345;
    c.weights = 1;
    const Family& f = find_layer("causal-attention");
    const Counterexample ce = counterexample_at(f, row_of(f, Property{"equivariance"}), c, CheckOptions{}, 0, 0);
    EXPECT_FALSE(ce.outputs.at(0).holds);
    Record r;
    r.verdict = Verdict::violated;
    r.layer = "causal-attention";
    r.cases = 1;
    r.seed = 1;
    r.counterexample = ce;
    r.signature = signature_of(f);
    r.weights = 1;
    return r;
}

// A check's record of a layer of one sequence as reports were written before the weight draw had versions: the
// one-tensor form's own fields, no version, no signature.
json as_written_before_versions(const Record& r) {
    json j = permcheck::report::to_json(r);
    const json c = j["counterexample"];
    const json& y = c["outputs"]["y"];
    j.erase("weights");
    j.erase("signature");
    j["counterexample"] = {{"n", c["lengths"]["n"]}, {"d", c["inputs"]["x"][0].size()}, {"x", c["inputs"]["x"]},
                           {"permutation", c["permutations"]["n"]}, {"layer_of_permuted", y["layer_of_permuted"]},
                           {"permuted_layer", y["permuted_layer"]}, {"max_abs_diff", y["max_abs_diff"]},
                           {"tolerance", y["tolerance"]}, {"where", {{"position", y["where"][0]}, {"feature", y["where"][1]}}},
                           {"weight_seed", c["weight_seed"]}, {"case_index", 0}, {"shrink_steps", 0}};
    return j;
}

TEST(ReportWeights, AReportWithoutAVersionReplaysWithTheVersion1WeightsItWasMadeWith) {
    using namespace permcheck;
    const Record made = version_1_record();
    EXPECT_EQ(report::to_json(made)["weights"], 1);
    const Record back = report::from_json(as_written_before_versions(made));
    ASSERT_TRUE(back.counterexample);
    EXPECT_EQ(back.counterexample->weights, 1);
    const Family& f = find_layer("causal-attention");
    const Expectation& row = row_of(f, Property{"equivariance"});
    const Counterexample now = counterexample_at(f, row, *back.counterexample, CheckOptions{}, 0, 0);
    const OutputComparison& then = made.counterexample->outputs.at(0);
    EXPECT_TRUE(same_bits(now.outputs.at(0).layer_of_permuted, then.layer_of_permuted));
    EXPECT_TRUE(same_bits(now.outputs.at(0).permuted_layer, then.permuted_layer));
    // The current draw gives the same seed other weights: without the version the replay would mean nothing.
    Case current = *back.counterexample;
    current.weights = kWeightsVersion;
    EXPECT_FALSE(same_bits(counterexample_at(f, row, current, CheckOptions{}, 0, 0).outputs.at(0).layer_of_permuted,
                           then.layer_of_permuted));
}

TEST(ReportWeights, AVersionThisPermcheckCannotDrawIsRefusedSayingWhy) {
    json j = permcheck::report::to_json(version_1_record());
    j["weights"] = 99;
    try {
        permcheck::report::from_json(j);
        ADD_FAILURE() << "a report with weights version 99 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("field 'weights': version 99 of the weight draw is unknown"),
                  std::string::npos)
            << e.what();
    }
}

TEST(ReportWeights, Version1IsOneWordPerWeightVersion2ElevenAndVersion3TwelveWeightsPerWord) {
    using permcheck::SplitMix64;
    // Version 1 is the historical draw, pinned: weight = (word mod 33 - 16) / 16, one SplitMix64 word each.
    permcheck::DyadicDraw<double> v1(42, 4, 1);
    SplitMix64 words(42);
    for (int i = 0; i < 30; ++i)
        EXPECT_EQ(v1(), (static_cast<double>(words.next() % 33) - 16) / 16) << "weight " << i;
    // Version 2: the base-33 digits of each word, most significant first, 11 to a word.
    permcheck::DyadicDraw<double> v2(42, 4, 2);
    SplitMix64 again(42);
    for (int w = 0; w < 3; ++w) {
        std::uint64_t rest = again.next();
        for (int i = 0; i < 11; ++i) {
            const unsigned __int128 product = static_cast<unsigned __int128>(rest) * 33;
            rest = static_cast<std::uint64_t>(product);
            EXPECT_EQ(v2(), (static_cast<double>(static_cast<std::uint64_t>(product >> 64)) - 16) / 16)
                << "word " << w << ", digit " << i;
        }
    }
    // Version 3: 5-bit chunks of each word, lowest first, 12 to a word; chunk c is (2c - 31) / 32.
    permcheck::DyadicDraw<double> v3(42, 4, 3);
    SplitMix64 third(42);
    for (int w = 0; w < 3; ++w) {
        const std::uint64_t word = third.next();
        for (int i = 0; i < 12; ++i)
            EXPECT_EQ(v3(), (2.0 * static_cast<double>((word >> (5 * i)) & 31) - 31) / 32) << "word " << w << ", chunk " << i;
    }
    EXPECT_THROW(permcheck::DyadicDraw<double>(42, 4, 4), std::invalid_argument);
}

TEST(ReportWeights, Version3FillsAMatrixInStorageOrderAndEarlierVersionsRowByRow) {
    for (int version = 1; version <= 3; ++version) {
        permcheck::Draw<double> matrix_draw = permcheck::dyadic_draw<double>(7, 4, version);
        permcheck::Draw<double> one_by_one = permcheck::dyadic_draw<double>(7, 4, version);
        matrix_draw();  // a matrix that starts inside a word of chunks
        one_by_one();
        const permcheck::Mat<double> m = permcheck::draw_matrix<double>(5, 8, matrix_draw);  // 11 left in the word, 2 whole words, 5 of the next
        for (Eigen::Index k = 0; k < m.size(); ++k) {
            const Eigen::Index i = version >= 3 ? k % m.rows() : k / m.cols();
            const Eigen::Index j = version >= 3 ? k / m.rows() : k % m.cols();
            EXPECT_EQ(m(i, j), one_by_one()) << "version " << version << ", draw " << k;
        }
        EXPECT_EQ(matrix_draw(), one_by_one()) << "version " << version << ": the draw after the matrix";
    }
}

TEST_F(Cli, NewReportsCarryTheWeightsVersionAndAVersion1ReportStillReplays) {
    ASSERT_EQ(run("check causal-attention --report out --no-db").code, 1);
    EXPECT_EQ(json::parse(slurp(dir / "out" / "report.json"))["weights"], permcheck::kWeightsVersion);

    std::ofstream(dir / "old.json") << as_written_before_versions(version_1_record()).dump();
    const Invocation r = run("replay old.json");
    EXPECT_EQ(r.code, 1) << show(r);
    EXPECT_NE(r.out.find("still fails"), std::string::npos) << show(r);
}

}  // namespace
