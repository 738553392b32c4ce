// libFuzzer target: the answer-line parsers of `permcheck audit --exec` (adapters::parse_response, and
// adapters::parse_tap_response for the answer to a tap request), which read bytes from programs we did not write.
// Their contract: a Response (a TapResponse), or std::invalid_argument saying what is wrong. Anything else (another exception, a crash, a sanitizer finding, a hang) is a bug.
#include "adapters/protocol.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const permcheck::adapters::NamedResponse r =
            permcheck::adapters::parse_response(std::string_view(reinterpret_cast<const char*>(data), size));
        if (!r.is_error && r.outputs.at("y").values.empty()) __builtin_trap();  // an accepted answer holds at least one number
    } catch (const std::invalid_argument&) {
    }
    try {
        const permcheck::adapters::TapResponse r =
            permcheck::adapters::parse_tap_response(std::string_view(reinterpret_cast<const char*>(data), size));
        for (const permcheck::Tap& t : r.taps)  // an accepted tap holds as many values as its shape says
            if (t.value.values.size() != t.value.size()) __builtin_trap();
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
