// `permcheck list`: the reference layers, what each computes, its signature and the rows that apply with the
// verdict the theory expects; then the properties.
#include "cli/commands.h"

#include "layers/catalog.h"
#include "properties/property.h"

#include <cstdio>

namespace permcheck::cli {
namespace {

// "equivariance(n) holds, shift(n) fails".
std::string rows_text(const Family& f) {
    std::string rows;
    for (const Expectation& e : f.expectations)
        rows += (rows.empty() ? "" : ", ") + std::string(property_name(e.property)) + "(" + e.axis + ")" +
                (e.holds ? " holds" : " fails");
    return rows;
}

// "--axis n=1..8 --input x:n,{d} --output y:n,{d}" as the flags' texts.
std::string signature_text(const Family& f) {
    std::string s;
    for (const auto* texts : {&f.axes, &f.inputs, &f.outputs})
        for (const std::string& t : *texts) s += (s.empty() ? "" : " ") + t;
    return s;
}

int list() {
    std::printf("layers (permcheck check LAYER; the rational ones: permcheck prove LAYER):\n");
    for (const Family& f : catalog())
        std::printf("  %-36s %s\n      rows: %s\n      signature: %s\n", f.name.c_str(), f.description.c_str(),
                    rows_text(f).c_str(), signature_text(f).c_str());
    std::printf("\n{d} is the width --dim chooses (4 unless given).\n\nproperties (--property P):\n");
    for (Property p : all_properties())
        std::printf("  %-15s %s\n", property_name(p), rules_of(p).meaning());
    std::printf("\ndtypes (--dtype): float32, float64 (tolerance from the unit roundoff), exact (rationals, zero "
                "tolerance); audits also take float16, bfloat16 and tf32 (float32 with TensorFloat-32 matrix products)\n");
    return 0;
}

}  // namespace

void add_list(CLI::App& app, Outcome& outcome) {
    CLI::App* sub = app.add_subcommand("list", "list the reference layers and the properties that apply to each");
    sub->footer("Exit status: 0.");
    sub->callback([&outcome] { outcome.exit_code = list(); });
}

}  // namespace permcheck::cli
