// `permcheck audit-torch LAYER|FILE [options]`: audits LibTorch's own layers (adapters/torch_adapter.h) or a
// TorchScript file over a signature (adapters/torch_script.h). The work is
// done by the permcheck-torch program installed next to permcheck: linking LibTorch into permcheck itself
// would cost every other subcommand LibTorch's load time (0.7 s of CPU per start, measured with an empty
// program linked to libtorch_cpu), so this subcommand hands its arguments over with execv.
#include "cli/commands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace permcheck::cli {
namespace {

int run_permcheck_torch(const std::vector<std::string>& args) {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path tool = self.parent_path() / "permcheck-torch";
    if (ec || !std::filesystem::exists(tool)) {
        std::cerr << "permcheck audit-torch: " << tool.string()
                  << " was not found: this permcheck was built without LibTorch (configure with libtorch-dev installed, "
                     "or -DPERMCHECK_WITH_TORCH=ON)\n";
        return 2;
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
