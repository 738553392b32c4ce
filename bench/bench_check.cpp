// What a check costs against its physical limit, measured in the same run (issue 7).
//   ./build/bench/bench_check            (bench/run prints every benchmark as one table)
// A case of an equivariance check cannot cost less than two forward passes of the layer, L(P x) and L(x): that
// is the floor. Each benchmark interleaves the measured work with its floor in every iteration, so the load of
// a shared machine hits both alike (the checks of attention time both in the thread's CPU time, which other
// processes do not enter), and reports:
//   time_s        the measured work per unit (one case, one shrink, one audited case), in seconds
//   floor_s       the floor per unit, in seconds
// (Google Benchmark's own time column is per iteration, which holds several units.)
//   ratio         time / floor
//   target        the ratio the issue asks for (0: none)
#include "adapters/exec_adapter.h"
#include "check/check.h"
#include "audit/signature_audit.h"
#include "tests/support/mutants.h"
#include "tests/support/sequence.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef PERMCHECK_ECHO_ADAPTER
#error "PERMCHECK_ECHO_ADAPTER must name the echo adapter executable (bench/CMakeLists.txt)"
#endif

namespace {
using namespace permcheck;
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) { return std::chrono::duration<double>(to - from).count(); }

// The CPU time of the calling thread, in seconds. A check runs in the thread that calls it, and so does its floor:
// on a shared machine, wall time counts whatever else runs, and this does not (only what it does to the caches).
double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

template <class S> Arithmetic arithmetic_of() {
    if constexpr (std::is_same_v<S, float>) return Arithmetic::float32;
    else if constexpr (std::is_same_v<S, double>) return Arithmetic::float64;
    else return Arithmetic::exact;
}

void report(benchmark::State& state, double work, double floor, long units, double target) {
    const double per_unit = work / static_cast<double>(units), floor_per_unit = floor / static_cast<double>(units);
    state.counters["time_s"] = per_unit;
    state.counters["floor_s"] = floor_per_unit;
    state.counters["ratio"] = floor_per_unit > 0 ? per_unit / floor_per_unit : 0.0;
    state.counters["target"] = target;
}

// ------------------------------------------------------------------------------------- equivariance check

// The check of attention at one (n, d): every case has exactly n positions (min_len = max_len = n), so each
// case's floor is two passes at (n, d).
template <class S> void BM_CheckAttention(benchmark::State& state, int cases, double target) {
    CheckOptions o;
    o.arithmetic = arithmetic_of<S>();
    o.cases = cases;
    o.min_len = o.max_len = static_cast<int>(state.range(0));
    o.d = static_cast<int>(state.range(1));
    o.seed = 7;
    const Family& spec = find_layer("attention");
    const Expectation& row = row_of(spec, Property{"equivariance"});

    // The floor runs on the very cases the check draws (drawn_cases: its seed and sizes), each with its own layer,
    // so values (and the cost of exp, of GMP on their sizes) are alike. Drawing them and their weights happens here,
    // outside the timed region: that is the check's overhead, not the floor.
    std::vector<test::SequenceFn<S>> layers;
    std::vector<Mat<S>> xs;
    std::vector<Permutation> perms;
    for (const Case& c : drawn_cases(spec, row, o)) {
        layers.push_back(test::sequence_layer<S>(spec, o.d, c.weight_seed));
        const Tensor& x = c.inputs.at("x");
        Mat<S> m(x.shape[0], x.shape[1]);
        for (Eigen::Index k = 0; k < m.size(); ++k) m(k / m.cols(), k % m.cols()) = sc::from_double<S>(x.values[static_cast<std::size_t>(k)]);
        xs.push_back(std::move(m));
        perms.push_back(c.perms.at("n"));
    }

    double work = 0, floor = 0;
    for (auto _ : state) {
        const double t0 = thread_cpu_seconds();
        const CheckResult r = check(spec, row, o);
        const double t1 = thread_cpu_seconds();
        if (!r.holds || r.cases_run != cases) state.SkipWithError("attention was not found equivariant");
        for (std::size_t k = 0; k < xs.size(); ++k) {
            Mat<S> lhs = layers[k](perms[k].apply(xs[k]));
            Mat<S> rhs = layers[k](xs[k]);
            benchmark::DoNotOptimize(lhs);
            benchmark::DoNotOptimize(rhs);
        }
        const double t2 = thread_cpu_seconds();
        work += t1 - t0;
        floor += t2 - t1;
        state.SetIterationTime(t1 - t0);
    }
    report(state, work, floor, static_cast<long>(state.iterations()) * cases, target);
}

void BM_CheckAttention_float64(benchmark::State& s) { BM_CheckAttention<double>(s, 10, 1.10); }
void BM_CheckAttention_float32(benchmark::State& s) { BM_CheckAttention<float>(s, 10, 1.10); }
void BM_CheckAttention_exact(benchmark::State& s) { BM_CheckAttention<Rational>(s, 4, 1.20); }

// (16, 16): the small shape, where a case's fixed costs (generating it, drawing 4 d^2 weights, comparing) weigh
// most against two passes of only a few microseconds; no target, its ratio is reported with what bounds it.
void BM_CheckAttentionSmall_float64(benchmark::State& s) { BM_CheckAttention<double>(s, 100, 0); }
void BM_CheckAttentionSmall_float32(benchmark::State& s) { BM_CheckAttention<float>(s, 100, 0); }

BENCHMARK(BM_CheckAttention_float64)->Args({64, 64})->Args({256, 64})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CheckAttention_float32)->Args({64, 64})->Args({256, 64})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CheckAttentionSmall_float64)->Args({16, 16})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CheckAttentionSmall_float32)->Args({16, 16})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CheckAttention_exact)->Args({8, 4})->Args({16, 8})->Args({32, 16})->UseManualTime()->Unit(benchmark::kMillisecond);

// -------------------------------------------------------------------------------------------- shrinking

// From the first failing case to the minimal counterexample, as `check` runs it (the property's draw and
// shrinks). Time runs from the first failing case to the check's result: the shrinking, then the record of the
// minimal case (evaluated once more, and in exact arithmetic to confirm it); counters say how many evaluations of the
// property it took and where it ended. The floor is one evaluation of the property on the minimal case: ratio = the
// cost of the shrinking in evaluations of the smallest case.
void BM_Shrink(benchmark::State& state, const Family& subject, Arithmetic arithmetic) {
    CheckOptions o;  // the defaults of `permcheck check`: n in [1, 8], d = 4
    o.arithmetic = arithmetic;
    o.seed = 1;
    const Expectation& row = row_of(subject, Property{"equivariance"});
    const Signature sig = signature_of(subject, o);
    const PropertyRules& rules = rules_of(row.property);
    const PropertyArgs args = rules.completed_args(sig, {row.axis, PadPlacement::any, false, true});
    double work = 0, floor = 0;
    CheckResult last;
    for (auto _ : state) {
        Clock::time_point first{};
        bool shrinking = false;
        o.on_progress = [&](const CheckProgress& p) {
            if (p.shrinking && !shrinking) {
                shrinking = true;
                first = Clock::now();
            }
        };
        last = check(subject, row, o);
        const auto t1 = Clock::now();
        if (!last.counterexample) {
            state.SkipWithError("no counterexample found");
            break;
        }
        if (!shrinking) first = t1;  // the first failing case was minimal already
        const Case& minimal = *last.counterexample;
        if (arithmetic == Arithmetic::exact) benchmark::DoNotOptimize(compare_case<Rational>(subject, sig, rules, args, minimal, o.d));
        else benchmark::DoNotOptimize(compare_case<double>(subject, sig, rules, args, minimal, o.d));
        const auto t2 = Clock::now();
        work += seconds(first, t1);
        floor += seconds(t1, t2);
        state.SetIterationTime(seconds(first, t1));
    }
    if (!last.counterexample) return;
    report(state, work, floor, static_cast<long>(state.iterations()), 0);
    const Counterexample& c = *last.counterexample;
    o.on_progress = {};
    state.counters["evaluations"] = last.evaluations - last.cases_run;
    state.counters["steps"] = c.shrink_steps;
    state.counters["first_n"] = drawn_cases(subject, row, o).at(static_cast<std::size_t>(c.case_index)).lengths.at("n");
    state.counters["minimal_n"] = c.lengths.at("n");
    state.counters["moved"] = c.perms.at("n").moved();
}

void BM_Shrink_CausalAttention_float64(benchmark::State& s) {
    BM_Shrink(s, find_layer("causal-attention"), Arithmetic::float64);
}
void BM_Shrink_CausalAttention_exact(benchmark::State& s) {
    BM_Shrink(s, find_layer("causal-attention"), Arithmetic::exact);
}
void BM_Shrink_LeakFromPosition4_float64(benchmark::State& s) { BM_Shrink(s, mutants::family(mutants::Kind::leak_from_position_4), Arithmetic::float64); }
void BM_Shrink_LeakFromPosition4_exact(benchmark::State& s) { BM_Shrink(s, mutants::family(mutants::Kind::leak_from_position_4), Arithmetic::exact); }

BENCHMARK(BM_Shrink_CausalAttention_float64)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Shrink_CausalAttention_exact)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Shrink_LeakFromPosition4_float64)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Shrink_LeakFromPosition4_exact)->UseManualTime()->Unit(benchmark::kMillisecond);

// ------------------------------------------------------------------------------------------- audit protocol

// The identity layer, audited in process and through `--exec` with the echo adapter (one process per job, as
// `permcheck audit --jobs J` starts them). Time is per audited case; the floor is the same audit of the same
// layer in process, so ratio = what the protocol costs. Processes are started outside the timed region (once
// per benchmark), as a long audit amortizes them.
AuditOptions audit_options() {
    AuditOptions o;
    o.name = "identity";
    o.d = 8;
    o.max_len = 8;
    o.cases = 200;
    o.seed = 3;
    return o;
}

Mat<double> identity(const Mat<double>& x) { return x; }

void BM_AuditExec(benchmark::State& state) {
    const int jobs = static_cast<int>(state.range(0));
    const AuditOptions o = audit_options();
    adapters::ExecOptions eo;
    eo.command = PERMCHECK_ECHO_ADAPTER;
    eo.one_tensor = true;
    const Signature s = one_tensor_signature(o.d, o.output, o.min_len, o.max_len);  // the --dim shorthand's
    std::vector<NamedBlackBox> boxes;
    for (int k = 0; k < jobs; ++k) boxes.push_back(adapters::exec_named_black_box(eo, s));
    const std::vector<BlackBox> in_process{BlackBox(identity)};
    double work = 0, floor = 0;
    for (auto _ : state) {
        const auto t0 = Clock::now();
        const AuditResult r = audit(boxes, s, o);
        const auto t1 = Clock::now();
        const AuditResult f = audit(in_process, o);
        const auto t2 = Clock::now();
        if (r.verdict != Verdict::holds || f.verdict != Verdict::holds || r.cases != o.cases) {
            state.SkipWithError(("the identity did not hold: " + r.error).c_str());
            break;
        }
        work += seconds(t0, t1);
        floor += seconds(t1, t2);
        state.SetIterationTime(seconds(t0, t1));
    }
    report(state, work, floor, static_cast<long>(state.iterations()) * o.cases, 0);
    state.counters["cases_per_s"] = work > 0 ? static_cast<double>(state.iterations()) * o.cases / work : 0.0;
    state.counters["in_process_cases_per_s"] =
        floor > 0 ? static_cast<double>(state.iterations()) * o.cases / floor : 0.0;
}
BENCHMARK(BM_AuditExec)->ArgName("jobs")->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

// What the permcheck command runs with (cli/main.cpp); the floors are measured under the same allocator.
int main(int argc, char** argv) {
    permcheck::keep_freed_memory_for_reuse();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
