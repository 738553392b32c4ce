// What the tests that run programs share: running a program or a shell line with its output captured, scratch
// directories, shell quoting, reading a file whole.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace permcheck::test {

namespace fs = std::filesystem;

// How a child ended and what it printed.
struct Run {
    int exit_code = -1;    // -1 when it was killed by a signal or could not start
    int signal = 0;        // the signal that killed it, 0 otherwise
    std::string out, err;  // standard output and error (err holds both with run_shell(..., merge_stderr))
    long max_rss_kib = 0;  // its peak resident memory (wait4)
    double seconds = 0;    // wall time
};

// Runs argv[0] with argv (no shell), standard input /dev/null, output captured through files in `scratch`.
Run run_program(const std::vector<std::string>& argv, const fs::path& scratch);
// Runs a /bin/sh command line in `cwd` (the scratch directory for captured output too). With merge_stderr, the
// two streams are captured together, in order, in `out`.
Run run_shell(const std::string& command, const fs::path& cwd, bool merge_stderr = false);

// "exit 2\nstdout: ...\nstderr: ..." for failure messages (each stream cut at 2000 characters).
std::string show(const Run& r);

// A single-quoted word for /bin/sh.
std::string shell_quote(const std::string& s);

std::string slurp(const fs::path& p);

// A fresh directory under the system's temporary directory, named after the running test, removed when the
// scratch goes out of scope unless the test failed (so a failure leaves its files to look at).
class Scratch {
public:
    explicit Scratch(const std::string& purpose = "test");
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    const fs::path& dir() const { return dir_; }
    // Writes `content` to dir/name; executable when asked.
    fs::path write(const std::string& name, const std::string& content, bool executable = false) const;

private:
    fs::path dir_;
};

}  // namespace permcheck::test
