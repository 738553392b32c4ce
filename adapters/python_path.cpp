#include "adapters/python_path.h"

#include <filesystem>
#include <string_view>
#include <system_error>

extern char** environ;

// Both set by adapters/CMakeLists.txt: the install's data directory relative to its program directory, and the
// source tree's python/ directory; both empty in the command a wheel holds (`pip install .`), whose Python finds
// permcheck_adapter in its site-packages.
#ifndef PERMCHECK_PYTHON_INSTALL_RELDIR
#define PERMCHECK_PYTHON_INSTALL_RELDIR "../share/permcheck/python"
#endif
#ifndef PERMCHECK_PYTHON_SOURCE_DIR
#define PERMCHECK_PYTHON_SOURCE_DIR ""
#endif

namespace permcheck::adapters {

namespace {

bool holds_adapter(const std::filesystem::path& dir) {
    std::error_code ec;
    return !dir.empty() && std::filesystem::is_regular_file(dir / "permcheck_adapter.py", ec);
}

std::string python_adapter_dir() {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && std::string_view(PERMCHECK_PYTHON_INSTALL_RELDIR).size() > 0) {  // empty in a wheel's command
        const std::filesystem::path installed =
            (self.parent_path() / PERMCHECK_PYTHON_INSTALL_RELDIR).lexically_normal();
        if (holds_adapter(installed)) return installed.string();
    }
    const std::filesystem::path source = PERMCHECK_PYTHON_SOURCE_DIR;
    if (holds_adapter(source)) return source.string();
    return {};
}

}  // namespace

ChildEnvironment::ChildEnvironment() {
    const std::string dir = python_adapter_dir();
    constexpr std::string_view key = "PYTHONPATH=";
    bool replaced = false;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        std::string text = *entry;
        if (!dir.empty() && text.starts_with(key)) {  // dir in front of the value, if it has one
            text.insert(key.size(), text.size() > key.size() ? dir + ':' : dir);
            replaced = true;
        }
        strings_.push_back(std::move(text));
    }
    if (!dir.empty() && !replaced) strings_.push_back(std::string(key) + dir);
    pointers_.reserve(strings_.size() + 1);
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
}

}  // namespace permcheck::adapters
