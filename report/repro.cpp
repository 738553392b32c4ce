// repro.py for an adapter program's finding (report/repro.h).
#include "report/repro.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace permcheck::report {

using nlohmann::json;

namespace {

constexpr int kAsks = 5;  // a nondeterministic finding: how many times repro.py asks x

// A JSON object as Python reads it (json.loads, for true, false and null): one key a line.
std::string case_text(const json& data) {
    std::string text = "CASE = json.loads(r'''{\n";
    std::size_t left = data.size();
    for (const auto& [key, value] : data.items())
        text += "  " + json(key).dump() + ": " + value.dump(-1, ' ', false, json::error_handler_t::replace) +
                (--left ? ",\n" : "\n");
    return text + "}''')\n";
}

std::string python_string(const std::string& s) { return json(s).dump(); }  // a JSON string is a Python one

}  // namespace

std::string repro_refused(const Record& r) {
    if (r.verdict != Verdict::violated && r.verdict != Verdict::non_finite && r.verdict != Verdict::nondeterministic)
        return "the verdict " + std::string(verdict_name(r.verdict)) + " is not a finding a repro reproduces";
    if (!r.counterexample || !r.signature) return "the report holds no counterexample of a signature";
    const Counterexample& c = *r.counterexample;
    if (c.asked_before) return "a request asked before x changes its answer: the repro would need that history";
    if (r.verdict == Verdict::nondeterministic) return "";
    if (!c.raised.empty()) return "the finding is an exception, not a comparison";
    for (const OutputComparison& o : c.outputs)
        if (o.sides.empty()) return "the report does not say how output " + o.name + " is compared";
    return "";
}

void write_adapter_repro(const std::filesystem::path& dir, const Record& r, const AdapterRepro& a) {
    const Counterexample& c = *r.counterexample;
    json compare = json::object(), outputs = json::array(), lengths = json::object();
    for (const TensorSpec& t : r.signature->outputs) outputs.push_back(t.name);
    for (const OutputComparison& o : c.outputs)
        if (!o.sides.empty())
            compare[o.name] = {{"compared_from", o.compared_from}, {"expected_from", o.expected_from},
                               {"ignored", o.ignored_at},          {"sides", o.sides},
                               {"shape", o.layer_of_permuted.shape}, {"tolerance", o.tolerance}};
    for (const auto& [axis, n] : c.lengths) lengths[axis] = n;
    const json data{{"property", property_name(r.property)}, {"verdict", verdict_name(r.verdict)}, {"asks", kAsks},
                    {"outputs", outputs}, {"compare", compare}, {"lengths", lengths}};
    json commands{{"layer", a.command}};
    if (!a.reference_command.empty()) commands["reference"] = a.reference_command;

    std::string layer = r.layer;  // in a raw docstring: anything but its closing quotes, or a final backslash
    for (std::size_t at = layer.find("\"\"\""); at != std::string::npos; at = layer.find("\"\"\"", at))
        layer.replace(at, 3, "'''");
    if (!layer.empty() && layer.back() == '\\') layer += ' ';
    std::string text = "#!/usr/bin/env python3\nr\"\"\"Reproduces a finding of permcheck without permcheck: " + layer + ", " +
                       property_name(r.property) + " " + verdict_name(r.verdict) + ".\n\n"
                       "Run: python3 repro.py   (exits 1 while the bug is there, 0 once it is fixed, 2 when the adapter "
                       "cannot be asked)\n"
                       "     python3 repro.py \"COMMAND\"   (the same requests to another adapter command)\n"
                       "The audit's seed " + std::to_string(r.seed) + ", case " + std::to_string(c.case_index) + ", lengths " +
                       format_lengths(c.lengths) + ". requests.jsonl beside it holds the requests: x's first" +
                       (a.transformed_request.empty() ? "" : ", then the transformed inputs'") + ".\n\"\"\"\n"
                       "import json\n\n"
                       "# The adapter commands as the audit ran them, and the directory it ran them in.\n"
                       "COMMANDS = " + commands.dump() + "\n"
                       "DIRECTORY = " + python_string(a.directory) + "\n"
                       "# The finding: how each output is compared (compared_from / expected_from: the flat index of each\n"
                       "# compared entry in the transformed side's answer and in x's; ignored: entries left out).\n" +
                       case_text(data) + "\n" + repro_texts::exec + "\n" + repro_texts::compare;
    write_atomically(dir / "requests.jsonl",
                     a.x_request + "\n" + (a.transformed_request.empty() ? "" : a.transformed_request + "\n"));
    write_atomically(dir / "permcheck_adapter.py",
                     std::string("# permcheck's adapter helper (serve), copied beside repro.py: adapters written with it "
                                 "import it.\n") + repro_texts::protocol);
    write_atomically(dir / "repro.py", text);
}

}  // namespace permcheck::report
