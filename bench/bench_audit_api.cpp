// Issue 6: throughput of in-process audits, in cases per second: a C++ layer through <permcheck/audit.h>. A passing
// case costs two layer calls.
// Issue 12: the per-case cost of a signature audit (several named inputs) against its floor, two calls of the
// callable: cross-attention at n = m = 64, d = 64 and message passing at 64 nodes, 256 edges, d = 64.
// Issue 22: the same for the shift and padding audits of a language-model block over token ids, position ids and a
// keep mask (RoPE at the position ids, n = 64, d = 64): the floor is the two calls a case must make, L(x) and
// L(x_c) or L(pad x). Issue 38: the causal and packing audits of the same block, causal by row index (within each
// packed sequence, for packing): the floor L(x) and L(x[:k]), or L(pack) and L(s_j); and the incremental audit of
// the causal block decoding in chunks (a ChunkStep whose state is the prefix so far): the floor L(x) and the
// chunked call, every chunk's step.
#include <permcheck/audit.h>
#include "layers/cross_attention.h"
#include "layers/message_passing.h"
#include "layers/token_attention.h"
#include "check/check.h"
#include "properties/property.h"
#include "cases/search.h"
#include "cases/signature_case.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace {

// Single-head self-attention in Eigen, fixed dyadic weights: the C++ layer a user would audit.
Eigen::MatrixXd attention(const Eigen::MatrixXd& x) {
    const Eigen::Index d = x.cols();
    Eigen::MatrixXd wq(d, d), wk(d, d), wv(d, d);
    for (Eigen::Index i = 0; i < d; ++i)
        for (Eigen::Index j = 0; j < d; ++j) {
            wq(i, j) = ((i * 7 + j * 3 + 1) % 9 - 4) / 8.0;
            wk(i, j) = ((i * 7 + j * 3 + 2) % 9 - 4) / 8.0;
            wv(i, j) = ((i * 7 + j * 3 + 3) % 9 - 4) / 8.0;
        }
    Eigen::MatrixXd s = (x * wq) * (x * wk).transpose() / std::sqrt(static_cast<double>(d));
    for (Eigen::Index i = 0; i < s.rows(); ++i) {
        s.row(i).array() -= s.row(i).maxCoeff();
        s.row(i) = s.row(i).array().exp().matrix();
        s.row(i) /= s.row(i).sum();
    }
    return s * (x * wv);
}

permcheck::AuditOptions options(int cases) {
    permcheck::AuditOptions o;
    o.d = 8;
    o.max_len = 8;
    o.cases = cases;
    return o;
}

void report(benchmark::State& state, const permcheck::AuditResult& r) {
    if (r.verdict != permcheck::Verdict::holds) state.SkipWithError("the audited layer did not hold");
}

void BM_AuditCallableEigenAttention(benchmark::State& state) {
    const int cases = static_cast<int>(state.range(0));
    for (auto _ : state) report(state, permcheck::audit_callable(attention, options(cases)));
    state.counters["cases/s"] = benchmark::Counter(static_cast<double>(cases) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AuditCallableEigenAttention)->Arg(100)->Unit(benchmark::kMillisecond);


// ---------------------------------------------------------------------------------- signature audits (issue 12)

constexpr int kWidth = 64;

Eigen::MatrixXd rows_of(const permcheck::Tensor& t) {
    return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(t.values.data(), t.shape.at(0),
                                                                                                   t.shape.at(1));
}
permcheck::Tensor tensor_of(const Eigen::MatrixXd& m, bool vector = false) {
    permcheck::Tensor t;
    t.shape = vector ? std::vector<int>{static_cast<int>(m.cols())}
                     : std::vector<int>{static_cast<int>(m.rows()), static_cast<int>(m.cols())};
    t.values.resize(static_cast<std::size_t>(m.size()));
    Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(t.values.data(), m.rows(), m.cols()) = m;
    return t;
}

permcheck::Signature signature_of(const std::vector<std::string>& axes, const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& outputs) {
    permcheck::Signature s;
    for (const std::string& a : axes) s.axes.push_back(permcheck::parse_axis(a));
    for (const std::string& t : inputs) s.inputs.push_back(permcheck::parse_input(t));
    for (const std::string& t : outputs) s.outputs.push_back(permcheck::parse_output(t));
    return s;
}

permcheck::NamedBlackBox cross_attention_box() {
    permcheck::Draw<double> draw = permcheck::dyadic_draw<double>(1);
    const auto layer = permcheck::CrossAttention<double>::random(kWidth, draw);
    return [layer](const permcheck::Tensors& in) {
        return permcheck::Tensors{{"y", tensor_of(layer(rows_of(in.at("q")), rows_of(in.at("mem"))))}};
    };
}

permcheck::NamedBlackBox message_passing_box(int edge_width) {
    permcheck::Draw<double> draw = permcheck::dyadic_draw<double>(2);
    const auto layer = permcheck::MessagePassing<double>::random(kWidth, edge_width, draw, permcheck::Aggregation::sum);
    return [layer](const permcheck::Tensors& in) {
        const permcheck::Tensor& e = in.at("edge_index");
        const auto edges = static_cast<std::size_t>(e.shape[1]);
        std::vector<int> src(edges), dst(edges);
        for (std::size_t k = 0; k < edges; ++k) {
            src[k] = static_cast<int>(e.values[k]);
            dst[k] = static_cast<int>(e.values[edges + k]);
        }
        const Eigen::MatrixXd y = layer(rows_of(in.at("x")), src, dst, rows_of(in.at("edge_attr")));
        return permcheck::Tensors{{"y", tensor_of(y)}, {"g", tensor_of(permcheck::MessagePassing<double>::readout(y), true)}};
    };
}

struct SignatureSubject {
    permcheck::Signature signature;
    permcheck::NamedBlackBox layer;
};

// 0: cross-attention; 1: message passing with edge features as wide as the nodes' (64); 2: with 8 edge features.
SignatureSubject subject(int which) {
    if (which == 0)
        return {signature_of({"n=64..64", "m=64..64"}, {"q:n,64", "mem:m,64"}, {"y:n,64"}), cross_attention_box()};
    const int edge_width = which == 1 ? kWidth : 8;
    return {signature_of({"nodes=64..64", "edges=256..256"},
                         {"x:nodes,64", "edge_index:2,edges:index=nodes", "edge_attr:edges," + std::to_string(edge_width)},
                         {"y:nodes,64", "g:64"}),
            message_passing_box(edge_width)};
}

// The inputs the audit evaluates: its cases, drawn as the audit draws them (cases/signature_case.h, the same
// seed and sizes), each with its moved inputs P x.
std::vector<std::pair<permcheck::Tensors, permcheck::Tensors>> audited_inputs(const permcheck::Signature& s,
                                                                              const permcheck::AuditOptions& o) {
    std::vector<std::pair<permcheck::Tensors, permcheck::Tensors>> out;
    const permcheck::LengthSchedule lengths = permcheck::signature_lengths(s, o.cases, o.seed);
    rc::Random random(o.seed);
    for (int i = 0; i < o.cases; ++i) {
        const permcheck::Case c = permcheck::draw_signature_case(s, lengths[static_cast<std::size_t>(i)], random.split(),
                                                                          permcheck::size_for_case(i, o.cases));
        out.emplace_back(c.inputs, permcheck::permute_inputs(s, c.perms, c.inputs));
    }
    return out;
}

permcheck::AuditOptions signature_options() {
    permcheck::AuditOptions o;
    o.cases = 50;
    o.repeat_checks = 0;
    o.dtype = permcheck::Arithmetic::float64;
    return o;
}

// The audit against its floor, interleaved in every iteration so that the load of a shared machine falls on both
// (bench/bench_check.cpp's convention, read by bench/run): the audit of 50 cases of one length per axis (MIN =
// MAX) without repeated evaluations, so that a passing case is exactly two calls; the floor, two calls of the
// callable per case, L(x) and L(P x), on the very inputs the audit sends. Counters: time_s and floor_s per case,
// ratio, target (issue 12: 1.2).
// The audit of `layer` against the two calls a case must make on `inputs` (each case's x and its transformed x),
// interleaved in every iteration.
void against_floor(benchmark::State& state, const permcheck::NamedBlackBox& layer, const permcheck::Signature& s,
                   const permcheck::AuditOptions& o,
                   const std::vector<std::pair<permcheck::Tensors, permcheck::Tensors>>& inputs) {
    using Clock = std::chrono::steady_clock;
    double work = 0, floor = 0;
    for (auto _ : state) {
        const auto t0 = Clock::now();
        const permcheck::AuditResult r = permcheck::audit(layer, s, o);
        const auto t1 = Clock::now();
        if (r.verdict != permcheck::Verdict::holds || r.evaluations != 2 * o.cases)
            state.SkipWithError("the audited layer did not hold in two calls a case");
        for (const auto& [x, px] : inputs) {
            benchmark::DoNotOptimize(layer(x));
            benchmark::DoNotOptimize(layer(px));
        }
        const auto t2 = Clock::now();
        work += std::chrono::duration<double>(t1 - t0).count();
        floor += std::chrono::duration<double>(t2 - t1).count();
        state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    }
    const double cases = static_cast<double>(state.iterations()) * o.cases;
    state.counters["time_s"] = work / cases;
    state.counters["floor_s"] = floor / cases;
    state.counters["ratio"] = floor > 0 ? work / floor : 0.0;
    state.counters["target"] = 1.2;
}

void BM_SignatureAudit(benchmark::State& state) {
    const SignatureSubject s = subject(static_cast<int>(state.range(0)));
    const permcheck::AuditOptions o = signature_options();
    against_floor(state, s.layer, s.signature, o, audited_inputs(s.signature, o));
}
// subject: 0 cross-attention (n = m = 64, d = 64), 1 message passing (64 nodes, 256 edges, d = 64, 64 edge
// features), 2 the same with 8 edge features.
BENCHMARK(BM_SignatureAudit)->Arg(0)->Arg(1)->Arg(2)->ArgName("subject")->UseManualTime()->Unit(benchmark::kMillisecond);

// ------------------------------------------------------------------------ position-aware audits (issue 22)

permcheck::NamedBlackBox token_attention_box(const permcheck::TokenAttentionDesign& design) {
    permcheck::Draw<double> draw = permcheck::dyadic_draw<double>(3);
    const auto layer = permcheck::TokenAttention<double>::random(design, 1000, 4096, kWidth, draw);
    return [layer](const permcheck::Tensors& in) {
        std::vector<int> ids;
        std::vector<long> positions;
        std::vector<bool> padded;
        for (double v : in.at("ids").values) ids.push_back(static_cast<int>(v));
        for (double v : in.at("pos").values) positions.push_back(static_cast<long>(v));
        for (double v : in.at("keep").values) padded.push_back(v == 0.0);
        return permcheck::Tensors{{"y", tensor_of(layer(ids, positions, padded))}};
    };
}

// 0: shift at n = 64; 1: padding, 63 tokens and one pad anywhere; 2: causal at n = 64; 3: packing, 64 tokens;
// 4: incremental, 64 tokens in chunks.
const permcheck::Property kPositionProperties[] = {permcheck::Property{"shift"}, permcheck::Property{"padding"},
                                                       permcheck::Property{"causal"}, permcheck::Property{"packing"},
                                                       permcheck::Property{"incremental"}};

permcheck::Signature position_signature(int which) {
    return signature_of({which == 1 ? "n=63..64" : "n=64..64"}, {"ids:n:token=1000", "pos:n:position", "keep:n:mask=keep"},
                        {"y:n,64"});
}

permcheck::AuditOptions position_options(int which) {
    permcheck::AuditOptions o = signature_options();
    o.property = kPositionProperties[which];
    return o;
}

// The block each audit holds for: RoPE at the position ids; causal by row index, or within each packed sequence.
permcheck::TokenAttentionDesign position_design(int which) {
    if (which == 2 || which == 4) return {.causal = permcheck::CausalBy::index};
    if (which == 3) return {.causal = permcheck::CausalBy::packed};
    return {};
}

// `box`, a causal layer, decoding in chunks: its state the inputs so far, each chunk answered with the rows of the
// prefix that ends with it (a faithful cache, if not a fast one).
permcheck::NamedBlackBox decoding_in_chunks(const permcheck::NamedBlackBox& box, const permcheck::Signature& s) {
    return permcheck::chunked_black_box(
        [box](std::any& state, const permcheck::Tensors& chunk, int) {
            if (!state.has_value()) state = permcheck::Tensors{};
            auto& prefix = std::any_cast<permcheck::Tensors&>(state);
            for (const auto& [name, t] : chunk) {
                permcheck::Tensor& p = prefix[name];
                p.values.insert(p.values.end(), t.values.begin(), t.values.end());
                p.shape = {static_cast<int>(p.values.size())};
            }
            permcheck::Tensor y = box(prefix).at("y");
            const int rows = chunk.at("ids").shape[0], width = y.shape[1];
            y.values.erase(y.values.begin(), y.values.end() - static_cast<std::ptrdiff_t>(rows * width));
            y.shape = {rows, width};
            return permcheck::Tensors{{"y", y}};
        },
        s);
}

// The inputs a shift or padding audit evaluates, drawn as the audit draws them (properties/): each case's
// x and its shifted or padded inputs.
std::vector<std::pair<permcheck::Tensors, permcheck::Tensors>> position_inputs(const permcheck::Signature& s,
                                                                               const permcheck::AuditOptions& o) {
    std::vector<std::pair<permcheck::Tensors, permcheck::Tensors>> out;
    const permcheck::PropertyRules& p = permcheck::rules_of(*o.property);
    const permcheck::PropertyArgs args = p.completed_args(s, {});
    const permcheck::LengthSchedule lengths = p.lengths(s, args, o.cases, o.seed);
    rc::Random random(o.seed);
    for (int i = 0; i < o.cases; ++i) {
        const rc::Random own = random.split();
        permcheck::Case c = permcheck::draw_signature_case(s, lengths[static_cast<std::size_t>(i)], own,
                                                                    permcheck::size_for_case(i, o.cases));
        p.draw(s, args, c, own, i, o.cases);
        out.emplace_back(c.inputs, p.transformed(s, args, c));
    }
    return out;
}

// As BM_SignatureAudit: the audit of 50 cases without repeated evaluations against two calls a case on the inputs
// it sends, interleaved. Counters: time_s, floor_s, ratio, target (issue 22: 1.2).
void BM_PositionAudit(benchmark::State& state) {
    const int which = static_cast<int>(state.range(0));
    const permcheck::Signature s = position_signature(which);
    const permcheck::AuditOptions o = position_options(which);
    const permcheck::NamedBlackBox box = token_attention_box(position_design(which));
    against_floor(state, which == 4 ? decoding_in_chunks(box, s) : box, s, o, position_inputs(s, o));
}
// property: 0 shift (n = 64), 1 padding (63 tokens, one pad), 2 causal (n = 64), 3 packing (64 tokens), 4
// incremental (64 tokens in chunks), of RoPE at the position ids with d = 64.
BENCHMARK(BM_PositionAudit)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->ArgName("property")->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

// What the permcheck command runs with (cli/main.cpp): glibc keeps freed memory for reuse instead of trimming the
// heap each time a case frees its blocks of 128 KiB. The floors are measured under the same allocator.
int main(int argc, char** argv) {
    permcheck::keep_freed_memory_for_reuse();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
