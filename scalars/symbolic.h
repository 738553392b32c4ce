// A symbolic scalar: values are Z3 terms over the reals. The reference layers run in it unchanged, so a layer
// evaluated on symbolic inputs and symbolic weights is a term in those variables, and "L(P x) != P L(x)" is a
// formula Z3 can refute (proofs-notes/smt-proofs.md).
//
// exp, sqrt, tanh and relu are uninterpreted function symbols: an unsat answer holds for every choice of those
// functions, which is stronger than a statement about the real exp. max is an if-then-else, the real maximum:
// max pooling is invariant only because max is symmetric and associative, which an uninterpreted symbol is not.
#pragma once

#include "scalars/weights.h"
#include "scalars/exact_num_traits.h"

#include <z3++.h>

#include <string>

namespace permcheck {

// The context every symbolic value of this thread lives in. Z3 contexts are not thread-safe; one per thread
// keeps each thread's terms, solvers and models together.
z3::context& smt_context();

class Symbolic {
public:
    Symbolic();  // 0, as Eigen's products and Mat::Zero need
    Symbolic(int v);  // NOLINT(google-explicit-constructor): Eigen writes S(0), S(1) and mixes ints in
    explicit Symbolic(z3::expr e) : e_(std::move(e)) {}

    const z3::expr& expr() const { return e_; }
    bool is_numeral() const { return e_.is_numeral(); }

    Symbolic& operator+=(const Symbolic& o);
    Symbolic& operator-=(const Symbolic& o);
    Symbolic& operator*=(const Symbolic& o);
    Symbolic& operator/=(const Symbolic& o);

    friend Symbolic operator+(Symbolic a, const Symbolic& b) { return a += b; }
    friend Symbolic operator-(Symbolic a, const Symbolic& b) { return a -= b; }
    friend Symbolic operator*(Symbolic a, const Symbolic& b) { return a *= b; }
    friend Symbolic operator/(Symbolic a, const Symbolic& b) { return a /= b; }
    friend Symbolic operator-(const Symbolic& a);

    // Structural equality of the terms (z3::eq), not equality of the reals they denote: Eigen's products ask
    // "is this factor 1?" only to take shortcuts, for which "the same term" is the right, cheap answer.
    friend bool operator==(const Symbolic& a, const Symbolic& b) { return z3::eq(a.e_, b.e_); }

private:
    z3::expr e_;
};

// A fresh real constant of that name (the same name gives the same constant within a context).
Symbolic symbolic_constant(const std::string& name);

namespace detail {
enum class Uninterpreted { exp, sqrt, tanh, relu };
Symbolic apply(Uninterpreted f, const Symbolic& v);
}  // namespace detail

template <> struct ScalarTraits<Symbolic> {
    static constexpr const char* name = "symbolic";
    static constexpr bool exact = true;
    // No max-shift before exp: L(P x) = P L(x) holds with or without it, and without it every score enters exp
    // as itself instead of as a difference with an if-then-else maximum, so the terms are several times smaller.
    static constexpr bool shift_softmax = false;
    static constexpr double unit_roundoff = 0.0;
    // The exact rational value of the double (a double is a dyadic rational).
    static Symbolic from_double(double v);
    // Only numerals have a value; throws std::domain_error for any other term.
    static double to_double(const Symbolic& v);
    static Symbolic exp(const Symbolic& v) { return detail::apply(detail::Uninterpreted::exp, v); }
    static Symbolic sqrt(const Symbolic& v) { return detail::apply(detail::Uninterpreted::sqrt, v); }
    static Symbolic tanh(const Symbolic& v) { return detail::apply(detail::Uninterpreted::tanh, v); }
    static Symbolic relu(const Symbolic& v) { return detail::apply(detail::Uninterpreted::relu, v); }
    static Symbolic max(const Symbolic& a, const Symbolic& b);
};

}  // namespace permcheck

namespace Eigen {
template <> struct NumTraits<permcheck::Symbolic> : permcheck::ExactNumTraits<permcheck::Symbolic, 3> {};
}  // namespace Eigen
