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
    for (const auto& [key, value] : data.items()) {
        std::string line = "  " + json(key).dump() + ": " + value.dump(-1, ' ', false, json::error_handler_t::replace);
        // A quote only stands inside a JSON string, where \u0027 is the same: none can close the raw string.
        for (std::size_t at = line.find('\''); at != std::string::npos; at = line.find('\'', at))
            line.replace(at, 1, "\\u0027");
        text += line + (--left ? ",\n" : "\n");
    }
    return text + "}''')\n";
}

std::string python_string(const std::string& s) { return json(s).dump(); }  // a JSON string is a Python one

json finding_data(const Record& r, bool against) {
    const Counterexample& c = *r.counterexample;
    json compare = json::object(), outputs = json::array(), lengths = json::object(), tolerances = json::object();
    for (const TensorSpec& t : r.signature->outputs) outputs.push_back(t.name);
    for (const OutputComparison& o : c.outputs) {
        tolerances[o.name] = o.tolerance;
        if (!o.sides.empty())
            compare[o.name] = {{"compared_from", o.compared_from}, {"expected_from", o.expected_from},
                               {"ignored", o.ignored_at},          {"sides", o.sides},
                               {"shape", o.layer_of_permuted.shape}, {"tolerance", o.tolerance}};
    }
    for (const auto& [axis, n] : c.lengths) lengths[axis] = n;
    json data{{"property", property_name(r.property)}, {"verdict", verdict_name(r.verdict)}, {"asks", kAsks},
              {"outputs", outputs}, {"compare", compare}, {"tolerances", tolerances}, {"lengths", lengths},
              {"x_box", against ? "reference" : "layer"}};
    if (!c.raised.empty())  // which side raised: the reference answering x, or the layer answering its side
        data["raised"] = {{"which", c.raised_by_reference ? "reference" : "layer"},
                          {"side", c.raised_by_reference || against ? "x" : "transformed"},
                          {"message", c.raised}};
    json batches = json::array();
    for (std::size_t k = 0; k < c.batches.size(); ++k) {
        const BatchedRequest& b = c.batches[k];
        json item_shapes = json::object();
        for (const TensorSpec& t : r.signature->outputs) {
            try {
                item_shapes[t.name] = shape_of(t, b.lengths);
            } catch (const std::exception&) {  // a size the signature leaves to the answers: the answer's shapes say it
            }
        }
        batches.push_back({{"request", "batch " + std::to_string(k)}, {"item_shapes", item_shapes},
                           {"which", b.by_reference ? "reference" : "layer"},
                           {"side", b.transformed_side ? "transformed" : "x"},
                           {"at", b.at},
                           {"count", b.items.size()},
                           {"stacked", b.stacked}});
    }
    if (!batches.empty()) data["batches"] = batches;
    return data;
}

}  // namespace

std::string repro_refused(const Record& r) {
    const Verdict v = r.verdict;
    if (v != Verdict::violated && v != Verdict::non_finite && v != Verdict::nondeterministic &&
        v != Verdict::batch_dependent && v != Verdict::history_dependent)
        return "the verdict " + std::string(verdict_name(v)) + " is not a finding a repro reproduces";
    if (!r.counterexample || !r.signature) return "the report holds no counterexample of a signature";
    const Counterexample& c = *r.counterexample;
    if (v == Verdict::history_dependent && !c.asked_before)
        return "the report does not hold the request after which x's answer changed";
    if (v == Verdict::batch_dependent && c.batches.empty())
        return "the report does not hold the batched requests the case was answered in (a batch of more than a "
               "million numbers is not recorded)";
    if (v != Verdict::violated && v != Verdict::non_finite) return "";
    if (!c.raised.empty()) return "";  // the finding is what a side raised: asked again, it raises or it does not
    for (const OutputComparison& o : c.outputs)
        if (o.sides.empty()) return "the report does not say how output " + o.name + " is compared";
    return "";
}

void write_adapter_repro(const std::filesystem::path& dir, const Record& r, const AdapterRepro& a) {
    const Counterexample& c = *r.counterexample;
    json data = finding_data(r, !a.reference_command.empty());
    json names = json::array();
    std::string lines, held;
    for (std::size_t k = 0; k < a.requests.size(); ++k) {
        names.push_back(a.requests[k].first);
        lines += a.requests[k].second + "\n";
        held += (k == 0 ? "" : k + 1 == a.requests.size() ? " and " : ", ") + a.requests[k].first;
    }
    data["requests"] = names;
    data["batch_dims"] = a.batch_dims;
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
                       format_lengths(c.lengths) + ". requests.jsonl beside it holds the requests, a line each: " + held +
                       " (CASE[\"requests\"] names them in order).\n\"\"\"\n"
                       "import json\n\n"
                       "# The adapter commands as the audit ran them, and the directory it ran them in.\n"
                       "COMMANDS = " + commands.dump() + "\n"
                       "DIRECTORY = " + python_string(a.directory) + "\n"
                       "# The finding: how each output is compared (compared_from / expected_from: the flat index of each\n"
                       "# compared entry in the transformed side's answer and in x's; ignored: entries left out).\n" +
                       case_text(data) + "\n" + repro_texts::exec + "\n" + repro_texts::compare;
    write_atomically(dir / "requests.jsonl", lines);
    write_atomically(dir / "permcheck_adapter.py",
                     std::string("# permcheck's adapter helper (serve), copied beside repro.py: adapters written with it "
                                 "import it.\n") + repro_texts::protocol);
    write_atomically(dir / "repro.py", text);
}

}  // namespace permcheck::report
