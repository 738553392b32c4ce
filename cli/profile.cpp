#include "cli/profile.h"

#include "properties/property.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace permcheck::cli {

namespace {

bool decided(Verdict v) { return v != Verdict::error && v != Verdict::interrupted && v != Verdict::undecided; }

// What a row's verdict says, in words: the order-aware row's "holds" is a bag of tokens; order by another route than
// the position inputs, in a layer the causal row found causal, is its causal mask by row index.
std::string meaning(const ProfileRow& row, Verdict v, std::optional<Verdict> causal) {
    if (!decided(v)) return "";
    const bool holds = v == Verdict::holds;
    if (!(holds ? row.holds_means : row.fails_means).empty()) return holds ? row.holds_means : row.fails_means;
    if (row.order_row && !holds && causal == Verdict::holds)
        return "order by row index: a causal mask by row index is order the position ids do not carry (what a "
               "causal model does)";
    return rules_of(*row.property).verdict_meaning(holds);
}

}  // namespace

std::vector<ProfileRow> profile_rows(const Signature& s, const std::string& causal_axis, bool reference) {
    PropertyArgs given;  // the profile's own option: the sequence axis
    if (!causal_axis.empty()) given.settings[properties::sequence_axis_option().keyword] = causal_axis;
    std::vector<ProfileRow> first, rest;  // the rows whose verdict the others' words read come first
    for (const PropertyRules* p : registered_properties()) {
        if (!p->audits_black_boxes() || (p->needs_reference() && !reference)) continue;
        for (const ProfileRowSpec& r : p->profile_rows(s, given))
            (r.explains_order ? first : rest)
                .push_back({r.id, r.title, p->id(), r.settings, r.explains_order, r.order_row, r.holds_means, r.fails_means});
    }
    first.insert(first.end(), rest.begin(), rest.end());
    return first;
}

int run_profile(const std::string& program, const std::string& name, const Signature& s, const AuditFlags& flags,
                const std::function<RowRun(const AuditFlags&)>& run_row) {
    const std::filesystem::path dir = flags.report_dir;
    nlohmann::json listed = nlohmann::json::array();
    std::cout << "profile of " << name << ":\n";
    std::printf("  %-44s %-16s %6s  %s\n", "row", "verdict", "cases", "what it says");
    int code = 0;
    std::optional<Verdict> causal;  // the causal row's verdict, which the order row's words read
    const auto given = flags.settings.find(properties::sequence_axis_option().keyword);
    for (const ProfileRow& row : profile_rows(s, given == flags.settings.end() ? "" : given->second, flags.reference)) {
        AuditFlags f = flags;
        f.profile = false;
        f.property = row.property;
        f.settings = row.settings;
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
