// `permcheck describe --json`: the vocabulary of this binary as one JSON object, which the Python package reads
// (python/permcheck/_audit.py, cached per binary) instead of holding a copy of it. Schema (docs/reference.md,
// "describe --json"):
//
//   {"version": "0.9.0",
//    "properties": [{"name": "padding", "meaning": "...", "adjective": "padding-invariant",
//                    "audits_black_boxes": true, "needs_reference": false, "chunks_calls": false,
//                    "verdicts": {"holds": "...", "fails": "..."},
//                    "options": [OPTION, ...]}, ...],          every property, in the order of the registry
//    "options": [OPTION, ...],                                 the audit options of every property
//    "verdicts": [{"word": "violated", "failure": true, "exit_code": 1}, ...],   "torch_hint": "..." where it has one
//    "tensor_kinds": [{"name": "token", "integer": true}, ...],
//    "precisions": ["float64", "float32", "tf32", "float16", "bfloat16"]}   finest to coarsest
//
//   OPTION: {"flag": "--padding", "keyword": "padding", "value": "bool" | "int" | "number" | "string" | "choice",
//            "choices": ["any", "left", "right"] (a choice's only), "value_name": "W" (a declared option's only),
//            "help": "..."}
//
// "keyword" is the Python keyword of permcheck.audit() (a declared option's own; else the flag without its dashes,
// '-' as '_'); "help" is the text `permcheck audit --help` shows for the flag. A property's declared options
// (PropertyRules::options()) come first: "bool" when they take no value, else "string" (the property reads the
// value); then the axis flags its yes/no methods imply. "failure" is a verdict that is a finding (exit code 1);
// "torch_hint" what to do about it when the layer is a torch module.
#include "cli/audit_common.h"
#include "cli/commands.h"
#include "properties/property.h"
#include "report/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#ifndef PERMCHECK_VERSION
#error "PERMCHECK_VERSION is set by cli/CMakeLists.txt"
#endif

namespace permcheck::cli {
namespace {

using nlohmann::json;

// One option as describe declares it; its help is read from `permcheck audit`'s own option of that flag.
struct OptionRecord {
    std::string flag;
    std::string value;                 // bool | int | number | string | choice
    std::vector<std::string> choices;  // a choice's words
    std::string keyword = {};          // empty: the flag's own (keyword_of)
    std::string value_name = {};       // the name of its value in help ("W"), a declared option's
    std::string help = {};             // a declared option's own line, where `permcheck audit` has no such option
};

// The options a property's run may take, as it declares them (PropertyRules::options(): a string the property reads,
// one of its choices, or a flag without a value).
std::vector<OptionRecord> property_options(const PropertyRules& rules) {
    std::vector<OptionRecord> out;
    for (const PropertyOption& o : rules.options()) {
        const char* value = *o.value == '\0' ? "bool" : o.choices.empty() ? "string" : "choice";
        out.push_back({o.flag, value, o.choices, o.keyword, o.value, o.help});
    }
    return out;
}

// The options of an audit whatever its property (those the Python package passes on as keywords).
std::vector<OptionRecord> general_options() {
    return {{"--timeout", "number", {}},       {"--startup-timeout", "number", {}}, {"--jobs", "int", {}},
            {"--max-len", "int", {}},          {"--min-len", "int", {}},            {"--amplification", "number", {}},
            {"--shard", "string", {}},         {"--skip-padded", "bool", {}},       {"--shrink-seconds", "number", {}}};
}

std::string keyword_of(const std::string& flag) {
    std::string k = flag.substr(flag.find_first_not_of('-'));
    std::replace(k.begin(), k.end(), '-', '_');
    return k;
}

json options_json(const std::vector<OptionRecord>& records, const CLI::App& audit) {
    json out = json::array();
    for (const OptionRecord& r : records) {
        const CLI::Option* o = audit.get_option_no_throw(r.flag);
        json j{{"flag", r.flag}, {"keyword", r.keyword.empty() ? keyword_of(r.flag) : r.keyword}, {"value", r.value},
               {"help", o ? o->get_description() : r.help}};
        if (!r.choices.empty()) j["choices"] = r.choices;
        if (!r.value_name.empty()) j["value_name"] = r.value_name;
        out.push_back(j);
    }
    return out;
}

// What to do about a torch module's verdict (the Python package adds it to a Result's explanation).
constexpr const char* kDeterministicHint =
    "torch.use_deterministic_algorithms(True) makes the kernels whose answers differ on a re-ask repeatable (scatter "
    "atomics, some attention backends on a GPU), or says which cannot be";

json described() {
    CLI::App app;  // `permcheck audit`'s options, made as the command makes them: their help is theirs
    Outcome unused;
    add_audit(app, unused);
    const CLI::App& audit = *app.get_subcommand("audit");
    json properties = json::array();
    for (Property p : all_properties()) {
        const PropertyRules& rules = rules_of(p);
        properties.push_back({{"name", property_name(p)},
                              {"meaning", rules.meaning()},
                              {"adjective", property_adjective(p)},
                              {"audits_black_boxes", rules.audits_black_boxes()},
                              {"needs_reference", rules.needs_reference()},
                              {"chunks_calls", rules.chunks_calls()},
                              {"verdicts", {{"holds", rules.verdict_meaning(true)}, {"fails", rules.verdict_meaning(false)}}},
                              {"options", options_json(property_options(rules), audit)}});
    }
    json verdicts = json::array();
    for (int v = 0; v <= static_cast<int>(Verdict::history_dependent); ++v) {  // every enumerator, in order
        const int code = exit_code(static_cast<Verdict>(v));
        verdicts.push_back({{"word", verdict_name(static_cast<Verdict>(v))}, {"failure", code == 1}, {"exit_code", code}});
        if (static_cast<Verdict>(v) == Verdict::nondeterministic)
            verdicts.back()["torch_hint"] = kDeterministicHint;
    }
    json kinds = json::array();
    for (int k = 0; k <= static_cast<int>(TensorKind::segment); ++k)
        kinds.push_back({{"name", tensor_kind_name(static_cast<TensorKind>(k))},
                         {"integer", is_integer(static_cast<TensorKind>(k))}});
    std::vector<Arithmetic> precisions{Arithmetic::float64, Arithmetic::float32, Arithmetic::tf32, Arithmetic::float16,
                                       Arithmetic::bfloat16};
    std::stable_sort(precisions.begin(), precisions.end(),  // finest first; a tie keeps the order above
                     [](Arithmetic a, Arithmetic b) { return coarser(a, b) != a; });
    json precision_names = json::array();
    for (Arithmetic a : precisions) precision_names.push_back(arithmetic_name(a));
    return {{"version", PERMCHECK_VERSION},      {"properties", properties},
            {"options", options_json(general_options(), audit)},
            {"verdicts", verdicts},              {"tensor_kinds", kinds},
            {"precisions", precision_names}};
}

}  // namespace

void add_describe(CLI::App& app, Outcome& outcome) {
    CLI::App* sub = app.add_subcommand("describe", "print this binary's vocabulary: properties and their options, "
                                                   "verdicts, input kinds, precisions (what the Python package reads)");
    auto json_flag = std::make_shared<bool>(false);
    sub->add_flag("--json", *json_flag, "as one JSON object (the schema: docs/reference.md, \"describe --json\")");
    sub->footer("Exit status: 0; 2 without --json (the only form).");
    sub->callback([&outcome, json_flag] {
        if (!*json_flag) {
            std::fprintf(stderr, "permcheck describe: give --json (the only form it prints)\n");
            outcome.exit_code = 2;
            return;
        }
        std::printf("%s\n", described().dump(1).c_str());
        outcome.exit_code = 0;
    });
    // The Python package's other call: `permcheck name-repro DIR` once it wrote DIR/repro.py, which the report then
    // names (report.json's "repro", a line under the title of report.md and report.html) as the views write it for an
    // adapter program's, so the package holds none of their words. Not in the help (group ""): no user's command.
    CLI::App* naming = app.add_subcommand("name-repro", "name DIR/repro.py in DIR's report (the Python package's)");
    naming->group("");
    auto dir = std::make_shared<std::string>();
    naming->add_option("DIR", *dir)->required();
    naming->callback([&outcome, dir] {
        try {
            report::Record r = report::read(*dir);
            r.repro = "repro.py";
            report::write(*dir, r);
            outcome.exit_code = 0;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "permcheck name-repro: %s\n", e.what());
            outcome.exit_code = 2;
        }
    });
}

}  // namespace permcheck::cli
