// The cost of a certificate of single-head attention against two exact forward passes of the same layer.
//   ./build/bench/bench_certificate
// Certificate = the exact witness search (20 weight settings of 3 exact evaluations each, L(x) and L(g x) for both
// generators, in mpq with dyadic weights and exp of the double; attention is symmetric, so all 20 run) + the degree
// pass (scalars/degree.h) + k trials of 3 exact evaluations each, in mpq with the rational stand-ins. The baselines
// are two forward passes in mpq: with the certificate's random integers (the same arithmetic), and with dyadic
// weights and the real exp (the witness search's arithmetic, and what `permcheck check --dtype exact` evaluates).
#include "check/check.h"
#include "proofs/certificate.h"

#include <benchmark/benchmark.h>

namespace {
using namespace permcheck;

CertificateOptions shape(const benchmark::State& state, int trials) {
    CertificateOptions o;
    o.length = static_cast<int>(state.range(0));
    o.d = static_cast<int>(state.range(1));
    o.trials = trials;
    return o;
}

void certificate(benchmark::State& state, int trials) {
    const CertificateOptions o = shape(state, trials);
    const Family& spec = find_layer("attention");
    int bits = 0;
    for (auto _ : state) {
        Certificate c = certify(spec, o);
        if (!c.as_expected()) state.SkipWithError("attention was not certified equivariant");
        bits = c.set_bits;
        benchmark::DoNotOptimize(c);
    }
    state.counters["bits"] = bits;
}
void BM_Certificate_k2(benchmark::State& state) { certificate(state, 2); }
void BM_Certificate_k1(benchmark::State& state) { certificate(state, 1); }

void BM_DegreePass(benchmark::State& state) {
    const Family& spec = find_layer("attention");
    for (auto _ : state) {
        DegreeBound b = degree_bound(spec, shape(state, 1));
        benchmark::DoNotOptimize(b);
    }
}

// Two forward passes, L(x) and L(P x), with the certificate's integers for k trials (|S| as it chooses).
void two_passes(benchmark::State& state, int trials) {
    const CertificateOptions o = shape(state, trials);
    const Family& spec = find_layer("attention");
    const int bits = set_bits_for(degree_bound(spec, o).total(), o.trials, o.target_log2);
    SplitMix64 rng(1);
    Draw<RationalStandin> draw = uniform_integers(rng, bits);
    const LayerFn<RationalStandin> layer = spec.standin(draw, o.d, 0);
    const NamedTensors<RationalStandin> x{{"x", as_tensor(draw_matrix<RationalStandin>(o.length, o.d, draw))}};
    const Signature s = signature_of(spec, o.d);
    const NamedTensors<RationalStandin> px = permuted_real_inputs(s, {{"n", Permutation::rotation(o.length)}}, x);
    for (auto _ : state) {
        NamedTensors<RationalStandin> a = layer(x);
        NamedTensors<RationalStandin> b = layer(px);
        benchmark::DoNotOptimize(a);
        benchmark::DoNotOptimize(b);
    }
    state.counters["bits"] = bits;
}
void BM_TwoForwardPasses_Standin_k2bits(benchmark::State& state) { two_passes(state, 2); }
void BM_TwoForwardPasses_Standin_k1bits(benchmark::State& state) { two_passes(state, 1); }

// Two forward passes with dyadic weights and inputs and exp evaluated in double (ScalarTraits<Rational>).
void BM_TwoForwardPasses_Rational(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0)), d = static_cast<int>(state.range(1));
    const Family& spec = find_layer("attention");
    const LayerFn<Rational> layer = seeded_layer<Rational>(spec, d, 1);
    Draw<Rational> input = dyadic_draw<Rational>(2);
    const NamedTensors<Rational> x{{"x", as_tensor(draw_matrix<Rational>(n, d, input))}};
    const NamedTensors<Rational> px = permuted_real_inputs(signature_of(spec, d), {{"n", Permutation::rotation(n)}}, x);
    for (auto _ : state) {
        NamedTensors<Rational> a = layer(x);
        NamedTensors<Rational> b = layer(px);
        benchmark::DoNotOptimize(a);
        benchmark::DoNotOptimize(b);
    }
}

void shapes(benchmark::internal::Benchmark* b) {
    b->Args({8, 4})->Args({16, 8})->Args({32, 16})->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_Certificate_k2)->Apply(shapes);
BENCHMARK(BM_Certificate_k1)->Apply(shapes);
BENCHMARK(BM_DegreePass)->Apply(shapes);
BENCHMARK(BM_TwoForwardPasses_Standin_k2bits)->Apply(shapes);
BENCHMARK(BM_TwoForwardPasses_Standin_k1bits)->Apply(shapes);
BENCHMARK(BM_TwoForwardPasses_Rational)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
