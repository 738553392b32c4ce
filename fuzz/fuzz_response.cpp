// libFuzzer target: the answer-line parser of `permcheck audit --exec` (adapters::parse_response), which reads
// bytes from programs we did not write. Its contract: a Response, or std::invalid_argument saying what is
// wrong. Anything else (another exception, a crash, a sanitizer finding, a hang) is a bug.
#include "adapters/exec_adapter.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const permcheck::adapters::Response r =
            permcheck::adapters::parse_response(std::string_view(reinterpret_cast<const char*>(data), size));
        if (!r.is_error && r.y.size() == 0) __builtin_trap();  // an accepted answer holds at least one number
    } catch (const std::invalid_argument&) {
    }
    return 0;
}
