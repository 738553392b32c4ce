// Proof time of the Z3 prover (issue 8): attention at (n, d) = (8, 4), (16, 8), (32, 16) and the encoder block
// at (6, 4), (12, 8). One iteration = build the terms for both generators, two Z3 checks (each in its own
// process, see proofs/smt_isolation.cpp). The benchmark's CPU column is the parent's alone (building the
// terms); the counters are the two checks' wall time as Z3 measures it (z3_s) and the CPU time of the child
// processes (z3_cpu_s), the figure that stays meaningful on a shared machine. A proof that fails aborts the
// run: it would measure the wrong thing.
#include "layers/catalog.h"
#include "proofs/smt.h"

#include <benchmark/benchmark.h>

namespace {

void prove(benchmark::State& state, const char* layer) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    const permcheck::Family& subject = permcheck::find_layer(layer);
    permcheck::SmtOptions opts;
    opts.timeout_seconds = 600;
    double z3_seconds = 0, z3_cpu_seconds = 0;
    for (auto _ : state) {
        const permcheck::SmtResult r = permcheck::smt_prove(subject, n, d, opts);
        if (!r.as_expected()) {
            state.SkipWithError(("not proved: " + permcheck::describe(r)).c_str());
            return;
        }
        for (const permcheck::AxisProof& a : r.axes)
            for (const permcheck::SmtQuery& q : a.queries) {
                z3_seconds += q.seconds;
                z3_cpu_seconds += q.cpu_seconds;
            }
    }
    state.counters["z3_s"] = benchmark::Counter(z3_seconds, benchmark::Counter::kAvgIterations);
    state.counters["z3_cpu_s"] = benchmark::Counter(z3_cpu_seconds, benchmark::Counter::kAvgIterations);
}

void BM_SmtProveAttention(benchmark::State& state) { prove(state, "attention"); }
void BM_SmtProveEncoder(benchmark::State& state) { prove(state, "encoder"); }

BENCHMARK(BM_SmtProveAttention)->Args({8, 4})->Args({16, 8})->Args({32, 16})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SmtProveEncoder)->Args({6, 4})->Args({12, 8})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
