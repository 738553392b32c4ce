#include "tests/support/process.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <chrono>
#include <fstream>
#include <sstream>

extern char** environ;

namespace permcheck::test {

namespace {
// Waits for pid, filling the exit status, the signal and the peak memory.
void reap(pid_t pid, Run& r) {
    int status = 0;
    rusage usage{};
    while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.max_rss_kib = usage.ru_maxrss;
}

Run spawn(const std::vector<std::string>& words, const fs::path& scratch, bool merge_stderr) {
    std::vector<std::string> copy = words;
    std::vector<char*> argv;
    for (std::string& w : copy) argv.push_back(w.data());
    argv.push_back(nullptr);
    const fs::path out = scratch / ".stdout", err = scratch / ".stderr";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (merge_stderr)
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    else
        posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const auto t0 = std::chrono::steady_clock::now();
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    Run r;
    if (rc != 0) {
        r.err = "posix_spawn failed: " + std::string(std::strerror(rc));
        return r;
    }
    reap(pid, r);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.out = slurp(out);
    if (!merge_stderr) r.err = slurp(err);
    std::error_code ec;
    fs::remove(out, ec);
    fs::remove(err, ec);
    return r;
}
}  // namespace

Run run_program(const std::vector<std::string>& argv, const fs::path& scratch) { return spawn(argv, scratch, false); }

Run run_shell(const std::string& command, const fs::path& cwd, bool merge_stderr) {
    return spawn({"/bin/sh", "-c", "cd " + shell_quote(cwd.string()) + " && " + command}, cwd, merge_stderr);
}

std::string show(const Run& r) {
    return "exit " + std::to_string(r.exit_code) + (r.signal ? ", signal " + std::to_string(r.signal) : "") +
           "\nstdout:\n" + r.out.substr(0, 2000) + "\nstderr:\n" + r.err.substr(0, 2000);
}

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q + "'";
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

Scratch::Scratch(const std::string& purpose) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "outside-a-test";
    for (char& ch : name)
        if (ch == '/') ch = '_';
    std::string pattern = (fs::temp_directory_path() / ("permcheck-" + purpose + "-" + name + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a scratch directory " + pattern);
    dir_ = pattern;
}

Scratch::~Scratch() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    if (info && info->result() && info->result()->Failed()) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
}

fs::path Scratch::write(const std::string& name, const std::string& content, bool executable) const {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    if (executable) fs::permissions(p, fs::perms::owner_all, fs::perm_options::add);
    return p;
}

}  // namespace permcheck::test
