// Internal to proofs/: the generator identities L(g x) = g L(x) (L(x) where the output lacks what g moves), as the
// certificates and the Z3 proofs share them. A subject is a layer family at one shape and one mask assignment
// (NamedSubject): it builds its layer from a draw, draws its input, lists its generator moves (each generator of
// each axis on that axis alone), moves an input, gives the expected side and pairs up the entries of two sides.
// The degree bound, the Schwartz-Zippel points and the Z3 queries are written once over it.
#pragma once

#include "check/check.h"
#include "cases/signature.h"
#include "layers/family.h"
#include "proofs/certificate.h"
#include "scalars/degree.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck::identity {

// The exact witness search: attempt k of kWitnessAttempts draws the dyadic weights of seed + k and its input from
// (seed + k) ^ kWitnessInputSalt (as the audit draws its cases, at kWitnessCaseSize), so that its weights are the
// ones `permcheck check` names by that weight seed.
inline constexpr int kWitnessAttempts = 20;
inline constexpr std::uint64_t kWitnessInputSalt = 0x5eed;
inline constexpr int kWitnessCaseSize = 100;
inline constexpr int kMaxTrials = 64;

struct Attempt {
    std::uint64_t weight_seed = 0;
    std::uint64_t input_seed = 0;
};
inline Attempt attempt(std::uint64_t seed, int k) {
    const std::uint64_t weights = seed + static_cast<std::uint64_t>(k);
    return {weights, weights ^ kWitnessInputSalt};
}

inline void require_trials(int trials) {
    if (trials < 1 || trials > kMaxTrials)
        throw std::invalid_argument("the number of trials must be in [1, " + std::to_string(kMaxTrials) + "], got " +
                                    std::to_string(trials));
}
// log2 of (D'/2^bits)^k; -infinity for D' = 0.
inline double log2_bound(long long degree_total, int bits, int trials) {
    if (degree_total <= 0) return -std::numeric_limits<double>::infinity();
    return trials * (std::log2(static_cast<double>(degree_total)) - bits);
}
// For each generator move of `subject` that `skip` does not refuse: visit(move, x, L(move x), expected side). The
// layer is built from `draw` first, then x drawn from it.
template <class S, class Subject, class Visit, class Skip>
void each_identity(const Subject& subject, Draw<S>& draw, Visit&& visit, const Skip& skip) {
    const auto layer = subject.template layer<S>(draw);
    const auto x = subject.template input<S>(draw);
    const auto lx = layer(x);
    for (const auto& m : subject.moves())
        if (!skip(m)) visit(m, x, layer(subject.moved(m, x)), subject.expected(m, lx));
}

// D: the largest numerator degree of an entry of L(g x) - g L(x) over every move; the divisors met on the way.
template <class Subject> DegreeBound degree_of(const Subject& subject) {
    DivisorRecord record;
    Draw<Degree> variable = [] { return Degree::variable(); };
    long long numerator = 0;
    const auto visit = [&](const auto&, const auto&, const auto& lhs, const auto& rhs) {
        subject.each_pair(lhs, rhs, [&](const auto&, const Degree& a, const Degree& b) {
            numerator = std::max(numerator, Degree(a - b).numerator_degree());
        });
    };
    each_identity<Degree>(subject, variable, visit, [](const auto&) { return false; });
    return {numerator, record.total_degree(), record.count()};
}

// A generator of one axis's symmetric group, on that axis alone.
struct NamedMove {
    std::string axis;
    Permutation g;
    Permutations perms;  // g on `axis`, the identity elsewhere
};
inline NamedMove move_along(const Lengths& lengths, const std::string& axis, const Permutation& g) {
    NamedMove m{axis, g, {}};
    for (const auto& [other, len] : lengths) m.perms[other] = other == axis ? g : Permutation::identity(len);
    return m;
}
// Each generator of each axis, axis by axis.
inline std::vector<NamedMove> generator_moves(const Lengths& lengths) {
    std::vector<NamedMove> moves;
    for (const auto& [axis, len] : lengths)
        for (const Permutation& g : Permutation::generators(len)) moves.push_back(move_along(lengths, axis, g));
    return moves;
}

// The real inputs at these lengths, in the order of the signature, each entry (row-major) from real(spec, k).
template <class S, class Real> NamedTensors<S> real_inputs(const Signature& s, const Lengths& lengths, Real&& real) {
    NamedTensors<S> x;
    for (const TensorSpec& t : s.inputs) {
        if (t.kind == TensorKind::mask) continue;
        NamedTensor<S>& u = x[t.name];
        u.shape = shape_of(t, lengths);
        std::size_t size = 1;
        for (int d : u.shape) size *= static_cast<std::size_t>(d);
        for (std::size_t k = 0; k < size; ++k) u.values.push_back(real(t, k));
    }
    return x;
}
// x with the masks of one assignment as the numerals 0 and 1.
template <class S> NamedTensors<S> with_masks(NamedTensors<S> x, const Tensors& masks) {
    for (const auto& [name, m] : masks) {
        NamedTensor<S>& u = x[name];
        u.shape = m.shape;
        for (double v : m.values) u.values.push_back(S(static_cast<int>(v)));
    }
    return x;
}

// A family over named inputs at given lengths and one mask assignment: the generators of every axis.
struct NamedSubject {
    const Family& family;
    const Signature& s;
    const Lengths& lengths;
    const Tensors& masks;
    int d = 4;  // the width of a family built for any
    struct Entry {
        const std::string& output;
        std::size_t k = 0;
    };

    std::vector<NamedMove> moves() const { return generator_moves(lengths); }
    template <class S> LayerFn<S> layer(Draw<S>& draw) const { return family.factory<S>()(draw, d, 0); }
    template <class S> NamedTensors<S> input(Draw<S>& draw) const {
        const auto real = [&draw](const TensorSpec&, std::size_t) { return draw(); };
        return with_masks(real_inputs<S>(s, lengths, real), masks);
    }
    template <class S> NamedTensors<S> moved(const NamedMove& m, const NamedTensors<S>& x) const {
        return permuted_real_inputs(s, m.perms, x);
    }
    template <class S> NamedTensors<S> expected(const NamedMove& m, const NamedTensors<S>& lx) const {
        NamedTensors<S> out;
        for (const TensorSpec& spec : s.outputs) out[spec.name] = permuted_output(spec, m.perms, lx.at(spec.name));
        return out;
    }
    // Output by output in the order of the signature, entry by entry.
    template <class S, class F> void each_pair(const NamedTensors<S>& a, const NamedTensors<S>& b, F&& f) const {
        for (const TensorSpec& spec : s.outputs) {
            const NamedTensor<S>& left = a.at(spec.name);
            const NamedTensor<S>& right = b.at(spec.name);
            for (std::size_t k = 0; k < right.values.size(); ++k)
                f(Entry{spec.name, k}, left.values[k], right.values[k]);
        }
    }
};

}  // namespace permcheck::identity
