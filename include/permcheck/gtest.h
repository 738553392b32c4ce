// GoogleTest assertions for users' own suites:
//
//   #include <permcheck/gtest.h>
//   TEST(MyLayer, IsEquivariant) { EXPECT_EQUIVARIANT(my_layer, options); }
//   TEST(MyPool, IsInvariant) { ASSERT_INVARIANT(my_pool); }   // default options: d = 4, 100 cases
//
// EXPECT_EQUIVARIANT(layer[, options]) audits `layer` as a sequence layer (L(P x) = P L(x)), EXPECT_INVARIANT
// as a pooled layer (L(P x) = L(x)), with permcheck::audit_callable (<permcheck/audit.h>): options.output is
// set by the macro. Any verdict but `holds` fails the test, with the verdict, the shrunk counterexample
// (describe()) and the options that replay it. ASSERT_* stop the test; EXPECT_* continue. Pass the layer as
// a name or a parenthesized expression: a top-level comma (a lambda's capture list) splits macro arguments.
// A layer over named tensors takes its signature: EXPECT_EQUIVARIANT(layer, signature[, options]),
// EXPECT_INVARIANT(layer, signature[, options]), EXPECT_HOLDS(layer, property, signature[, options]) for any property,
// and EXPECT_AGREE(layer, reference, signature[, options]) for a reference implementation (each with its ASSERT_).
#pragma once

#include "audit.h"

#include <gtest/gtest.h>

namespace permcheck::testing {

inline AuditOptions options_or_default() { return AuditOptions{}; }
inline AuditOptions options_or_default(const AuditOptions& o) { return o; }

// The options with the layer's expression as its name, unless options.name was set.
inline AuditOptions named_after(AuditOptions o, const char* layer_expr) {
    if (o.name == AuditOptions{}.name) o.name = layer_expr;
    return o;
}

// The assertion on an audit: success when it holds, else "expected <expected>, but the audit says: ...".
inline ::testing::AssertionResult holds_or_says(const AuditResult& r, const AuditOptions& o,
                                               const std::string& expected) {
    if (r.verdict == Verdict::holds) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "expected " << expected << ", but the audit says: " << explain(r, o);
}

// A predicate-formatter for EXPECT_PRED_FORMAT2.
template <class F>
::testing::AssertionResult audit_as(Output output, const char* layer_expr, const F& layer, AuditOptions opts) {
    opts.output = output;
    opts = named_after(std::move(opts), layer_expr);
    const char* property = output == Output::pooled ? "invariant" : "equivariant";
    return holds_or_says(audit_callable(layer, opts), opts, std::string(layer_expr) + " to be permutation " + property);
}

template <class F>
::testing::AssertionResult equivariant(const char* layer_expr, const char*, const F& layer, const AuditOptions& opts) {
    return audit_as(Output::sequence, layer_expr, layer, opts);
}
template <class F>
::testing::AssertionResult invariant(const char* layer_expr, const char*, const F& layer, const AuditOptions& opts) {
    return audit_as(Output::pooled, layer_expr, layer, opts);
}

// A layer over named tensors (cases/signature.h): EXPECT_EQUIVARIANT(layer, signature[, options]) audits it with
// permcheck::audit_signature, each output equivariant along the axes it has and invariant to the others;
// EXPECT_INVARIANT(layer, signature[, options]) also requires that no output has an axis.
struct SignatureOptions {
    Signature signature;
    AuditOptions options;
};
inline SignatureOptions options_or_default(const Signature& s) { return {s, AuditOptions{}}; }
inline SignatureOptions options_or_default(const Signature& s, const AuditOptions& o) { return {s, o}; }

template <class F>
::testing::AssertionResult audit_signature_as(bool invariant_only, const char* layer_expr, const F& layer,
                                              SignatureOptions so) {
    so.options = named_after(std::move(so.options), layer_expr);
    for (const TensorSpec& out : so.signature.outputs)
        for (const Dim& d : out.dims)
            if (invariant_only && d.is_axis())
                return ::testing::AssertionFailure() << "EXPECT_INVARIANT: the output " << out.name << " of "
                                                     << layer_expr << " has the axis " << d.axis
                                                     << "; an output with an axis is checked for equivariance "
                                                        "(EXPECT_EQUIVARIANT)";
    return holds_or_says(audit_signature(layer, so.signature, so.options), so.options,
                         std::string(layer_expr) + " to respect its signature" + signature_flags(so.signature));
}

template <class F>
::testing::AssertionResult equivariant(const char* layer_expr, const char*, const F& layer, const SignatureOptions& so) {
    return audit_signature_as(false, layer_expr, layer, so);
}
template <class F>
::testing::AssertionResult invariant(const char* layer_expr, const char*, const F& layer, const SignatureOptions& so) {
    return audit_signature_as(true, layer_expr, layer, so);
}

// Any property of a layer over named tensors: EXPECT_HOLDS(layer, property, signature[, options]) audits it for
// `property` (Property{"shift"}, padding, causal, packing, incremental, ...; options.property is set by the macro).
template <class F>
::testing::AssertionResult holds(const char* layer_expr, const char*, const char*, const F& layer, Property property,
                                 SignatureOptions so) {
    so.options = named_after(std::move(so.options), layer_expr);
    so.options.property = property;
    return holds_or_says(audit_signature(layer, so.signature, so.options), so.options,
                         std::string(layer_expr) + " to be " + property_adjective(property) + " over its signature" +
                             signature_flags(so.signature));
}

// A layer and a reference implementation of the same signature: EXPECT_AGREE(layer, reference, signature[, options])
// audits them for agreement (audit_signature(layer, reference, ...), <permcheck/audit.h>).
template <class F, class R>
::testing::AssertionResult agree(const char* layer_expr, const char* reference_expr, const char*, const F& layer,
                                 const R& reference, SignatureOptions so) {
    so.options = named_after(std::move(so.options), layer_expr);
    so.options.property = Property{"agreement"};
    return holds_or_says(audit_signature(layer, reference, so.signature, so.options), so.options,
                         std::string(layer_expr) + " to agree with " + reference_expr + " over the signature" +
                             signature_flags(so.signature));
}

}  // namespace permcheck::testing

#define EXPECT_EQUIVARIANT(layer, ...) \
    EXPECT_PRED_FORMAT2(::permcheck::testing::equivariant, layer, ::permcheck::testing::options_or_default(__VA_ARGS__))
#define ASSERT_EQUIVARIANT(layer, ...) \
    ASSERT_PRED_FORMAT2(::permcheck::testing::equivariant, layer, ::permcheck::testing::options_or_default(__VA_ARGS__))
#define EXPECT_INVARIANT(layer, ...) \
    EXPECT_PRED_FORMAT2(::permcheck::testing::invariant, layer, ::permcheck::testing::options_or_default(__VA_ARGS__))
#define ASSERT_INVARIANT(layer, ...) \
    ASSERT_PRED_FORMAT2(::permcheck::testing::invariant, layer, ::permcheck::testing::options_or_default(__VA_ARGS__))
#define EXPECT_HOLDS(layer, property, ...) \
    EXPECT_PRED_FORMAT3(::permcheck::testing::holds, layer, property, ::permcheck::testing::options_or_default(__VA_ARGS__))
#define ASSERT_HOLDS(layer, property, ...) \
    ASSERT_PRED_FORMAT3(::permcheck::testing::holds, layer, property, ::permcheck::testing::options_or_default(__VA_ARGS__))
#define EXPECT_AGREE(layer, reference, ...) \
    EXPECT_PRED_FORMAT3(::permcheck::testing::agree, layer, reference, ::permcheck::testing::options_or_default(__VA_ARGS__))
#define ASSERT_AGREE(layer, reference, ...) \
    ASSERT_PRED_FORMAT3(::permcheck::testing::agree, layer, reference, ::permcheck::testing::options_or_default(__VA_ARGS__))
