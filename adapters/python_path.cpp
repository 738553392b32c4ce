#include "adapters/python_path.h"

#include <filesystem>
#include <string_view>
#include <system_error>

extern char** environ;

// Both set by adapters/CMakeLists.txt: the install's data directory relative to its program directory, and the
// source tree's python/ directory.
#ifndef PERMCHECK_PYTHON_INSTALL_RELDIR
#define PERMCHECK_PYTHON_INSTALL_RELDIR "../share/permcheck/python"
#endif
#ifndef PERMCHECK_PYTHON_SOURCE_DIR
#define PERMCHECK_PYTHON_SOURCE_DIR ""
#endif

namespace permcheck::adapters {

namespace {

constexpr const char* kAdapterFile = "permcheck_adapter.py";

bool holds_adapter(const std::filesystem::path& dir) {
    std::error_code ec;
    return !dir.empty() && std::filesystem::is_regular_file(dir / kAdapterFile, ec);
}

}  // namespace

std::string python_adapter_dir() {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const std::filesystem::path installed =
            (self.parent_path() / PERMCHECK_PYTHON_INSTALL_RELDIR).lexically_normal();
        if (holds_adapter(installed)) return installed.string();
    }
    const std::filesystem::path source = PERMCHECK_PYTHON_SOURCE_DIR;
    if (holds_adapter(source)) return source.string();
    return {};
}

std::string prepend_python_path(const std::string& dir, const char* existing) {
    std::string value = dir;
    if (existing != nullptr && *existing != '\0') {
        if (!value.empty()) value += ':';
        value += existing;
    }
    return value;
}

ChildEnvironment::ChildEnvironment() {
    const std::string dir = python_adapter_dir();
    constexpr std::string_view key = "PYTHONPATH=";
    bool replaced = false;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
        const std::string_view text = *entry;
        if (!dir.empty() && text.starts_with(key)) {
            std::string line(key);
            line += prepend_python_path(dir, *entry + key.size());
            strings_.push_back(std::move(line));
            replaced = true;
        } else {
            strings_.emplace_back(text);
        }
    }
    if (!dir.empty() && !replaced) {
        std::string line(key);
        line += dir;
        strings_.push_back(std::move(line));
    }
    pointers_.reserve(strings_.size() + 1);
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
}

}  // namespace permcheck::adapters
