// Reports: one record, several views, one file each: JSON (json.cpp), Markdown (markdown.cpp), HTML
// (html.cpp); written atomically and read back within bounds (files.cpp). The text view of a counterexample is
// describe() (report/text.h), which the terminal and the C++ API share.
// The JSON schema "permcheck.report/1" is documented in docs/reports.md.
#pragma once

#include "audit/signature_audit.h"
#include "check/check_result.h"
#include "report/text.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace permcheck::report {

inline constexpr const char* kSchema = "permcheck.report/1";

// What an audit checked (AuditResult::checked, its lengths and its tolerance model): report.json's "checked",
// the table "What was checked" of report.md and report.html. A check's report, and one written before it was
// recorded, has none and reads back without it.
struct Checked {
    std::vector<OutputCheck> outputs;                  // in the signature's order
    std::map<std::string, std::vector<int>> lengths;   // per axis, the lengths the run sent, ascending
    ToleranceModel tolerance;                          // of every comparison (the record's dtype)
    int widest = 1;                                    // the signature's widest fixed size, a term of k
};

struct Record {
    Verdict verdict = Verdict::holds;
    std::string layer;     // a catalog name, or the audited command / callable's name
    Property property = Property{"equivariance"};
    Arithmetic dtype = Arithmetic::float64;
    int cases = 0;
    std::uint64_t seed = 0;
    // The finding by name (the one-tensor forms': input x, output y), with the signature it is shown with.
    std::optional<Counterexample> counterexample;
    std::optional<Signature> signature;
    // The signature is the one-tensor form's (audit/blackbox.h), set where that form is known (the command line's
    // --dim, a report that recorded it): report.json records it as that form, and a replay speaks its dialect.
    bool one_tensor = false;
    std::string error;     // empty unless verdict is error
    std::string replay;    // a command line that re-runs this exact case
    // The reproduction without permcheck beside report.json ("repro.py", report/repro.h), named first in report.md
    // and report.html; empty when none was written.
    std::string repro;
    nlohmann::json details = nlohmann::json::object();  // producer-specific extras (audit: command, last request)
    // The version of the weight draw (scalars/weights.h) of a check's layers; 0 for a black box, which has none.
    int weights = 0;
    // The counterexample's taps (audit/taps.h), when the audited layer offered them: report.json's "taps",
    // "first_breaking_tap" and "taps_note"; a table in report.md and report.html with the first breaking tap marked.
    std::optional<TapTrace> taps;
    std::optional<Checked> checked;
    // An audit's version of the case draw (kCaseDrawVersion): its seed draws these cases again; 0 for a check.
    int case_draw = 0;
};

nlohmann::json to_json(const Record& r);
// Throws std::invalid_argument naming the missing or malformed field.
Record from_json(const nlohmann::json& j);
// A signature as report.json's "signature" holds it: the texts of its flags, {"axes", "inputs", "outputs"}.
nlohmann::json signature_json(const Signature& s);

std::string to_markdown(const Record& r);
std::string to_html(const Record& r);  // self-contained: no network, inline SVG

// Writes report.json, report.md and report.html into dir (created if needed), each through a temporary file
// and a rename, so a killed run never leaves a half-written report. Throws std::runtime_error on I/O failure.
void write(const std::filesystem::path& dir, const Record& r);
// Creates dir if needed; throws std::runtime_error naming it when it cannot be made. For callers that check
// the directory before they spend time on what goes into it.
void prepare_directory(const std::filesystem::path& dir);
// Reads a report.json (or a directory holding one). Throws std::invalid_argument / std::runtime_error.
Record read(const std::filesystem::path& path);

// The property's options an audit's details (details.audit, details.audit_torch) record: its "settings", and in a
// report written before the axis flags were the properties' own, "keep_positions" and "along".
std::map<std::string, std::string> recorded_settings(const nlohmann::json& details);

// The record of a reference layer's check: holds | violated (interrupted when stopped), its options under
// details["check"].
Record record_of(const CheckResult& result, const CheckOptions& opts);
// The record of an audit (`permcheck audit`, `permcheck audit-torch`); the caller adds its own details.
// `property` and `dtype` are the audit's (also when it ended before it ran, e.g. on options it refused).
Record record_of(const AuditResult& result, const std::string& layer, Property property, Arithmetic dtype,
                 std::uint64_t seed, const std::string& replay);

// Writes `content` to `file` through a temporary file in the same directory, fsync and rename: readers see the
// old file or the new one, never a part. Throws std::runtime_error naming the file and the system's reason. The
// temporary files that a killed run left in the same directory (`.NAME.tmp.PID.N`, PID no longer running) are
// removed.
void write_atomically(const std::filesystem::path& file, const std::string& content);

}  // namespace permcheck::report
