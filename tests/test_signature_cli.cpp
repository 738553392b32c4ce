// Audits of real layer signatures (issue 12) as a user meets them: the named line protocol (requests, answers and
// what is refused), the report of a signature audit (report.json round trip, report.md, report.html with the
// graph), and `permcheck audit --axis/--input/--output` run as a subprocess on the example adapters of docs/signatures.md.
#include "adapters/exec_adapter.h"
#include "cases/compare.h"
#include "report/report.h"
#include "tests/support/process.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <string>

#ifndef PERMCHECK_BIN
#error "PERMCHECK_BIN (the path of the permcheck binary) must be defined by CMake"
#endif
#ifndef PERMCHECK_SOURCE_DIR
#error "PERMCHECK_SOURCE_DIR must be defined by CMake"
#endif

namespace fs = std::filesystem;
using nlohmann::json;
using namespace permcheck;

namespace {

// A signature written out by hand (the flags' parser is tested with the engine): axes n and edges, a real
// input, a mask, an edge list over n and edge features; outputs y (along n) and g (invariant).
Signature graph_signature() {
    Signature s;
    s.axes = {{"n", 1, 8}, {"edges", 0, 16}};
    s.inputs = {{"x", {{"n", 0}, {"", 2}}, TensorKind::real, ""},
                {"pad", {{"n", 0}}, TensorKind::mask, ""},
                {"edge_index", {{"", 2}, {"edges", 0}}, TensorKind::index, "n"},
                {"edge_attr", {{"edges", 0}, {"", 1}}, TensorKind::real, ""}};
    s.outputs = {{"y", {{"n", 0}, {"", 2}}, TensorKind::real, ""}, {"g", {{"", 2}}, TensorKind::real, ""}};
    return s;
}

Tensors graph_inputs(int edges) {
    Tensors t;
    t["x"] = Tensor{{3, 2}, {0.5, -1, 2, 0.25, 0, 1e-300}};
    t["pad"] = Tensor{{3}, {0, 1, 0}};
    t["edge_index"] = edges == 0 ? Tensor{{2, 0}, {}} : Tensor{{2, 2}, {0, 2, 1, 1}};
    t["edge_attr"] = edges == 0 ? Tensor{{0, 1}, {}} : Tensor{{2, 1}, {3, -4}};
    return t;
}

std::string refusal(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "<accepted>";
}

}  // namespace

// ---- the named protocol ------------------------------------------------------------------------------------

TEST(NamedProtocol, RequestNestsEveryInputInItsDimsWithMasksAsBooleansAndIndicesAsIntegers) {
    const std::string line = adapters::format_named_request(7, graph_signature(), graph_inputs(2));
    EXPECT_EQ(line,
              "{\"id\":7,\"inputs\":{\"x\":[[0.5,-1.0],[2.0,0.25],[0.0,1e-300]],\"pad\":[false,true,false],"
              "\"edge_index\":[[0,2],[1,1]],\"edge_attr\":[[3.0],[-4.0]]},"
              "\"shapes\":{\"x\":[3,2],\"pad\":[3],\"edge_index\":[2,2],\"edge_attr\":[2,1]},"
              "\"kinds\":{\"x\":\"float\",\"pad\":\"mask\",\"edge_index\":\"index\",\"edge_attr\":\"float\"},"
              "\"outputs\":[\"y\",\"g\"]}");
    EXPECT_TRUE(json::parse(line).is_object());
}

// An adapter that tells index inputs from reals by JSON type (python/permcheck_adapter.py does) must read an
// all-integer real input (a shrunk counterexample is often all zeros) as reals, and an empty index input as an
// index: every real value has a fraction or an exponent, and "kinds" names every input's kind.
TEST(NamedProtocol, RealsThatAreIntegersKeepAFractionAndKindsNameEveryInput) {
    Tensors in = graph_inputs(0);
    in["x"].values = {0, 2, -3, 1e300, 1e22, 0.5};
    const json j = json::parse(adapters::format_named_request(1, graph_signature(), in));
    for (const json& row : j["inputs"]["x"])
        for (const json& v : row) EXPECT_TRUE(v.is_number_float()) << j["inputs"]["x"].dump();
    EXPECT_EQ(j["inputs"]["x"][1][1].get<double>(), 1e300);
    EXPECT_EQ(j["inputs"]["x"][2][0].get<double>(), 1e22);
    const std::string line = adapters::format_named_request(1, graph_signature(), in);
    EXPECT_NE(line.find("[[0.0,2.0],[-3.0,1e+300],[1e+22,0.5]]"), std::string::npos) << line;
    EXPECT_EQ(j["kinds"], json::parse(R"({"x":"float","pad":"mask","edge_index":"index","edge_attr":"float"})"));
    EXPECT_EQ(j["inputs"]["edge_index"], json::parse("[[],[]]")) << "empty: only \"kinds\" says it is an index";
}

// The same request read by python/permcheck_adapter.py with torch tensors: an all-zero real input is a float
// tensor, an empty edge list an int64 one (the Python adapter reads "kinds").
TEST(NamedProtocol, ThePythonAdapterReadsAnAllZeroRealInputAsFloatAndAnEmptyIndexAsInt64) {
    const permcheck::test::Scratch scratch("named-kinds");
    Tensors in = graph_inputs(0);
    in["x"].values.assign(6, 0.0);
    std::ofstream(scratch.dir() / "request.jsonl") << adapters::format_named_request(1, graph_signature(), in) << "\n";
    std::ofstream(scratch.dir() / "probe.py")
        << "import sys, torch\nsys.path.insert(0, " << json(std::string(PERMCHECK_SOURCE_DIR) + "/python").dump()
        << ")\nfrom permcheck_adapter import serve\n"
           "def probe(x, pad, edge_index, edge_attr):\n"
           "    ok = [x.dtype == torch.float64, pad.dtype == torch.bool, edge_index.dtype == torch.int64,\n"
           "          tuple(edge_index.shape) == (2, 0), edge_attr.dtype == torch.float64]\n"
           "    return [1.0 if k else 0.0 for k in ok], [0.0, 0.0]\n"
           "serve(probe, dtype=torch.float64)\n";
    const permcheck::test::Run run = permcheck::test::run_shell("python3 probe.py < request.jsonl", scratch.dir());
    ASSERT_EQ(run.exit_code, 0) << permcheck::test::show(run);
    const json answer = json::parse(run.out, nullptr, false);
    EXPECT_EQ(answer["outputs"]["y"], json::parse("[1.0, 1.0, 1.0, 1.0, 1.0]")) << permcheck::test::show(run);
}

TEST(NamedProtocol, ADimOfLengthZeroIsAnEmptyArrayAndTheShapesSayWhatIsEmpty) {
    const json j = json::parse(adapters::format_named_request(1, graph_signature(), graph_inputs(0)));
    EXPECT_EQ(j["inputs"]["edge_index"], json::parse("[[],[]]"));
    EXPECT_EQ(j["inputs"]["edge_attr"], json::array());
    EXPECT_EQ(j["shapes"]["edge_attr"], json::parse("[0,1]"));
    EXPECT_EQ(j["shapes"]["edge_index"], json::parse("[2,0]"));
}

TEST(NamedProtocol, RequestRefusesWhatJsonCannotCarryOrTheSignatureDoesNotAllow) {
    Tensors in = graph_inputs(2);
    in["x"].values[1] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_NE(refusal([&] { adapters::format_named_request(1, graph_signature(), in); }).find("input 'x'"),
              std::string::npos);
    in = graph_inputs(2);
    in["edge_index"].values[0] = 0.5;
    EXPECT_NE(refusal([&] { adapters::format_named_request(1, graph_signature(), in); }).find("index input"),
              std::string::npos);
    in = graph_inputs(2);
    in.erase("pad");
    EXPECT_NE(refusal([&] { adapters::format_named_request(1, graph_signature(), in); }).find("no input 'pad'"),
              std::string::npos);
    in = graph_inputs(2);
    in["pad"] = Tensor{{2}, {0, 1}};
    EXPECT_NE(refusal([&] { adapters::lengths_of(graph_signature(), in); }).find("axis n"), std::string::npos);
}

TEST(NamedProtocol, AnswerIsReadInTheShapeAskedForWithPythonsNonFiniteTokens) {
    const auto expected = adapters::expected_outputs(graph_signature(), {{"n", 2}, {"edges", 0}});
    const adapters::NamedResponse r = adapters::parse_named_response(
        R"({"id": 4, "outputs": {"y": [[1, 2], [NaN, -Infinity]], "g": [0.5, 1e-7], "extra": "ignored"}})", expected);
    EXPECT_EQ(r.id, 4);
    ASSERT_EQ(r.outputs.size(), 2u);
    EXPECT_EQ(r.outputs.at("y").shape, (std::vector<int>{2, 2}));
    EXPECT_TRUE(std::isnan(r.outputs.at("y").values[2]));
    EXPECT_EQ(r.outputs.at("y").values[3], -std::numeric_limits<double>::infinity());
    EXPECT_EQ(r.outputs.at("g").values, (std::vector<double>{0.5, 1e-7}));
    const adapters::NamedResponse err = adapters::parse_named_response(R"({"id":5,"error":"no weights"})", expected);
    EXPECT_TRUE(err.is_error);
    EXPECT_EQ(err.error, "no weights");
    EXPECT_FALSE(err.raised);
    EXPECT_TRUE(adapters::parse_named_response(R"({"id":5,"error":"shape","raised":true})", expected).raised)
        << "the layer raised decoding in chunks";
    EXPECT_FALSE(adapters::parse_named_response(R"({"id":5,"error":"shape","raised":1})", expected).raised);
    const auto none = adapters::expected_outputs(graph_signature(), {{"n", 0}, {"edges", 0}});
    EXPECT_EQ(adapters::parse_named_response(R"({"id":1,"outputs":{"y":[],"g":[1,2]}})", none).outputs.at("y").shape,
              (std::vector<int>{0, 2}));
}

TEST(NamedProtocol, AWrongShapeIsRefusedNamingTheOutputAndTheDim) {
    const auto expected = adapters::expected_outputs(graph_signature(), {{"n", 3}, {"edges", 1}});
    const auto message = [&](const std::string& line) {
        return refusal([&] { adapters::parse_named_response(line, expected); });
    };
    // A well-formed tensor of another shape is the layer's answer, read in its shape for the audit to judge; a ragged
    // one breaks the protocol.
    const auto shorter = adapters::parse_named_response(R"({"id":1,"outputs":{"y":[[1,2],[3,4]],"g":7}})", expected);
    EXPECT_EQ(shorter.outputs.at("y").shape, (std::vector<int>{2, 2}));
    EXPECT_EQ(shorter.outputs.at("y").values, (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(shorter.outputs.at("g").shape, (std::vector<int>{}));
    const std::string inner = message(R"({"id":1,"outputs":{"y":[[1,2],[3,4],[5]],"g":[1,2]}})");
    EXPECT_NE(inner.find("output 'y', dim 1 (fixed size 2) at [2]: 1 entries, expected 2"), std::string::npos) << inner;
    EXPECT_NE(message(R"({"id":1,"outputs":{"y":[[1,2],[3,4],[5,6]]}})").find("no output 'g'"), std::string::npos);
    EXPECT_NE(message(R"({"id":1,"outputs":{"y":[[1,2],[3,4],[5,6]],"g":[1,"2"]}})").find("output 'g' holds string"),
              std::string::npos);
    EXPECT_NE(message(R"({"id":1,"y":[[1]]})").find("neither \"outputs\" nor \"error\""), std::string::npos);
    EXPECT_NE(message(R"({"id":1,"outputs":[1]})").find("not an object"), std::string::npos);
    EXPECT_NE(message("log: loading weights").find("not JSON"), std::string::npos);
    EXPECT_NE(message(std::string(100000, '[')).find("levels deep"), std::string::npos);
}

// An adapter whose answers break the protocol in one way each, through a real process: the error names it. One that
// answers a well-formed tensor of another shape is answered (the audit judges that shape, in the layer's terms).
TEST(NamedProtocol, AnAdapterThatAnswersARaggedArrayOrExitsIsAnErrorNamingTheLastRequest) {
    const permcheck::test::Scratch scratch("named-adapter");
    const fs::path script = scratch.write("adapter.py", R"(import json, sys
mode = sys.argv[1]
for line in sys.stdin:
    r = json.loads(line)
    if mode == "exit":
        sys.exit(3)
    n = r["shapes"]["x"][0]
    rows = n - 1 if mode == "short" else n
    y = [[0.0, 0.0]] * rows + ([[0.0]] if mode == "ragged" else [])
    print(json.dumps({"id": r["id"], "outputs": {"y": y, "g": [0.0, 0.0]}}), flush=True)
)");
    for (const char* mode : {"ragged", "exit", "fine", "short"}) {
        adapters::ExecOptions eo;
        eo.command = "python3 " + script.string() + " " + mode;
        const NamedBlackBox box = adapters::exec_named_black_box(eo, graph_signature());
        const std::string m = [&] {
            try {
                box(graph_inputs(2));
            } catch (const AdapterError& e) {
                return std::string(e.what());
            }
            return std::string("<answered>");
        }();
        if (std::string(mode) == "fine" || std::string(mode) == "short") {
            EXPECT_EQ(m, "<answered>");
            continue;
        }
        EXPECT_NE(m.find("last request: id 1, edges=2, n=3"), std::string::npos) << m;
        EXPECT_NE(m.find(std::string(mode) == "ragged" ? "adapter broke the protocol: output 'y', dim 1 (fixed size 2) at [3]: 1 entries"
                                                       : "exited with status 3"),
                  std::string::npos) << m;
    }
}

// ---- the report of a signature audit -----------------------------------------------------------------------

namespace {

// A hand-built finding: three nodes, two edges, the edges swapped (the axis at fault), y violated, g holding.
report::Record graph_record() {
    Counterexample c;
    c.lengths = {{"n", 3}, {"edges", 2}};
    c.perms = {{"n", Permutation::identity(3)}, {"edges", Permutation({1, 0})}};
    c.inputs = graph_inputs(2);
    OutputComparison y{"y", Tensor{{3, 2}, {1, 2, 3, 4, 5, 6}}, Tensor{{3, 2}, {1, 2, 3, 4.5, 5, 6}}, 0.5, 1e-15,
                       {1, 1}, false, false};
    OutputComparison g{"g", Tensor{{2}, {9, 12}}, Tensor{{2}, {9, 12}}, 0.0, 1e-15, {0}, true, false};
    c.outputs = {y, g};
    c.axis_at_fault = "edges";
    c.case_index = 12;
    c.shrink_steps = 9;
    report::Record r;
    r.verdict = Verdict::violated;
    r.layer = "python3 gnn.py";
    r.dtype = Arithmetic::float64;
    r.cases = 13;
    r.seed = 5;
    r.replay = "permcheck audit --exec 'python3 gnn.py' --axis n=1..8 --axis edges=0..16 ...";
    r.details["audit"] = {{"command", "python3 gnn.py"}};
    r.signature = graph_signature();
    r.counterexample = c;
    return r;
}

std::string read_refusal(const json& j) {
    return refusal([&] { report::from_json(j); });
}

}  // namespace

TEST(SignatureReport, JsonHoldsLengthsPermutationsInputsAndOutputsByNameAndRoundTrips) {
    const report::Record r = graph_record();
    const json j = report::to_json(r);
    EXPECT_EQ(j["schema"], "permcheck.report/1");
    EXPECT_EQ(j["counterexample"]["lengths"], json::parse(R"({"edges": 2, "n": 3})"));
    EXPECT_EQ(j["counterexample"]["permutations"], json::parse(R"({"edges": [1, 0], "n": [0, 1, 2]})"));
    EXPECT_EQ(j["counterexample"]["inputs"]["pad"], json::parse("[0, 1, 0]"));
    EXPECT_EQ(j["counterexample"]["inputs"]["edge_index"], json::parse("[[0, 2], [1, 1]]"));
    EXPECT_EQ(j["counterexample"]["outputs"]["y"]["where"], json::parse("[1, 1]"));
    EXPECT_EQ(j["counterexample"]["outputs"]["y"]["permuted_layer"][1], json::parse("[3, 4.5]"));
    EXPECT_EQ(j["counterexample"]["outputs"]["g"]["max_abs_diff"], 0.0);
    EXPECT_EQ(j["counterexample"]["axis_at_fault"], "edges");
    EXPECT_FALSE(j["counterexample"].contains("x")) << "the one-tensor fields belong to the shorthand";
    ASSERT_TRUE(j["signature"].is_object());
    EXPECT_EQ(j["signature"]["inputs"].size(), 4u);
    const report::Record back = report::from_json(json::parse(j.dump()));
    EXPECT_EQ(report::to_json(back), j);
    ASSERT_TRUE(back.counterexample && back.signature);
    EXPECT_EQ(back.counterexample->inputs.at("edge_attr").shape, (std::vector<int>{2, 1}));
    EXPECT_EQ(back.signature->inputs[2].kind, TensorKind::index);
    EXPECT_EQ(back.signature->inputs[2].index_axis, "n");
}

TEST(SignatureReport, AMalformedSignatureCounterexampleIsRefusedNamingTheField) {
    const json good = report::to_json(graph_record());
    json j = good;
    j["counterexample"]["permutations"]["edges"] = json::parse("[0, 0]");
    EXPECT_NE(read_refusal(j).find("counterexample.permutations.edges"), std::string::npos) << read_refusal(j);
    j = good;
    j["counterexample"]["permutations"]["n"] = json::parse("[1, 0]");
    EXPECT_NE(read_refusal(j).find("axis n has length 3"), std::string::npos) << read_refusal(j);
    j = good;
    j["counterexample"]["inputs"]["x"][2] = json::parse("[1]");
    EXPECT_NE(read_refusal(j).find("counterexample.inputs.x[2]"), std::string::npos) << read_refusal(j);
    j = good;
    j["counterexample"]["outputs"]["y"]["max_abs_diff"] = "big";
    EXPECT_NE(read_refusal(j).find("counterexample.outputs.y.max_abs_diff"), std::string::npos) << read_refusal(j);
    j = good;
    j["counterexample"]["lengths"]["n"] = -1;
    EXPECT_NE(read_refusal(j).find("counterexample.lengths.n"), std::string::npos) << read_refusal(j);
    j = good;
    j.erase("signature");
    EXPECT_NE(read_refusal(j).find("no 'signature'"), std::string::npos) << read_refusal(j);
    j = good;
    j["signature"]["axes"] = json::parse("[\"n=1..8\"]");
    EXPECT_NE(read_refusal(j).find("field 'signature"), std::string::npos) << read_refusal(j);
}

TEST(SignatureReport, MarkdownAndHtmlShowEveryAxisPermutationAndNameTheAxisAtFault) {
    const report::Record r = graph_record();
    const std::string md = report::to_markdown(r);
    EXPECT_NE(md.find("| `edges` (at fault) | 2 | `(0 1)` | `[1, 0]` |"), std::string::npos) << md;
    EXPECT_NE(md.find("| `n` | 3 | `(identity)` | `[0, 1, 2]` |"), std::string::npos) << md;
    EXPECT_NE(md.find("The axis at fault: **edges**"), std::string::npos) << md;
    EXPECT_NE(md.find("| `y` | equivariant along n, invariant to edges | 0.5 | `[1, 1]` |"), std::string::npos) << md;
    EXPECT_NE(md.find("| `g` | invariant to n, edges | 0 |"), std::string::npos) << md;
    EXPECT_NE(md.find("edge_index = [[0, 2], [1, 1]]"), std::string::npos) << md;
    const std::string html = report::to_html(r);
    EXPECT_NE(html.find("<tr class=\"axis at-fault\"><td>edges <b>(at fault)</b>"), std::string::npos);
    EXPECT_EQ(std::regex_search(html, std::regex("class=\"permutation\"")), true);
    std::size_t arrows = 0;
    for (auto at = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"permutation\""); at != std::string::npos;
         at = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"permutation\"", at + 1))
        ++arrows;
    EXPECT_EQ(arrows, 2u) << "one drawing per axis";
    EXPECT_NE(html.find("<h3>Output y: heatmap of |L(P x) - P L(x)|</h3>"), std::string::npos) << "y differs";
    EXPECT_EQ(html.find("<h3>Output g: heatmap"), std::string::npos) << "g holds: nothing to show";
    std::size_t cells = 0;
    for (auto at = html.find("<rect class=\"cell\""); at != std::string::npos; at = html.find("<rect class=\"cell\"", at + 1))
        ++cells;
    EXPECT_EQ(cells, 6u) << "3 x 2 cells of y";
}

// A signature output's heatmap is labelled with the output's dims: y:n,2 has rows n and columns "feature" (its last
// dim, a fixed size); so has an output g:2 (one dim, a fixed size). Never a check's "position".
TEST(SignatureReport, AnInputAnsweredTwiceIsHeadedByWhatHappened) {
    // A nondeterministic record's counterexample is one input answered twice; a batch-dependent record's, one input
    // answered in a batched request and alone. Neither shows a permutation table.
    report::Record r = graph_record();
    r.verdict = Verdict::nondeterministic;
    std::string md = report::to_markdown(r);
    std::string html = report::to_html(r);
    EXPECT_NE(md.find("#### One input answered twice: "), std::string::npos) << md;
    EXPECT_NE(md.find("answered the same input x twice with different results"), std::string::npos) << md;
    EXPECT_EQ(md.find("| axis | length | permutation |"), std::string::npos) << md;
    EXPECT_NE(html.find("<h2>One input answered twice: "), std::string::npos) << html;
    r.verdict = Verdict::batch_dependent;
    md = report::to_markdown(r);
    html = report::to_html(r);
    EXPECT_NE(md.find("#### One input answered in a batch and alone: "), std::string::npos) << md;
    EXPECT_NE(md.find("differently in a batched request and alone; no permutation plays a part."), std::string::npos) << md;
    EXPECT_EQ(md.find("answered twice"), std::string::npos) << md;
    EXPECT_NE(html.find("<h2>One input answered in a batch and alone: "), std::string::npos) << html;
    EXPECT_NE(html.find("differently in a batched request and alone"), std::string::npos) << html;
    EXPECT_EQ(html.find("answered twice"), std::string::npos) << html;
}

TEST(SignatureReport, AnOutputsHeatmapIsLabelledWithItsDims) {
    report::Record r = graph_record();
    r.counterexample->outputs[1].holds = false;  // g differs too
    r.counterexample->outputs[1].permuted_layer.values[1] = 13;
    const std::string html = report::to_html(r);
    const auto heatmap = [&html](const std::string& output) {
        const auto at = html.find("<h3>Output " + output + ": heatmap");
        return at == std::string::npos ? std::string() : html.substr(at, html.find("</svg>", at) - at);
    };
    const std::string y = heatmap("y"), g = heatmap("g");
    EXPECT_NE(y.find(">n &#8595;</text>"), std::string::npos) << y;
    EXPECT_NE(y.find(">feature &#8594;</text>"), std::string::npos) << y;
    EXPECT_NE(y.find("<title>n 1, feature 1: 0.5</title>"), std::string::npos) << y;
    EXPECT_NE(g.find(">feature &#8594;</text>"), std::string::npos) << g;
    EXPECT_NE(g.find("<title>feature 1: 1</title>"), std::string::npos) << g;
    for (const std::string& svg : {y, g}) EXPECT_EQ(svg.find("position"), std::string::npos) << svg;
}

TEST(SignatureReport, HtmlDrawsAnEdgeListAsAGraphWithTheMovedEdgesMarked) {
    const std::string html = report::to_html(graph_record());
    ASSERT_NE(html.find("class=\"graph\""), std::string::npos);
    const auto count = [&html](const std::string& what) {
        std::size_t n = 0;
        for (auto at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
        return n;
    };
    EXPECT_EQ(count("<circle class=\"gnode fixed\""), 3u) << "three nodes, none moved";
    EXPECT_EQ(count("<path class=\"edge moved\""), 2u) << "two edges, both moved by (0 1)";
    EXPECT_NE(html.find("edge 0: 0 &#8594; 1 (moved)"), std::string::npos);
    EXPECT_NE(html.find("edge 1: 2 &#8594; 1 (moved)"), std::string::npos);
    EXPECT_EQ(html.find("<script"), std::string::npos);
}

// A report of the shorthand holds its signature as the shorthand (report.json's signature.one_tensor: d, output,
// lengths and the width learned) and its finding as every audit's, and reads back as the one-tensor signature,
// whose requests a replay sends in the shorthand's dialect. A report with the shorthand's own fields, as earlier
// versions wrote them (tests/golden/reports/), reads back as the same.
TEST(SignatureReport, AnAuditOfTheShorthandIsRecordedAsTheShorthandAndReadsBackAsIt) {
    report::Record r;
    r.verdict = Verdict::violated;
    r.layer = "python3 a.py";
    Counterexample c;
    c.lengths = {{"n", 2}};
    c.perms = {{"n", Permutation({1, 0})}};
    c.inputs["x"] = Tensor{{2, 2}, {1, 2, 3, 4}};
    c.axis_at_fault = "n";
    OutputComparison y;
    y.name = "y";
    y.layer_of_permuted = Tensor{{2, 2}, {1, 2, 3, 4}};
    y.permuted_layer = Tensor{{2, 2}, {3, 4, 1, 2.5}};
    y.where = {1, 1};
    y.max_abs_diff = 1.5;
    y.holds = false;
    c.outputs = {y};
    r.signature = one_tensor_signature(2, Output::sequence, 1, 8);
    r.signature->outputs[0].dims[1].size = 2;
    r.one_tensor = true;  // as the command line records the shorthand
    r.counterexample = c;
    const json j = report::to_json(r);
    EXPECT_EQ(j["signature"], json::parse(R"({"one_tensor": {"d": 2, "output": "sequence", "min_len": 1, "max_len": 8,
                                                              "width": 2}})"));
    EXPECT_EQ(j["counterexample"]["lengths"], json::parse(R"({"n": 2})"));
    EXPECT_EQ(j["counterexample"]["permutations"], json::parse(R"({"n": [1, 0]})"));
    EXPECT_EQ(j["counterexample"]["inputs"]["x"], json::parse("[[1, 2], [3, 4]]"));
    EXPECT_EQ(j["counterexample"]["outputs"]["y"]["where"], json::parse("[1, 1]"));
    EXPECT_FALSE(j["counterexample"].contains("x")) << "no second form of the same finding";
    const report::Record back = report::from_json(j);
    ASSERT_TRUE(back.counterexample && back.signature && back.one_tensor);
    EXPECT_EQ(report::to_json(back), j);
    json old = j;  // as the shorthand's own fields
    old.erase("signature");
    old["counterexample"] = {{"n", 2}, {"d", 2}, {"x", json::parse("[[1, 2], [3, 4]]")}, {"permutation", {1, 0}},
                             {"layer_of_permuted", json::parse("[[1, 2], [3, 4]]")},
                             {"permuted_layer", json::parse("[[3, 4], [1, 2.5]]")}, {"max_abs_diff", 1.5},
                             {"where", {{"position", 1}, {"feature", 1}}}, {"tolerance", 0.0}, {"black_box", true}};
    const report::Record earlier = report::from_json(old);
    ASSERT_TRUE(earlier.signature && earlier.one_tensor && earlier.counterexample);
    EXPECT_EQ(earlier.counterexample->inputs.at("x").values, (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(earlier.counterexample->perms.at("n").one_line(), (std::vector<int>{1, 0}));
}

// ---- what a report says was checked -----------------------------------------------------------------------

namespace {

OutputCheck output_check(const std::string& name, int cases, double diff, double tolerance, double fraction, double least,
                         double most) {
    OutputCheck o;
    o.name = name;
    o.cases = cases;
    o.max_abs_diff = diff;
    o.tolerance_at_max = tolerance;
    o.largest_fraction = fraction;
    o.min_tolerance = least;
    o.max_tolerance = most;
    return o;
}

// graph_record() with what its run checked: y along n and invariant to edges, g invariant to both; numbers with
// more digits than the views show.
report::Record checked_record() {
    report::Record r = graph_record();
    report::Checked c;
    c.outputs = {output_check("y", 13, 0.5, 2.2204460492503131e-15, 2.25179981368524825e14, 1.1102230246251565e-16,
                             2.2204460492503131e-15),
                 output_check("g", 13, 3.5527136788005009e-15, 7.105427357601002e-15, 0.58333333333333337,
                             4.4408920985006262e-16, 7.105427357601002e-15)};
    c.lengths = {{"n", {1, 2, 3, 5}}, {"edges", {0, 1, 2, 3, 4, 5, 6, 7, 8}}};
    c.tolerance = tolerance_model(Arithmetic::float64, 1.0);
    c.widest = 2;
    r.checked = c;
    return r;
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// The HTML between the first occurrence of `from` and the next `to` after it (empty when `from` is not there).
std::string between(const std::string& text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    return at == std::string::npos ? std::string() : text.substr(at, text.find(to, at) - at);
}

}  // namespace

TEST(CheckedReport, JsonHoldsWhatWasCheckedAtFullPrecisionAndRoundTrips) {
    const report::Record r = checked_record();
    const json j = report::to_json(r);
    ASSERT_TRUE(j.contains("checked")) << j.dump();
    const json& y = j["checked"]["outputs"][0];
    EXPECT_EQ(y["name"], "y");
    EXPECT_EQ(y["cases"], 13);
    EXPECT_EQ(y["tolerance_at_max"].get<double>(), 2.2204460492503131e-15) << "every digit in report.json";
    EXPECT_EQ(j["checked"]["outputs"][1]["largest_fraction_of_tolerance"].get<double>(), 0.58333333333333337);
    EXPECT_EQ(j["checked"]["lengths"]["n"], json::parse("[1, 2, 3, 5]"));
    EXPECT_EQ(j["checked"]["tolerance"]["unit_roundoff"].get<double>(), 0x1p-53);
    EXPECT_EQ(j["checked"]["tolerance"]["widest"], 2);
    const report::Record back = report::from_json(json::parse(j.dump()));
    ASSERT_TRUE(back.checked);
    EXPECT_EQ(back.checked->outputs[1].max_abs_diff, 3.5527136788005009e-15);
    EXPECT_EQ(back.checked->lengths.at("edges").size(), 9u);
    EXPECT_EQ(report::to_json(back), j);
}

TEST(CheckedReport, AReportWrittenBeforeItRecordedWhatWasCheckedStillReadsAndShowsItsClaims) {
    json j = report::to_json(checked_record());
    j.erase("checked");
    j["details"]["audit"]["axis_lengths"] = json::parse(R"({"n": [1, 2, 3], "edges": [0, 4]})");
    const report::Record back = report::from_json(j);
    EXPECT_FALSE(back.checked);
    const std::string md = report::to_markdown(back);
    EXPECT_NE(md.find("#### What was checked"), std::string::npos) << md;
    EXPECT_NE(md.find("does not record the differences"), std::string::npos) << md;
    EXPECT_NE(md.find("| `y` | n | equivariant along | 1..3 (3 lengths) | – |"), std::string::npos) << md;
    EXPECT_NE(md.find("|  | edges | invariant to | 0, 4 (2 lengths) |"), std::string::npos) << md;
    const std::string html = report::to_html(back);
    EXPECT_EQ(count_of(html, "<tr class=\"checked-row"), 4u) << "y and g, each along or invariant to n and edges";
}

TEST(CheckedReport, AMalformedCheckedFieldIsRefusedNamingIt) {
    const json good = report::to_json(checked_record());
    json j = good;
    j["checked"]["outputs"][0]["max_abs_diff"] = "large";
    EXPECT_NE(read_refusal(j).find("checked.outputs[0].max_abs_diff"), std::string::npos) << read_refusal(j);
    j = good;
    j["checked"]["outputs"][1]["cases"] = -3;
    EXPECT_NE(read_refusal(j).find("checked.outputs[1].cases"), std::string::npos) << read_refusal(j);
    j = good;
    j["checked"]["lengths"]["n"] = json::parse("[1, -2]");
    EXPECT_NE(read_refusal(j).find("checked.lengths.n"), std::string::npos) << read_refusal(j);
    j = good;
    j["checked"]["tolerance"].erase("unit_roundoff");
    EXPECT_NE(read_refusal(j).find("checked.tolerance.unit_roundoff"), std::string::npos) << read_refusal(j);
    j = good;
    j["checked"] = 5;
    EXPECT_NE(read_refusal(j).find("field 'checked'"), std::string::npos) << read_refusal(j);
}

// One row per output and axis, the lengths the run sent on it, the cases, the largest difference with its tolerance
// and its fraction, the tolerance's derivation; the output that broke marked; six significant digits.
TEST(CheckedReport, MarkdownAndHtmlShowATableOfWhatWasCheckedWithTheRowThatBrokeMarked) {
    const report::Record r = checked_record();
    const std::string md = report::to_markdown(r);
    EXPECT_NE(md.find("| `y` | n | equivariant along | 1..3, 5 (4 lengths) | 13 | `\\|L(P x) - P L(x)\\|` | 0.5 | "
                      "2.22045e-15 | 2.2518e+14 | 1.11022e-16 – 2.22045e-15 | **violated** ◀ |"),
              std::string::npos) << md;
    EXPECT_NE(md.find("|  | edges | invariant to | 0..8 (9 lengths) |"), std::string::npos) << md;
    EXPECT_NE(md.find("| `g` | n | invariant to | 1..3, 5 (4 lengths) | 13 | `\\|L(P x) - L(x)\\|` | 3.55271e-15 | "
                      "7.10543e-15 | 0.583333 | 4.44089e-16 – 7.10543e-15 | within tolerance |"),
              std::string::npos) << md;
    EXPECT_NE(md.find("Tolerance: float64, unit roundoff u = 2^-53 = 1.11022e-16."), std::string::npos) << md;
    EXPECT_NE(md.find("k = the sum of the case's axis lengths + 2"), std::string::npos) << md;
    const std::string html = report::to_html(r);
    const std::string table = between(html, "<table class=\"checked\">", "</table>");
    ASSERT_FALSE(table.empty()) << html;
    EXPECT_EQ(count_of(table, "<tr class=\"checked-row"), 4u) << table;
    EXPECT_EQ(count_of(table, "<tr class=\"checked-row broke\">"), 2u) << "y's two rows: " << table;
    EXPECT_NE(table.find("<td rowspan=\"2\"><code>y</code></td><td>n</td><td>equivariant along</td><td>1..3, 5 (4 lengths)"),
              std::string::npos) << table;
    EXPECT_NE(table.find("<td rowspan=\"2\" class=\"number\">0.583333</td>"), std::string::npos) << table;
    EXPECT_LT(html.find("What was checked"), html.find("<h2>Counterexample")) << "the table comes above the counterexample";
    for (const std::string& view : {md, html}) {
        EXPECT_EQ(view.find("2.2204460492503131e-15"), std::string::npos) << "six digits in the views";
        EXPECT_EQ(view.find("0.58333333"), std::string::npos);
    }
}

TEST(CheckedReport, AHoldingReportShowsTheTableAndNoRawJson) {
    report::Record r = checked_record();
    r.verdict = Verdict::holds;
    r.counterexample.reset();
    r.checked->outputs[0] = output_check("y", 13, 0.0, 1e-15, 0.0, 1e-16, 1e-15);
    r.details["audit"]["evaluations"] = 26;
    r.details["audit"]["seconds"] = 0.123456789;
    const std::string html = report::to_html(r);
    EXPECT_EQ(count_of(html, "<tr class=\"checked-row\">"), 4u) << html;
    EXPECT_EQ(count_of(html, ">within tolerance<"), 2u) << html;
    EXPECT_EQ(html.find("{\n"), std::string::npos) << "no JSON dump: " << html;
    EXPECT_NE(html.find("<tr><th>evaluations</th><td>26</td></tr>"), std::string::npos) << html;
    EXPECT_NE(html.find("<tr><th>seconds</th><td>0.123457</td></tr>"), std::string::npos) << html;
    EXPECT_NE(html.find("<a href=\"report.json\">report.json</a>"), std::string::npos) << html;
    const std::string md = report::to_markdown(r);
    EXPECT_EQ(md.find("```json"), std::string::npos) << md;
    EXPECT_NE(md.find("| seconds | `0.123457` |"), std::string::npos) << md;
    EXPECT_EQ(html.find("Closest case"), std::string::npos) << "no closest case recorded";
}

// A report that holds draws, per output, the case that came closest to its tolerance: its heatmap with its scale.
TEST(CheckedReport, AHoldingReportDrawsTheCaseClosestToItsTolerance) {
    report::Record r = checked_record();
    r.verdict = Verdict::holds;
    r.counterexample.reset();
    OutputCheck& g = r.checked->outputs[1];
    g.closest_case = 7;
    g.closest_lengths = {{"n", 3}, {"edges", 2}};
    g.closest = OutputComparison{"g", Tensor{{2}, {9, 12.000000000000004}}, Tensor{{2}, {9, 12}}, 3.5527136788005009e-15,
                                 6.0905e-15, {1}, true, false};
    OutputCheck& y = r.checked->outputs[0];
    y.closest_case = 0;
    y.closest_lengths = {{"n", 1}, {"edges", 0}};
    y.closest = OutputComparison{"y", Tensor{{1, 2}, {1, 2}}, Tensor{{1, 2}, {1, 2}}, 0.0, 1e-15, {}, true, false};
    const json j = report::to_json(r);
    EXPECT_EQ(j["checked"]["outputs"][1]["closest"]["case_index"], 7);
    EXPECT_EQ(j["checked"]["outputs"][1]["closest"]["permuted_layer"], json::parse("[9, 12]"));
    const report::Record back = report::from_json(json::parse(j.dump()));
    EXPECT_EQ(report::to_json(back), j);
    ASSERT_TRUE(back.checked);
    EXPECT_EQ(back.checked->outputs[1].closest.layer_of_permuted.values[1], 12.000000000000004);
    const std::string html = report::to_html(r);
    const std::string svg = between(html, "<h3>Closest case, output g: heatmap of |L(P x) - L(x)|</h3>", "</svg>");
    ASSERT_FALSE(svg.empty()) << html;
    EXPECT_EQ(count_of(svg, "<rect class=\"cell\""), 2u) << svg;
    // The scale runs up to the case's tolerance, not its largest difference: rounding within it is drawn pale.
    EXPECT_NE(svg.find("<g class=\"scale\" data-min=\"0\" data-max=\"6.0905e-15\""), std::string::npos) << svg;
    EXPECT_NE(html.find("Case 7 (edges = 2, n = 3) came closest to its tolerance: largest difference 3.55271e-15 at [1], "
                        "0.583321 of its tolerance 6.0905e-15."), std::string::npos) << html;
    EXPECT_EQ(html.find("Closest case, output y"), std::string::npos) << "y showed no difference: nothing to draw";
    EXPECT_NE(html.find("<code>y</code>: no case showed any difference"), std::string::npos) << html;
    const std::string md = report::to_markdown(r);
    EXPECT_NE(md.find("Closest to its tolerance, output `g`: case 7 (edges = 2, n = 3), largest difference 3.55271e-15 "
                      "at `[1]`, 0.583321 of its tolerance 6.0905e-15."), std::string::npos) << md;
    json bad = j;
    bad["checked"]["outputs"][1]["closest"]["permuted_layer"] = json::parse("[9]");
    EXPECT_NE(read_refusal(bad).find("checked.outputs[1].closest.permuted_layer"), std::string::npos) << read_refusal(bad);
}

// An invariant output's sides are L(P x) and L(x), an equivariant one's L(P x) and P L(x), whatever the record's
// property says of the layer as a whole.
TEST(CheckedReport, EachOutputsSidesAreNamedByItsOwnProperty) {
    report::Record r = checked_record();
    r.counterexample->outputs[1].holds = false;
    r.counterexample->outputs[1].permuted_layer.values[1] = 13;
    for (const std::string& view : {report::to_markdown(r), report::to_html(r)}) {
        EXPECT_NE(view.find("g: L(x) = [9, 13]"), std::string::npos) << view;
        EXPECT_EQ(view.find("g: P L(x)"), std::string::npos) << view;
        EXPECT_NE(view.find("y: P L(x) = [[1, 2], [3, 4.5], [5, 6]]"), std::string::npos) << view;
    }
    const std::string html = report::to_html(r);
    EXPECT_NE(html.find("<h3>Output g: heatmap of |L(P x) - L(x)|</h3>"), std::string::npos) << html;
}

// Every heatmap has a colour scale: its ends' values (0 and the largest difference), one-sided, not symmetric.
TEST(CheckedReport, EveryHeatmapHasAColourScaleWithItsEnds) {
    report::Record r = checked_record();
    r.counterexample->outputs[0].permuted_layer.values[5] = 6.123456789;  // y differs by 0.5 and 0.123457
    const std::string html = report::to_html(r);
    const std::string y = between(html, "<h3>Output y: heatmap", "</svg>");
    ASSERT_FALSE(y.empty()) << html;
    EXPECT_NE(y.find("<g class=\"scale\" data-min=\"0\" data-max=\"0.5\" data-symmetric=\"false\">"), std::string::npos) << y;
    EXPECT_NE(y.find("class=\"label scale-max\">0.5</text>"), std::string::npos) << y;
    EXPECT_NE(y.find("not symmetric about 0"), std::string::npos) << y;
    EXPECT_NE(y.find("<title>n 2, feature 1: 0.123457</title>"), std::string::npos) << y;
    EXPECT_EQ(y.find("0.1234567"), std::string::npos) << y;
    // A reference layer's heatmap has its scale too.
    report::Record check;
    check.verdict = Verdict::violated;
    check.layer = "causal-attention";
    check.signature = one_tensor_signature(2, Output::sequence, 1, 8);
    Counterexample c;
    c.lengths = {{"n", 2}};
    c.perms = {{"n", Permutation({1, 0})}};
    c.inputs["x"] = Tensor{{2, 2}, {1, 2, 3, 4}};
    OutputComparison out;
    out.name = "y";
    out.layer_of_permuted = Tensor{{2, 2}, {1, 2, 3, 4}};
    out.permuted_layer = Tensor{{2, 2}, {1, 2, 3, 4.25}};
    out.where = {1, 1};
    out.max_abs_diff = 0.25;
    out.tolerance = 1e-15;
    out.holds = false;
    c.outputs = {out};
    check.counterexample = c;
    check.weights = kWeightsVersion;
    const std::string h = report::to_html(check);
    EXPECT_NE(h.find("<g class=\"scale\" data-min=\"0\" data-max=\"0.25\" data-symmetric=\"false\">"), std::string::npos) << h;
}

// An output with a batch dim of 1 (y:1,n,2): the dim is squeezed out, the n x 2 rest drawn, the caption says so.
TEST(CheckedReport, AnOutputWithADimOfSizeOneGetsASqueezedHeatmap) {
    report::Record r = checked_record();
    r.signature->outputs[0].dims = {{"", 1}, {"n", 0}, {"", 2}};
    OutputComparison& y = r.counterexample->outputs[0];
    y.layer_of_permuted.shape = {1, 3, 2};
    y.permuted_layer.shape = {1, 3, 2};
    y.where = {0, 1, 1};
    const std::string html = report::to_html(r);
    const std::string svg = between(html, "<h3>Output y: heatmap", "</svg>");
    ASSERT_FALSE(svg.empty()) << html;
    EXPECT_EQ(count_of(svg, "<rect class=\"cell\""), 6u) << svg;
    EXPECT_NE(svg.find("squeezed: dim 0 has size 1 and is left out; the heatmap shows the 3 x 2 that remains"),
              std::string::npos) << svg;
    EXPECT_NE(svg.find(">n &#8595;</text>"), std::string::npos) << svg;
    EXPECT_NE(svg.find(">feature &#8594;</text>"), std::string::npos) << svg;
    EXPECT_NE(svg.find("<g class=\"scale\""), std::string::npos) << svg;
    // Three dims above size 1: no heatmap, and the report says why.
    r.signature->outputs[0].dims = {{"", 2}, {"n", 0}, {"", 2}};
    y.layer_of_permuted = Tensor{{2, 3, 2}, std::vector<double>(12, 1.0)};
    y.permuted_layer = y.layer_of_permuted;
    y.permuted_layer.values[7] = 2.0;
    const std::string three = report::to_html(r);
    EXPECT_EQ(between(three, "<h3>Output y: heatmap", "</svg>").find("<rect class=\"cell\""), std::string::npos);
    EXPECT_NE(three.find("3 dims of size above 1: no heatmap"), std::string::npos) << three;
}

// The graph's panel is sized to the graph: a small graph is not lost in a large panel, a large one not cramped.
TEST(CheckedReport, TheGraphPanelIsSizedToItsGraph) {
    const auto graph_width = [](const report::Record& r) {
        const std::string html = report::to_html(r);
        const std::string tag = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"graph\" width=\"";
        const auto at = html.find(tag);
        return at == std::string::npos ? -1.0 : std::stod(html.substr(at + tag.size()));
    };
    report::Record small = graph_record();  // 3 nodes
    report::Record large = graph_record();
    Counterexample& c = *large.counterexample;
    c.lengths["n"] = 40;
    c.perms["n"] = Permutation::identity(40);
    c.inputs["x"] = Tensor{{40, 2}, std::vector<double>(80, 0.5)};
    c.inputs["pad"] = Tensor{{40}, std::vector<double>(40, 0)};
    c.inputs["edge_index"] = Tensor{{2, 2}, {0, 39, 1, 20}};
    c.outputs[0].layer_of_permuted = c.outputs[0].permuted_layer = Tensor{{40, 2}, std::vector<double>(80, 1)};
    c.outputs[0].permuted_layer.values[3] = 2;
    const double w3 = graph_width(small), w40 = graph_width(large);
    EXPECT_GT(w3, 0);
    EXPECT_LE(w3, 280) << "3 nodes";
    EXPECT_GE(w40, 2.5 * w3) << "40 nodes";
    EXPECT_GE(w40 / 40, 14) << "room for each of the 40 nodes";
}

// ---- permcheck audit with a signature, as a subprocess ------------------------------------------------------

namespace {

struct Audit {
    permcheck::test::Run run;
    json report;
    std::string all() const { return permcheck::test::show(run); }
};

const std::string kExamples = std::string(PERMCHECK_SOURCE_DIR) + "/examples/adapters/";

std::string exec_of(const std::string& adapter) {
    return permcheck::test::shell_quote("python3 " + kExamples + adapter);
}

// `permcheck ARGS` in a scratch directory; with `report`, also --report out, read back.
Audit permcheck_run(const permcheck::test::Scratch& scratch, const std::string& args, bool report = false) {
    Audit a;
    a.run = permcheck::test::run_shell(permcheck::test::shell_quote(PERMCHECK_BIN) + " " + args +
                                           (report ? " --report out" : ""),
                                       scratch.dir());
    if (report) a.report = json::parse(permcheck::test::slurp(scratch.dir() / "out" / "report.json"), nullptr, false);
    return a;
}

// The three commands of issue 12, as written there, CMD an adapter of examples/adapters/.
std::string cross_attention(const std::string& cmd) {
    return "audit --exec " + exec_of(cmd) + " --axis n=1..8 --axis m=1..8 --input q:n,8 --input mem:m,8 --output y:n,8";
}
std::string masked_attention(const std::string& cmd) {
    return "audit --exec " + exec_of(cmd) + " --axis n=1..8 --input x:n,8 --input pad:n:mask --output y:n,8";
}
std::string message_passing(const std::string& cmd) {
    return "audit --exec " + exec_of(cmd) + " --axis nodes=1..8 --axis edges=0..16 --input x:nodes,4 \\\n"
           "    --input edge_index:2,edges:index=nodes --input edge_attr:edges,3 --output y:nodes,4 --output g:4";
}

// A violation shrunk to `length` elements of the one axis at fault, every other axis left alone (identity),
// named in the report and on the terminal.
void expect_shrunk_to(const Audit& a, const std::string& axis, int length) {
    EXPECT_EQ(a.run.exit_code, 1) << a.all();
    EXPECT_EQ(a.report.value("verdict", ""), "violated") << a.all();
    const json& c = a.report["counterexample"];
    ASSERT_TRUE(c.is_object()) << a.all();
    EXPECT_EQ(c["lengths"][axis], length) << c.dump();
    EXPECT_EQ(c["axis_at_fault"], axis) << c.dump();
    for (const auto& [name, p] : c["permutations"].items()) {
        std::vector<int> identity(p.size());
        for (std::size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<int>(i);
        if (name == axis) EXPECT_EQ(p, json::parse("[1, 0]")) << c.dump();
        else EXPECT_EQ(p, json(identity)) << name << " is left alone: " << c.dump();
    }
    EXPECT_NE(a.run.out.find("axis at fault: " + axis), std::string::npos) << a.all();
}

}  // namespace

TEST(SignatureAudit, TheShorthandCannotBeMixedWithASignatureAndSaysSo) {
    const permcheck::test::Scratch scratch("signature-mix");
    const std::pair<std::string, std::string> cases[] = {
        {"--dim 4 --axis n=1..8 --input x:n,4 --output y:n,4", "--dim cannot be mixed with --axis/--input"},
        {"--axis n=1..8 --input x:n,4 --output y:n,4 --max-len 9", "--max-len cannot be mixed with --axis/--input"},
        {"--axis n=1..8 --input x:n,4 --output y:n,4 --min-len 2", "--min-len cannot be mixed with --axis/--input"},
        {"--axis n=1..8 --input x:n,4 --output pooled", "--output pooled is the shorthand's"},
        {"--axis n=1..8 --input x:n,4", "name every output with --output NAME:DIMS"},
        {"", "--dim is required"},
        {"--dim 4 --output pooled --output sequence", "the shorthand has one output"},
        {"--dim 4 --output tree", "--output must be sequence"},
        {"--axis n=1..1024 --input q:n,1048576,1048576 --output y:n,1", "--input q:n,1048576,1048576 holds up to"},
        {"--axis n=1..1024 --input q:n,8 --output y:n,n,n", "--output y:n,n,n holds up to 1073741824 values"},
    };
    for (const auto& [flags, says] : cases) {
        const Audit a = permcheck_run(scratch, "audit --exec true " + flags, /*report=*/true);
        EXPECT_EQ(a.run.exit_code, 2) << flags << "\n" << a.all();
        EXPECT_NE(a.run.err.find(says), std::string::npos) << flags << "\n" << a.all();
        EXPECT_EQ(a.report.value("verdict", ""), "error") << flags << ": an error report all the same";
    }
}

TEST(SignatureAudit, HelpDescribesBothFormsAndHowOutputIsRead) {
    const permcheck::test::Scratch scratch("signature-help");
    const Audit a = permcheck_run(scratch, "audit --help");
    EXPECT_EQ(a.run.exit_code, 0) << a.all();
    for (const char* says : {"--axis", "--input", "NAME:DIMS[:KIND]", "index=AXIS", "a value with ':' is NAME:DIMS",
                             "cannot be mixed"})
        EXPECT_NE(a.run.out.find(says), std::string::npos) << says << "\n" << a.all();
}

TEST(SignatureAudit, CrossAttentionHoldsAndWithMemoryPositionsIsViolatedAtTwoMemoryItems) {
    const permcheck::test::Scratch scratch("signature-cross");
    const Audit holds = permcheck_run(scratch, cross_attention("cross_attention.py"));
    EXPECT_EQ(holds.run.exit_code, 0) << holds.all();
    EXPECT_NE(holds.run.out.find("y equivariant along n, invariant to m"), std::string::npos) << holds.all();
    EXPECT_NE(holds.run.out.find(" holds after 100 cases"), std::string::npos) << holds.all();
    const Audit broken = permcheck_run(scratch, cross_attention("cross_attention.py --memory-positions"), true);
    expect_shrunk_to(broken, "m", 2);
}

TEST(SignatureAudit, MaskedSelfAttentionHoldsAndAMaskThatDoesNotMoveIsViolated) {
    const permcheck::test::Scratch scratch("signature-masked");
    const Audit holds = permcheck_run(scratch, masked_attention("masked_attention.py"));
    EXPECT_EQ(holds.run.exit_code, 0) << holds.all();
    const Audit broken = permcheck_run(scratch, masked_attention("masked_attention.py --fixed-padding"), true);
    expect_shrunk_to(broken, "n", 2);
}

// Against a reference implementation (--property agreement): the same adapter agrees; without the score's scale it
// disagrees, its report names the reference, and the replay line with both commands finds the same case; a
// reference without the property, or the property without a reference, is refused before anything runs.
TEST(SignatureAudit, AgreementWithAReferenceImplementationThroughTwoAdapters) {
    const permcheck::test::Scratch scratch("signature-agreement");
    const std::string reference = " --property agreement --reference-exec " + exec_of("masked_attention.py");
    const Audit holds = permcheck_run(scratch, masked_attention("masked_attention.py") + reference);
    EXPECT_EQ(holds.run.exit_code, 0) << holds.all();
    EXPECT_NE(holds.run.out.find("agreement: y equal to the reference's answer"), std::string::npos) << holds.all();
    const Audit broken = permcheck_run(scratch, masked_attention("masked_attention.py --no-scale") + reference, true);
    ASSERT_EQ(broken.run.exit_code, 1) << broken.all();
    EXPECT_EQ(broken.report.value("property", ""), "agreement");
    EXPECT_NE(broken.report["details"]["audit"].value("reference", "").find("masked_attention.py"), std::string::npos);
    EXPECT_NE(broken.run.out.find("L(x) and R(x) differ by"), std::string::npos) << broken.all();
    const std::string replay = broken.report.value("replay", "");
    EXPECT_NE(replay.find("--reference-exec "), std::string::npos) << replay;
    const permcheck::test::Run again = permcheck::test::run_shell(
        permcheck::test::shell_quote(PERMCHECK_BIN) + replay.substr(std::string("permcheck").size()) + " --report again",
        scratch.dir());
    EXPECT_EQ(again.exit_code, 1) << permcheck::test::show(again);
    const json back = json::parse(permcheck::test::slurp(scratch.dir() / "again" / "report.json"));
    EXPECT_EQ(back["counterexample"], broken.report["counterexample"]);
    const Audit alone = permcheck_run(scratch, masked_attention("masked_attention.py") + " --property agreement", true);
    EXPECT_EQ(alone.run.exit_code, 2) << alone.all();
    EXPECT_NE(alone.run.err.find("give it with --reference-exec"), std::string::npos) << alone.all();
    const Audit stray = permcheck_run(scratch, masked_attention("masked_attention.py") + " --reference-exec true", true);
    EXPECT_EQ(stray.run.exit_code, 2) << stray.all();
    EXPECT_NE(stray.run.err.find("--reference-exec goes with --property agreement"), std::string::npos) << stray.all();
}

TEST(SignatureAudit, AWindowOneTooWideIsFoundAtWPlusOneAndReplaysWithItsWidth) {
    const permcheck::test::Scratch scratch("signature-window");
    const Audit holds = permcheck_run(scratch, masked_attention("masked_attention.py --window 3") +
                                                   " --property window --window 3 --cases 40");
    EXPECT_EQ(holds.run.exit_code, 0) << holds.all();
    const Audit wide = permcheck_run(scratch, masked_attention("masked_attention.py --window 4") +
                                                  " --property window --window 3 --cases 40", true);
    ASSERT_EQ(wide.run.exit_code, 1) << wide.all();
    EXPECT_EQ(wide.report.value("property", ""), "window");
    EXPECT_EQ(wide.report["counterexample"]["lengths"]["n"], 4) << wide.report["counterexample"].dump();
    EXPECT_EQ(wide.report["counterexample"]["part"]["at"], 3) << wide.report["counterexample"].dump();
    EXPECT_EQ(wide.report["details"]["audit"]["settings"]["window"], "3");
    const std::string replay = wide.report.value("replay", "");
    EXPECT_NE(replay.find("--property window --window 3"), std::string::npos) << replay;
    const permcheck::test::Run again = permcheck::test::run_shell(
        permcheck::test::shell_quote(PERMCHECK_BIN) + replay.substr(std::string("permcheck").size()) + " --report again",
        scratch.dir());
    EXPECT_EQ(again.exit_code, 1) << permcheck::test::show(again);
    const json back = json::parse(permcheck::test::slurp(scratch.dir() / "again" / "report.json"));
    EXPECT_EQ(back["counterexample"], wide.report["counterexample"]);
    const permcheck::test::Run saved = permcheck::test::run_shell(
        permcheck::test::shell_quote(PERMCHECK_BIN) + " replay out --exec " + exec_of("masked_attention.py --window 4"),
        scratch.dir());
    EXPECT_EQ(saved.exit_code, 1) << permcheck::test::show(saved);
    const permcheck::test::Run fixed = permcheck::test::run_shell(
        permcheck::test::shell_quote(PERMCHECK_BIN) + " replay out --exec " + exec_of("masked_attention.py --window 3"),
        scratch.dir());
    EXPECT_EQ(fixed.exit_code, 0) << permcheck::test::show(fixed);
    const Audit stray = permcheck_run(scratch, masked_attention("masked_attention.py") + " --window 3");
    EXPECT_EQ(stray.run.exit_code, 2) << stray.all();
    EXPECT_NE(stray.run.err.find("--window goes with --property window"), std::string::npos) << stray.all();
    const Audit bare = permcheck_run(scratch, masked_attention("masked_attention.py") + " --property window");
    EXPECT_EQ(bare.run.exit_code, 2) << bare.all();
    EXPECT_NE(bare.run.err.find("--window W"), std::string::npos) << bare.all();
}

TEST(SignatureAudit, MessagePassingHoldsAndEachBrokenAggregatorIsViolatedOnItsOwnAxis) {
    const permcheck::test::Scratch scratch("signature-graph");
    for (const char* aggr : {"sum", "mean", "max"}) {
        const Audit holds = permcheck_run(scratch, message_passing(std::string("message_passing.py --aggr ") + aggr));
        EXPECT_EQ(holds.run.exit_code, 0) << aggr << "\n" << holds.all();
    }
    const Audit node_index = permcheck_run(scratch, message_passing("message_passing.py --node-index"), true);
    expect_shrunk_to(node_index, "nodes", 2);
    const Audit edge_order = permcheck_run(scratch, message_passing("message_passing.py --edge-order"), true);
    expect_shrunk_to(edge_order, "edges", 2);
    const std::string html = permcheck::test::slurp(scratch.dir() / "out" / "report.html");
    EXPECT_NE(html.find("class=\"graph\""), std::string::npos) << "the counterexample's graph is drawn";
    EXPECT_NE(html.find("<path class=\"edge moved\""), std::string::npos);
}

TEST(SignatureAudit, TheReplayLineOfASignatureAuditRunsAsWrittenAndFindsTheSameCase) {
    const permcheck::test::Scratch scratch("signature-replay");
    const Audit a = permcheck_run(scratch, message_passing("message_passing.py --edge-order"), true);
    ASSERT_EQ(a.run.exit_code, 1) << a.all();
    const std::string replay = a.report.value("replay", "");
    ASSERT_EQ(replay.rfind("permcheck audit --exec ", 0), 0u) << replay;
    EXPECT_NE(a.run.out.find(replay), std::string::npos) << "the terminal prints the same line\n" << a.all();
    const permcheck::test::Run again = permcheck::test::run_shell(
        permcheck::test::shell_quote(PERMCHECK_BIN) + replay.substr(std::string("permcheck").size()) + " --report again",
        scratch.dir());
    EXPECT_EQ(again.exit_code, 1) << permcheck::test::show(again);
    const json back = json::parse(permcheck::test::slurp(scratch.dir() / "again" / "report.json"));
    EXPECT_EQ(back["counterexample"], a.report["counterexample"]);
    EXPECT_EQ(back["signature"], a.report["signature"]);
}

// `permcheck replay` of a signature report: the saved case (lengths, permutations and inputs by name, read back
// from report.json) sent again to the program named with --exec and judged with the report's dtype.
TEST(SignatureAudit, ReplayOfASignatureReportIsStillViolatedByTheBrokenAdapterAndHoldsForTheFixedOne) {
    const permcheck::test::Scratch scratch("signature-replay-case");
    const Audit a = permcheck_run(scratch, cross_attention("cross_attention.py --memory-positions"), true);
    ASSERT_EQ(a.run.exit_code, 1) << a.all();
    const auto replay = [&scratch](const std::string& exec) {
        return permcheck::test::run_shell(permcheck::test::shell_quote(PERMCHECK_BIN) + " replay out" +
                                              (exec.empty() ? "" : " --exec " + exec_of(exec)),
                                          scratch.dir());
    };
    const permcheck::test::Run broken = replay("cross_attention.py --memory-positions");
    EXPECT_EQ(broken.exit_code, 1) << permcheck::test::show(broken);
    EXPECT_EQ(broken.out.rfind("still fails: ", 0), 0u) << permcheck::test::show(broken);
    EXPECT_NE(broken.out.find("m=2, n=1; permutations m (0 1), n (); float64"), std::string::npos)
        << permcheck::test::show(broken);
    EXPECT_NE(broken.out.find("  output y: differ by "), std::string::npos) << permcheck::test::show(broken);
    EXPECT_NE(broken.out.find(" beyond the tolerance "), std::string::npos) << permcheck::test::show(broken);
    const permcheck::test::Run fixed = replay("cross_attention.py");
    EXPECT_EQ(fixed.exit_code, 0) << permcheck::test::show(fixed);
    EXPECT_EQ(fixed.out.rfind("now holds: ", 0), 0u) << permcheck::test::show(fixed);
    EXPECT_NE(fixed.out.find(" within the tolerance "), std::string::npos) << permcheck::test::show(fixed);
    const permcheck::test::Run no_exec = replay("");
    EXPECT_EQ(no_exec.exit_code, 2) << permcheck::test::show(no_exec);
    EXPECT_NE(no_exec.err.find("--exec \"COMMAND\""), std::string::npos) << permcheck::test::show(no_exec);
    const permcheck::test::Run crash = permcheck::test::run_shell(
        permcheck::test::shell_quote(PERMCHECK_BIN) + " replay out --exec 'exit 3'", scratch.dir());
    EXPECT_EQ(crash.exit_code, 2) << permcheck::test::show(crash);
    EXPECT_NE(crash.err.find("could not be evaluated"), std::string::npos) << permcheck::test::show(crash);
}

// The seed inputs of fuzz/fuzz_named_response (corpus and regressions), replayed: the first byte picks the
// length of axis n, the rest is the answer line; each is read in its expected shape or refused.
TEST(NamedProtocol, EveryFuzzingInputIsReadInItsShapeOrRefusedWithInvalidArgument) {
    Signature s;
    s.axes = {{"n", 0, 3}};
    s.inputs = {{"x", {{"n", 0}, {"", 2}}, TensorKind::real, ""}};
    s.outputs = {{"y", {{"n", 0}, {"", 2}}, TensorKind::real, ""}, {"g", {{"", 2}}, TensorKind::real, ""},
                 {"s", {}, TensorKind::real, ""}};
    int files = 0, read = 0;
    for (const char* kind : {"corpus", "regressions"}) {
        const fs::path dir = fs::path(PERMCHECK_SOURCE_DIR) / "fuzz" / kind / "named_response";
        if (!fs::is_directory(dir)) continue;
        for (const auto& e : fs::directory_iterator(dir)) {
            const std::string bytes = permcheck::test::slurp(e.path());
            if (bytes.empty()) continue;
            ++files;
            const auto expected = adapters::expected_outputs(s, {{"n", static_cast<unsigned char>(bytes[0]) % 4}});
            try {
                const adapters::NamedResponse r = adapters::parse_named_response(bytes.substr(1), expected);
                ++read;
                if (r.is_error) continue;
                for (const adapters::ExpectedOutput& o : expected) {  // its shape, or another it holds whole
                    const Tensor& t = r.outputs.at(o.name);
                    EXPECT_EQ(t.values.size(), t.size()) << e.path();
                }
            } catch (const std::invalid_argument& err) {
                EXPECT_GT(std::string(err.what()).size(), 10u) << e.path();
            }
        }
    }
    EXPECT_GE(files, 4) << "the seed corpus fuzz/corpus/named_response is missing";
    EXPECT_GE(read, 3) << "the seed corpus holds valid answers";
}

TEST(SignatureAudit, AnAnswerOfAnotherShapeThanTheSignatureSaysIsAnErrorNamingTheOutputAndTheDim) {
    const permcheck::test::Scratch scratch("signature-shape");
    const Audit a = permcheck_run(scratch,
                                  "audit --exec " + exec_of("cross_attention.py") +
                                      " --axis n=1..8 --axis m=1..8 --input q:n,8 --input mem:m,8 --output y:n,9",
                                  /*report=*/true);
    EXPECT_EQ(a.run.exit_code, 2) << a.all();
    EXPECT_EQ(a.report.value("verdict", ""), "error") << a.all();
    EXPECT_NE(a.report.value("error", "").find(", 9): dim 1, of fixed size 9, has 8"),
              std::string::npos) << a.report.value("error", "");
    EXPECT_NE(a.report.value("error", "").find("for a request of m="), std::string::npos) << a.report.value("error", "");
}

// An error's report records the case the layer erred on (what is unusual about it named in the error), and its
// replay sends that case again: "still errs" through the same adapter, a judgement through a fixed one.
TEST(SignatureAudit, AnErrorReportsTheCaseItErredOnAndItsReplaySendsItAgain) {
    const permcheck::test::Scratch scratch("signature-erred");
    scratch.write("adapter.py", R"(import json, sys
fixed = len(sys.argv) > 1
for line in sys.stdin:
    r = json.loads(line)
    x, edges = r["inputs"]["x"], r["shapes"]["edge_index"][1]
    if edges == 0 and not fixed:
        print(json.dumps({"id": r["id"], "error": "ValueError: no edges to aggregate", "raised": True}), flush=True)
    else:
        print(json.dumps({"id": r["id"], "outputs": {"y": x}}), flush=True)
)");
    const std::string signature = " --axis nodes=1..4 --axis edges=0..4 --input x:nodes,2 "
                                  "--input edge_index:2,edges:index=nodes --output y:nodes,2";
    const Audit a = permcheck_run(scratch, "audit --exec 'python3 adapter.py'" + signature, true);
    EXPECT_EQ(a.run.exit_code, 2) << a.all();
    EXPECT_EQ(a.report.value("verdict", ""), "error") << a.all();
    EXPECT_NE(a.report.value("error", "").find("no edges to aggregate"), std::string::npos) << a.all();
    EXPECT_NE(a.report.value("error", "").find("(the case it erred on has no edges"), std::string::npos) << a.all();
    const json& c = a.report["counterexample"];
    ASSERT_TRUE(c.is_object()) << a.all();
    EXPECT_TRUE(c.value("erred", false));
    EXPECT_EQ(c["lengths"].value("edges", -1), 0);
    EXPECT_TRUE(c["inputs"].contains("x"));
    // Asked again alone and shrunk (no edges, and as few nodes and values as still raise): the side named.
    EXPECT_NE(a.run.out.find("the layer erred on it (raising answering x"), std::string::npos) << a.all();
    EXPECT_NE(a.run.out.find("nothing was compared"), std::string::npos) << a.all();
    EXPECT_EQ(c.value("erred_side", ""), "x") << a.all();
    EXPECT_EQ(c["lengths"].value("nodes", -1), 1) << a.all();
    const std::string md = permcheck::test::slurp(scratch.dir() / "out" / "report.md");
    EXPECT_NE(md.find("#### The case the layer erred on: "), std::string::npos) << md;
    const auto replay = [&](const std::string& command) {
        return permcheck::test::run_shell(permcheck::test::shell_quote(PERMCHECK_BIN) + " replay out --exec " +
                                              permcheck::test::shell_quote(command), scratch.dir());
    };
    const permcheck::test::Run still = replay("python3 adapter.py");
    EXPECT_EQ(still.exit_code, 1) << permcheck::test::show(still);
    EXPECT_NE(still.out.find("still errs: the saved case the layer erred on (edges=0"), std::string::npos)
        << permcheck::test::show(still);
    const permcheck::test::Run fixed = replay("python3 adapter.py fixed");
    EXPECT_EQ(fixed.exit_code, 0) << permcheck::test::show(fixed);
    EXPECT_NE(fixed.out.find("answered now: the saved case the layer erred on"), std::string::npos)
        << permcheck::test::show(fixed);
    // Its repro.py asks the case again without permcheck: exit 1 while it raises, 0 once it answers.
    EXPECT_EQ(a.report.value("repro", ""), "repro.py") << a.all();
    const auto repro = [&](const std::string& command) {
        return permcheck::test::run_shell("python3 out/repro.py " + permcheck::test::shell_quote(command), scratch.dir());
    };
    const permcheck::test::Run raises = repro("python3 adapter.py");
    EXPECT_EQ(raises.exit_code, 1) << permcheck::test::show(raises);
    EXPECT_NE(raises.out.find("no edges to aggregate"), std::string::npos) << permcheck::test::show(raises);
    const permcheck::test::Run answers = repro("python3 adapter.py fixed");
    EXPECT_EQ(answers.exit_code, 0) << permcheck::test::show(answers);
}

TEST(SignatureAudit, JobsGiveTheSameVerdictAndCounterexample) {
    const permcheck::test::Scratch one("signature-jobs-1"), two("signature-jobs-2");
    const std::string cmd = message_passing("message_passing.py --node-index");
    const Audit a = permcheck_run(one, cmd, true);
    const Audit b = permcheck_run(two, cmd + " --jobs 2", true);
    EXPECT_EQ(a.run.exit_code, 1) << a.all();
    EXPECT_EQ(b.run.exit_code, 1) << b.all();
    EXPECT_EQ(a.report["counterexample"], b.report["counterexample"]);
}

TEST(NamedProtocol, APairwiseInputAndABatchDimNestInTheOrderOfTheirDims) {
    Signature s;
    s.axes = {{"n", 1, 8}};
    s.inputs = {{"x", {{"", 1}, {"n", 0}, {"", 2}}, TensorKind::real, ""}, {"bias", {{"n", 0}, {"n", 0}}, TensorKind::real, ""}};
    s.outputs = {{"y", {{"", 1}, {"n", 0}, {"", 2}}, TensorKind::real, ""}};
    Tensors in;
    in["x"] = Tensor{{1, 2, 2}, {1, 2, 3, 4}};
    in["bias"] = Tensor{{2, 2}, {0, 0.5, -0.5, 0}};
    const json j = json::parse(adapters::format_named_request(2, s, in));
    EXPECT_EQ(j["inputs"]["x"], json::parse("[[[1, 2], [3, 4]]]"));
    EXPECT_EQ(j["inputs"]["bias"], json::parse("[[0, 0.5], [-0.5, 0]]"));
    EXPECT_EQ(j["shapes"]["x"], json::parse("[1, 2, 2]"));
    const auto expected = adapters::expected_outputs(s, adapters::lengths_of(s, in));
    const adapters::NamedResponse r =
        adapters::parse_named_response(R"({"id":2,"outputs":{"y":[[[1,2],[3,4]]]}})", expected);
    EXPECT_EQ(r.outputs.at("y").shape, (std::vector<int>{1, 2, 2}));
    EXPECT_EQ(r.outputs.at("y").values, (std::vector<double>{1, 2, 3, 4}));
    const auto batchless = adapters::parse_named_response(R"({"id":2,"outputs":{"y":[[1,2],[3,4]]}})", expected);
    EXPECT_EQ(batchless.outputs.at("y").shape, (std::vector<int>{2, 2})) << "read in its own shape, for the audit to judge";
}

TEST(SignatureAudit, NaNInAnAnswerIsTheVerdictNonFinite) {
    const permcheck::test::Scratch scratch("signature-nan");
    const fs::path script = scratch.write("nan.py", R"(import json, sys
for line in sys.stdin:
    r = json.loads(line)
    n = r["shapes"]["q"][0]
    print(json.dumps({"id": r["id"], "outputs": {"y": [[float("nan"), 0.0]] * n}}), flush=True)
)");
    const Audit a = permcheck_run(scratch,
                                  "audit --exec " + permcheck::test::shell_quote("python3 " + script.string()) +
                                      " --axis n=1..4 --input q:n,2 --output y:n,2",
                                  /*report=*/true);
    EXPECT_EQ(a.run.exit_code, 1) << a.all();
    EXPECT_EQ(a.report.value("verdict", ""), "non-finite") << a.all();
    EXPECT_EQ(a.report["counterexample"]["outputs"]["y"]["layer_of_permuted"][0][0], "NaN") << a.report.dump();
}

TEST(SignatureReport, AnEdgeListOfPairsIsDrawnTooAndANodePermutationMarksTheNodesItMoves) {
    report::Record r = graph_record();
    r.signature->inputs[2].dims = {{"edges", 0}, {"", 2}};
    Counterexample& c = *r.counterexample;
    c.inputs["edge_index"] = Tensor{{2, 2}, {0, 1, 2, 1}};  // the same edges 0 -> 1 and 2 -> 1, as pairs
    c.perms["n"] = Permutation({1, 0, 2});
    c.perms["edges"] = Permutation::identity(2);
    c.axis_at_fault = "n";
    const std::string html = report::to_html(r);
    // The edges' order was left alone, but the node swap renumbers an end of each: both are drawn as moved.
    EXPECT_NE(html.find("edge 0: 0 &#8594; 1 (moved)</title>"), std::string::npos);
    EXPECT_NE(html.find("edge 1: 2 &#8594; 1 (moved)</title>"), std::string::npos);
    EXPECT_NE(html.find("<title>node 0 (moved)</title>"), std::string::npos);
    EXPECT_NE(html.find("<title>node 1 (moved)</title>"), std::string::npos);
    EXPECT_NE(html.find("<title>node 2</title>"), std::string::npos);
    EXPECT_EQ(html.find("aria-label=\"graph of edge_index in P x\""), std::string::npos)
        << "a record without the transformed inputs draws x's graph alone";
    c.inputs["edge_index"] = Tensor{{2, 2}, {2, 2, 2, 2}};  // two self-loops at node 2, away from the swap
    const std::string apart = report::to_html(r);
    EXPECT_EQ(apart.find("<path class=\"edge moved\""), std::string::npos) << "no edge touches a moved node";
    c.transformed_lengths = c.lengths;
    c.transformed["edge_index"] = Tensor{{2, 2}, {2, 2, 2, 2}};  // P x: the same loops
    const std::string both = report::to_html(r);
    EXPECT_NE(both.find("aria-label=\"graph of edge_index in x\""), std::string::npos);
    EXPECT_NE(both.find("aria-label=\"graph of edge_index in P x\""), std::string::npos) << "drawn after the permutation";
    EXPECT_NE(both.find("P x: node i is x's node p[i]"), std::string::npos);
}

// Every kind of finding is written to report.json as counterexample.kind and read back as that kind, with its facts;
// a report written before the field existed is read by its verdict and fields.
TEST(FindingKinds, EachKindIsWrittenAndReadBackWithItsFacts) {
    const Signature s{{parse_axis("n=1..4")}, {parse_input("x:n,2")}, {parse_output("y:n,2")}};
    Counterexample base;
    base.lengths = {{"n", 1}};
    base.perms = identities(base.lengths);
    base.inputs = {{"x", Tensor{{1, 2}, {0.5, -1.0}}}};
    const PriorRequest before{{{"n", 2}}, {{"x", Tensor{{2, 2}, {1, 2, 3, 4}}}}};
    const std::vector<FindingKind> kinds{found::Violated{}, found::Raised{"IndexError: 3", true, false}, found::NonFinite{},
                                         found::Nondeterministic{"", "ValueError", false, false, ""},
                                         found::HistoryDependent{before}, found::BatchDependent{}, found::Erred{}};
    for (const FindingKind& kind : kinds) {
        report::Record r;
        r.verdict = verdict_of(kind);
        r.signature = s;
        r.counterexample = base;
        r.counterexample->kind = kind;
        const nlohmann::json j = report::to_json(r);
        EXPECT_EQ(j["counterexample"]["kind"], finding_kind_name(kind));
        const report::Record back = report::from_json(j);
        ASSERT_TRUE(back.counterexample);
        EXPECT_EQ(back.counterexample->kind.index(), kind.index()) << finding_kind_name(kind);
        nlohmann::json old = j;  // as written before the field existed
        old["counterexample"].erase("kind");
        EXPECT_EQ(report::from_json(old).counterexample->kind.index(), kind.index()) << finding_kind_name(kind);
    }
    report::Record raised;
    raised.verdict = Verdict::violated;
    raised.signature = s;
    raised.counterexample = base;
    raised.counterexample->kind = found::Raised{"IndexError: 3", true, false};
    const Counterexample back = *report::from_json(report::to_json(raised)).counterexample;
    EXPECT_EQ(back.raised(), "IndexError: 3");
    EXPECT_TRUE(back.raised_by_reference());
    report::Record history = raised;
    history.verdict = Verdict::history_dependent;
    history.counterexample->kind = found::HistoryDependent{before};
    const Counterexample after = *report::from_json(report::to_json(history)).counterexample;
    ASSERT_TRUE(after.asked_before());
    EXPECT_EQ(after.asked_before()->inputs.at("x").values, before.inputs.at("x").values);
    nlohmann::json unknown = report::to_json(raised);
    unknown["counterexample"]["kind"] = "exploded";
    EXPECT_THROW(report::from_json(unknown), std::invalid_argument);
}
