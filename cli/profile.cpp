#include "cli/profile.h"

#include "properties/property.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace permcheck::cli {

namespace {

bool has_kind(const Signature& s, bool (*is)(TensorKind)) {
    return std::any_of(s.inputs.begin(), s.inputs.end(), [is](const TensorSpec& t) { return is(t.kind); });
}
bool is_position(TensorKind k) { return k == TensorKind::position; }

bool decided(Verdict v) { return v != Verdict::error && v != Verdict::interrupted && v != Verdict::undecided; }

// What a row's verdict says, in words: the order-aware row's "holds" is a bag of tokens; order by another route than
// the position inputs, in a layer the causal row found causal, is its causal mask by row index.
std::string meaning(const ProfileRow& row, Verdict v, std::optional<Verdict> causal) {
    if (!decided(v)) return "";
    const bool holds = v == Verdict::holds;
    if (row.keep_positions) return holds ? "a bag of tokens: order reaches it by no route" : "order-aware";
    if (!row.property && !holds && causal == Verdict::holds)
        return "order by row index: a causal mask by row index is order the position ids do not carry (what a "
               "causal model does)";
    return rules_of(row.property.value_or(Property{"equivariance"})).verdict_meaning(holds);  // none: equivariance
}

// Whether the signature allows a property of the sequence axis (given, or the only one): an output along it, and
// for packing a position or segment input along it.
bool applies(const PropertyRules& rules, const Signature& s, const std::string& axis) {
    try {
        rules.completed_args(s, PropertyArgs{axis});
        return true;
    } catch (const std::invalid_argument&) {
        return false;
    }
}

}  // namespace

std::vector<ProfileRow> profile_rows(const Signature& s, const std::string& causal_axis, bool reference) {
    const bool positions = has_kind(s, is_position);
    std::vector<ProfileRow> rows;
    if (applies(rules_of(Property{"causal"}), s, causal_axis))
        rows.push_back({"causal", "causal (no output sees a later token)", Property{"causal"}, PadPlacement::any, false, true});
    rows.push_back({"order-through-positions",
                    positions ? "order only through the position inputs" : "equivariance (no position input)",
                    std::nullopt, PadPlacement::any, false});
    if (positions) {
        rows.push_back({"order-aware", "order-aware at all (positions left in place)", std::nullopt, PadPlacement::any, true});
        rows.push_back({"relative", "relative (every position id + c)", Property{"shift"}, PadPlacement::any, false});
    }
    if (has_kind(s, is_mask))
        for (PadPlacement p : {PadPlacement::left, PadPlacement::right, PadPlacement::any})
            rows.push_back({std::string("padding-") + pad_placement_name(p),
                            std::string("padding ") + pad_placement_name(p), Property{"padding"}, p, false});
    if (applies(rules_of(Property{"packing"}), s, causal_axis))
        rows.push_back({"packing", "packed sequences stay apart", Property{"packing"}, PadPlacement::any, false});
    if (reference)
        rows.push_back({"agreement", "agrees with the reference", Property{"agreement"}, PadPlacement::any, false});
    return rows;
}

int run_profile(const std::string& program, const std::string& name, const Signature& s, const AuditFlags& flags,
                const std::function<RowRun(const AuditFlags&)>& run_row) {
    const std::filesystem::path dir = flags.report_dir;
    nlohmann::json listed = nlohmann::json::array();
    std::cout << "profile of " << name << ":\n";
    std::printf("  %-44s %-16s %6s  %s\n", "row", "verdict", "cases", "what it says");
    int code = 0;
    std::optional<Verdict> causal;  // the causal row's verdict, which the order row's words read
    for (const ProfileRow& row : profile_rows(s, flags.causal_axis, flags.reference)) {
        AuditFlags f = flags;
        f.profile = false;
        f.property = row.property;
        f.padding = row.padding;
        f.keep_positions = row.keep_positions;
        if (!dir.empty()) f.report_dir = (dir / row.id).string();
        RowRun run = run_row(f);
        const Verdict v = run.result.verdict;
        if (row.explains_order) causal = v;
        const std::string said = meaning(row, v, causal);
        std::printf("  %-44s %-16s %6d  %s\n", row.title.c_str(), verdict_name(v), run.result.cases, said.c_str());
        std::fflush(stdout);
        if (v == Verdict::error) std::printf("      error: %s\n", run.result.error.c_str());
        if (v != Verdict::holds && !run.record.replay.empty()) std::printf("      replay: %s\n", run.record.replay.c_str());
        if (finish(program, f, run.record, 0) != 0 || v == Verdict::error) code = 2;
        listed.push_back({{"row", row.id}, {"title", row.title}, {"verdict", verdict_name(v)},
                          {"exit_code", exit_code(v)}, {"cases", run.result.cases}, {"meaning", said},
                          {"report", dir.empty() ? "" : row.id + "/report.json"}, {"replay", run.record.replay}});
        if (v == Verdict::interrupted) {
            code = 130;
            break;
        }
    }
    if (!dir.empty()) {
        try {
            report::prepare_directory(dir);
            report::write_atomically(dir / "profile.json", nlohmann::json{{"subject", name}, {"rows", listed}}.dump(2) + "\n");
            std::cout << "profile written to " << (dir / "profile.json").string() << "\n";
        } catch (const std::exception& e) {
            std::cerr << program << ": cannot write the profile: " << e.what() << "\n";
            return 2;
        }
    }
    return code;
}

}  // namespace permcheck::cli
