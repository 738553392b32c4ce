// The record as Markdown, for a pull-request comment.
#include "report/views.h"

#include <sstream>

namespace permcheck::report {

using namespace detail;
using nlohmann::json;

std::string to_markdown(const Record& r) {
    std::ostringstream s;
    const SideNames names = shown_sides(r);
    s << "### permcheck: " << headline(r) << "\n\n";
    s << "| field | value |\n| --- | --- |\n";
    s << "| verdict | **" << verdict_name(r.verdict) << "** |\n";
    s << "| layer | " << md_code(r.layer) << " |\n";
    s << "| property | " << property_name(r.property) << " |\n";
    s << "| dtype | " << arithmetic_name(r.dtype) << " |\n";
    s << "| cases | " << r.cases << " |\n";
    s << "| seed | " << r.seed << " |\n";
    if (!r.error.empty()) s << "\n**Error:**\n\n```text\n" << r.error << "\n```\n";
    if (const auto& c = r.counterexample) {
        const Comparison& cmp = c->comparison;
        const bool twice = r.verdict == Verdict::nondeterministic;
        s << "\n#### " << (twice ? "One input answered twice" : "Counterexample") << ": n = " << c->n()
          << ", d = " << c->d() << "\n\n";
        if (twice)
            s << "The layer answered the same input x twice with different results; no permutation plays a part.\n\n";
        else if (r.property == Property::shift)
            s << "Every position index shifted by " << c->shift << ".\n\n";
        else
            s << "Permutation " << md_code(c->perm.cycles()) << " (one-line " << md_code(one_line_text(c->perm))
              << ", acting on rows: (P x)[i] = x[p[i]]).\n\n";
        s << "Largest " << names.diff << " = " << text(cmp.max_abs_diff);
        if (cmp.shape_mismatch)
            s << " (the two sides have different shapes)";
        else
            s << " at position " << cmp.row << ", feature " << cmp.col;
        s << "; tolerance " << text(cmp.tolerance) << ", margin " << text(cmp.margin()) << ".\n";
        // A black box has no weights and no exact evaluation: those lines would only read as warnings.
        if (!c->black_box) {
            s << (c->confirmed_exactly ? "Confirmed in exact rational arithmetic.\n"
                                       : "**Not** confirmed in exact rational arithmetic.\n");
            s << "Weight seed " << c->weight_seed << ", found";
        } else {
            s << "Found";
        }
        s << " at case " << c->case_index << ", " << c->shrink_steps << " shrink steps.\n\n";
        s << "<details><summary>matrices</summary>\n\n```text\nx =\n" << matrix_text(c->x) << names.lhs << " =\n"
          << matrix_text(c->lhs) << names.rhs << " =\n" << matrix_text(c->rhs) << "```\n\n</details>\n";
    }
    if (!r.details.empty()) s << "\n<details><summary>details</summary>\n\n```json\n" << r.details.dump(2, ' ', false, json::error_handler_t::replace) << "\n```\n\n</details>\n";
    if (!r.replay.empty()) s << "\n**Replay:**\n\n```sh\n" << r.replay << "\n```\n";
    if (const std::string again = case_replay(r); !again.empty())
        s << "or re-evaluate this exact case: " << md_code(again) << "\n";
    return s.str();
}

}  // namespace permcheck::report
