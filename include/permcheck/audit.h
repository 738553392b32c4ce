// permcheck's in-process API: audit any C++ callable for permutation equivariance (a sequence layer) or
// invariance (a pooled layer), with the options and the result record of `permcheck audit --exec`.
//
//   #include <permcheck/audit.h>
//   permcheck::AuditOptions opts;
//   opts.d = 8;                                   // features per position of the inputs
//   permcheck::AuditResult r = permcheck::audit_callable(my_layer, opts);
//   if (r.verdict != permcheck::Verdict::holds) std::cerr << permcheck::explain(r, opts);
//
// A layer is anything callable with an n x d Eigen::MatrixXd (one row per position) or Eigen::MatrixXf. It
// returns n rows (a sequence layer: equivariance L(P x) = P L(x)) or one vector (a pooled layer, output =
// Output::pooled: invariance L(P x) = L(x)), as any dense Eigen matrix, vector or expression. A callable that
// takes MatrixXf computes in float: it is audited with the float32 tolerance whatever opts.dtype says, since a
// float64 tolerance would call float rounding a violation. Any other callable is audited in opts.dtype, or, when
// that is empty (the default), in the dtype its answers show.
//
// Why a header of its own, spelled <permcheck/...>: users include it next to their own headers, so its name
// must be namespaced (as <rapidcheck/gtest.h> is), and it must read the same in this tree and in an installed
// prefix. It builds only on audit/blackbox.h, audit/signature_audit.h and report/text.h (explain(),
// replay_hint(), signature_flags(), compiled into the library), which include no RapidCheck, Boost or GMP header
// (tests/public_headers.sh), so that a user's test file compiles in about the time of <gtest/gtest.h> and
// <Eigen/Dense> alone (bench/consumer_compile_time.sh); the GoogleTest macros are in <permcheck/gtest.h>.
#pragma once

#include "audit/blackbox.h"
#include "report/text.h"
#include "audit/signature_audit.h"

#include <Eigen/Dense>

#include <concepts>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>
#include <utility>

namespace permcheck {

namespace detail {

// Which matrix a callable takes. std::invocable alone cannot tell: Eigen's converting constructors make a
// MatrixXf parameter "accept" a MatrixXd until the body is instantiated. A type that converts to exactly one of
// them can: a second user-defined conversion is never applied implicitly.
struct OnlyMatrixXd {
    operator const Eigen::MatrixXd&() const;  // unevaluated contexts only
};
struct OnlyMatrixXf {
    operator const Eigen::MatrixXf&() const;
};
template <class F>
constexpr bool takes_float = std::invocable<const F&, OnlyMatrixXf> && !std::invocable<const F&, OnlyMatrixXd>;
template <class F> constexpr bool takes_double = !takes_float<F> && std::invocable<const F&, const Eigen::MatrixXd&>;

// The answer as rows: a compile-time vector is one vector, a row for a pooled layer, a column (one feature per
// position) for a sequence layer; any other matrix is taken as it is.
template <class R> Mat<double> answer_rows(const R& answer, Output output) {
    using Plain = std::decay_t<R>;
    static_assert(std::is_base_of_v<Eigen::DenseBase<Plain>, Plain>,
                  "a layer must return an Eigen matrix, vector or expression (n rows, or one vector when pooled)");
    Mat<double> y = answer.template cast<double>();
    if constexpr (Plain::ColsAtCompileTime == 1)
        if (output == Output::pooled) return y.transpose();
    return y;
}

}  // namespace detail

// Wraps a callable as the BlackBox the audit engine calls. The callable is copied (a std::function holds it):
// pass std::ref(layer) to audit a layer that must not be copied.
template <class F> BlackBox black_box(F layer, Output output) {
    static_assert(detail::takes_double<F> || detail::takes_float<F>,
                  "a layer must be callable (through a const call operator) with const Eigen::MatrixXd& or "
                  "const Eigen::MatrixXf& (n x d, one row per position)");
    return [layer = std::move(layer), output](const Mat<double>& x) -> Mat<double> {
        if constexpr (detail::takes_double<F>) {
            return detail::answer_rows(std::invoke(layer, x), output);
        } else {
            const Eigen::MatrixXf input = x.cast<float>();
            return detail::answer_rows(std::invoke(layer, input), output);
        }
    };
}

// Audits a callable: the same search, tolerance, nondeterminism and non-finite checks, shrinking and result
// record as `permcheck audit --exec`. Throws std::invalid_argument on bad options; an exception thrown by the
// layer becomes the verdict `error`.
template <class F> AuditResult audit_callable(F layer, AuditOptions opts) {
    if constexpr (detail::takes_float<F>) opts.dtype = Arithmetic::float32;  // a MatrixXf callable computes in float
    return audit(black_box(std::move(layer), opts.output), opts);
}

// Every result of audit_callable carries the line that finds its case again (AuditResult::replay); explain(result,
// opts), a result as text, and replay_hint(result, opts), that line: report/text.h.

// ------------------------------------------------------------------------------------- layers with a signature

// Audits a callable over named tensors (cases/signature.h): it takes `const permcheck::Tensors&` (by name; a
// mask holds 0 and 1, an index input integers, all as doubles) and returns Tensors holding every output the
// signature names. The property follows from the signature: each output equivariant along the axes it has,
// invariant to the others. opts.output, d, min_len, max_len and long_len are not read (the axes replace them).
//
//   permcheck::Signature s{{permcheck::parse_axis("n=1..8"), permcheck::parse_axis("m=1..8")},
//                          {permcheck::parse_input("q:n,8"), permcheck::parse_input("mem:m,8")},
//                          {permcheck::parse_output("y:n,8")}};
//   permcheck::AuditResult r = permcheck::audit_signature(my_cross_attention, s, {});
template <class F> AuditResult audit_signature(F layer, const Signature& signature, AuditOptions opts) {
    static_assert(std::is_invocable_r_v<Tensors, const F&, const Tensors&>,
                  "a layer with a signature must be callable (through a const call operator) with "
                  "const permcheck::Tensors& and return permcheck::Tensors");
    return audit(NamedBlackBox(std::move(layer)), signature, opts);
}
// A callable over named tensors as a black box whose own exceptions (any std::exception) are the layer's: LayerRaised,
// which a property that makes raising a finding (agreement, incremental) judges, and every other reads as an error.
template <class F> NamedBlackBox raising_box(F layer) {
    static_assert(std::is_invocable_r_v<Tensors, const F&, const Tensors&>,
                  "a layer with a signature must be callable (through a const call operator) with "
                  "const permcheck::Tensors& and return permcheck::Tensors");
    return [layer = std::move(layer)](const Tensors& inputs) -> Tensors {
        try {
            return layer(inputs);
        } catch (const LayerRaised&) {
            throw;
        } catch (const std::exception& e) {
            throw LayerRaised(e.what());
        }
    };
}

// Audits `layer` against `reference`, a second implementation of the same signature (yours: an eager original, a
// port's source): with opts.property = Property{"agreement"} (the default here when none is set) the two must answer
// every input alike, within the tolerance of opts.dtype (inferred from both sides' answers when not set: the coarser
// rounding seen decides); what one raises where the other answers
// is the finding, and an answer that changes when asked again is `nondeterministic`, never a disagreement. With
// another property, the expected side of each case is made of the reference's answers (audit_against).
//
//   permcheck::AuditResult r = permcheck::audit_signature(my_kernel, eager_reference, s, {});
template <class F, class R>
AuditResult audit_signature(F layer, R reference, const Signature& signature, AuditOptions opts) {
    if (!opts.property) opts.property = Property{"agreement"};
    return audit_against(raising_box(std::move(layer)), raising_box(std::move(reference)), signature, opts);
}

// The same, under the name of the one-tensor API.
template <class F> AuditResult audit_callable(F layer, const Signature& signature, AuditOptions opts) {
    return audit_signature(std::move(layer), signature, std::move(opts));
}

// signature_flags(signature), explain(result, opts) and replay_hint(result, opts): report/text.h.

}  // namespace permcheck
