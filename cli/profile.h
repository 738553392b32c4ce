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
    bool order_row = false;       // violated where the causal row holds: order by row index
    std::string holds_means, fails_means;  // its verdict's words, when not the property's
};

// The rows that apply, as each property declares them (PropertyRules::profile_rows): with the signature's sequence
// axis (`causal_axis`, or its one axis) causal, then order only through the position inputs and order-aware at
// all (equivariance), relative (shift) with a position input, padding left, right and any with a mask, packing
// when a position or segment input lies along the sequence axis, and agreement when a reference implementation was
// given; the rows that explain order (causal) first, the others in the order the properties are registered.
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
