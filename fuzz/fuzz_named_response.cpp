// libFuzzer target: the answer-line parsers of a signature audit (adapters::parse_named_response, and
// adapters::parse_stacked_response for a stacked batch), which read
// bytes from programs we did not write. The first byte picks the axis length the answer must match (0 to 3:
// empty dims included, its low two bits) and the stacked batch's number of items (1 to 3); the rest is the line. Its contract: every expected output whole, in its expected shape or (an
// ordinary answer) another well-formed one the audit then judges, or std::invalid_argument saying what is wrong. Anything else (another exception, a crash, a sanitizer finding, a
// hang) is a bug.
#include "adapters/protocol.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    using namespace permcheck;
    static const Signature s = [] {
        Signature sig;
        sig.axes = {{"n", 0, 3}};
        sig.inputs = {{"x", {{"n", 0}, {"", 2}}, TensorKind::real, ""}};
        sig.outputs = {{"y", {{"n", 0}, {"", 2}}, TensorKind::real, ""}, {"g", {{"", 2}}, TensorKind::real, ""},
                       {"s", {}, TensorKind::real, ""}};
        return sig;
    }();
    const int n = data[0] % 4;
    const auto expected = adapters::expected_outputs(s, {{"n", n}});
    try {
        const adapters::NamedResponse r = adapters::parse_named_response(
            std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), expected);
        if (!r.is_error) {
            if (r.outputs.size() != expected.size()) __builtin_trap();
            for (const adapters::ExpectedOutput& e : expected) {
                const Tensor& t = r.outputs.at(e.name);
                if (t.values.size() != t.size()) __builtin_trap();  // its shape, or another it holds whole
            }
        }
    } catch (const std::invalid_argument&) {
    }
    // The same line as the answer to a stacked request of 1 to 3 items (docs/protocol.md, "Batched requests").
    static const Signature stacked = [] {
        Signature sig;
        sig.axes = {{"n", 0, 3}};
        sig.inputs = {{"x", {{"", 1}, {"n", 0}}, TensorKind::real, ""}};
        sig.outputs = {{"y", {{"", 1}, {"n", 0}, {"", 2}}, TensorKind::real, ""}};
        return sig;
    }();
    const std::size_t count = 1 + (data[0] >> 2) % 3;
    const auto one = adapters::expected_outputs(stacked, {{"n", n}});
    try {
        const adapters::StackedResponse r = adapters::parse_stacked_response(
            std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), one, count,
            adapters::batch_dims_of(stacked));
        if (!r.is_error && r.item_lines.size() != count) {
            if (r.items.size() != count) __builtin_trap();
            for (const Tensors& item : r.items) {
                const Tensor& t = item.at("y");
                if (t.shape != one[0].shape || t.values.size() != t.size()) __builtin_trap();
            }
        }
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
