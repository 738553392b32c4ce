// Bad input everywhere gets a clear error (issue 7): the permcheck command run as a subprocess with bad
// arguments, bad adapters and bad reports exits 2 with a message saying what was wrong and what was expected,
// never crashes (a signal, or an uncaught exception's abort) and never reads an unbounded answer into memory.
// The parsers behind it are fed every fuzzing input kept in fuzz/ (corpus and regressions): each input either
// parses or is refused with the documented exception.
#include "adapters/exec_adapter.h"
#include "report/report.h"
#include "tests/support/process.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifndef PERMCHECK_BIN
#error "PERMCHECK_BIN must name the permcheck executable (tests/CMakeLists.txt)"
#endif
#ifndef PERMCHECK_SOURCE_DIR
#error "PERMCHECK_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

namespace {
namespace fs = std::filesystem;
using namespace permcheck;

using permcheck::test::Scratch;
using permcheck::test::show;
using permcheck::test::slurp;
using Exit = permcheck::test::Run;

// Runs permcheck with `args` (no shell), stdout and stderr to files, and measures its peak memory.
Exit permcheck_run(const std::vector<std::string>& args, const Scratch& scratch) {
    std::vector<std::string> argv{PERMCHECK_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return permcheck::test::run_program(argv, scratch.dir());
}

// Bad input: exit status 2, a message on stderr containing `says`, no crash.
#define EXPECT_REFUSED(run, says)                                                   \
    do {                                                                            \
        const Exit& r_ = (run);                                                      \
        EXPECT_EQ(r_.signal, 0) << show(r_);                                        \
        EXPECT_EQ(r_.exit_code, 2) << show(r_);                                     \
        EXPECT_NE(r_.err.find(says), std::string::npos) << "expected stderr to say '" << (says) << "'\n" << show(r_); \
    } while (0)

// --------------------------------------------------------------------------------------- CLI arguments

TEST(CliArguments, NegativeSizesAreRefusedWithTheValidRange) {
    Scratch s;
    EXPECT_REFUSED(permcheck_run({"check", "attention", "--d", "-3", "--no-db"}, s), "--dim must be between 1 and");
    EXPECT_REFUSED(permcheck_run({"check", "attention", "--cases", "-1", "--no-db"}, s), "--cases must be between");
    EXPECT_REFUSED(permcheck_run({"check", "attention", "--min-len", "-2", "--no-db"}, s), "--min-len");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", "cat", "--dim", "-1"}, s), "--dim must be between 1 and");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", "cat", "--dim", "4", "--jobs", "-2"}, s), "--jobs");
    EXPECT_REFUSED(permcheck_run({"prove", "attention", "--n", "-4"}, s), "-4");
}

TEST(CliArguments, MaxLenZeroIsRefused) {
    Scratch s;
    EXPECT_REFUSED(permcheck_run({"check", "attention", "--max-len", "0", "--no-db"}, s), "--max-len must be between 1");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", "cat", "--dim", "4", "--max-len", "0"}, s),
                   "--max-len must be between 1");
}

TEST(CliArguments, UnknownNamesAreRefusedListingTheValidOnes) {
    Scratch s;
    EXPECT_REFUSED(permcheck_run({"check", "no-such-layer", "--no-db"}, s), "causal-attention");
    EXPECT_REFUSED(permcheck_run({"check", "attention", "--property", "sideways", "--no-db"}, s), "equivariance");
    EXPECT_REFUSED(permcheck_run({"check", "attention", "--dtype", "float16", "--no-db"}, s), "float32");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", "cat", "--dim", "4", "--output", "tree"}, s), "sequence");
    const Exit r = permcheck_run({"no-such-command"}, s);
    EXPECT_EQ(r.signal, 0) << show(r);
    EXPECT_EQ(r.exit_code, 2) << show(r);
}

TEST(CliArguments, NumbersOutOfRangeAreRefused) {
    Scratch s;
    EXPECT_REFUSED(permcheck_run({"check", "attention", "--cases", "1e400", "--no-db"}, s), "--cases");
    EXPECT_REFUSED(permcheck_run({"check", "attention", "--seed", "99999999999999999999999", "--no-db"}, s), "--seed");
    EXPECT_REFUSED(permcheck_run({"check", "attention", "--d", "2147483648", "--no-db"}, s), "--d");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", "cat", "--dim", "4", "--timeout", "1e400"}, s), "--timeout");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", "cat", "--dim", "4", "--amplification", "0.5"}, s),
                   "--amplification must be a number in [1, 1e15]");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", "cat", "--dim", "4", "--amplification", "nan"}, s),
                   "--amplification");
    EXPECT_REFUSED(permcheck_run({"prove", "linear", "--smt", "--smt-timeout", "0"}, s), "--smt-timeout");
    EXPECT_REFUSED(permcheck_run({"prove", "linear", "--smt", "--smt-timeout", "soon"}, s), "--smt-timeout");
}

// --------------------------------------------------------------------------------------------- reports

TEST(Reports, AMissingOrUnreadableReportIsRefusedNamingTheFile) {
    Scratch s;
    EXPECT_REFUSED(permcheck_run({"replay", (s.dir() / "nowhere").string()}, s), "cannot read");
    fs::create_directories(s.dir() / "empty");
    EXPECT_REFUSED(permcheck_run({"replay", (s.dir() / "empty").string()}, s), "report.json");
}

TEST(Reports, AReportDirectoryThatCannotBeCreatedIsAnErrorNotACrash) {
    Scratch s;
    const fs::path file = s.write("a-file", "not a directory\n");
    const Exit r = permcheck_run({"check", "attention", "--cases", "2", "--no-db", "--report", (file / "out").string()}, s);
    EXPECT_REFUSED(r, "cannot create report directory");
    EXPECT_NE(r.err.find("a-file"), std::string::npos) << show(r);
    EXPECT_EQ(r.err.find("could not run"), std::string::npos) << "the layer ran; the directory is what failed\n"
                                                              << show(r);
    EXPECT_EQ(r.out, "") << "refused before the check ran";
}

// A valid report of a violated check, the base of the malformed ones below.
std::string valid_report(const Scratch& s) {
    const Exit r = permcheck_run({"check", "causal-attention", "--no-db", "--report", (s.dir() / "good").string()}, s);
    EXPECT_EQ(r.exit_code, 1) << show(r);
    return slurp(s.dir() / "good" / "report.json");
}

TEST(Reports, DeepJsonNestingIsRefused) {
    Scratch s;
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    std::string report = valid_report(s);
    const auto at = report.find("\"details\"");
    ASSERT_NE(at, std::string::npos);
    report.insert(at, "\"extra\": " + deep + ",\n  ");
    EXPECT_REFUSED(permcheck_run({"replay", s.write("deep.json", report).string()}, s), "nest");
    // A deep value where a string belongs: the error message must not print it back (recursively).
    EXPECT_REFUSED(permcheck_run({"replay", s.write("deep-schema.json", "{\"schema\": " + deep + "}").string()}, s),
                   "nest");
}

TEST(Reports, NumbersOutOfRangeAreRefused) {
    Scratch s;
    const std::string report = valid_report(s);
    const auto replaced = [&](const std::string& field, const std::string& value) {
        std::string r = report;
        const auto at = r.find("\"" + field + "\": ");
        EXPECT_NE(at, std::string::npos) << field;
        const auto from = at + field.size() + 4, to = r.find_first_of(",\n", from);
        r.replace(from, to - from, value);
        return r;
    };
    EXPECT_REFUSED(permcheck_run({"replay", s.write("a.json", replaced("cases", "1e400")).string()}, s), "1e400");
    EXPECT_REFUSED(permcheck_run({"replay", s.write("b.json", replaced("cases", "1e300")).string()}, s), "cases");
    EXPECT_REFUSED(permcheck_run({"replay", s.write("c.json", replaced("cases", "-5")).string()}, s), "cases");
    EXPECT_REFUSED(permcheck_run({"replay", s.write("d.json", replaced("seed", "-1")).string()}, s), "seed");
    EXPECT_REFUSED(permcheck_run({"replay", s.write("e.json", replaced("n", "1e400")).string()}, s), "1e400");
}

// ------------------------------------------------------------------------------------------ adapters

// An adapter that reads the first request, then prints `body` (a shell pipeline's output) and a newline.
fs::path adapter(const Scratch& s, const std::string& name, const std::string& body) {
    return s.write(name, "#!/bin/sh\nread request\n" + body + "\necho\n", true);
}

TEST(Adapters, AHundredMegabyteAnswerLineIsRefusedWithoutBeingReadWhole) {
    Scratch s;
    const fs::path a = adapter(s, "huge.sh", "head -c 104857600 /dev/zero | tr '\\0' 1");
    const Exit r = permcheck_run({"audit", "--exec", a.string(), "--dim", "4", "--cases", "3"}, s);
    EXPECT_REFUSED(r, "longer than");
    // Refused at the limit, not read to its end: the process never held the 100 MB line. (Under ASan the peak
    // also holds its shadow memory and quarantine, which say nothing about what permcheck read.)
#ifndef __SANITIZE_ADDRESS__
    EXPECT_LT(r.max_rss_kib, 100 * 1024) << show(r);
#endif
}

TEST(Adapters, DeepJsonNestingInAnAnswerIsRefused) {
    Scratch s;
    const std::string nest = "yes '[' | head -n 1000000 | tr -d '\\n'; yes ']' | head -n 1000000 | tr -d '\\n'";
    const fs::path a = adapter(s, "deep.sh", "printf '{\"id\":0,\"error\":'; " + nest + "; printf '}'");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", a.string(), "--dim", "4", "--cases", "3"}, s), "nest");
    const fs::path b = adapter(s, "deep-y.sh", "printf '{\"id\":0,\"y\":'; " + nest + "; printf '}'");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", b.string(), "--dim", "4", "--cases", "3"}, s), "nest");
}

TEST(Adapters, NumbersOutOfRangeInAnAnswerAreRefused) {
    Scratch s;
    const fs::path a = adapter(s, "big.sh", "printf '{\"id\":0,\"y\":[[1e400,0,0,0]]}'");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", a.string(), "--dim", "4", "--cases", "3"}, s), "1e400");
    const fs::path b = adapter(s, "big-id.sh", "printf '{\"id\":1e400,\"y\":[[0,0,0,0]]}'");
    EXPECT_REFUSED(permcheck_run({"audit", "--exec", b.string(), "--dim", "4", "--cases", "3"}, s), "id");
}

// ------------------------------------------------------------------- the fuzzing inputs, replayed

std::vector<fs::path> inputs_of(const std::string& target) {
    std::vector<fs::path> files;
    for (const char* kind : {"corpus", "regressions"}) {
        const fs::path dir = fs::path(PERMCHECK_SOURCE_DIR) / "fuzz" / kind / target;
        if (!fs::is_directory(dir)) continue;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.is_regular_file()) files.push_back(e.path());
    }
    return files;
}

TEST(FuzzInputs, EveryAnswerLineParsesOrIsRefusedWithInvalidArgument) {
    const std::vector<fs::path> files = inputs_of("response");
    ASSERT_GE(files.size(), 5u) << "the seed corpus fuzz/corpus/response is missing";
    for (const fs::path& f : files) {
        const std::string line = slurp(f);
        try {
            const adapters::NamedResponse r = adapters::parse_response(line);
            EXPECT_TRUE(r.is_error || !r.outputs.at("y").values.empty()) << f;
        } catch (const std::invalid_argument& e) {
            EXPECT_GT(std::string(e.what()).size(), 10u) << f;
        }
    }
}

TEST(FuzzInputs, EveryReportIsReadOrRefusedWithADocumentedException) {
    const std::vector<fs::path> files = inputs_of("report");
    ASSERT_GE(files.size(), 2u) << "the seed corpus fuzz/corpus/report is missing";
    int read = 0;
    for (const fs::path& f : files) {
        try {
            const report::Record r = report::read(f);
            (void)report::to_markdown(r);
            (void)report::to_html(r);
            ++read;
        } catch (const std::invalid_argument&) {
        } catch (const std::runtime_error&) {
        }
    }
    EXPECT_GE(read, 1) << "the seed corpus should hold at least one valid report";
}

}  // namespace
