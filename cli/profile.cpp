#include "cli/profile.h"

#include "properties/property.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace permcheck::cli {

namespace {

bool decided(Verdict v) { return v != Verdict::error && v != Verdict::interrupted && v != Verdict::undecided; }

// What a row's verdict says, in words: the row's own given the rows decided before it, else the property's.
std::string meaning(const ProfileRow& row, Verdict v, const RowVerdicts& before) {
    if (!decided(v)) return "";
    const bool holds = v == Verdict::holds;
    const std::string said = row.words ? row.words(holds, before) : "";
    return said.empty() ? rules_of(*row.property).verdict_meaning(holds) : said;
}

}  // namespace

std::vector<ProfileRow> profile_rows(const Signature& s, const std::string& causal_axis, bool reference) {
    PropertyArgs given;  // the profile's own option: the sequence axis
    if (!causal_axis.empty()) given.settings[properties::sequence_axis_option().keyword] = causal_axis;
    std::vector<std::pair<int, ProfileRow>> rows;
    for (const PropertyRules* p : registered_properties()) {
        if (!p->audits_black_boxes() || (p->needs_reference() && !reference)) continue;
        for (const ProfileRowSpec& r : p->profile_rows(s, given))
            rows.push_back({r.rank, ProfileRow{r.id, r.title, p->id(), r.settings, r.words}});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ProfileRow> out;
    for (auto& [rank, row] : rows) out.push_back(std::move(row));
    return out;
}

int run_profile(const std::string& program, const std::string& name, const Signature& s, const AuditFlags& flags,
                const std::function<RowRun(const AuditFlags&)>& run_row) {
    const std::filesystem::path dir = flags.report_dir;
    nlohmann::json listed = nlohmann::json::array();
    const auto given = flags.settings.find(properties::sequence_axis_option().keyword);
    const std::vector<ProfileRow> rows = profile_rows(s, given == flags.settings.end() ? "" : given->second, flags.reference);
    int width = 3;  // the titles' column: the longest title
    for (const ProfileRow& row : rows) width = std::max(width, static_cast<int>(row.title.size()));
    std::cout << "profile of " << name << ":\n";
    std::printf("  %-*s %-16s %6s  %s\n", width, "row", "verdict", "cases", "what it says");
    int code = 0;
    RowVerdicts before;  // the decided verdicts so far, which later rows' words read
    for (const ProfileRow& row : rows) {
        AuditFlags f = flags;
        f.profile = false;
        f.property = row.property;
        f.settings = row.settings;
        for (const PropertyOption& o : rules_of(*row.property).options())  // what every row of its property takes
            if (const auto it = flags.settings.find(o.keyword); o.every_row && it != flags.settings.end())
                f.settings.emplace(o.keyword, it->second);
        if (!dir.empty()) f.report_dir = (dir / row.id).string();
        RowRun run = run_row(f);
        const Verdict v = run.result.verdict;
        const std::string said = meaning(row, v, before);
        if (decided(v)) before[row.id] = v == Verdict::holds;
        std::printf("  %-*s %-16s %6d  %s\n", width, row.title.c_str(), verdict_name(v), run.result.cases, said.c_str());
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
