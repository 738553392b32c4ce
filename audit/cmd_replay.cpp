// `permcheck replay FILE`: evaluates a saved counterexample again, in the arithmetic it was found in.
#include "commands.h"

#include "failure_db.h"
#include "report.h"

#include <iostream>
#include <limits>
#include <memory>

namespace permcheck::cli {
namespace {

int replay(const std::string& file) {
    report::Record r;
    const LayerSpec* spec = nullptr;
    Property property{};
    CheckOptions opts;
    try {
        r = report::read(file);
        if (!r.counterexample)
            throw std::invalid_argument(file + " holds no counterexample (verdict " + r.verdict +
                                        "); to run its check again: " + (r.replay.empty() ? "?" : r.replay));
        try {
            spec = &find_layer(r.layer);
        } catch (const std::invalid_argument&) {
            throw std::invalid_argument("'" + r.layer + "' in " + file +
                                        " is not a reference layer, so this report cannot be replayed here" +
                                        (r.replay.empty() ? "" : "; its own replay line: " + r.replay));
        }
        property = parse_property(r.property);
        opts.arithmetic = parse_arithmetic(r.dtype);
        opts.seed = r.seed;
        const nlohmann::json check = r.details.is_object() && r.details.contains("check") ? r.details["check"]
                                                                                          : nlohmann::json::object();
        if (!check.is_object())
            throw std::invalid_argument(file + ": details.check is " + check.type_name() + ", not an object");
        // The check's options only rebuild its replay line; the saved case itself is what is evaluated.
        const auto option = [&](const char* key, int fallback, int least) {
            const auto it = check.find(key);
            if (it == check.end()) return fallback;
            if (!it->is_number_integer() || *it < least || *it > std::numeric_limits<int>::max())
                throw std::invalid_argument(file + ": details.check." + key + " must be an integer >= " +
                                            std::to_string(least) + ", got " + it->dump().substr(0, 40));
            return it->get<int>();
        };
        opts.cases = option("cases", opts.cases, 1);
        opts.min_len = option("min_len", opts.min_len, 1);
        opts.max_len = option("max_len", opts.max_len, opts.min_len);
        opts.d = option("d", static_cast<int>(r.counterexample->d()), 1);
        if (opts.d != r.counterexample->d())
            throw std::invalid_argument(file + ": details.check.d is " + std::to_string(opts.d) +
                                        " but the saved input has " + std::to_string(r.counterexample->d()) +
                                        " features");
    } catch (const std::exception& e) {
        std::cerr << "permcheck replay: " << e.what() << "\n";
        return 2;
    }
    try {
        const Counterexample& saved = *r.counterexample;
        const Counterexample now = counterexample_at(*spec, property, case_of(saved), opts, saved.case_index,
                                                     saved.shrink_steps);
        if (now.comparison.holds) {
            std::cout << "now holds: " << r.layer << " " << r.property << " (" << r.dtype << ") on the saved case (n = "
                      << saved.n() << ", d = " << saved.d() << "); largest difference " << now.comparison.max_abs_diff
                      << " within tolerance " << now.comparison.tolerance << " (saved: "
                      << saved.comparison.max_abs_diff << ")\n";
            return 0;
        }
        std::cout << "still fails: largest difference " << now.comparison.max_abs_diff << " (saved: "
                  << saved.comparison.max_abs_diff << ")\n"
                  << describe(now);
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "permcheck replay: the saved case could not be evaluated: " << e.what() << "\n";
        return 2;
    }
}

}  // namespace

void add_replay(CLI::App& app, Outcome& outcome) {
    auto file = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand("replay", "evaluate a saved counterexample again (report.json or its directory)");
    sub->add_option("file", *file, "a report.json written by --report, or a failure database entry")->required();
    sub->footer("Exit status: 1 the counterexample still fails, 0 the property now holds on it, 2 the file is\n"
                "unreadable, holds no counterexample, or names a layer this permcheck does not have.");
    sub->callback([file, &outcome] { outcome.exit_code = replay(*file); });
}

}  // namespace permcheck::cli
