// The permcheck command: with no arguments, the verdict table of every reference layer.
#include "cli/commands.h"
#include "check/check.h"
#include "cli/interrupt.h"
#include "adapters/exec_adapter.h"

#include <cstdio>
#include <exception>

#ifndef PERMCHECK_VERSION
#error "PERMCHECK_VERSION is set by cli/CMakeLists.txt"
#endif

int main(int argc, char** argv) {
    using namespace permcheck::cli;
    permcheck::keep_freed_memory_for_reuse();
    StopOnSignal::on_second_signal(&permcheck::adapters::kill_adapter_processes);  // no adapter outlives a second Ctrl-C
    permcheck::adapters::adopt_adapter_orphans();  // every process of a stopped adapter's group reaped
    CLI::App app{"permcheck: proves what sequence layers do with token order"};
    app.require_subcommand(0, 1);
    // The project's version (CMakeLists.txt's project(VERSION), the one place it is set; cli/CMakeLists.txt).
    app.set_version_flag("--version", "permcheck " PERMCHECK_VERSION, "Print the version and exit");
    Outcome outcome;
    add_table(app, outcome);
    add_prove(app, outcome);
    add_list(app, outcome);
    add_check(app, outcome);
    add_replay(app, outcome);
    add_demo(app, outcome);
    add_audit(app, outcome);
    add_audit_torch(app, outcome);
    add_describe(app, outcome);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        if (code == 0) return 0;
        if (outcome.bad_options) outcome.bad_options(e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "permcheck: %s\n", e.what());
        return 2;
    }
    return outcome.exit_code;
}
