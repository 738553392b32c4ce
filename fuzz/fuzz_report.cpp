// libFuzzer target: the report reader behind `permcheck replay` (report::read), fed any bytes as report.json.
// Its contract: a Record, or std::invalid_argument / std::runtime_error saying what is wrong. Anything else
// (another exception, a crash, a sanitizer finding, a hang) is a bug. An accepted record must survive
// to_json and the Markdown and HTML views, as `replay` shows them.
#include "report/report.h"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {
// One file per fuzzing process, rewritten for every input: read() takes a path, as `replay` does.
const std::string& scratch_file() {
    static const std::string path = [] {
        const char* dir = std::getenv("TMPDIR");
        return std::string(dir && *dir ? dir : "/tmp") + "/permcheck-fuzz-report-" + std::to_string(getpid()) + ".json";
    }();
    return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& path = scratch_file();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) __builtin_trap();
    if (size && std::fwrite(data, 1, size, f) != size) __builtin_trap();
    std::fclose(f);
    try {
        const permcheck::report::Record r = permcheck::report::read(path);
        (void)permcheck::report::to_json(r).dump();
        (void)permcheck::report::to_markdown(r);
        (void)permcheck::report::to_html(r);
    } catch (const std::invalid_argument&) {
    } catch (const std::runtime_error&) {
    }
    return 0;
}
