// Certificates: equivariance (or invariance) of a reference layer for every permutation, every input and every
// weight setting at a given shape (n, d), with a stated error bound; or an exact witness that it fails.
//
//  - Generator reduction (proofs-notes/generators.md): an identity L(g x) = g L(x) that holds for ALL x for
//    g = (0 1) and g = (0 1 ... n-1) holds for all n! permutations. It does not hold per input.
//  - Polynomial identity (proofs-notes/schwartz-zippel.md): with rational stand-ins for exp, sqrt, tanh and
//    ReLU the layer is a rational function of inputs and weights; evaluating both sides exactly at a uniformly
//    random point of S^m, k times, misses a nonzero difference with probability at most (D' / |S|)^k, where D'
//    is computed by running the same template over the degree-tracking scalar (scalars/degree.h).
//  - From the stand-in to exp (proofs-notes/any-elementwise-function.md).
//  - Non-equivariance: an exact witness (x, g, weights) with the exact difference, in rational arithmetic.
#pragma once

#include "layers/catalog.h"
#include "scalars/degree.h"
#include "check/permutation.h"
#include "check/vocabulary.h"
#include "proofs/witness.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace permcheck {

// The degree bound of the generator identities of a layer at shape (n, d): D bounds the numerator degree of
// every entry of L(g x) - g L(x) (pooled: L(g x) - L(x)) for both generators; `divisors` is the degree of the
// product of every divisor met while evaluating L(x) and L(g x), which must not vanish. D' = D + divisors.
struct DegreeBound {
    long long numerator = 0;
    long long divisors = 0;
    std::size_t divisor_count = 0;
    long long total() const { return numerator + divisors; }
};
// Throws NotRational (scalars/degree.h) for piecewise layers.
DegreeBound degree_bound(const LayerFamily& family, int n, int d);

struct CertificateOptions {
    int n = 8;
    int d = 4;
    // k: independent random points. One point with ~74-bit integers reaches 2^-64 at less cost than two with
    // ~42-bit ones (bench/bench_certificate.cpp).
    int trials = 1;
    std::uint64_t seed = 1;      // of the random points (and of the witness search)
    int target_log2 = -64;       // the failure bound to reach: (D'/|S|)^k <= 2^target_log2
};

// An exact difference between the two sides of a property, at one input and one weight setting.
struct Witness {
    Permutation perm;          // acting on rows: (P x)[i] = x[p[i]]
    Mat<Rational> x;           // the input
    // exact_search: the dyadic weights of weight_seed (as in permcheck check), exp, sin and cos evaluated in double
    // and used exactly; standin_point: the rational stand-ins at trial `trial`'s uniform `bits`-bit integers,
    // drawn for the weights in build order, then for x.
    WitnessSource source = WitnessSource::exact_search;
    std::uint64_t weight_seed = 0;
    int trial = 0, bits = 0;
    Eigen::Index row = 0, col = 0;  // the entry with the largest |difference|
    Rational lhs{}, rhs{};     // both sides at that entry
    Rational difference{};     // lhs - rhs, exactly
};

enum class Method { schwartz_zippel, composition, exact_witness, none };
const char* method_name(Method m);

struct Certificate {
    std::string layer{};
    Property property = Property::equivariance;  // equivariance (sequence output) or invariance (pooled output)
    bool expected_holds = true;  // the verdict matrix: a label for as_expected(), never a choice of method
    bool holds = false;          // what was certified
    bool conclusive = false;     // false: nothing could be certified (see `note`)
    Method method = Method::none;
    int n = 0, d = 0;

    // Schwartz-Zippel figures (method schwartz_zippel, or the inner layer of a composition).
    DegreeBound degree{};
    int set_bits = 0;            // |S| = 2^set_bits: integers in [-2^(bits-1), 2^(bits-1))
    int trials = 0;              // k
    double log2_bound = 0.0;     // log2 of (D'/|S|)^k
    std::string inner_layer{};   // composition: the layer whose equivariance was certified

    std::optional<Witness> witness{};  // exact_witness, or a Schwartz-Zippel trial that found a difference
    std::string note{};                // what the certificate covers, in a sentence or two

    // "certified equivariant", "certified not invariant", "not certified", ...
    std::string verdict() const;
    bool as_expected() const { return conclusive && holds == expected_holds; }
};

// The exact witness search first, for every family (a few exact evaluations, which find nothing on a symmetric
// layer); when it finds none, Schwartz-Zippel (whose cost grows fast with depth: an RNN's nested stand-ins at n = 8
// take minutes and gigabytes), or for a piecewise family (max pooling) a composition when it is a symmetric pooling
// of a sequence family (LayerFamily::composition), and not certified otherwise. What runs never depends on the
// family's expectations, which only label the result (as_expected).
Certificate certify(const LayerFamily& family, const CertificateOptions& opts);

// The certificate's random points: integers uniform in [-2^(bits-1), 2^(bits-1)), |S| = 2^bits. `rng` must
// outlive the draw.
Draw<RationalStandin> uniform_integers(SplitMix64& rng, int bits);

// The smallest |S| = 2^bits (at least 2^32) with (D'/2^bits)^k <= 2^target_log2.
int set_bits_for(long long degree_total, int trials, int target_log2);

// A readable multi-line account of the certificate, ending in its verdict.
std::string describe(const Certificate& c);

}  // namespace permcheck
