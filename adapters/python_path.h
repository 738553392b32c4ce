// Where the ready Python adapter (python/permcheck_adapter.py) lives, and the environment of the programs that
// `permcheck audit --exec` runs: the adapter's directory leads their PYTHONPATH, so that a user's adapter file
// says `from permcheck_adapter import serve` with no set-up, from the build tree and from an installed prefix.
#pragma once

#include <string>
#include <vector>

namespace permcheck::adapters {

// The environment for a child process: this process's environment, with PYTHONPATH led by the directory holding
// permcheck_adapter.py: the installed copy next to the running program (<directory of /proc/self/exe>/
// ../share/permcheck/python, as installed) if it is there, else the source tree's python/ directory (the build
// tree's programs); unchanged when neither holds the file. Owns its strings; envp() stays valid while it lives.
class ChildEnvironment {
public:
    ChildEnvironment();
    char* const* envp() const { return pointers_.data(); }

private:
    std::vector<std::string> strings_;
    std::vector<char*> pointers_;
};

}  // namespace permcheck::adapters
