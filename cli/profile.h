// `--profile`: every property that applies to a signature, a row each, one table on the terminal; each row writes
// its own report directory DIR/<row>/ (so that replay and EXPECT read one verdict) and DIR/profile.json lists the
// rows. The profile reports, it does not judge: exit 0 when every row ran to a verdict (violated, nondeterministic,
// non-finite and undecided included), 2 when a row erred or an option was bad, 130 when interrupted.
#pragma once

#include "cli/audit_common.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace permcheck::cli {

struct ProfileRow {
    std::string id;     // its report directory's name
    std::string title;  // what it asks, in words
    std::optional<Property> property;
    std::map<std::string, std::string> settings;  // the property's options the row runs with (padding=left)
    bool explains_order = false;  // its holding verdict is what the order row's words read (the causal row)
};

// The rows that apply: causal when the signature has a sequence axis (`causal_axis`, or its one axis) that an output
// lies along, order only through the position inputs (equivariance; plain equivariance without a position input),
// order-aware at all (--keep-positions) and relative (shift) with a position input, padding left, right and any
// with a mask, packing when a position or segment input lies along the sequence axis, and agreement when a
// reference implementation was given.
std::vector<ProfileRow> profile_rows(const Signature& s, const std::string& causal_axis = "", bool reference = false);

// One row's run, its flags those of the profile with the row's property: its result and its report record.
struct RowRun {
    AuditResult result;
    report::Record record;
};

// Runs every row through run_row and prints the table on `out`; writes the reports when flags.report_dir is set.
int run_profile(const std::string& program, const std::string& name, const Signature& s, const AuditFlags& flags,
                const std::function<RowRun(const AuditFlags&)>& run_row);

}  // namespace permcheck::cli
