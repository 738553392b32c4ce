// <permcheck/serve.h>: a C++ layer as an adapter program. The answers it writes for one-tensor, named and batched
// requests, its error answers (never a stop), and the exactness of its numbers; tests/serve_cpp.sh audits the
// examples through `permcheck audit --exec`.
#include <permcheck/serve.h>
#include <permcheck/audit.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Eigen::MatrixXd;
using json = nlohmann::json;

// The answer lines of `layer` to `requests`, one per request line.
template <class F> std::vector<std::string> answers(const F& layer, const std::string& requests, int batch = 256) {
    std::istringstream in(requests);
    std::ostringstream out;
    permcheck::ServeOptions options;
    options.batch = batch;
    options.input = &in;
    options.output = &out;
    EXPECT_EQ(permcheck::serve(layer, options), 0);
    std::vector<std::string> lines;
    std::istringstream read(out.str());
    for (std::string line; std::getline(read, line);) lines.push_back(line);
    return lines;
}

MatrixXd twice(const MatrixXd& x) { return 2.0 * x; }

TEST(Serve, AOneTensorLayerAnswersInOrderAndAnnouncesItsBatchesOnce) {
    const auto lines = answers(twice, "{\"id\":1,\"x\":[[0.1,2],[3,-4]]}\n\n{\"id\":2,\"x\":[[1e-300]]}\n");
    ASSERT_EQ(lines.size(), 2u);  // the blank line is no request
    const json first = json::parse(lines[0]), second = json::parse(lines[1]);
    EXPECT_EQ(first["id"], 1);
    EXPECT_EQ(first["y"], json::parse("[[0.2,4],[6,-8]]"));
    EXPECT_EQ(first["batch"], 256);
    EXPECT_EQ(second["id"], 2);
    EXPECT_FALSE(second.contains("batch"));
    EXPECT_EQ(second["y"][0][0].get<double>(), 2e-300);  // shortest round-trip text reads back exactly
    EXPECT_FALSE(json::parse(answers(twice, "{\"id\":1,\"x\":[[1]]}\n", 1)[0]).contains("batch"));
}

TEST(Serve, ABatchIsAnsweredItemByItemEachBadItemWithItsOwnError) {
    const auto lines = answers(twice, "{\"id\":9,\"batch\":[{\"x\":[[1]]},{\"x\":[[1],[2,3]]},{\"x\":[[0.5,1]]}]}\n");
    ASSERT_EQ(lines.size(), 1u);
    const json a = json::parse(lines[0]);
    EXPECT_EQ(a["id"], 9);
    ASSERT_EQ(a["batch"].size(), 3u);
    EXPECT_EQ(a["batch"][0], json::parse("{\"y\":[[2]]}"));
    EXPECT_NE(a["batch"][1]["error"].get<std::string>().find("row 1: expected an array of 1 numbers"), std::string::npos);
    EXPECT_EQ(a["batch"][2], json::parse("{\"y\":[[1,2]]}"));
}

TEST(Serve, AVectorAnswerIsOneVectorAndAFloatLayerComputesInFloat) {
    const auto pooled = [](const MatrixXd& x) -> Eigen::VectorXd { return x.colwise().sum().transpose(); };
    EXPECT_EQ(json::parse(answers(pooled, "{\"id\":1,\"x\":[[1,2],[3,4]]}\n")[0])["y"], json::parse("[4,6]"));
    const auto in_float = [](const Eigen::MatrixXf& x) { return Eigen::MatrixXf(x * 3.0f); };
    const json y = json::parse(answers(in_float, "{\"id\":1,\"x\":[[0.1]]}\n")[0])["y"];
    EXPECT_EQ(y[0][0].get<double>(), static_cast<double>(0.1f * 3.0f));  // the float, widened exactly
}

TEST(Serve, ANamedLayerAnswersEveryOutputAskedInItsShapeWithNonFiniteValuesAsTheProtocolWritesThem) {
    const auto layer = [](const permcheck::Tensors& in) {
        const permcheck::Tensor& x = in.at("x");
        permcheck::Tensor sum{{x.shape[1]}, std::vector<double>(static_cast<std::size_t>(x.shape[1]), 0.0)};
        for (std::size_t k = 0; k < x.values.size(); ++k) sum.values[k % sum.values.size()] += x.values[k];
        const double inf = std::numeric_limits<double>::infinity();
        return permcheck::Tensors{{"g", sum}, {"odd", {{}, {std::nan("")}}}, {"edge", {{2, 1}, {inf, -inf}}}};
    };
    const auto lines = answers(layer,
                               "{\"id\":4,\"inputs\":{\"x\":[[1,2],[3,4]],\"pad\":[true,false]},\"shapes\":{\"x\":[2,2],"
                               "\"pad\":[2]},\"kinds\":{\"x\":\"float\",\"pad\":\"mask\"},\"outputs\":[\"g\",\"odd\",\"edge\"]}\n"
                               "{\"id\":5,\"inputs\":{\"x\":[[1]]},\"outputs\":[\"missing\"]}\n"
                               "{\"id\":6,\"x\":[[1,2]]}\n");
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0], "{\"id\":4,\"outputs\":{\"g\":[4,6],\"odd\":NaN,\"edge\":[[Infinity],[-Infinity]]},\"batch\":256}");
    EXPECT_EQ(json::parse(lines[1])["error"], "the layer returned no output 'missing' (it returned edge, g, odd)");
    EXPECT_EQ(json::parse(lines[2])["error"], "the layer returned no output 'y' (it returned edge, g, odd)");
}

TEST(Serve, ANamedLayerGetsAOneTensorRequestAsXAndAOneTensorLayerANamedRequestOfOneInput) {
    const auto named = [](const permcheck::Tensors& in) {
        permcheck::Tensor y = in.at("x");
        for (double& v : y.values) v += 1;
        return permcheck::Tensors{{"y", y}};
    };
    EXPECT_EQ(json::parse(answers(named, "{\"id\":1,\"x\":[[1,2],[3,4]]}\n")[0])["y"], json::parse("[[2,3],[4,5]]"));
    const auto lines = answers(twice, "{\"id\":2,\"inputs\":{\"src\":[[1,2]]},\"shapes\":{\"src\":[1,2]},\"outputs\":[\"out\"]}\n"
                                      "{\"id\":3,\"inputs\":{\"a\":[1],\"b\":[2]},\"outputs\":[\"out\"]}\n");
    EXPECT_EQ(json::parse(lines[0])["outputs"], json::parse("{\"out\":[[2,4]]}"));
    EXPECT_NE(json::parse(lines[1])["error"].get<std::string>().find("one-tensor layer"), std::string::npos);
}

// A running sum over x:n, decoded in chunks: the state is the sum so far.
permcheck::Tensors running_sum(std::any& state, const permcheck::Tensors& chunk, int) {
    double sum = state.has_value() ? std::any_cast<double>(state) : 0.0;
    permcheck::Tensor y = chunk.at("x");
    for (double& v : y.values) v = sum += v;
    state = sum;
    return permcheck::Tensors{{"y", y}};
}

TEST(Serve, AChunkStepAnswersAChunkedRequestInChunksAndSaysSo) {
    permcheck::Signature s;
    s.axes = {permcheck::parse_axis("n=1..8")};
    s.inputs = {permcheck::parse_input("x:n")};
    s.outputs = {permcheck::parse_output("y:n")};
    const permcheck::NamedBlackBox layer = permcheck::chunked_black_box(running_sum, s);
    const std::string x = "\"inputs\":{\"x\":[1,2,3]},\"shapes\":{\"x\":[3]},\"outputs\":[\"y\"]";
    const auto lines = answers(layer, "{\"id\":1," + x + ",\"chunks\":{\"axis\":\"n\",\"ends\":[1,3]}}\n{\"id\":2," + x + "}\n");
    ASSERT_EQ(lines.size(), 2u);
    const json chunked = json::parse(lines[0]), one_pass = json::parse(lines[1]);
    EXPECT_EQ(chunked["outputs"]["y"], json::parse("[1,3,6]")) << lines[0];
    EXPECT_EQ(chunked["chunked"], true) << lines[0];
    EXPECT_EQ(one_pass["outputs"]["y"], json::parse("[1,3,6]")) << lines[1];
    EXPECT_FALSE(one_pass.contains("chunked")) << lines[1];
    // A layer that does not decode in chunks never says it did.
    const permcheck::NamedBlackBox plain = [](const permcheck::Tensors& in) { return permcheck::Tensors{{"y", in.at("x")}}; };
    EXPECT_FALSE(json::parse(answers(plain, "{\"id\":1," + x + ",\"chunks\":{\"axis\":\"n\",\"ends\":[1,3]}}\n")[0])
                     .contains("chunked"));
    // A step that throws on a chunk: the layer raised ("raised": true, the chunk named), and serving goes on.
    const permcheck::ChunkStep one_token_steps = [](std::any& state, const permcheck::Tensors& chunk, int offset) {
        if (offset > 0 && chunk.at("x").shape[0] > 1) throw std::runtime_error("one token at a time");
        return running_sum(state, chunk, offset);
    };
    const auto raised = answers(permcheck::chunked_black_box(one_token_steps, s),
                                "{\"id\":1," + x + ",\"chunks\":{\"axis\":\"n\",\"ends\":[1,3]}}\n{\"id\":2," + x + "}\n");
    ASSERT_EQ(raised.size(), 2u);
    EXPECT_EQ(json::parse(raised[0])["raised"], true) << raised[0];
    EXPECT_EQ(json::parse(raised[0])["error"], "one token at a time (chunk 2 of 2, positions 1 to 2)") << raised[0];
    EXPECT_EQ(json::parse(raised[1])["outputs"]["y"], json::parse("[1,3,6]")) << raised[1];
}

TEST(Serve, WhatCannotBeAnsweredGetsAnErrorAnswerWithItsIdAndServingGoesOn) {
    int calls = 0;
    const auto layer = [&calls](const MatrixXd& x) -> MatrixXd {
        ++calls;
        if (x(0, 0) < 0) throw std::runtime_error("weights not found");
        if (x(0, 0) > 100) throw 7;
        return x;
    };
    const auto lines = answers(layer,
                               "{\"id\":1,\"x\":[[-1]]}\n"
                               "{\"id\":2,\"x\":[[1000]]}\n"
                               "not json\n"
                               "{\"id\":3,\"x\":[[1,\"a\"]]}\n"
                               "{\"id\":4,\"inputs\":{\"x\":[[1,2]]},\"shapes\":{\"x\":[2,2]},\"outputs\":[\"y\"]}\n"
                               "{\"id\":5,\"inputs\":{\"x\":[1]},\"shapes\":{\"x\":[-1]},\"outputs\":[\"y\"]}\n"
                               "{\"id\":6,\"inputs\":{\"x\":[[1]]},\"outputs\":[]}\n"
                               "{\"id\":7,\"stacked\":2,\"inputs\":{}}\n"
                               "[]\n"
                               "{\"id\":8}\n"
                               "{\"id\":9,\"x\":[[5]]}\n");
    ASSERT_EQ(lines.size(), 11u);
    const std::vector<std::string> expected = {
        "weights not found",
        "the layer threw something that is not a std::exception",
        "the request is not JSON",
        "\"x\", row 0: expected a number, got string",
        "input 'x', dim 0: expected an array of 2 entries, got 1 entries",
        "\"shapes\" of input 'x': expected lengths >= 0, got -1",
        "\"outputs\" must be a non-empty list of output names",
        "a stacked request",
        "a request is a JSON object, got array",
        "a request holds \"x\" (one tensor) or \"inputs\" (named inputs); this one holds neither",
    };
    const std::vector<json> ids = {1, 2, nullptr, 3, 4, 5, 6, 7, nullptr, 8};
    for (std::size_t k = 0; k < expected.size(); ++k) {
        const json a = json::parse(lines[k]);
        EXPECT_EQ(a["id"], ids[k]) << lines[k];
        EXPECT_NE(a["error"].get<std::string>().find(expected[k]), std::string::npos) << lines[k];
    }
    EXPECT_EQ(json::parse(lines[10])["y"], json::parse("[[5]]"));
    EXPECT_EQ(calls, 3);  // only the well-formed one-tensor requests reached the layer
}

}  // namespace
