// The white-box check of a reference family (layers/family.h): a row of the verdict table, one property along one
// axis, in float32, float64 or exact rationals. Cases are the audit's (cases/signature_case.h: lengths per axis,
// inputs with ties, masks, random graphs, token and position ids), the property's part drawn and transformed by the
// property's object (properties/), every other axis left alone, and a weight seed per case; both sides are computed
// in the arithmetic asked for, with the audit's tolerance (zero in exact arithmetic; for a floating evaluation that
// fails it, the rounding error measured against a wider type, proofs-notes/float-tolerance.md). A failure is shrunk
// by the property's shrinker, then toward weight seed 0, and confirmed in exact arithmetic.
#pragma once

#include "check/check_result.h"
#include "cases/signature_case.h"
#include "layers/family.h"
#include "properties/property.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

// The family's signature at width d (its texts' "{d}"), every axis's range [min_len, max_len] where given; validated.
Signature signature_of(const Family& family, int d = 4, std::optional<int> min_len = {}, std::optional<int> max_len = {});
inline Signature signature_of(const Family& f, const CheckOptions& o) { return signature_of(f, o.d, o.min_len, o.max_len); }

// The family's row of property p along `axis` (empty: its first row of p); throws std::invalid_argument naming the
// rows that apply.
const Expectation& row_of(const Family& family, Property p, const std::string& axis = "");

// The result of a check of this row before it runs: its layer, property as recorded, axis, dtype, expectation,
// signature and replay line. Throws as check() does for options the family cannot take.
CheckResult labelled(const Family& family, const Expectation& row, const CheckOptions& opts);

// Searches for a case where the row's property fails, shrinks it and confirms it exactly; the verdict expected is
// row.holds. Throws std::invalid_argument for an arithmetic the family is not built in, or a width or a length the
// layer cannot take.
CheckResult check(const Family& family, const Expectation& row, const CheckOptions& opts);

// The cases check() draws for this row with these options, in order (those that move nothing included, which it
// skips): for benchmarks that time the layer on the very cases a check runs.
std::vector<Case> drawn_cases(const Family& family, const Expectation& row, const CheckOptions& opts);

// A case of the row evaluated and recorded as a counterexample, as check() records the case it found (the failure
// database's replay).
Counterexample counterexample_at(const Family& family, const Expectation& row, const Case& c, const CheckOptions& opts,
                                 int case_index, int shrink_steps);

// One case of property p in scalar S, the layer built from the case's weight seed at width d: every output's
// comparison, both sides as doubles. Exact for Rational.
template <class S>
std::vector<OutputComparison> compare_case(const Family& family, const Signature& s, const PropertyRules& p,
                                           const PropertyArgs& args, const Case& c, int d);

// A tensor of t's shape whose values are their own flat indices: moved or selected as t would be, it says where
// each value of t goes. gathered(t, where) takes t's values at the indices `where` holds, in where's shape.
template <class S> Tensor index_tensor(const NamedTensor<S>& t) {
    Tensor where{t.shape, std::vector<double>(t.values.size())};
    for (std::size_t k = 0; k < t.values.size(); ++k) where.values[k] = static_cast<double>(k);
    return where;
}
template <class S> NamedTensor<S> gathered(NamedTensor<S> t, const Tensor& where) {
    bool same = where.shape == t.shape;  // every value where it was: t itself, nothing copied
    for (std::size_t k = 0; same && k < where.values.size(); ++k) same = where.values[k] == static_cast<double>(k);
    if (same) return t;
    NamedTensor<S> out{where.shape, {}};
    out.values.reserve(where.values.size());
    for (double k : where.values) out.values.push_back(t.values[static_cast<std::size_t>(k)]);
    return out;
}

// P y along the output's axes, in any scalar: y's values moved to where permute_output moves their indices.
template <class S>
NamedTensor<S> permuted_output(const TensorSpec& spec, const Permutations& perms, const NamedTensor<S>& y) {
    return gathered(y, permute_output(spec, perms, index_tensor(y)));
}

// P x for a signature whose inputs are real or masks, in any scalar (the certificates' inputs): permute_inputs on
// the inputs' indices. Throws std::invalid_argument for an index input, whose values are renumbered.
template <class S>
NamedTensors<S> permuted_real_inputs(const Signature& s, const Permutations& perms, const NamedTensors<S>& x) {
    Tensors where;
    for (const TensorSpec& spec : s.inputs) {
        if (spec.kind == TensorKind::index)
            throw std::invalid_argument("input '" + spec.name + "' is an index: its values do not move as positions");
        where[spec.name] = index_tensor(x.at(spec.name));
    }
    NamedTensors<S> out;
    for (const auto& [name, moved] : permute_inputs(s, perms, where)) out[name] = gathered(x.at(name), moved);
    return out;
}

// For executables that run many checks (the permcheck command, the benchmarks): a check frees and allocates the same
// buffers case after case, and glibc's defaults hand the top of the heap back to the system each time more than
// 128 KiB is free there, then page-fault it in again; at n = 64, d = 64 that was a quarter of a float64 check's time
// (bench/bench_check.cpp). This keeps up to 64 MiB of freed memory for reuse. It changes the whole process's
// allocator, so the library never calls it on its own. A no-op outside glibc.
void keep_freed_memory_for_reuse();

}  // namespace permcheck
