#include "check/blackbox.h"

#include "check/signature_audit.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace permcheck {

namespace {
// Longer is possible, but a request of 1024 positions is already a long wait through a subprocess.
constexpr int kMaxAuditLen = 1024;
}  // namespace

Shard parse_shard(const std::string& text) {
    const auto bad = [&] {
        return std::invalid_argument("--shard must be K/N with 1 <= K <= N (e.g. 2/4 for the second of four runners), got '" +
                                     text + "'");
    };
    const auto slash = text.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) throw bad();
    const auto number = [&](const std::string& s) {
        if (s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) throw bad();
        return std::stoi(s);
    };
    Shard s{number(text.substr(0, slash)), number(text.substr(slash + 1))};
    if (s.count < 1 || s.index < 1 || s.index > s.count) throw bad();
    return s;
}

bool in_shard(int case_index, const Shard& shard) { return case_index % shard.count == shard.index - 1; }

void validate(const AuditOptions& o) {
    const auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
    if (o.d < 1) fail("the width --dim must be at least 1, got " + std::to_string(o.d));
    if (o.min_len < 1 || o.max_len < o.min_len)
        fail("sequence lengths must satisfy 1 <= --min-len <= --max-len, got " + std::to_string(o.min_len) + " and " +
             std::to_string(o.max_len));
    if (o.max_len > kMaxAuditLen) fail("--max-len must be at most " + std::to_string(kMaxAuditLen) + ", got " + std::to_string(o.max_len));
    if (o.long_len < 0 || o.long_len > kMaxAuditLen)
        fail("long_len must be between 0 and " + std::to_string(kMaxAuditLen) + ", got " + std::to_string(o.long_len));
    if (o.cases < 1) fail("--cases must be at least 1, got " + std::to_string(o.cases));
    if (o.shard.count < 1 || o.shard.index < 1 || o.shard.index > o.shard.count)
        fail("the shard must be K/N with 1 <= K <= N, got " + std::to_string(o.shard.index) + "/" +
             std::to_string(o.shard.count));
    if (o.dtype == Arithmetic::exact)
        fail("a black box computes in float32, float64, float16 or bfloat16; --dtype exact is for the reference layers");
    if (!(o.amplification >= 1.0) || !std::isfinite(o.amplification))
        fail("the amplification must be a finite number >= 1, got " + std::to_string(o.amplification));
    if (o.repeat_checks < 0) fail("repeat_checks must be >= 0, got " + std::to_string(o.repeat_checks));
    if (o.max_shrink_evaluations < 1)
        fail("max_shrink_evaluations must be >= 1, got " + std::to_string(o.max_shrink_evaluations));
}

NamedBlackBox one_tensor_box(BlackBox layer, Output output) {
    return [layer = std::move(layer), output](const Tensors& inputs) {
        const Mat<double> y = layer(tensor_matrix::as_matrix(inputs.at("x")));
        return Tensors{{"y", one_tensor_answer(y, output)}};
    };
}

namespace {

// Nondeterministic: one input answered twice; batch-dependent: in a batched request and alone.
std::string describe_nondeterministic(const Counterexample& ce, bool batch) {
    const auto keep = static_cast<std::size_t>(ce.comparison.col);  // in view when the rows are cut
    const int width = column_width({&ce.x, &ce.lhs, &ce.rhs});
    std::ostringstream s;
    s << (batch ? "batch-dependent: " : "nondeterministic: ") << ce.layer << " (" << arithmetic_name(ce.dtype)
      << ") answered one input " << (batch ? "in a batched request and alone" : "twice") << ", n = " << ce.n()
      << ", d = " << ce.d() << "\n  x =\n"
      << format_matrix(ce.x, "    ", keep, width) << (batch ? "  answer in a batch =\n" : "  first answer =\n")
      << format_matrix(ce.lhs, "    ", keep, width) << (batch ? "  answer alone =\n" : "  second answer =\n")
      << format_matrix(ce.rhs, "    ", keep, width) << "  largest |difference| = " << ce.comparison.max_abs_diff << " at position "
      << ce.comparison.row << ", feature " << ce.comparison.col << " (tolerance " << ce.comparison.tolerance << ")\n";
    if (!ce.replay.empty()) s << "  replay: " << ce.replay << "\n";
    return s.str();
}

std::string describe_one_tensor(const AuditResult& r, const Counterexample& ce) {
    if (r.verdict == Verdict::nondeterministic || r.verdict == Verdict::batch_dependent)
        return describe_nondeterministic(ce, r.verdict == Verdict::batch_dependent);
    std::string text = describe(ce);
    const std::string violated = property_name(ce.property) + std::string(" violated by ");
    if (r.verdict == Verdict::non_finite && text.rfind(violated, 0) == 0)
        text.replace(0, violated.size(), "non-finite output from ");
    return text;
}

// With the result's signature (every audit with one sets it); a result put together by hand without one shows
// the inputs in the order of their names, each as real.
std::string describe_signature_finding(const AuditResult& r) {
    const SignatureCounterexample& c = *r.signature_counterexample;
    Signature named;
    if (r.signature) named = *r.signature;
    else
        for (const auto& [name, t] : c.inputs) named.inputs.push_back(TensorSpec{name, {}, TensorKind::real, ""});
    std::string text = verdict_name(r.verdict);
    text += r.verdict == Verdict::nondeterministic ? " (first and second answer to one input, as the two sides)" : "";
    text += r.verdict == Verdict::batch_dependent ? " (one input's answer in a batch and alone, as the two sides)" : "";
    text += " (" + std::string(arithmetic_name(r.dtype)) + ")\n";
    return text + describe(c, named);
}

}  // namespace

std::string describe_finding(const AuditResult& r) {
    if (r.counterexample) return describe_one_tensor(r, *r.counterexample);
    if (!r.signature_counterexample) return "";
    if (r.signature && r.signature->one_tensor) {  // put together by hand, without the shorthand's record
        Counterexample ce = one_tensor_view(*r.signature_counterexample, *r.signature, r.property, r.dtype);
        ce.replay = r.signature_counterexample->replay;
        return describe_one_tensor(r, ce);
    }
    return describe_signature_finding(r);
}

const char* dtype_evidence_name(DtypeEvidence e) {
    switch (e) {
        case DtypeEvidence::given: return "given";
        case DtypeEvidence::no_answer: return "no answer";
        case DtypeEvidence::no_finite_value: return "no finite value";
        case DtypeEvidence::short_dyadic: return "short dyadic answers, judged as float64";
        case DtypeEvidence::float32_rounding: return "float32 rounding seen";
        case DtypeEvidence::not_float32: return "an answer not a float32 value";
    }
    return "given";
}

std::string precision_text(const AuditResult& r) {
    const std::string name = arithmetic_name(r.dtype);
    switch (r.dtype_evidence) {
        case DtypeEvidence::given: return name;
        case DtypeEvidence::no_answer: return "no answer came, so no precision was inferred";
        case DtypeEvidence::no_finite_value: return name + ", as no answer held a finite value";
        case DtypeEvidence::short_dyadic: return name + ", as the answers were short dyadic numbers";
        case DtypeEvidence::float32_rounding:
        case DtypeEvidence::not_float32: return name + ", inferred from the answers";
    }
    return name;
}

std::string precision_note(const AuditResult& r) {
    if (r.dtype_evidence != DtypeEvidence::short_dyadic && r.dtype_evidence != DtypeEvidence::no_finite_value) return "";
    return std::string(r.dtype_evidence == DtypeEvidence::short_dyadic
                           ? "the answers were short dyadic numbers (at most " +
                                 std::to_string(kShortDyadicBits) +
                                 " significant bits), which any precision computes exactly"
                           : "no answer held a finite value") +
           ": judged as float64, the stricter tolerance; give --dtype float32 for a layer that computes in float32";
}

AuditResult audit(const BlackBox& layer, const AuditOptions& opts) { return audit(std::vector<BlackBox>{layer}, opts); }

AuditResult audit(const std::vector<BlackBox>& layers, const AuditOptions& opts) {
    std::vector<BatchedBlackBox> boxes;
    for (const BlackBox& box : layers) boxes.push_back(BatchedBlackBox{box, {}});
    return audit(boxes, opts);
}

AuditResult audit(const std::vector<BatchedBlackBox>& layers, const AuditOptions& opts) {
    validate(opts);
    const Signature s = one_tensor_signature(opts.d, opts.output, opts.min_len, opts.max_len);
    std::vector<BatchedNamedBlackBox> boxes;
    for (const BatchedBlackBox& box : layers) {
        BatchedNamedBlackBox named{one_tensor_box(box.one, opts.output), {}};
        if (box.many.call) {
            const Output output = opts.output;
            named.many.capacity = box.many.capacity;
            named.many.call = [call = box.many.call, output](const std::vector<Tensors>& inputs) {
                std::vector<Mat<double>> xs;
                for (const Tensors& t : inputs) xs.push_back(tensor_matrix::as_matrix(t.at("x")));
                std::vector<BatchAnswer<Tensors>> out;
                for (BatchAnswer<Mat<double>>& a : call(xs)) {
                    out.push_back({std::nullopt, std::move(a.error)});
                    if (a.value) out.back().value = Tensors{{"y", one_tensor_answer(*a.value, output)}};
                }
                return out;
            };
        }
        boxes.push_back(std::move(named));
    }
    return audit(boxes, s, opts);
}

}  // namespace permcheck
