// The cost of a certificate of single-head attention against two exact forward passes of the same layer.
//   ./build/bench/bench_certificate
// Certificate = the exact witness search (20 weight settings of 3 exact evaluations each, L(x) and L(g x) for both
// generators, in mpq with dyadic weights and exp of the double; attention is symmetric, so all 20 run) + the degree
// pass (scalars/degree.h) + k trials of 3 exact evaluations each, in mpq with the rational stand-ins. The baselines
// are two forward passes in mpq: with the certificate's random integers (the same arithmetic), and with dyadic
// weights and the real exp (the witness search's arithmetic, and what `permcheck check --dtype exact` evaluates).
#include "proofs/certificate.h"

#include <benchmark/benchmark.h>

namespace {
using namespace permcheck;

CertificateOptions shape(const benchmark::State& state, int trials) {
    CertificateOptions o;
    o.n = static_cast<int>(state.range(0));
    o.d = static_cast<int>(state.range(1));
    o.trials = trials;
    return o;
}

void certificate(benchmark::State& state, int trials) {
    const CertificateOptions o = shape(state, trials);
    const LayerFamily& spec = find_layer("attention");
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
    const LayerFamily& spec = find_layer("attention");
    for (auto _ : state) {
        DegreeBound b = degree_bound(spec, static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
        benchmark::DoNotOptimize(b);
    }
}

// Two forward passes, L(x) and L(P x), with the certificate's integers for k trials (|S| as it chooses).
void two_passes(benchmark::State& state, int trials) {
    const CertificateOptions o = shape(state, trials);
    const LayerFamily& spec = find_layer("attention");
    const int bits = set_bits_for(degree_bound(spec, o.n, o.d).total(), o.trials, o.target_log2);
    SplitMix64 rng(1);
    Draw<RationalStandin> draw = uniform_integers(rng, bits);
    const LayerFn<RationalStandin> layer = spec.standin(o.d, draw, 0);
    const Mat<RationalStandin> x = draw_matrix<RationalStandin>(o.n, o.d, draw);
    const Permutation p = Permutation::rotation(o.n);
    for (auto _ : state) {
        Mat<RationalStandin> a = layer(x);
        Mat<RationalStandin> b = layer(p.apply(x));
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
    const LayerFn<Rational> layer = seeded_layer<Rational>(find_layer("attention"), d, 1);
    Draw<Rational> input = dyadic_draw<Rational>(2);
    const Mat<Rational> x = draw_matrix<Rational>(n, d, input);
    const Permutation p = Permutation::rotation(n);
    for (auto _ : state) {
        Mat<Rational> a = layer(x);
        Mat<Rational> b = layer(p.apply(x));
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
