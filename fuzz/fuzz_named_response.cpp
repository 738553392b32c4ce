// libFuzzer target: the answer-line parser of a signature audit (adapters::parse_named_response), which reads
// bytes from programs we did not write. The first byte picks the axis length the answer must match (0 to 3:
// empty dims included); the rest is the line. Its contract: every expected output in its expected shape, or
// std::invalid_argument saying what is wrong. Anything else (another exception, a crash, a sanitizer finding, a
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
                if (t.shape != e.shape || t.values.size() != t.size()) __builtin_trap();
            }
        }
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
