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

AuditResult audit(const std::vector<BlackBox>& layers, const AuditOptions& opts) {
    std::vector<BatchedBlackBox> boxes;
    for (const BlackBox& box : layers) boxes.push_back(BatchedBlackBox{box, {}});
    return audit(boxes, opts);
}

AuditResult audit(const std::vector<BatchedBlackBox>& layers, const AuditOptions& opts) {
    validate(opts);
    const Signature s = one_tensor_signature(opts.d, opts.output, opts.min_len, opts.max_len, opts.long_len);
    std::vector<BatchedNamedBlackBox> boxes;
    for (const BatchedBlackBox& box : layers) {
        BatchedNamedBlackBox named{one_tensor_box(box.one, opts.output), {}};
        if (box.many.call) {
            const Output output = opts.output;
            named.many.capacity = box.many.capacity;
            named.many.call = [call = box.many.call, output](const std::vector<Tensors>& inputs) {
                std::vector<Mat<double>> xs;
                for (const Tensors& t : inputs) xs.push_back(tensor_matrix::as_matrix(t.at("x")));
                std::vector<Answer<Tensors>> out;
                std::vector<Answer<Mat<double>>> got = call(xs);
                for (std::size_t k = 0; k < got.size(); ++k) {
                    out.push_back({std::nullopt, std::move(got[k].error), ""});
                    if (!got[k].value || k >= xs.size()) continue;
                    try {
                        out.back().value = Tensors{{"y", one_tensor_answer(*got[k].value, output, static_cast<int>(xs[k].rows()))}};
                    } catch (const AdapterError& e) {
                        out.back().error = e.what();
                    }
                }
                return out;
            };
        }
        boxes.push_back(std::move(named));
    }
    return audit(boxes, s, opts);
}

}  // namespace permcheck
