// `permcheck list`: the reference layers, what each computes, and the properties that apply with the verdict
// the theory expects; then the properties.
#include "cli/commands.h"

#include "check/engine.h"

#include <cstdio>

namespace permcheck::cli {
namespace {

const char* property_meaning(Property p) {
    switch (p) {
        case Property::equivariance: return "L(P x) = P L(x): reordering the input reorders the output";
        case Property::invariance: return "L(P x) = L(x): a pooled output ignores the order";
        case Property::shift: return "moving every position index by a constant changes nothing";
        case Property::reversal: return "L(R x) = R L(x) for the reversal R";
        case Property::causal_prefix: return "reordering the positions before the last leaves the last output alone";
        case Property::padding: return "inserting masked pads leaves the outputs at the real positions unchanged";
    }
    return "?";
}

int list() {
    std::printf("layers (permcheck check LAYER):\n");
    std::printf("  %-31s %-9s %-52s %s\n", "name", "output", "properties (what the theory expects)", "what it is");
    for (const LayerFamily& spec : catalog()) {
        std::string props;
        for (const Expectation& e : spec.expectations)
            props += (props.empty() ? "" : ", ") + std::string(property_name(e.property)) + (e.holds ? " holds" : " fails");
        std::printf("  %-31s %-9s %-52s %s\n", spec.name.c_str(), spec.output == Output::pooled ? "pooled" : "sequence",
                    props.c_str(), spec.description.c_str());
    }
    std::printf("\nlayers over named inputs (rows of the verdict table; the rational ones: permcheck prove LAYER):\n");
    for (const SignatureFamily& f : signature_catalog()) {
        std::string props;
        for (const AxisExpectation& e : f.expectations) {
            if (!props.empty()) props += ", ";
            if (e.property == Property::shift || e.property == Property::padding) props += property_name(e.property);
            else props += e.axis;
            props += e.holds ? " holds" : " fails";
        }
        std::string signature;
        for (const auto* texts : {&f.axes, &f.inputs, &f.outputs})
            for (const std::string& t : *texts) {
                if (!signature.empty()) signature += ' ';
                signature += t;
            }
        std::printf("  %-36s %-36s %s\n      signature: %s\n", f.name.c_str(), props.c_str(), f.description.c_str(),
                    signature.c_str());
    }
    std::printf("\nproperties (--property P):\n");
    for (Property p : {Property::equivariance, Property::invariance, Property::shift, Property::reversal,
                       Property::causal_prefix, Property::padding})
        std::printf("  %-15s %s\n", property_name(p), property_meaning(p));
    std::printf("\ndtypes (--dtype): float32, float64 (tolerance from the unit roundoff), exact (rationals, zero "
                "tolerance); audits also take float16 and bfloat16\n");
    return 0;
}

}  // namespace

void add_list(CLI::App& app, Outcome& outcome) {
    CLI::App* sub = app.add_subcommand("list", "list the reference layers and the properties that apply to each");
    sub->footer("Exit status: 0.");
    sub->callback([&outcome] { outcome.exit_code = list(); });
}

}  // namespace permcheck::cli
