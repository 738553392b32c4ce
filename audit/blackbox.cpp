#include "audit/blackbox.h"

#include "audit/signature_audit.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace permcheck {

bool layers_own(const std::exception& e) { return typeid(e) != typeid(AdapterError); }

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
    if (o.max_len > kMaxAxisLen) fail("--max-len must be at most " + std::to_string(kMaxAxisLen) + ", got " + std::to_string(o.max_len));
    if (o.long_len < 0 || o.long_len > kMaxAxisLen)
        fail("long_len must be between 0 and " + std::to_string(kMaxAxisLen) + ", got " + std::to_string(o.long_len));
    if (o.cases < 1) fail("--cases must be at least 1, got " + std::to_string(o.cases));
    if (o.shard.count < 1 || o.shard.index < 1 || o.shard.index > o.shard.count)
        fail("the shard must be K/N with 1 <= K <= N, got " + std::to_string(o.shard.index) + "/" +
             std::to_string(o.shard.count));
    if (o.dtype == Arithmetic::exact)
        fail("a black box computes in float32, float64, float16 or bfloat16; --dtype exact is for the reference layers");
    if (!(o.amplification >= 1.0) || !std::isfinite(o.amplification))
        fail("the amplification must be a finite number >= 1, got " + std::to_string(o.amplification));
    if (o.repeat_checks < 0) fail("repeat_checks must be >= 0, got " + std::to_string(o.repeat_checks));
    if (!(o.shrink_seconds >= 0) || !std::isfinite(o.shrink_seconds)) fail("shrink_seconds must be >= 0 (0: no bound), got " + std::to_string(o.shrink_seconds));
    if (o.max_shrink_evaluations < 1)
        fail("max_shrink_evaluations must be >= 1, got " + std::to_string(o.max_shrink_evaluations));
}

Signature one_tensor_signature(int d, Output output, int min_len, int max_len, int long_len) {
    Signature s;
    s.axes.push_back(Axis{"n", min_len, max_len, long_len > max_len ? long_len : 0});
    s.inputs.push_back(TensorSpec{"x", {Dim{"n", 0}, Dim{"", d}}, TensorKind::real, ""});
    std::vector<Dim> y{Dim{"", 0}};
    if (output == Output::sequence) y.insert(y.begin(), Dim{"n", 0});
    s.outputs.push_back(TensorSpec{"y", y, TensorKind::real, ""});
    return s;
}

Output one_tensor_output(const Signature& s) {
    return s.outputs.at(0).dims.size() == 2 ? Output::sequence : Output::pooled;
}

Tensor one_tensor_answer(const Mat<double>& y, Output output, int n) {
    const bool sequence = output == Output::sequence;
    if (sequence ? y.rows() != n : y.rows() != 1) {
        const std::string answered = "the layer answered " + std::to_string(y.rows()) + (y.rows() == 1 ? " row" : " rows") +
                                     " for a request of n=" + std::to_string(n);
        if (sequence)
            throw AdapterError(answered + "; a sequence layer answers one row per position (a pooled layer: --output pooled)");
        throw AdapterError(answered + "; a pooled layer answers one vector");
    }
    if (y.cols() < 1) throw AdapterError("the layer answered rows of width 0 for a request of n=" + std::to_string(n));
    Tensor t = tensor_matrix::as_tensor(y);
    if (!sequence) t.shape = {static_cast<int>(y.cols())};
    return t;
}

NamedBlackBox one_tensor_box(BlackBox layer, Output output) {
    return [layer = std::move(layer), output](const Tensors& inputs) {
        const Mat<double> x = tensor_matrix::as_matrix(inputs.at("x"));
        return Tensors{{"y", one_tensor_answer(layer(x), output, static_cast<int>(x.rows()))}};
    };
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

AuditResult audit(const BlackBox& layer, const AuditOptions& opts) { return audit(std::vector<BlackBox>{layer}, opts); }

namespace {
// The options of a one-tensor audit as the C++ that finds its case again (AuditResult::replay), with the dtype the
// audit used (a MatrixXf callable's float32, or the inferred one).
std::string one_tensor_replay(const AuditOptions& o, Arithmetic used) {
    std::ostringstream s;
    s << "permcheck::AuditOptions{.output = permcheck::Output::" << (o.output == Output::pooled ? "pooled" : "sequence")
      << ", .dtype = permcheck::Arithmetic::" << arithmetic_name(used) << ", .d = " << o.d << ", .min_len = " << o.min_len
      << ", .max_len = " << o.max_len << ", .cases = " << o.cases << ", .seed = " << o.seed
      << "} finds the same case again";
    return s.str();
}
}  // namespace

AuditResult audit(const std::vector<BlackBox>& layers, const AuditOptions& opts) {
    validate(opts);
    std::vector<NamedBlackBox> boxes;
    for (const BlackBox& box : layers) boxes.push_back(one_tensor_box(box, opts.output));
    AuditResult r = audit(boxes, one_tensor_signature(opts.d, opts.output, opts.min_len, opts.max_len, opts.long_len), opts);
    r.replay = one_tensor_replay(opts, r.dtype);
    return r;
}

}  // namespace permcheck
