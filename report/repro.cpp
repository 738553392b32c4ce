// repro.py for an adapter program's finding (report/repro.h).
#include "report/repro.h"

#include "properties/property.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace permcheck::report {

using nlohmann::json;

namespace {

constexpr int kAsks = 5;  // a nondeterministic finding: how many times repro.py asks x

// `name = ` a JSON object as Python reads it (json.loads, for true, false and null): one key a line.
std::string assigned(const std::string& name, const json& data) {
    std::string text = name + " = json.loads(r'''{\n";
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
    if (!c.raised().empty())  // which side raised: the reference answering x, or the layer answering its side
        data["raised"] = {{"which", c.raised_by_reference() ? "reference" : "layer"},
                          {"side", c.raised_by_reference() || against ? "x" : "transformed"},
                          {"message", c.raised()}};
    if (const auto* e = c.as<found::Erred>(); e && !e->side.empty())  // an error's case: the side that raised
        data["raised"] = {{"which", e->by_reference ? "reference" : "layer"}, {"side", e->side}, {"message", r.error}};
    json batches = json::array();
    for (std::size_t k = 0; k < c.batches().size(); ++k) {
        const BatchedRequest& b = c.batches()[k];
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
    const found::Erred* erred = r.counterexample ? r.counterexample->as<found::Erred>() : nullptr;
    if (v == Verdict::error && r.signature && erred && !erred->side.empty()) return "";  // asked again, it raises
    if (v != Verdict::violated && v != Verdict::non_finite && v != Verdict::nondeterministic &&
        v != Verdict::batch_dependent && v != Verdict::history_dependent)
        return "the verdict " + std::string(verdict_name(v)) + " is not a finding a repro reproduces" +
               (v == Verdict::error && erred ? " (the case it erred on was not asked again alone)" : "");
    if (!r.counterexample || !r.signature) return "the report holds no counterexample of a signature";
    const Counterexample& c = *r.counterexample;
    if (v == Verdict::history_dependent && !c.asked_before())
        return "the report does not hold the request after which x's answer changed";
    if (v == Verdict::batch_dependent && c.batches().empty())
        return "the report does not hold the batched requests the case was answered in (a batch of more than a "
               "million numbers is not recorded)";
    if (v != Verdict::violated && v != Verdict::non_finite) return "";
    if (!c.raised().empty()) return "";  // the finding is what a side raised: asked again, it raises or it does not
    for (const OutputComparison& o : c.outputs)
        if (o.sides.empty()) return "the report does not say how output " + o.name + " is compared";
    if (c.transformed.empty() && !rules_of(r.property).chunks_calls()) return "the report did not record the transformed inputs";
    return "";
}

namespace {

// The docstring's first line names the layer: anything but a raw docstring's closing quotes, or a final backslash.
std::string docstring_safe(std::string text) {
    for (std::size_t at = text.find("\"\"\""); at != std::string::npos; at = text.find("\"\"\"", at))
        text.replace(at, 3, "'''");
    if (!text.empty() && text.back() == '\\') text += ' ';
    return text;
}

// The module a repro.py loads: a copy beside it (NAME.pt) when the file is not larger than kLargestCopiedModule,
// else the file where the audit read it; the Python expression of its path.
std::string placed_module(const std::filesystem::path& dir, const std::string& file, const std::string& name) {
    const std::filesystem::path from = std::filesystem::absolute(file);
    if (std::filesystem::file_size(from) > kLargestCopiedModule) return python_string(from.string());
    std::filesystem::copy_file(from, dir / (name + ".pt"), std::filesystem::copy_options::overwrite_existing);
    return "os.path.join(HERE, " + python_string(name + ".pt") + ")";
}

}  // namespace

void write_torch_repro(const std::filesystem::path& dir, const Record& r, const TorchRepro& t) {
    const Counterexample& c = *r.counterexample;
    const json full = to_json(r);
    json record = json::object();
    for (const char* key : {"property", "verdict", "dtype", "signature", "counterexample"})
        if (full.contains(key)) record[key] = full[key];
    json how{{"cache", nullptr}, {"cumulative", json::array()}};
    if (t.arguments.empty()) {
        how["arguments"] = json::array();  // forward(*inputs), in the signature's order
        for (const TensorSpec& spec : r.signature->inputs) how["arguments"].push_back(spec.name);
    } else {
        how["arguments"] = json::object();
        for (const std::string& a : t.arguments) how["arguments"][a.substr(0, a.find('='))] = a.substr(a.find('=') + 1);
    }
    how["output"] = nullptr;
    if (!t.output.empty()) {
        const bool index = t.output.find_first_not_of("-0123456789") == std::string::npos && t.output != "-";
        how["output"] = index ? json(std::stoll(t.output)) : json(t.output);
    }
    json calls{{"layer", how}};
    if (!t.reference_file.empty()) calls["reference"] = how;
    const std::string mode = t.train ? "train mode, as --train asked" : "eval mode";
    const std::string written_with = t.torch_version.empty() ? "torch 2.x" : "torch " + t.torch_version;
    std::string text =
        "#!/usr/bin/env python3\nr\"\"\"Reproduces a finding of permcheck without permcheck: " + docstring_safe(r.layer) +
        ", " + property_name(r.property) + " " + verdict_name(r.verdict) + ".\n\n"
        "Run: python3 repro.py   (exits 1 while the bug is there, 0 once it is fixed)\n"
        "     python3 repro.py OTHER.pt   (another saved model with the same forward: a fixed twin)\n"
        "The audit's seed " + std::to_string(r.seed) + ", case " + std::to_string(c.case_index) + ", lengths " +
        format_lengths(c.lengths) + ". module.pt beside it is a copy of " + docstring_safe(t.file) + ", as audited.\n"
        "Written with " + docstring_safe(written_with) + "; it runs on any later torch 2.x.\n"
        "\"\"\"\nimport json\nimport os\nimport sys\nimport zipfile\n\nimport torch\n\n"
        "HERE = os.path.dirname(os.path.abspath(__file__))\n"
        "# The finding as report.json records it: the signature, x, the inputs the transformed side was asked (every\n"
        "# index input already renumbered), how each output is compared.\n" +
        assigned("RECORD", record) +
        "AUDITED = getattr(torch, {\"tf32\": \"float32\"}.get(RECORD[\"dtype\"], RECORD[\"dtype\"]))\n\n\n"
        "def load(path, train):\n"
        "    \"\"\"The saved model as the audit loaded it, told apart by content: a TorchScript archive (code/ in the\n"
        "    zip) with torch.jit.load, else a torch.export program with torch.export.load(path).module(), whose mode\n"
        "    was fixed when it was exported.\"\"\"\n"
        "    with zipfile.ZipFile(path) as z:\n"
        "        script = any(n.split(\"/\", 1)[-1].startswith(\"code/\") for n in z.namelist())\n"
        "    if script:\n"
        "        return torch.jit.load(path, map_location=\"cpu\").to(AUDITED).train(train)\n"
        "    return torch.export.load(path).module().to(AUDITED)\n\n\n"
        "# The module as the audit loaded it (" + mode + ", in the audited dtype).\n"
        "layer = load(sys.argv[1] if len(sys.argv) > 1 else " + placed_module(dir, t.file, "module") + ", " +
        (t.train ? "True" : "False") + ")\n";
    if (!t.reference_file.empty())
        text += "reference = load(" + placed_module(dir, t.reference_file, "reference") + ", " +
                (t.train ? "True" : "False") + ")\n";
    text += std::string("\n") + repro_texts::case_of +
            "\n\nCASE = case_of(RECORD, against=" + (rules_of(r.property).needs_reference() ? "True" : "False") + ")\n"
            "# How forward is called (arguments: the inputs in order, or {parameter: input or length:AXIS}; output: the\n"
            "# element of the result that answers).\n" +
            assigned("CALLS", calls) + "\n" + repro_texts::calls + "\n" + repro_texts::torch_call + "\n" +
            repro_texts::compare;
    write_atomically(dir / "repro.py", text);
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

    const std::string layer = docstring_safe(r.layer);
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
                       assigned("CASE", data) + "\n" + repro_texts::exec + "\n" + repro_texts::compare;
    write_atomically(dir / "requests.jsonl", lines);
    write_atomically(dir / "permcheck_adapter.py",
                     std::string("# permcheck's adapter helper (serve), copied beside repro.py: adapters written with it "
                                 "import it.\n") + repro_texts::calls + "\n" + repro_texts::protocol);
    write_atomically(dir / "repro.py", text);
}

}  // namespace permcheck::report
