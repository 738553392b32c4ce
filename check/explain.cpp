// The text of an in-process audit's result (check/explain.h).
#include "check/explain.h"

#include <sstream>
#include <string>

namespace permcheck {

std::string replay_hint(const AuditOptions& o) {
    std::ostringstream s;
    s << "permcheck::AuditOptions{.output = permcheck::Output::" << (o.output == Output::pooled ? "pooled" : "sequence");
    if (o.dtype) s << ", .dtype = permcheck::Arithmetic::" << arithmetic_name(*o.dtype);
    s << ", .d = " << o.d << ", .min_len = " << o.min_len
      << ", .max_len = " << o.max_len << ", .cases = " << o.cases << ", .seed = " << o.seed
      << "} finds the same case again";
    return s.str();
}

std::string explain(const AuditResult& r, const AuditOptions& given) {
    AuditOptions o = given;
    o.dtype = r.dtype;  // the dtype used (a MatrixXf callable's float32, or the inferred one), for the hint
    std::ostringstream s;
    s << o.name << ": " << property_name(r.property) << " " << verdict_name(r.verdict) << " after "
      << r.cases << (r.cases == 1 ? " case" : " cases") << " (" << r.evaluations
      << (r.evaluations == 1 ? " layer call, " : " layer calls, ") << precision_text(r) << ")\n";
    if (!r.detail.empty()) s << "  " << r.detail << "\n";
    if (!r.error.empty()) s << "  error: " << r.error << (r.last_request.empty() ? "" : "; last request: " + r.last_request) << "\n";
    if (r.counterexample) {
        AuditResult shown = r;
        if (shown.counterexample->replay.empty()) shown.counterexample->replay = replay_hint(o);
        s << describe_finding(shown);
    } else {
        s << "  replay: " << replay_hint(o) << "\n";
    }
    return s.str();
}

std::string signature_flags(const Signature& s) {
    std::string out;
    for (const Axis& a : s.axes) (out += " --axis ") += format(a);
    for (const TensorSpec& t : s.inputs) (out += " --input ") += format_input(t);
    for (const TensorSpec& t : s.outputs) (out += " --output ") += format_output(t);
    return out;
}

std::string explain(const AuditResult& r, const Signature& signature, const AuditOptions& o) {
    std::ostringstream s;
    s << o.name << ": " << verdict_name(r.verdict) << " after " << r.cases << (r.cases == 1 ? " case" : " cases")
      << " (" << r.evaluations << (r.evaluations == 1 ? " layer call, " : " layer calls, ") << precision_text(r) << ")\n";
    if (!r.detail.empty()) s << "  " << r.detail << "\n";
    if (!r.error.empty()) s << "  error: " << r.error << (r.last_request.empty() ? "" : "; last request: " + r.last_request) << "\n";
    if (r.signature_counterexample) s << describe(*r.signature_counterexample, signature);
    s << "  replay: permcheck::AuditOptions{.dtype = permcheck::Arithmetic::" << arithmetic_name(r.dtype)
      << ", .cases = " << o.cases << ", .seed = " << o.seed << "} with the signature" << signature_flags(signature)
      << " finds the same case again\n";
    return s.str();
}

}  // namespace permcheck
