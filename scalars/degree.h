// A degree-tracking scalar: running a layer template over `Degree` bounds the degree of the rational function
// the same template computes over RationalStandin, for the Schwartz-Zippel certificate
// (proofs-notes/schwartz-zippel.md).
//
// Every value stands for a formal quotient p / q of polynomials in the layer's variables (inputs and weights).
// It carries an upper bound on deg p and the factors of q, each factor being the numerator of an earlier
// divisor, named by that divisor's identity, with a multiplicity. Sums take the least common multiple of the
// two factor lists rather than their product, so that the n terms of a softmax row, which share one
// denominator, keep it once. Every divisor met during a run is recorded, because its numerator must not vanish
// at a random point for the evaluation to be defined.
#pragma once

#include "scalars/scalar.h"
#include "scalars/exact_num_traits.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

namespace permcheck {

// Thrown when a layer compares values that depend on its variables (max, a branch): such a layer is piecewise,
// not a rational function, and has no Schwartz-Zippel certificate.
struct NotRational : std::domain_error {
    using std::domain_error::domain_error;
};

class Degree {
public:
    // One factor of a denominator: the numerator polynomial of the divisor `id`, of degree `degree`, to `power`.
    struct Factor {
        std::uint64_t id;
        long long degree;
        long long power;
    };

    Degree() : Degree(0) {}
    Degree(int v) : num_(0), value_(Rational(v)) {}  // NOLINT: Eigen writes Scalar(0) and Scalar(1)
    static Degree constant(const Rational& v);
    static Degree variable();

    bool is_zero() const { return value_ && *value_ == 0; }
    const Rational& value() const;  // constants only

    // An upper bound on the degree of the numerator; -1 for the zero polynomial.
    long long numerator_degree() const { return is_zero() ? -1 : num_; }
    long long denominator_degree() const;

    Degree operator-() const;
    Degree& operator+=(const Degree& b) { return *this = *this + b; }
    Degree& operator-=(const Degree& b) { return *this = *this - b; }
    Degree& operator*=(const Degree& b) { return *this = *this * b; }
    Degree& operator/=(const Degree& b) { return *this = *this / b; }

    friend Degree operator+(const Degree& a, const Degree& b);
    friend Degree operator-(const Degree& a, const Degree& b) { return a + (-b); }
    friend Degree operator*(const Degree& a, const Degree& b);
    friend Degree operator/(const Degree& a, const Degree& b);

    // Constants compare by value. Values that depend on variables are equal only to themselves (Eigen asks
    // `alpha == 1` of constants only) and cannot be ordered: ordering them throws NotRational.
    friend bool operator==(const Degree& a, const Degree& b);
    friend bool operator<(const Degree& a, const Degree& b);
    friend bool operator>(const Degree& a, const Degree& b) { return b < a; }
    friend bool operator<=(const Degree& a, const Degree& b) { return !(b < a); }
    friend bool operator>=(const Degree& a, const Degree& b) { return !(a < b); }

private:
    static std::uint64_t fresh_id();
    static Degree polynomial(long long num, std::vector<Factor> den);  // a value that depends on variables, fresh id
    Degree with_fresh_id() const;

    std::uint64_t id_ = 0;  // names this value's numerator polynomial when it is used as a divisor
    long long num_ = 0;
    std::vector<Factor> den_;        // sorted by id
    std::optional<Rational> value_;  // set for constants: values that depend on no variable
};

// Records every divisor met while it lives (one per thread): the polynomials that must not vanish.
class DivisorRecord {
public:
    DivisorRecord();
    ~DivisorRecord();
    DivisorRecord(const DivisorRecord&) = delete;
    DivisorRecord& operator=(const DivisorRecord&) = delete;

    // The degree of the product of the distinct divisors' numerators.
    long long total_degree() const;
    std::size_t count() const;
    void add(std::uint64_t id, long long degree);

private:
    std::vector<std::pair<std::uint64_t, long long>> divisors_;
    DivisorRecord* previous_;
};

// The rational stand-ins of scalar.h, written once over any scalar so that the degree pass and the exact
// evaluation follow the same formulas; tests/test_certificates.cpp checks them against ScalarTraits<RationalStandin>.
namespace standin {
template <class T> T exp(const T& v) { return T(1) + v + v * v / T(2); }
template <class T> T sqrt(const T& v) { return (T(1) + v) / T(2); }
template <class T> T tanh(const T& v) { return v / (T(1) + v * v); }
template <class T> T relu(const T& v) { return v * v; }
}  // namespace standin

template <> struct ScalarTraits<Degree> {
    static constexpr const char* name = "degree";
    static constexpr bool exact = true;
    // The code path must be the one RationalStandin takes, or the bound would be of another function.
    static constexpr bool shift_softmax = ScalarTraits<RationalStandin>::shift_softmax;
    static constexpr double unit_roundoff = 0.0;
    static Degree from_double(double v) {
        detail::require_finite(v, "constant");
        return Degree::constant(Rational(v));
    }
    static double to_double(const Degree& v) { return v.value().convert_to<double>(); }
    static Degree exp(const Degree& v) { return standin::exp(v); }
    static Degree sqrt(const Degree& v) { return standin::sqrt(v); }
    static Degree tanh(const Degree& v) { return standin::tanh(v); }
    static Degree relu(const Degree& v) { return standin::relu(v); }
    static Degree max(const Degree& a, const Degree& b) { return a < b ? b : a; }
};

}  // namespace permcheck

namespace Eigen {
template <> struct NumTraits<permcheck::Degree> : permcheck::ExactNumTraits<permcheck::Degree, 4> {};
}  // namespace Eigen
