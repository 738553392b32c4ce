// `permcheck replay FILE`: evaluates a saved counterexample again, in the arithmetic it was found in.
#include "cli/commands.h"
#include "cli/options.h"

#include "adapters/exec_adapter.h"
#include "layers/catalog.h"
#include "report/failure_db.h"
#include "report/text.h"
#include "report/report.h"

#include "audit/signature_audit.h"
#include "cases/signature_case.h"
#include "properties/property.h"

#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

namespace permcheck::cli {
namespace {

struct ReplayRequest {
    std::string file;
    std::string exec;  // the program that answers for an audited layer; never taken from the report
    std::string socket;  // --connect: instead, a serving process's Unix socket (the Python package's replay)
    // What the saved case goes through, for messages.
    std::string through() const { return socket.empty() ? exec : "the served layer"; }  // a socket's path says nothing
    std::string reference_exec, reference_socket;  // an agreement report's reference implementation
    double timeout = 30;
    double startup_timeout = 120;
};

// The amplification an audited layer's saved case is judged with again, read from its report (1 when it has
// none). Throws std::invalid_argument when the report cannot be replayed through a program, or names none.
double saved_amplification(const ReplayRequest& q, const report::Record& r) {
    if (q.exec.empty() && q.socket.empty())
        throw std::invalid_argument(q.file + " holds a counterexample of an audited program ('" + r.layer +
                                    "'); name the program to replay it against: permcheck replay " + q.file +
                                    " --exec \"COMMAND\" (a report never chooses the program it runs)");
    double amplification = 1.0;
    const nlohmann::json audit = r.details.is_object() && r.details.contains("audit") ? r.details["audit"]
                                                                                      : nlohmann::json::object();
    if (audit.is_object() && audit.contains("amplification")) {
        const nlohmann::json& a = audit["amplification"];
        if (!a.is_number() || !(a.get<double>() >= 1.0) || !std::isfinite(a.get<double>()))
            throw std::invalid_argument(q.file + ": details.audit.amplification must be a finite number >= 1, got " +
                                        a.dump().substr(0, 40));
        amplification = a.get<double>();
    }
    if (r.dtype == Arithmetic::exact)
        throw std::invalid_argument(q.file + ": an audited layer computes in float32, float64, float16 or bfloat16, the report says '" +
                                    arithmetic_name(r.dtype) + "'");
    return amplification;
}

// A batch-dependent report that holds its batched requests (Counterexample::batches): each sent again whole, through
// the program's batched side (stacked when the program announces so), and the case's own request alone; the case's
// item is compared with its answer alone under each output's saved tolerance. Exit 1 while some output still differs;
// nothing when the program (a fixed twin, say) announces no batches now: it is never sent one it did not offer.
std::optional<int> replay_batches(const ReplayRequest& q, const report::Record& r, const adapters::ExecOptions& eo,
                   const std::optional<adapters::ExecOptions>& theirs) {
    const Signature& s = *r.signature;
    const Counterexample& saved = *r.counterexample;
    const BatchedNamedBlackBox layer = adapters::exec_batched_named_black_box(eo, s);
    std::optional<BatchedNamedBlackBox> reference;
    if (theirs) reference = adapters::exec_batched_named_black_box(*theirs, s);
    const bool free = !free_axes(s).empty();
    bool differs = false;
    std::ostringstream said;
    for (const BatchedRequest& b : saved.batches()) {
        if (b.by_reference && !reference)
            throw std::invalid_argument(q.file + " holds a batch of the reference implementation; name it too: "
                                        "--reference-exec \"COMMAND\"");
        const BatchedNamedBlackBox& box = b.by_reference ? *reference : layer;
        const auto asked = [&](const Tensors& t) { return free ? with_free_lengths(s, t, b.lengths) : t; };
        const Tensors alone = box.one(asked(b.transformed_side ? saved.transformed : saved.inputs));
        if (!box.many.capacity || box.many.capacity() < static_cast<int>(b.items.size())) return std::nullopt;
        std::vector<Tensors> items;
        for (const Tensors& item : b.items) items.push_back(asked(item));
        std::vector<Answer<Tensors>> got = box.many.call(items);
        if (got.size() != items.size()) throw AdapterError("the batched request was answered with another number of items");
        if (!got[b.at].value) throw AdapterError(got[b.at].error);
        const std::string side = b.transformed_side ? "the transformed inputs'" : "x's";
        for (const OutputComparison& o : saved.outputs) {
            const Tensor &in_batch = got[b.at].value->at(o.name), &own = alone.at(o.name);
            said << "  output " << o.name << ": " << side << " answer in its batched request (item " << b.at << " of "
                 << b.items.size() << ") and alone ";
            const OutputComparison now = compare_tensors(o.name, in_batch, own, o.tolerance);
            differs = differs || !now.holds;
            if (now.shape_mismatch) said << "have different shapes\n";
            else
                said << "differ by " << now.max_abs_diff << (now.holds ? " within" : " beyond") << " the tolerance "
                     << o.tolerance << " (saved: " << o.max_abs_diff << ")\n";
        }
    }
    std::cout << (differs ? "still fails: " : "now holds: ") << "the saved case (" << format_lengths(saved.lengths)
              << "; " << arithmetic_name(r.dtype) << ") answered in its saved batched request" << (saved.batches().size() > 1 ? "s" : "")
              << ", sent again, and alone through " << q.through() << "\n" << said.str();
    return differs ? 1 : 0;
}

// The options a saved case is judged again with: the report's dtype, property, axes and the property's settings.
AuditOptions replayed_options(const report::Record& r, double amplification) {
    AuditOptions o;
    o.dtype = r.dtype;
    o.amplification = amplification;
    if (!rules_of(r.property).permutes()) o.property = r.property;
    for (const char* key : {"audit", "audit_torch"})
        if (r.details.contains(key)) o.settings = report::recorded_settings(r.details[key]);
    return o;
}

// Each output's difference now, beside the saved one.
void print_outputs(const AuditResult& now, const Counterexample& saved) {
    for (const OutputComparison& c : now.counterexample->outputs) {
        double was = std::numeric_limits<double>::quiet_NaN();
        for (const OutputComparison& before : saved.outputs)
            if (before.name == c.name) was = before.max_abs_diff;
        std::cout << "  output " << c.name << ": ";
        if (c.shape_mismatch) std::cout << "the two sides have different shapes\n";
        else
        {
            std::cout << "differ by " << c.max_abs_diff << (c.holds ? " within" : " beyond") << " the tolerance "
                      << c.tolerance;
            if (!std::isnan(was)) std::cout << " (saved: " << was << ")";  // an erred case saved no difference
            std::cout << "\n";
        }
    }
    if (now.counterexample->outputs.empty()) std::cout << "  every output agrees within its tolerance\n";
}

// What a reader of the replay must know beside the verdict: an older case draw, a batch-dependent case asked alone.
void print_notes(const report::Record& r, bool batch) {
    const Counterexample& saved = *r.counterexample;
    if (r.case_draw < kCaseDrawVersion)
        std::cout << "  the report's cases were drawn by version " << std::max(r.case_draw, 1) << " of the case draw: the saved case "
                  << "replays as it was found, but its replay line's seed may now draw other cases (version "
                  << kCaseDrawVersion << ")\n";
    if (batch)
        std::cout << "  the saved case was batch-dependent (its answer in a batched request differed from its answer "
                     "alone); "
                  << (saved.batches().empty() ? "the report does not hold that request"
                                            : "the program now takes no batched request of its size")
                  << ", so the replay compares two answers alone\n";
}

// A counterexample found by `permcheck audit`, sent again to the program the user names (in the signature's lines:
// the one-tensor form's own for its shorthand), judged with the report's dtype and amplification; exit 1 still
// fails, 0 now holds. Throws when the program cannot answer. The report says which command it audited, but a
// report never chooses what runs: it may come from anyone.
int evaluate_signature(const ReplayRequest& q, const report::Record& r, double amplification) {
    const Counterexample& saved = *r.counterexample;
    const AuditOptions o = replayed_options(r, amplification);
    const adapters::ExecOptions eo{.command = q.exec,
                                   .socket_path = q.socket,
                                   .timeout_seconds = q.timeout,
                                   .startup_timeout_seconds = q.startup_timeout,
                                   .one_tensor = r.one_tensor};
    const PropertyRules& rules = rules_of(r.property);
    // The saved inputs were answered twice differently (nondeterministic), or differently in a batch and alone
    // (batch-dependent: a replay sends one request at a time, so it asks them alone twice).
    const bool batch = r.verdict == Verdict::batch_dependent;
    const bool twice = r.verdict == Verdict::nondeterministic || batch;
    std::optional<NamedBlackBox> reference;
    std::optional<adapters::ExecOptions> theirs;
    if (rules.needs_reference()) {
        if (q.reference_exec.empty() && q.reference_socket.empty())
            throw std::invalid_argument(q.file + " holds a disagreement with a reference implementation; name the "
                                        "reference too: --reference-exec \"COMMAND\"");
        theirs = eo;
        theirs->command = q.reference_exec;
        theirs->socket_path = q.reference_socket;
    }
    if (batch && !saved.batches().empty())
        if (const std::optional<int> code = replay_batches(q, r, eo, theirs)) return *code;
    if (theirs) reference = adapters::exec_named_black_box(*theirs, *r.signature);
    const auto again = [&] {
        return reevaluate(adapters::exec_named_black_box(eo, *r.signature), *r.signature, saved, twice, o,
                          reference ? &*reference : nullptr);
    };
    AuditResult now;
    if (!saved.is<found::Erred>()) now = again();
    else {  // the case the layer erred on: does it still?
        try {
            now = again();
        } catch (const std::exception& e) {
            std::cout << "still errs: the saved case the layer erred on (" << format_lengths(saved.lengths) << ") through "
                      << q.through() << ": " << e.what() << "\n";
            return 1;  // what the report found, found again
        }
        std::cout << "answered now: the saved case the layer erred on (" << format_lengths(saved.lengths)
                  << "), judged:\n";
    }
    const bool holds = now.verdict == Verdict::holds;
    const bool history = r.verdict == Verdict::history_dependent && saved.asked_before();
    std::cout << (holds ? "now holds: " : "still fails: ")
              << (twice     ? std::string("two answers to the saved inputs")
                  : history ? std::string("the saved inputs answered alone and after the saved earlier request")
                            : rules.compared_text())
              << " of the saved case (" << format_lengths(saved.lengths) << "; permutations "
              << format_permutations(saved.perms) << "; " << arithmetic_name(r.dtype) << ") through "
              << q.through() << "\n";
    print_notes(r, batch);
    print_outputs(now, saved);
    // A violation is the lines above; a non-finite or a second, different answer is said in words.
    if (!holds && now.verdict != Verdict::violated) std::cout << "  " << verdict_name(now.verdict) << ": " << detail_text(now) << "\n";
    return holds ? 0 : 1;
}

// A reference layer's saved case, and the check it came from.
struct SavedCheck {
    const Family* family = nullptr;
    const Expectation* row = nullptr;
    CheckOptions opts;
};

// The check's options, from the report's details.check where it has them; the saved case itself is what is evaluated.
// Throws std::invalid_argument naming the field that is out of range.
void read_check_options(const std::string& file, const report::Record& r, const Family& family, CheckOptions& opts) {
    const nlohmann::json check = r.details.is_object() && r.details.contains("check") ? r.details["check"]
                                                                                      : nlohmann::json::object();
    if (!check.is_object())
        throw std::invalid_argument(file + ": details.check is " + check.type_name() + ", not an object");
    const auto option = [&](const char* key, int least) -> std::optional<int> {
        const auto it = check.find(key);
        if (it == check.end()) return std::nullopt;
        if (!it->is_number_integer() || *it < least || *it > std::numeric_limits<int>::max())
            throw std::invalid_argument(file + ": details.check." + key + " must be an integer >= " +
                                        std::to_string(least) + ", got " + it->dump().substr(0, 40));
        return it->get<int>();
    };
    opts.cases = option("cases", 1).value_or(opts.cases);
    opts.min_len = option("min_len", 1);
    opts.max_len = option("max_len", 1);
    const auto x = r.counterexample->inputs.find("x");  // a layer of one sequence: its width is the saved input's
    const int saved_width = family.takes_width() && x != r.counterexample->inputs.end() && x->second.shape.size() == 2
                                ? x->second.shape[1] : opts.d;
    opts.d = option("d", 1).value_or(saved_width);
    if (opts.d != saved_width)
        throw std::invalid_argument(file + ": details.check.d is " + std::to_string(opts.d) + " but the saved input has " +
                                    std::to_string(saved_width) + " features");
}

// The row a report's counterexample belongs to: its property along details.check.axis, else along the axis at fault.
const Expectation& saved_row(const report::Record& r, const Family& family) {
    std::string axis = r.counterexample->axis_at_fault;
    if (r.details.is_object() && r.details.contains("check") && r.details["check"].is_object() &&
        r.details["check"].contains("axis") && r.details["check"]["axis"].is_string())
        axis = r.details["check"]["axis"].get<std::string>();
    return row_of(family, r.property, axis);
}

// Throws std::invalid_argument when the report's layer is not a reference layer here, or its check is malformed.
SavedCheck saved_check(const ReplayRequest& q, const report::Record& r) {
    if (!q.exec.empty() || !q.socket.empty())
        throw std::invalid_argument("--exec replays an audited program's counterexample; " + q.file +
                                    " holds one of the reference layer '" + r.layer + "'");
    SavedCheck c;
    try {
        c.family = &find_layer(r.layer);
    } catch (const std::invalid_argument&) {
        throw std::invalid_argument("'" + r.layer + "' in " + q.file +
                                    " is not a reference layer, so this report cannot be replayed here" +
                                    (r.replay.empty() ? "" : "; its own replay line: " + r.replay));
    }
    c.row = &saved_row(r, *c.family);
    c.opts.arithmetic = r.dtype;
    c.opts.seed = r.seed;
    read_check_options(q.file, r, *c.family, c.opts);
    require_case_fits(signature_of(*c.family, c.opts), *r.counterexample);
    return c;
}

int evaluate_saved(const report::Record& r, const SavedCheck& c) {
    const Counterexample& saved = *r.counterexample;
    const Counterexample now = counterexample_at(*c.family, *c.row, saved, c.opts, saved.case_index, saved.shrink_steps);
    const auto broke = std::find_if(now.outputs.begin(), now.outputs.end(), [](const OutputComparison& o) { return !o.holds; });
    const double was = saved.outputs.empty() ? 0.0 : saved.outputs.front().max_abs_diff;
    if (broke == now.outputs.end()) {
        std::cout << "now holds: " << r.layer << " " << property_name(r.property) << " (" << arithmetic_name(r.dtype)
                  << ") on the saved case (" << format_lengths(saved.lengths) << "); largest difference "
                  << (now.outputs.empty() ? 0.0 : now.outputs.front().max_abs_diff) << " within tolerance "
                  << (now.outputs.empty() ? 0.0 : now.outputs.front().tolerance) << " (saved: " << was << ")\n";
        return 0;
    }
    std::cout << "still fails: largest difference " << broke->max_abs_diff << " (saved: " << was << ")\n"
              << describe(now, signature_of(*c.family, c.opts), finding_words(r.property, Verdict::violated, now, true));
    return 1;
}

int replay(const ReplayRequest& q) {
    report::Record r;
    SavedCheck c;
    double amplification = 1.0;
    bool audited = false;  // an audit's case: through the program the user names
    try {
        r = report::read(q.file);
        if (!r.counterexample || !r.signature)
            throw std::invalid_argument(q.file + " holds no counterexample (verdict " + verdict_name(r.verdict) +
                                        "); to run its check again: " + (r.replay.empty() ? "?" : r.replay));
        audited = r.weights == 0;
        if (audited) amplification = saved_amplification(q, r);
        else c = saved_check(q, r);
    } catch (const std::exception& e) {
        std::cerr << "permcheck replay: " << e.what() << "\n";
        return 2;
    }
    try {
        return audited ? evaluate_signature(q, r, amplification) : evaluate_saved(r, c);
    } catch (const std::exception& e) {
        std::cerr << "permcheck replay: the saved case could not be evaluated"
                  << (audited ? " through " + q.through() : "") << ": " << e.what() << "\n";
        return 2;
    }
}

}  // namespace

void add_replay(CLI::App& app, Outcome& outcome) {
    auto q = std::make_shared<ReplayRequest>();
    CLI::App* sub = app.add_subcommand("replay", "evaluate a saved counterexample again (report.json or its directory)");
    sub->add_option("file", q->file, "a report.json written by --report, or a failure database entry")->required();
    sub->add_option("--exec", q->exec,
                    "for a report of `permcheck audit`: the adapter to send the saved case to (the audited program, "
                    "or its fixed version)");
    sub->add_option("--connect", q->socket,
                    "instead of --exec: the Unix socket of a process that serves the layer (the Python package's "
                    "permcheck.replay)")
        ->excludes("--exec");
    sub->add_option("--reference-exec", q->reference_exec,
                    "for a report of --property agreement: the reference implementation's adapter");
    sub->add_option("--reference-connect", q->reference_socket,
                    "instead of --reference-exec: the Unix socket of a process that serves the reference")
        ->excludes("--reference-exec");
    add_ranged(*sub, kTimeout, q->timeout, "with --exec: seconds one request may take");
    add_ranged(*sub, kStartupTimeout, q->startup_timeout,
               "with --exec: seconds the adapter may take for its first answer (start-up, e.g. import torch)");
    sub->footer("Exit status: 1 the counterexample still fails, 0 the property now holds on it, 2 the file is\n"
                "unreadable, holds no counterexample, names a layer this permcheck does not have, or (an audit's\n"
                "report) the adapter could not answer.");
    sub->callback([q, &outcome] { outcome.exit_code = replay(*q); });
}

}  // namespace permcheck::cli
