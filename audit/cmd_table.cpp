// `permcheck` with no subcommand: every reference layer x every property that applies, as a table.
#include "commands.h"

#include "properties/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

namespace permcheck::cli {
namespace {

struct Row {
    CheckResult result;
    double seconds;
};

Row timed_check(const LayerSpec& spec, Property property, const CheckOptions& opts) {
    const auto t0 = std::chrono::steady_clock::now();
    CheckResult r = check(spec, property, opts);
    return {std::move(r), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

int verdict_table(const CheckOptions& base) {
    const bool progress = progress_enabled();
    std::printf("%-32s %-14s %-9s %-9s %-8s %6s %8s\n", "layer", "property", "expected", "verdict", "method", "cases",
                "time");
    int mismatches = 0;
    for (const LayerSpec& spec : catalog()) {
        for (const Expectation& e : expectations(spec)) {
            for (Arithmetic a : {Arithmetic::float64, Arithmetic::exact}) {
                CheckOptions o = base;
                o.arithmetic = a;
                if (a == Arithmetic::exact) o.cases = std::max(1, base.cases / 4);
                if (progress)
                    std::fprintf(stderr, "\r\033[Kchecking %s %s (%s)...", spec.name.c_str(), property_name(e.property),
                                 arithmetic_name(a));
                const Row row = timed_check(spec, e.property, o);
                const bool ok = row.result.as_expected();
                mismatches += !ok;
                if (progress) std::fprintf(stderr, "\r\033[K");
                std::printf("%-32s %-14s %-9s %-9s %-8s %6d %7.2fs%s\n", spec.name.c_str(), property_name(e.property),
                            e.holds ? "holds" : "fails", row.result.holds ? "holds" : "fails", arithmetic_name(a),
                            row.result.cases_run, row.seconds, ok ? "" : "   <-- UNEXPECTED");
                std::fflush(stdout);
            }
        }
    }
    std::printf("\n%s\n", mismatches == 0 ? "every verdict matches the theory"
                                          : "some verdicts do NOT match the theory");
    return mismatches == 0 ? 0 : 1;
}

}  // namespace

void add_table(CLI::App& app, Outcome& outcome) {
    auto opts = std::make_shared<CheckOptions>();
    app.add_option("--cases", opts->cases, "random cases per float check (exact checks run a quarter)")
        ->check(CLI::PositiveNumber);
    app.add_option("--seed", opts->seed, "seed of the random search");
    app.callback([&app, &outcome, opts] {
        if (app.get_subcommands().empty()) outcome.exit_code = verdict_table(*opts);
    });
}

}  // namespace permcheck::cli
