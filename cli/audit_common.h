// What `permcheck audit` (cmd_audit.cpp) and `permcheck audit-torch` (cmd_audit_torch.cpp)
// share: the options of every audit, a signature's flags (--axis, --input, --output NAME:DIMS), the replay
// line's common part, the report record and the report's writing (the run under Ctrl-C, printed: profile.h).
// Compiled into both programs.
#pragma once

#include "audit/signature_audit.h"
#include "cli/commands.h"
#include "report/report.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <map>
#include <string>
#include <vector>

namespace permcheck::cli {

// --dtype's values: `audit` infers the dtype from the answers by default; `audit-torch` sets the module's.
// float16, bfloat16 and tf32 are only ever given, never inferred.
enum class DtypeChoice { infer, float32, float64, float16, bfloat16, tf32 };

// True when the option was given on the command line.
inline bool given(const CLI::Option* o) { return o != nullptr && o->count() > 0; }

struct AuditFlags {
    int dim = 0;  // registered by each command: its help and default differ
    DtypeChoice dtype = DtypeChoice::float64;
    int min_len = 1, max_len = 8, cases = 100;
    std::uint64_t seed = 1;
    std::string report_dir;
    CLI::Option* max_len_option = nullptr;  // given, --max-len is a hard cap: no long cases
    bool max_len_given() const { return given(max_len_option); }
    // --property (empty: equivariance, the default), --profile (every property that applies, a row each).
    std::optional<Property> property;  // set once parsing is complete, from property_flag when --property was given
    bool skip_padded = false;     // --skip-padded: the slots the masks pad are not compared
    double shrink_seconds = 300;  // --shrink-seconds: the bound on one failure's shrink (AuditOptions)
    std::string dtype_source = "given";  // --dtype-source: what chose --dtype (given, module, default)
    bool reference = false;       // a reference implementation was given (--reference-exec, --reference): agreement
    bool profile = false;
    // The values of the options the properties declare (PropertyRules::options: --padding, --causal-axis,
    // --keep-positions, --window, ...), by keyword, as given.
    std::map<std::string, std::string> settings;
    int property_flag = 0;  // --property as given: its index among the registered properties
};

// --property, --profile and the options the properties declare; their combinations are checked once parsing is
// complete (an option without a property that declares it, --profile with --property or an option of a row's own:
// bad options).
void add_property_options(CLI::App& app, AuditFlags& f);
// Throws std::invalid_argument when a reference was given (`flag` names how) without --property agreement or
// --profile, or agreement was asked for without one.
void check_reference(const AuditFlags& f, const std::string& flag);
// The property the flags ask for, or the signature's own (property_of) when they ask for none.
Property audited_property(const Signature& s, const AuditFlags& f);

// --dtype, --min-len, --max-len, --cases and --seed, in that order (the help lists them so). --dtype accepts
// `infer` when f.dtype is DtypeChoice::infer before the call (its default).
void add_audit_options(CLI::App& app, AuditFlags& f, const std::string& dtype_help, const std::string& seed_help);

// The dtype asked for; empty when it is to be inferred.
std::optional<Arithmetic> requested_dtype(const AuditFlags& f);
// Of two precisions, the coarser (the larger unit roundoff): what a comparison of their answers is judged at.
Arithmetic coarser(Arithmetic a, Arithmetic b);
// The --dtype value that asks for `a` (a black box's precision: not exact).
DtypeChoice dtype_choice(Arithmetic a);

// --report DIR: registered last, after the command's own options.
void add_report_option(CLI::App& app, AuditFlags& f);

// A signature as its flags were given, each repeatable: --axis, --input, and --output NAME:DIMS.
struct SignatureText {
    std::vector<std::string> axes, inputs, outputs;
};

// True for an --output value that names a tensor (NAME:DIMS) rather than `audit`'s shorthand sequence | pooled.
bool names_a_tensor(const std::string& output_text);

// Registers --axis and --input (each refused as CLI11 parses it when its text is bad) and --output, whose help,
// type name and check are the command's (`audit`'s --output also takes its shorthand's values).
void add_signature_options(CLI::App& app, SignatureText& t, const std::string& output_help,
                           const std::string& output_type, std::function<void(const std::string&)> output_check);

// The signature the texts describe, checked whole (validate), every output named with its dims, and no tensor
// larger than a request may carry. Throws std::invalid_argument naming the flag.
Signature signature_of(const SignatureText& t);

// The library's options from the flags; name, output, shard and amplification are the command's.
AuditOptions audit_options(const AuditFlags& f);
// The --dim shorthand's signature: axis n over [--min-len, --max-len], one case in ten longer (up to 256) unless
// --max-len was given (a hard cap).
Signature shorthand_signature(const AuditFlags& f, Output output);
// What the verdict line says the shorthand's audit (signature s) checked: "equivariance (float64, n in [1, 8] and one
// case in ten longer, up to 256, d = 4)", the dtype left out when an error came before the first call.
std::string shorthand_head(const Signature& s, const AuditResult& r);

// " --dtype float64 --min-len 1 --max-len 8 --cases 100 --seed 1": the part of both replay lines after the
// command's own options. It names the dtype the audit used (r.dtype), so a replay judges with the same
// tolerance, unless the dtype was to be inferred and no answer came. Without `lengths` (a signature audit, whose
// axes carry their ranges) --min-len and --max-len are left out.
std::string replay_tail(const AuditFlags& f, const AuditResult& r, bool lengths = true);

// The report record: report::record_of, and under details[key] the command's details plus those of every
// audit (dim, lengths, evaluations, timing, finding). With a signature: the signature in the record (and as
// flags under details[key].signature), the lengths per axis instead of dim and lengths, and the signature's
// counterexample; without one (the shorthand), the result's signature recorded as the one-tensor form's.
report::Record audit_record(const AuditResult& r, const std::string& name, Property property,
                            const AuditFlags& f, const std::string& replay, const std::string& key,
                            nlohmann::json details, double seconds, const Signature* signature = nullptr);

AuditResult error_result(const std::string& message);

// Writes the report if asked; a report that cannot be written turns the run into an error (exit 2).
int finish(const std::string& program, const AuditFlags& f, const report::Record& record, int code);

// Bad options found by CLI11 still leave a report with --report, so CI always has an artifact: set as the
// outcome's bad_options when the subcommand's parsing starts. The options that were valid are stored first, so the
// record (record_of an error result) shows them.
void report_bad_options(CLI::App& sub, Outcome& outcome, const std::string& program, const AuditFlags& f,
                        std::function<report::Record(const AuditResult&)> record_of);

// Whether a repro.py can be made of the record's finding (report::repro_refused); when a finding cannot, stderr says
// why, prefixed with `program`.
bool repro_allowed(const std::string& program, const AuditResult& r, const report::Record& record);

}  // namespace permcheck::cli
