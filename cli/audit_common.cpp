#include "cli/audit_common.h"

#include "cli/options.h"
#include "cases/compare.h"
#include "report/repro.h"
#include "report/views.h"
#include "properties/property.h"

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <vector>

namespace permcheck::cli {
namespace {

// --dtype's values that name a precision, in the order the help lists them.
const std::pair<DtypeChoice, Arithmetic> kDtypes[] = {{DtypeChoice::float32, Arithmetic::float32},
                                                      {DtypeChoice::float64, Arithmetic::float64},
                                                      {DtypeChoice::float16, Arithmetic::float16},
                                                      {DtypeChoice::bfloat16, Arithmetic::bfloat16},
                                                      {DtypeChoice::tf32, Arithmetic::tf32}};

// --property's help: each property a black box may be audited for, with its claim.
std::string property_help() {
    std::string help;
    for (const PropertyRules* p : registered_properties())
        if (p->audits_black_boxes())
            help += (help.empty() ? "" : " | ") + std::string(p->name()) + " (" + p->meaning() + ")";
    return help + "; default: equivariance";
}

bool declares(const PropertyRules& p, const std::string& keyword) {
    for (const PropertyOption& o : p.options())
        if (keyword == o.keyword) return true;
    return false;
}
// Whether a declared option is one the profile passes to every row of its property (PropertyOption::every_row).
bool every_row(const std::string& keyword) {
    for (const PropertyRules* p : registered_properties())
        for (const PropertyOption& o : p->options())
            if (keyword == o.keyword && o.every_row) return true;
    return false;
}
// The flag of a declared option, and the properties that declare it ("window", "causal or packing").
std::string flag_of(const std::string& keyword) {
    for (const PropertyRules* p : registered_properties())
        for (const PropertyOption& o : p->options())
            if (keyword == o.keyword) return o.flag;
    return keyword;
}
// The names of the properties that declare `keyword`, as "a, b or c".
std::string declaring(const std::string& keyword) {
    std::vector<std::string> names;
    for (const PropertyRules* p : registered_properties())
        if (declares(*p, keyword)) names.push_back(p->name());
    std::string out;
    for (std::size_t k = 0; k < names.size(); ++k)
        out += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + names[k];
    return out;
}

// The options the properties declare, each flag once, its value kept in f.settings under its keyword.
void add_declared_options(CLI::App& app, AuditFlags& f) {
    std::set<std::string> added;
    for (const PropertyRules* p : registered_properties())
        for (const PropertyOption& o : p->options()) {
            if (!added.insert(o.flag).second) continue;
            const std::string keyword = o.keyword, help = "with --property " + declaring(keyword) + ": " + o.help;
            if (*o.value == '\0')
                app.add_flag_callback(o.flag, [&f, keyword] { f.settings[keyword] = "true"; }, help);
            else
                app.add_option_function<std::string>(o.flag, [&f, keyword](const std::string& v) { f.settings[keyword] = v; },
                                                     help)
                    ->type_name(o.value)
                    ->allow_extra_args(false)
                    ->check(o.choices.empty() ? CLI::Validator() : CLI::IsMember(o.choices));
        }
}

}  // namespace

bool names_a_tensor(const std::string& output_text) { return output_text.find(':') != std::string::npos; }

void add_signature_options(CLI::App& app, SignatureText& t, const std::string& output_help,
                           const std::string& output_type, std::function<void(const std::string&)> output_check) {
    app.add_option("--axis", t.axes,
                   "NAME=MIN..MAX: a set of positions whose order the layer must not care about (repeatable); each "
                   "case draws a length in [MIN, MAX] (MIN may be 0) and a permutation of every axis")
        ->allow_extra_args(false)
        ->check(parsed_by([](const std::string& text) { parse_axis(text); }));
    app.add_option("--input", t.inputs,
                   "NAME:DIMS[:KIND]: an input (repeatable); DIMS axis names and fixed sizes, outermost first "
                   "(q:n,8  bias:n,n  edge_index:2,edges:index=nodes  ids:n:token=50000  pos:n:position). KIND: "
                   "float (default): real values; "
                   "mask: booleans, true = padding (key_padding_mask); "
                   "mask=keep: integers, 1 = a real position, 0 = padding (attention_mask); "
                   "index=AXIS: integers naming positions of AXIS, renumbered when AXIS moves (an edge list); "
                   "index=AXIS,sorted[=ROW]: the same, kept in ascending order of row ROW (default 0) along its axis "
                   "as library code requires (edge_index:2,edges:index=nodes,sorted=1 by target), every case re-sorted "
                   "stably after its permutation, the inputs along that axis moved with the sort; "
                   "index=AXIS,within=INPUT: each position's entries (an edge's ends) inside one group of the index "
                   "input INPUT along AXIS (a batch vector), in every case; "
                   "token=V: integer ids in [0, V), moved with their dims, never renumbered (input_ids); "
                   "position[=P]: integer position ids offset+0..n-1 along one axis, P positions (default 4096), "
                   "moved with the tokens (position_ids)")
        ->allow_extra_args(false)
        ->check(parsed_by([](const std::string& text) { parse_input(text); }));
    app.add_option("--output", t.outputs, output_help)
        ->type_name(output_type)
        ->allow_extra_args(false)
        ->check(parsed_by(std::move(output_check)));
}

Signature signature_of(const SignatureText& t) {
    Signature s;
    for (const std::string& a : t.axes) s.axes.push_back(parse_axis(a));
    for (const std::string& i : t.inputs) s.inputs.push_back(parse_input(i));
    for (const std::string& o : t.outputs) {
        if (!names_a_tensor(o))
            throw std::invalid_argument("--output " + o + " is the shorthand's (with --dim); with --axis/--input "
                                        "name every output with its dims, e.g. --output y:n,8");
        s.outputs.push_back(parse_output(o));
    }
    if (s.outputs.empty())
        throw std::invalid_argument("with --axis/--input, name every output with --output NAME:DIMS, e.g. --output "
                                    "y:n,8 (equivariant along n) or --output g:4 (invariant to every axis)");
    validate(s);  // the library's rules, the size of every tensor included
    return s;
}

void add_audit_options(CLI::App& app, AuditFlags& f, const std::string& dtype_help, const std::string& seed_help) {
    std::vector<Choice<DtypeChoice>> choices;
    for (const auto& [choice, a] : kDtypes) choices.push_back({arithmetic_name(a), choice});
    if (f.dtype == DtypeChoice::infer) choices.insert(choices.begin(), {"infer", DtypeChoice::infer, " (from the answers)"});
    add_choice(app, "--dtype", f.dtype, choices, dtype_help, " (the precision the layer computes in)");
    add_ranged(app, kAuditMinLen, f.min_len, "fewest positions of a case");
    f.max_len_option = add_ranged(app, kAuditMaxLen, f.max_len,
                                  "most positions of a case; given, a hard cap (default 8, and every tenth case a long "
                                  "one, up to 256 positions)");
    f.max_len_option->check(not_below_min_len(f.min_len));
    add_ranged(app, kAuditCases, f.cases, "cases of the audit (each costs two layer calls)");
    add_seed(app, f.seed, seed_help);
    // --min-len against the default --max-len. Not through force_callback on --max-len: that counts the default
    // as given, and a given --max-len is a hard cap (no long cases).
    app.parse_complete_callback([&f] {
        if (!f.max_len_given() && f.min_len > f.max_len)
            throw BadOption("--min-len (" + std::to_string(f.min_len) + ") must not exceed --max-len (" +
                            std::to_string(f.max_len) + ")");
    });
}

void add_property_options(CLI::App& app, AuditFlags& f) {
    std::vector<Choice<int>> properties;  // a registered property's index
    for (std::size_t k = 0; k < registered_properties().size(); ++k)
        if (registered_properties()[k]->audits_black_boxes())
            properties.push_back({registered_properties()[k]->name(), static_cast<int>(k)});
    CLI::Option* property = add_choice(app, "--property", f.property_flag, properties,
               property_help(), " (reversal and causal-prefix are the reference layers', permcheck check)")
        ->default_str("");
    add_declared_options(app, f);
    app.add_option("--dtype-source", f.dtype_source,
                   "what chose --dtype, as the report's dtype_evidence says: given (you did; the default), module "
                   "(the served module's own dtype) or default (a function's float64 tensors); the Python package "
                   "passes it")
        ->check(CLI::IsMember({"given", "module", "default"}));
    app.add_flag("--skip-padded", f.skip_padded,
                 "leave the slots the masks pad out of every comparison (by default they are compared: with --property "
                 "agreement, a NaN at a fully masked row against the reference's 0 is a disagreement)");
    app.add_option("--shrink-seconds", f.shrink_seconds,
                   "a bound on the time shrinking one failure takes, in seconds (default 300; 0: none): a shrink cut "
                   "short keeps the smallest failing case found by then and says so")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--profile", f.profile,
                 "run every property that applies (order through the position inputs, order-aware at all, relative, "
                 "padding left/right/any), a row each with its own report DIR/<row>/; exit 0 when every row ran to "
                 "a verdict");
    app.parse_complete_callback([&f, property] {
        if (property->count() > 0) f.property = registered_properties().at(static_cast<std::size_t>(f.property_flag))->id();
        if (f.profile && f.property) throw BadOption("--profile runs every property: it takes no --property");
        for (const auto& [keyword, value] : f.settings) {
            // The profile passes on an option every row of its property takes (the sequence axis, the pads' id);
            // the others choose a row's variant and are each row's own.
            if (f.profile && every_row(keyword)) continue;
            if (f.profile)
                throw BadOption("--profile runs every property with its own options: it takes no " + flag_of(keyword));
            if (!declares(rules_of(f.property.value_or(Property{"equivariance"})), keyword))
                throw BadOption(flag_of(keyword) + " goes with --property " + declaring(keyword));
        }
    });
}

void check_reference(const AuditFlags& f, const std::string& flag) {
    const bool wanted = f.property && rules_of(*f.property).needs_reference();
    if (f.reference && !wanted && !f.profile)
        throw std::invalid_argument(flag + " goes with --property agreement (or --profile, which adds its row)");
    if (wanted && !f.reference)
        throw std::invalid_argument("--property agreement compares the layer with a reference implementation: give "
                                    "it with " + flag);
}

Property audited_property(const Signature& s, const AuditFlags& f) {
    // A permuting property's name follows from the outputs (equivariance, invariance); the others are asked for.
    if (f.property && !rules_of(*f.property).permutes()) return *f.property;
    return property_of(s);
}

void add_report_option(CLI::App& app, AuditFlags& f) {
    app.add_option("--report", f.report_dir, "write report.json, report.md and report.html into DIR");
}

std::optional<Arithmetic> requested_dtype(const AuditFlags& f) {
    for (const auto& [choice, a] : kDtypes)
        if (f.dtype == choice) return a;
    return std::nullopt;  // infer
}

DtypeChoice dtype_choice(Arithmetic a) {
    for (const auto& [choice, given] : kDtypes)
        if (a == given) return choice;
    return DtypeChoice::float64;  // exact, in which no black box computes
}

Signature shorthand_signature(const AuditFlags& f, Output output) {
    return one_tensor_signature(f.dim, output, f.min_len, f.max_len, f.max_len_given() ? 0 : AuditOptions{}.long_len);
}

std::string shorthand_head(const Signature& s, const AuditResult& r) {
    // An audit that failed before its first call has settled no dtype (an adapter not started).
    const bool dtype_known = r.verdict != Verdict::error || r.evaluations > 0;
    const Axis& n = s.axes.at(0);
    std::ostringstream head;
    head << property_name(rules_of(r.property).recorded_as(s, {})) << " ("
         << (dtype_known ? precision_text(r) + ", " : "") << "n in [" << n.min_len << ", " << n.max_len << "]";
    if (n.long_len > 0) head << " and one case in ten longer, up to " << n.long_len;
    head << ", d = " << s.inputs.at(0).dims.at(1).size << ")";
    return head.str();
}

AuditOptions audit_options(const AuditFlags& f) {
    AuditOptions o;
    o.dtype = requested_dtype(f);
    o.d = f.dim;
    o.min_len = f.min_len;
    o.max_len = f.max_len;
    if (f.max_len_given()) o.long_len = 0;  // the user's --max-len is a hard cap
    o.cases = f.cases;
    o.seed = f.seed;
    o.property = f.property;
    o.skip_padded = f.skip_padded;
    o.shrink_seconds = f.shrink_seconds;
    o.settings = f.settings;
    return o;
}

Arithmetic coarser(Arithmetic a, Arithmetic b) {
    return tolerance_model(a, 1).unit_roundoff >= tolerance_model(b, 1).unit_roundoff ? a : b;
}

std::string replay_tail(const AuditFlags& f, const AuditResult& r, bool lengths) {
    std::ostringstream s;
    if (const auto given = requested_dtype(f)) s << " --dtype " << arithmetic_name(*given);
    else if (r.dtype_inferred) s << " --dtype " << arithmetic_name(r.dtype);
    if (lengths) s << " --min-len " << f.min_len;
    if (lengths && f.max_len_given()) s << " --max-len " << f.max_len;  // without it, the schedule's long cases too
    s << " --cases " << f.cases << " --seed " << f.seed;
    const std::optional<Property> p = f.property;
    if (p && !rules_of(*p).permutes()) s << " --property " << property_name(*p);
    if (f.skip_padded) s << " --skip-padded";
    for (const auto& [keyword, value] : f.settings)
        s << " " << flag_of(keyword) << (value == "true" ? "" : " " + shell_word(value));
    return s.str();
}

namespace {
// A run that judged its cases to the end, whose throughput the terminal and report.json give; a run that stopped at a
// failure and shrank it has none (its seconds are mostly the shrinking's).
bool ran_through(const AuditResult& r) { return r.verdict == Verdict::holds || r.verdict == Verdict::undecided; }
}  // namespace

report::Record audit_record(const AuditResult& r, const std::string& name, Property property,
                            const AuditFlags& f, const std::string& replay, const std::string& key,
                            nlohmann::json details, double seconds, const Signature* signature) {
    report::Record rec = report::record_of(r, name, property, requested_dtype(f).value_or(r.dtype), f.seed, replay);
    // A signature as the user gave it; the one-tensor form's as the audit learned it (its output's width).
    rec.one_tensor = signature == nullptr;
    if (signature) {
        rec.signature = *signature;
        details["signature"] = report::signature_json(*signature);
    } else {
        details["dim"] = f.dim;
        details["min_len"] = f.min_len;
        details["max_len"] = f.max_len;
        details["max_len_is_cap"] = f.max_len_given();
    }
    if (!f.settings.empty()) details["settings"] = f.settings;  // the property's declared options, as given
    details["axis_lengths"] = r.axis_lengths;
    if (r.largest_shift > 0) details["largest_shift"] = r.largest_shift;
    details["dtype_inferred"] = r.dtype_inferred;
    // What decided the dtype: "given", or the rule of audit/audit_engine.h (PrecisionEvidence) that did.
    details["dtype_evidence"] = !requested_dtype(f)          ? dtype_evidence_name(r.dtype_evidence)
                                : f.dtype_source == "module"  ? "the module's dtype"
                                : f.dtype_source == "default" ? "the default for a function (float64 tensors)"
                                                              : dtype_evidence_name(DtypeEvidence::given);
    details["evaluations"] = r.evaluations;
    details["confirmed_alone"] = r.confirmed_alone;  // cases of a batched run asked again one request each
    details["seconds"] = seconds;
    if (ran_through(r)) details["cases_per_second"] = seconds > 0 ? r.cases / seconds : 0.0;
    if (const std::string said = detail_text(r); !said.empty()) details["finding"] = said;
    // Why no repro.py can be made of the finding ("" when one can): what the Python package reads before it writes one.
    if (exit_code(r.verdict) == 1 || r.counterexample) details["repro_refused"] = report::repro_refused(rec);
    rec.details[key] = std::move(details);
    return rec;
}

AuditResult error_result(const std::string& message) {
    AuditResult r;
    r.verdict = Verdict::error;
    r.error = message;
    return r;
}

int finish(const std::string& program, const AuditFlags& f, const report::Record& record, int code) {
    if (f.report_dir.empty()) return code;
    try {
        report::write(f.report_dir, record);
        std::cout << "report written to " << (std::filesystem::path(f.report_dir) / "report.{json,md,html}").string()
                  << "\n";
        if (!record.repro.empty())
            std::cout << "reproduce without permcheck: python3 " << (std::filesystem::path(f.report_dir) / record.repro).string()
                      << "\n";
    } catch (const std::exception& e) {
        std::cerr << program << ": cannot write the report: " << e.what() << "\n";
        return 2;
    }
    return code;
}

void report_bad_options(CLI::App& sub, Outcome& outcome, const std::string& program, const AuditFlags& f,
                        std::function<report::Record(const AuditResult&)> record_of) {
    sub.preparse_callback([&sub, &outcome, program, &f, record_of](std::size_t) {
        outcome.bad_options = [&sub, program, &f, record_of](const std::string& message) {
            for (CLI::Option* opt : sub.get_options()) {
                if (opt->count() == 0 || opt->get_callback_run()) continue;
                try {
                    opt->run_callback();
                } catch (const CLI::Error&) {  // the bad value itself, or another: its default stays in the record
                }
            }
            finish(program, f, record_of(error_result(message)), 2);
        };
    });
}

bool repro_allowed(const std::string& program, const AuditResult& r, const report::Record& record) {
    const std::string refused = report::repro_refused(record);
    if (!refused.empty() && exit_code(r.verdict) == 1)  // a finding (an error's case says why in its report)
        std::cerr << program << ": no repro.py written: " << refused << "\n";
    return refused.empty();
}

}  // namespace permcheck::cli
