// The record of a check and of an audit: the one record every view is made from.
#include "report/report.h"

namespace permcheck::report {

Record record_of(const CheckResult& result, const CheckOptions& opts) {
    Record r;
    r.verdict = result.interrupted ? Verdict::interrupted : result.holds ? Verdict::holds : Verdict::violated;
    r.layer = result.layer;
    r.property = result.property;
    r.dtype = result.dtype;
    r.cases = result.cases_run;
    r.seed = opts.seed;
    r.signature = result.signature;
    r.counterexample = result.counterexample;
    r.replay = result.replay;
    r.weights = result.counterexample ? result.counterexample->weights : kWeightsVersion;
    nlohmann::json& check = r.details["check"];
    check = {{"cases", opts.cases}, {"axis", result.axis}, {"d", opts.d}, {"evaluations", result.evaluations},
             {"expected", result.expected_holds ? "holds" : "violated"}};
    if (opts.min_len) check["min_len"] = *opts.min_len;
    if (opts.max_len) check["max_len"] = *opts.max_len;
    return r;
}

Record record_of(const AuditResult& result, const std::string& layer, Property property, Arithmetic dtype,
                 std::uint64_t seed, const std::string& replay) {
    Record r;
    r.verdict = result.verdict;
    r.layer = layer;
    r.property = property;
    r.dtype = dtype;
    r.cases = result.cases;
    r.seed = seed;
    r.replay = replay;
    r.case_draw = kCaseDrawVersion;
    r.signature = result.signature;
    r.counterexample = result.counterexample;
    if (r.counterexample) r.counterexample->replay = replay;
    r.error = result.error;
    r.taps = result.taps;
    if (!result.checked.empty()) r.checked = Checked{result.checked, result.axis_lengths, result.tolerance, result.tolerance_widest};
    return r;
}

}  // namespace permcheck::report
