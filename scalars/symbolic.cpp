#include "scalars/symbolic.h"

#include <stdexcept>

namespace permcheck {

namespace {
// Everything of one thread's symbolic world. The context is declared first so it is destroyed last, after
// every term that refers to it.
struct World {
    z3::context ctx;
    z3::expr zero = ctx.real_val(0);
    z3::expr one = ctx.real_val(1);
    // Named u_* because Z3's SMT-LIB dialect reserves exp-like names (tanh, sin, cos) for its own
    // transcendental functions; ours must stay uninterpreted in the emitted files too.
    z3::func_decl exp = ctx.function("u_exp", ctx.real_sort(), ctx.real_sort());
    z3::func_decl sqrt = ctx.function("u_sqrt", ctx.real_sort(), ctx.real_sort());
    z3::func_decl tanh = ctx.function("u_tanh", ctx.real_sort(), ctx.real_sort());
    z3::func_decl relu = ctx.function("u_relu", ctx.real_sort(), ctx.real_sort());
};

World& world() {
    thread_local World w;
    return w;
}

bool is(const z3::expr& e, const z3::expr& numeral) { return z3::eq(e, numeral); }

// Numerals fold at once, so constants (1/sqrt(d), 1/d, eps) stay numerals and the terms stay small.
z3::expr folded(const z3::expr& e) { return e.simplify(); }
}  // namespace

z3::context& smt_context() { return world().ctx; }

Symbolic::Symbolic() : e_(world().zero) {}
Symbolic::Symbolic(int v) : e_(smt_context().real_val(v)) {}

// The shortcuts for 0 and 1 keep Eigen's "0 + 1 * (...)" accumulations out of the terms.
Symbolic& Symbolic::operator+=(const Symbolic& o) {
    if (is(o.e_, world().zero)) return *this;
    if (is(e_, world().zero)) e_ = o.e_;
    else if (e_.is_numeral() && o.e_.is_numeral()) e_ = folded(e_ + o.e_);
    else e_ = e_ + o.e_;
    return *this;
}

Symbolic& Symbolic::operator-=(const Symbolic& o) {
    if (is(o.e_, world().zero)) return *this;
    if (e_.is_numeral() && o.e_.is_numeral()) e_ = folded(e_ - o.e_);
    else e_ = e_ - o.e_;
    return *this;
}

Symbolic& Symbolic::operator*=(const Symbolic& o) {
    if (is(e_, world().zero) || is(o.e_, world().one)) return *this;
    if (is(o.e_, world().zero) || is(e_, world().one)) e_ = o.e_;
    else if (e_.is_numeral() && o.e_.is_numeral()) e_ = folded(e_ * o.e_);
    else e_ = e_ * o.e_;
    return *this;
}

Symbolic& Symbolic::operator/=(const Symbolic& o) {
    if (is(o.e_, world().one)) return *this;
    if (e_.is_numeral() && o.e_.is_numeral() && !is(o.e_, world().zero)) e_ = folded(e_ / o.e_);
    else e_ = e_ / o.e_;
    return *this;
}

Symbolic operator-(const Symbolic& a) {
    if (a.e_.is_numeral()) return Symbolic(folded(-a.e_));
    return Symbolic(-a.e_);
}

Symbolic symbolic_constant(const std::string& name) { return Symbolic(smt_context().real_const(name.c_str())); }

namespace detail {
Symbolic apply(Uninterpreted f, const Symbolic& v) {
    World& w = world();
    switch (f) {
        case Uninterpreted::exp: return Symbolic(w.exp(v.expr()));
        case Uninterpreted::sqrt: return Symbolic(w.sqrt(v.expr()));
        case Uninterpreted::tanh: return Symbolic(w.tanh(v.expr()));
        case Uninterpreted::relu: return Symbolic(w.relu(v.expr()));
    }
    throw std::logic_error("unknown uninterpreted function");
}
}  // namespace detail

Symbolic ScalarTraits<Symbolic>::from_double(double v) {
    detail::require_finite(v, "constant");
    const Rational q(v);  // the exact value of the double
    return Symbolic(smt_context().real_val(q.str().c_str()));
}

double ScalarTraits<Symbolic>::to_double(const Symbolic& v) {
    if (!v.expr().is_numeral())
        throw std::domain_error("permcheck: a symbolic term has no numeric value: " + v.expr().to_string().substr(0, 200));
    return Rational(Z3_get_numeral_string(smt_context(), v.expr())).convert_to<double>();
}

Symbolic ScalarTraits<Symbolic>::max(const Symbolic& a, const Symbolic& b) {
    if (a == b) return a;
    return Symbolic(z3::ite(a.expr() < b.expr(), b.expr(), a.expr()));
}

}  // namespace permcheck
