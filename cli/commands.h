// Each subcommand of the permcheck command lives in its own file and adds itself to the CLI11 app here.
// A subcommand's handler returns the process exit code: 0 as expected / holds, 1 violated or unexpected,
// 2 bad input or error, 3 undecided (prove: no proof and no witness).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace permcheck::cli {

// Set by a subcommand's callback; main() returns it.
struct Outcome {
    int exit_code = 0;
    // Set by a subcommand as its parsing starts; main() calls it when CLI11 refuses the command line, after
    // the message (audit: the error report).
    std::function<void(const std::string& message)> bad_options;
};

void add_table(CLI::App& app, Outcome& outcome);  // no subcommand: the verdict table (cmd_table.cpp)
void add_prove(CLI::App& app, Outcome& outcome);   // permcheck prove LAYER | --all (cmd_prove.cpp)
void add_list(CLI::App& app, Outcome& outcome);    // permcheck list (cmd_list.cpp)
void add_check(CLI::App& app, Outcome& outcome);   // permcheck check LAYER (cmd_check.cpp)
void add_replay(CLI::App& app, Outcome& outcome);  // permcheck replay FILE (cmd_replay.cpp)
void add_demo(CLI::App& app, Outcome& outcome);    // permcheck demo (cmd_demo.cpp)
void add_audit(CLI::App& app, Outcome& outcome);   // permcheck audit --exec COMMAND (cmd_audit.cpp)
void add_audit_torch(CLI::App& app, Outcome& outcome);  // permcheck audit-torch LAYER (cmd_audit_torch.cpp)
void add_describe(CLI::App& app, Outcome& outcome);     // permcheck describe --json (cmd_describe.cpp)

// `permcheck prove ... --smt`: the prove command (cmd_prove.cpp) hands SMT requests to cmd_prove_smt.cpp.
struct SmtRequest {
    std::vector<std::string> layers;  // catalog names
    int n = 4;
    int d = 4;
    std::string emit_dir;             // empty: write no SMT-LIB files
    double timeout_seconds = 60;
    bool all = false;                 // --all: judged against the verdict matrix, like the verdict table
    // Asked before each layer: true ends the run there (a layer's proof is not cut short), exit 130.
    std::function<bool()> stop_requested{};
    // Called before each layer with the layers finished, their total and the next layer's name, and when a layer
    // is finished, before its lines are printed, with the layers finished and an empty name (for a progress line).
    std::function<void(int finished, int total, const std::string& next)> on_layer{};
};
// Prints one verdict line (and details) per layer to out; returns the exit code. With `all`: 0 when every
// layer's result matches the verdict matrix, 1 otherwise. Named layers, as `permcheck check`: 0 proved, 1 a
// confirmed witness, 3 undecided (the worst over the layers). 2 on bad input or an error. 130 when
// stop_requested ended it.
int prove_smt(const SmtRequest& request, std::ostream& out);

}  // namespace permcheck::cli
