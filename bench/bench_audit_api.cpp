// Issue 6: throughput of in-process audits, in cases per second: a C++ layer through <permcheck/audit.h>, and
// LibTorch's MultiheadAttention through adapters/torch_adapter.h. A passing case costs two layer calls.
#include <permcheck/audit.h>
#ifdef PERMCHECK_WITH_TORCH
#include "adapters/torch_adapter.h"
#endif

#include <benchmark/benchmark.h>

#include <cmath>

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

#ifdef PERMCHECK_WITH_TORCH
void BM_AuditTorchMultiheadAttention(benchmark::State& state) {
    const int cases = static_cast<int>(state.range(0));
    permcheck::adapters::TorchOptions t;
    t.dim = 8;
    t.heads = 2;
    t.dtype = state.range(1) == 32 ? permcheck::Arithmetic::float32 : permcheck::Arithmetic::float64;
    const permcheck::BlackBox box = permcheck::adapters::torch_black_box(t);
    permcheck::AuditOptions o = options(cases);
    o.dtype = t.dtype;
    for (auto _ : state) report(state, permcheck::audit(box, o));
    state.counters["cases/s"] = benchmark::Counter(static_cast<double>(cases) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AuditTorchMultiheadAttention)->Args({100, 64})->Args({100, 32})->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
