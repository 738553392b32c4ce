// Each subcommand of the permcheck command lives in its own file and adds itself to the CLI11 app here.
// A subcommand's handler returns the process exit code: 0 as expected / holds, 1 violated or unexpected,
// 2 bad input or error.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace permcheck::cli {

// Set by a subcommand's callback; main() returns it.
struct Outcome {
    int exit_code = 0;
};

// Whether progress may be drawn on stderr: only on a terminal, never in a pipe or CI.
bool progress_enabled();

void add_table(CLI::App& app, Outcome& outcome);  // no subcommand: the verdict table (cmd_table.cpp)

}  // namespace permcheck::cli
