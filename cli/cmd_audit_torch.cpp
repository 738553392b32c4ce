// `permcheck audit-torch LAYER|FILE [options]`: audits LibTorch's own layers (adapters/torch_adapter.h) or a
// TorchScript file over a signature (adapters/torch_script.h). The work is
// done by the permcheck-torch program installed next to permcheck: linking LibTorch into permcheck itself
// would cost every other subcommand LibTorch's load time (0.7 s of CPU per start, measured with an empty
// program linked to libtorch_cpu), so this subcommand hands its arguments over with execv.
#include "cli/audit_common.h"
#include "cli/commands.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace permcheck::cli {
namespace {

// Why permcheck-torch is missing beside `self`, and the commands that build it: for this build tree when `self`
// is its permcheck, else for an installed one.
std::string missing_tool_text(const std::filesystem::path& self, const std::filesystem::path& tool) {
    const std::string source = PERMCHECK_SOURCE_DIR, build = PERMCHECK_BINARY_DIR;
    std::error_code ec;
    const bool in_build_tree = std::filesystem::equivalent(self.parent_path(), build, ec);
    std::string text = tool.string() + " was not found: audit-torch runs it, a program of its own linked to LibTorch.\n";
    const std::string build_it = "  cmake --build " + shell_quote(build) + " -j2 --target permcheck-torch\n";
    if (in_build_tree && PERMCHECK_TORCH_CONFIGURED)
        return text + "This build was configured with LibTorch but has not built it yet (the README's first command "
                      "builds only permcheck; the second builds everything). Build it with:\n" + build_it;
    const std::string steps = "  " + shell_quote(source + "/scripts/install-deps") + " --test   # installs libtorch-dev\n"
                              "  cmake -S " + shell_quote(source) + " -B " + shell_quote(build) + "\n" + build_it;
    if (in_build_tree)
        return text + "This build was configured without LibTorch (libtorch-dev was not installed, or "
                      "-DPERMCHECK_WITH_TORCH=OFF). Install it and build permcheck-torch with:\n" + steps;
    return text + "This installation has none. Build permcheck-torch in a build tree, then install that tree "
                  "(cmake --install BUILD --prefix PREFIX) or run its permcheck; for the tree this permcheck was built "
                  "from:\n" + steps;
}

int run_permcheck_torch(const std::vector<std::string>& args) {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path tool = self.parent_path() / "permcheck-torch";
    if (ec || !std::filesystem::exists(tool)) {
        const bool help = std::find_if(args.begin(), args.end(), [](const std::string& a) {
                              return a == "--help" || a == "-h";
                          }) != args.end();
        // --help still answers: what audit-torch does, and how to get it.
        (help ? std::cout : std::cerr)
            << (help ? "Usage: permcheck audit-torch LAYER|FILE.pt [options]\n"
                       "Audits a TorchScript file (FILE.pt) or LibTorch's MultiheadAttention, TransformerEncoderLayer or "
                       "TransformerDecoderLayer in process. Its options are listed by permcheck-torch --help, once "
                       "it is built.\n\n"
                     : "permcheck audit-torch: ")
            << missing_tool_text(self, tool);
        return help ? 0 : 2;
    }
    std::vector<std::string> words{tool.string()};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    std::cout.flush();
    std::fflush(nullptr);
    execv(tool.c_str(), argv.data());
    std::cerr << "permcheck audit-torch: cannot run " << tool.string() << ": " << std::strerror(errno) << "\n";
    return 2;
}

}  // namespace

void add_audit_torch(CLI::App& app, Outcome& outcome) {
    CLI::App* sub = app.add_subcommand(
        "audit-torch",
        "audit a TorchScript file (FILE.pt) or LibTorch's MultiheadAttention, TransformerEncoderLayer or "
        "TransformerDecoderLayer, in process; --help lists options");
    sub->prefix_command();  // every argument belongs to permcheck-torch,
    sub->set_help_flag();   // --help included
    sub->callback([sub, &outcome] { outcome.exit_code = run_permcheck_torch(sub->remaining()); });
}

}  // namespace permcheck::cli
