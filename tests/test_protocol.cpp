// The line protocol of the subprocess adapter (adapters/protocol.h), as pure functions over lines: request
// lines and the numbers they carry, answers and what is refused in them, batch announcements, batched answers,
// batch dims, stacked requests and answers with their float64 base64. No process is started here.
// (The tap answer's parser is tested with the taps, tests/test_taps.cpp; the named protocol, test_signature_cli.cpp.)
#include "adapters/exec_adapter.h"
#include "adapters/protocol.h"
#include "cases/signature.h"
#include "tests/support/stacked.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace permcheck {
namespace {

using test::stacked_item;
using test::stacked_signature;

// ---------------------------------------------------------------------------------------------------------
// The protocol's lines

using adapters::parse_response;

// The one-tensor form's answer y, as a matrix (a pooled vector: one row).
Mat<double> y_of(const adapters::NamedResponse& r) { return tensor_matrix::as_matrix(r.outputs.at("y")); }

TEST(ExecProtocol, ParsesRowsAndPooledVectors) {
    const auto rows = parse_response(R"({"id": 7, "y": [[0.5, -1.0], [2.0, 0.25]]})");
    EXPECT_EQ(rows.id, 7);
    EXPECT_EQ(rows.outputs.at("y").shape, (std::vector<int>{2, 2}));
    EXPECT_EQ(y_of(rows)(1, 1), 0.25);
    const auto pooled = parse_response(R"({"id": 8, "y": [1, 2, 3]})");
    EXPECT_EQ(pooled.outputs.at("y").shape, (std::vector<int>{3})) << "one flat array: a vector";
    EXPECT_EQ(y_of(pooled).rows(), 1);
    EXPECT_EQ(y_of(pooled).cols(), 3);
}

TEST(ExecProtocol, AcceptsPythonsNonFiniteTokensOutsideStringsOnly) {
    const Mat<double> y = y_of(parse_response(R"({"id": 1, "y": [NaN, Infinity, -Infinity, 1.5]})"));
    EXPECT_TRUE(std::isnan(y(0, 0)));
    EXPECT_EQ(y(0, 1), std::numeric_limits<double>::infinity());
    EXPECT_EQ(y(0, 2), -std::numeric_limits<double>::infinity());
    const auto e = parse_response(R"({"id": 1, "error": "saw NaN and \"Infinity\""})");
    EXPECT_TRUE(e.is_error);
    EXPECT_EQ(e.error, "saw NaN and \"Infinity\"");
    EXPECT_THROW(parse_response(R"({"id": 1, "y": ["NaN"]})"), std::invalid_argument) << "a string is not a number";
    EXPECT_THROW(parse_response(R"({"id": 1, "y": [NaNa]})"), std::invalid_argument);
}

TEST(ExecProtocol, RejectsWhatIsNotTheProtocolSayingWhatWasExpected) {
    const std::pair<std::string, const char*> cases[] = {
        {"Loading weights...", "not JSON"},
        {"[1, 2]", "not an object"},
        {R"({"y": [1]})", "\"id\""},
        {R"({"id": 1})", "neither"},
        {R"({"id": 1, "y": 3})", "not an array"},
        {R"({"id": 1, "y": []})", "empty"},
        {R"({"id": 5, "y": [[]]})", "row 0 of \"y\" is an empty array"},
        {R"({"id": 5, "y": [[], []]})", "row 0 of \"y\" is an empty array"},
        {R"({"id": 1, "y": [[1, 2], [3]]})", "equal width"},
        {R"({"id": 1, "y": [[1], 2]})", "not an array"},
        {R"({"id": 1, "y": [[1, null]]})", "expected numbers"},
        {"", "not JSON"},
        {std::string(100000, '['), "levels deep; at most 64"},
    };
    for (const auto& [line, says] : cases) {
        try {
            parse_response(line);
            ADD_FAILURE() << "accepted: " << line.substr(0, 40);
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    }
}

TEST(ExecProtocol, DeeplyNestedAnswersNeitherCrashNorPass) {
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    EXPECT_THROW(parse_response(R"({"id": 1, "error": )" + deep + "}"), std::invalid_argument);
    const auto e = parse_response(R"({"id": 1, "error": [[["shallow"]]]})");
    EXPECT_TRUE(e.is_error);
    EXPECT_NE(e.error.find("not a string"), std::string::npos);
    EXPECT_THROW(parse_response(R"({"id": 1, "y": )" + deep + "}"), std::invalid_argument);
}

TEST(ExecProtocol, RequestNumbersRoundTripExactly) {
    std::mt19937_64 rng(5);
    Mat<double> x(6, 5);
    for (Eigen::Index i = 0; i < x.size(); ++i) {
        const std::uint64_t bits = rng();
        double v;
        std::memcpy(&v, &bits, sizeof v);
        x.data()[i] = std::isfinite(v) ? v : 1.0 / 3.0;
    }
    x(0, 0) = 5e-324;
    x(0, 1) = -0.1;
    const nlohmann::json j = nlohmann::json::parse(adapters::format_request(9, x));
    EXPECT_EQ(j["id"], 9);
    for (Eigen::Index i = 0; i < x.rows(); ++i)
        for (Eigen::Index k = 0; k < x.cols(); ++k) EXPECT_EQ(j["x"][i][k].get<double>(), x(i, k));
}

// ---------------------------------------------------------------------------------------------------------
// Batched requests (docs/protocol.md, "Batched requests")

TEST(ExecProtocol, BatchAnnouncementIsAnIntegerOfAtLeastOne) {
    EXPECT_EQ(adapters::parse_batch_announcement(R"({"id": 1, "y": [[1]], "batch": 64})"), 64);
    EXPECT_EQ(adapters::parse_batch_announcement(R"({"id": 1, "y": [[1]]})"), 0) << "no announcement";
    EXPECT_EQ(adapters::parse_batch_announcement(R"({"id": 1, "y": [[1]], "batch": 1099511627776})"), INT32_MAX)
        << "any integer >= 1: the batch is capped by permcheck";
    EXPECT_EQ(adapters::parse_batch_announcement(R"({"id": 1, "y": [[1]], "batch": 18446744073709551615})"), INT32_MAX);
    for (const char* bad : {R"({"id": 1, "y": [[1]], "batch": 0})", R"({"id": 1, "y": [[1]], "batch": "8"})",
                            R"({"id": 1, "y": [[1]], "batch": 2.5})", R"({"id": 1, "y": [[1]], "batch": [1]})"}) {
        try {
            adapters::parse_batch_announcement(bad);
            ADD_FAILURE() << "accepted: " << bad;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("expected an integer >= 1"), std::string::npos) << e.what();
        }
    }
}

TEST(ExecProtocol, BatchedAnswersAreCountedAndEachItemIsAnOrdinaryAnswer) {
    std::int64_t id = 0;
    std::optional<std::string> error;
    const auto items = adapters::batch_items(R"({"id": 4, "batch": [{"y": [[1.5]]}, {"error": "boom"}, {"y": [NaN]}]})",
                                             3, id, error);
    EXPECT_EQ(id, 4);
    EXPECT_FALSE(error);
    ASSERT_EQ(items.size(), 3u);
    EXPECT_EQ(y_of(parse_response(items[0]))(0, 0), 1.5);
    EXPECT_EQ(parse_response(items[0]).id, 4);
    EXPECT_TRUE(parse_response(items[1]).is_error);
    EXPECT_EQ(parse_response(items[1]).error, "boom");
    EXPECT_TRUE(std::isnan(y_of(parse_response(items[2]))(0, 0))) << "NaN survives the item's round trip";
    adapters::batch_items(R"({"id": 5, "error": "out of memory"})", 3, id, error);
    EXPECT_EQ(error.value_or(""), "out of memory") << "an error for the whole request";
    const std::pair<std::string, const char*> bad[] = {
        {R"({"id": 6, "batch": [{"y": [[1]]}]})", "holds 1 answers for a request of 3 items"},
        {R"({"id": 6, "y": [[1]]})", "no \"batch\" array"},
        {R"({"id": 6, "batch": [1, 2, 3]})", "item 0 of \"batch\" is number"},
    };
    for (const auto& [line, says] : bad) {
        try {
            adapters::batch_items(line, 3, id, error);
            ADD_FAILURE() << "accepted: " << line;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    }
}

TEST(ExecProtocol, BatchDimsAreEachTensorsFirstFixedDimOfSize1) {
    Signature s;
    s.axes = {parse_axis("n=1..8")};
    s.inputs = {parse_input("x:1,n,8"), parse_input("pad:1,n:mask")};
    s.outputs = {parse_output("y:1,n,8")};
    EXPECT_EQ(adapters::batch_dims_of(s), (std::map<std::string, int>{{"pad", 0}, {"x", 0}, {"y", 0}}));
    s.inputs = {parse_input("x:n,1,8")};
    s.outputs = {parse_output("y:n,1,8")};
    EXPECT_EQ(adapters::batch_dims_of(s), (std::map<std::string, int>{{"x", 1}, {"y", 1}})) << "batch_first=False";
    s.outputs = {parse_output("y:n,8")};
    EXPECT_TRUE(adapters::batch_dims_of(s).empty()) << "an output without a dim of size 1: no batch dims at all";
    EXPECT_EQ(adapters::format_batch_request(3, {R"({"x":[[1.0]]})", R"({"x":[[2.0]]})"}, {{"x", 1}}),
              R"({"id":3,"batch_dims":{"x":1},"batch":[{"x":[[1.0]]},{"x":[[2.0]]}]})");
}

// Stacked batches (docs/protocol.md, "Batched requests")

TEST(ExecProtocol, Float64Base64CarriesEveryValueExactlyAndRefusesAnythingElse) {
    const std::vector<double> values{0.0, -0.0, 5e-324, 1.0 / 3.0, -1e308, std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::quiet_NaN(), 0.1};
    const std::string text = adapters::float64_base64(values);
    EXPECT_EQ(text.size(), 88u) << "64 bytes: 22 groups of 4 characters, the last padded";
    EXPECT_EQ(adapters::float64_base64({1.0}), "AAAAAAAA8D8=") << "little-endian IEEE-754 binary64";
    const std::vector<double> back = adapters::float64_values(text, values.size(), "x");
    ASSERT_EQ(back.size(), values.size());
    for (std::size_t k = 0; k < values.size(); ++k)
        EXPECT_EQ(std::bit_cast<std::uint64_t>(back[k]), std::bit_cast<std::uint64_t>(values[k])) << k;
    const std::vector<std::pair<std::string, std::string>> bad{
        {text.substr(4), "84 base64 characters, expected 88 (8 little-endian float64 values)"},
        {"AAAAAAA!8D8=", "not base64 at character 7 of 12"},
        {"AAAAAAAA8D==", "not base64"},
        {"AAAA=AAA8D8=", "not base64 at character 4"}};
    for (const auto& [line, message] : bad) {
        try {
            adapters::float64_values(line, line.size() == 12 ? 1 : values.size(), "output 'y'");
            ADD_FAILURE() << "accepted " << line;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("output 'y': " + message), std::string::npos) << e.what();
        }
    }
}
TEST(ExecProtocol, AStackedRequestHoldsEachInputStackedOnItsBatchDimInBinary) {
    const Signature s = stacked_signature("x:n,1,2", "y:n,1,2");
    const auto dims = adapters::batch_dims_of(s);
    const nlohmann::json j = nlohmann::json::parse(
        adapters::format_stacked_request(5, s, {stacked_item(2, 10), stacked_item(2, 20), stacked_item(2, 30)}, dims));
    EXPECT_EQ(j["id"], 5);
    EXPECT_EQ(j["stacked"], 3);
    EXPECT_EQ(j["batch_dims"], nlohmann::json({{"pad", 1}, {"x", 1}, {"y", 1}}));
    EXPECT_EQ(j["shapes"], nlohmann::json({{"x", {2, 3, 2}}, {"pad", {2, 3}}}));
    EXPECT_EQ(j["kinds"], nlohmann::json({{"x", "float"}, {"pad", "mask"}}));
    EXPECT_EQ(j["outputs"], nlohmann::json({"y"}));
    // Position 0 of every item, then position 1 of every item: the items sit on dim 1, in order.
    EXPECT_EQ(adapters::float64_values(j["inputs"]["x"].get<std::string>(), 12, "x"),
              (std::vector<double>{10, 11, 20, 21, 30, 31, 12, 13, 22, 23, 32, 33}));
    EXPECT_EQ(adapters::float64_values(j["inputs"]["pad"].get<std::string>(), 6, "pad"),
              (std::vector<double>{1, 1, 1, 0, 0, 0}));
    Tensors nan = stacked_item(2, 0);
    nan["x"].values[3] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_THROW(adapters::format_stacked_request(6, s, {stacked_item(2, 0), nan}, dims), std::invalid_argument)
        << "a non-finite input is refused as in the item form";
    EXPECT_THROW(adapters::format_stacked_request(6, s, {stacked_item(2, 0), stacked_item(3, 0)}, dims),
                 std::invalid_argument)
        << "items of other shapes";
    EXPECT_THROW(adapters::format_stacked_request(6, s, {stacked_item(2, 0)}, {{"x", 1}}), std::invalid_argument)
        << "an input without a batch dim";
}

TEST(ExecProtocol, AStackedAnswerIsUnstackedOnItsBatchDimOrReadItemByItem) {
    const Signature s = stacked_signature("x:n,1,2", "y:1,n,2");
    const auto dims = adapters::batch_dims_of(s);
    const auto expected = adapters::expected_outputs(s, {{"n", 2}});
    const std::string y = adapters::float64_base64({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    const adapters::StackedResponse r = adapters::parse_stacked_response(
        R"({"id": 3, "outputs": {"y": ")" + y + R"("}, "shapes": {"y": [3, 2, 2]}, "stacked": true})", expected, 3, dims);
    EXPECT_EQ(r.id, 3);
    ASSERT_EQ(r.items.size(), 3u);
    EXPECT_EQ(r.items[1].at("y").shape, (std::vector<int>{1, 2, 2}));
    EXPECT_EQ(r.items[1].at("y").values, (std::vector<double>{5, 6, 7, 8})) << "item 1 is row 1 of dim 0";
    const auto items = adapters::parse_stacked_response(R"({"id": 3, "batch": [{"error": "a"}, {"error": "b"}]})",
                                                        expected, 2, dims);
    EXPECT_EQ(items.item_lines.size(), 2u);
    // Read as a batch's answer: item by item, which the verdict line says (the layer refused one pass).
    EXPECT_TRUE(adapters::read_batch_answer(R"({"id": 3, "batch": [{"error": "a"}, {"error": "b"}]})", s, expected,
                                            {{"n", 2}}, 2, true, false).unstacked);
    EXPECT_FALSE(adapters::read_batch_answer(R"({"id": 3, "outputs": {"y": ")" + y + R"("}, "shapes": {"y": [3, 2, 2]}})",
                                             s, expected, {{"n", 2}}, 3, true, false).unstacked);
    EXPECT_TRUE(adapters::parse_stacked_response(R"({"id": 3, "error": "oom"})", expected, 3, dims).is_error);
    // The announcements repeated in a stacked answer, as the docs allow, are no item list.
    const adapters::StackedResponse repeated = adapters::parse_stacked_response(
        R"({"id": 3, "outputs": {"y": ")" + y + R"("}, "shapes": {"y": [3, 2, 2]}, "batch": 8, "stacked": true})",
        expected, 3, dims);
    ASSERT_EQ(repeated.items.size(), 3u);
    EXPECT_EQ(repeated.items[2].at("y").values, (std::vector<double>{9, 10, 11, 12}));
    std::vector<double> many(160);  // 40 items: 1,708 base64 characters, read apart from the JSON parser
    for (std::size_t k = 0; k < many.size(); ++k) many[k] = 0.5 * static_cast<double>(k);
    const adapters::StackedResponse big = adapters::parse_stacked_response(
        R"({"id": 3, "outputs": {"y": ")" + adapters::float64_base64(many) + R"("}})", expected, 40, dims);
    ASSERT_EQ(big.items.size(), 40u);
    EXPECT_EQ(big.items[39].at("y").values, (std::vector<double>{78, 78.5, 79, 79.5}));
    const std::string long_error(300, 'e');  // long strings are read apart from the JSON parser: this one too
    EXPECT_EQ(adapters::parse_stacked_response(R"({"id": 3, "error": ")" + long_error + R"("})", expected, 3, dims).error,
              long_error);
    const std::string escaped = R"({"id": 3, "outputs": {"y": ")" + y + R"("}, "note": ")" + std::string(300, 'a') +
                                R"(\"}"})";
    EXPECT_EQ(adapters::parse_stacked_response(escaped, expected, 3, dims).items.size(), 3u)
        << "a long string with an escaped quote";
    const std::vector<std::pair<std::string, std::string>> bad{
        {R"({"id": 3, "outputs": {"y": ")" + y + R"("}, "shapes": {"y": [2, 3, 2]}})",
         "output 'y' has shape '[2,3,2]', expected [3,2,2] (3 items stacked on dim 0)"},
        {R"({"id": 3, "outputs": {"y": ")" + y.substr(4) + R"("}})", "output 'y' [3,2,2]: 124 base64 characters, expected 128"},
        {R"({"id": 3, "outputs": {"y": [[1, 2]]}})", "output 'y' is array, expected a base64 string of [3,2,2]"},
        {R"({"id": 3, "outputs": {"z": ")" + y + R"("}})", "the answer has no output 'y'"},
        {R"({"id": 3, "outputs": {"y": "\u00000"}})", "output 'y' [3,2,2]: 2 base64 characters"},
        {R"({"id": 3, "outputs": {"y": ")" + y + R"(}})", "is not JSON"},
        {R"({"id": 3, "y": 1})", "has no \"outputs\" object"},
        {R"({"id": 3, "batch": [{"error": "a"}]})", "holds 1 answers for a request of 3 items"}};
    for (const auto& [line, message] : bad) {
        try {
            adapters::parse_stacked_response(line, expected, 3, dims);
            ADD_FAILURE() << "accepted " << line;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace permcheck
