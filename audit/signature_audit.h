// Auditing a layer with a signature (cases/signature.h): several named inputs and outputs over named axes, through
// a NamedBlackBox. The one audit path: the one-tensor form of audit/blackbox.h runs here too, as the signature
// one_tensor_signature makes of it. Public (through <permcheck/audit.h>), so RapidCheck-free.
#pragma once

#include "audit/blackbox.h"
#include "cases/signature.h"

#include <any>
#include <functional>
#include <vector>

namespace permcheck {

// A named black box with an optional batched side (`many`, its call empty: not batched). An audit of these sends
// the evaluations of a block of consecutive cases (L(x), L(P x), the repeats) grouped by lengths, up to
// capacity() a call, once capacity() > 1, and judges the cases in order as the unbatched audit does: the same
// verdict, failing case, dtype and counterexample (shrinking calls `one`). An item's error is that case's error.
struct BatchedNamedBlackBox {
    NamedBlackBox one;
    Batching<Tensors> many;
};

// Audits a layer with a signature. Reads of opts everything but output and d, which the signature replaces. A
// signature's axes replace min_len, max_len and long_len too: each axis gets the length schedule of
// cases/lengths.h over [min_len, max_len], its max_len a hard cap (the user wrote it), unless the axis has a long_len
// (one_tensor_signature's n): one case in ten longer, up to it. Throws
// std::invalid_argument for a bad signature (validate) or bad options.
AuditResult audit(const NamedBlackBox& layer, const Signature& signature, const AuditOptions& opts);
AuditResult audit(const std::vector<NamedBlackBox>& layers, const Signature& signature, const AuditOptions& opts);
// The same with batched sides.
AuditResult audit(const std::vector<BatchedNamedBlackBox>& layers, const Signature& signature, const AuditOptions& opts);

// The audit of `layer` against `reference`: each case's expected side is made of the reference's answer to x (P
// L_ref(x) for equivariance, L_ref(x) for an output without the axis, for shift or for padding), the other side of
// the layer's answer to the property's transformed inputs, so that a layer is judged against another (an oracle, a
// library's own implementation): with the same layer as reference it is audit(). With the agreement property
// (opts.property), which transforms nothing, it asks whether the two answer every input alike, L(x) = R(x): what one
// side raises (LayerRaised) where the other answers is the finding, and an answer that changes when asked again is
// named nondeterministic (the side that changed), never a disagreement. The property needs a reference: audit()
// refuses it (std::invalid_argument).
AuditResult audit_against(const NamedBlackBox& layer, const NamedBlackBox& reference, const Signature& signature,
                          const AuditOptions& opts);
// The same with batched sides, one worker per layer box, references[k] the reference of layers[k] (the same count;
// each side batched as its box allows).
AuditResult audit(const std::vector<BatchedNamedBlackBox>& layers, const std::vector<BatchedNamedBlackBox>& references,
                  const Signature& signature, const AuditOptions& opts);

// A layer that decodes in chunks (the incremental property): `state` is empty (std::any{}) at the start of a
// sequence; step answers one chunk's inputs (every input along the axis cut to the chunk) with that chunk's
// outputs, and keeps what the next chunk needs in `state` (a key-value cache); `offset` is the chunk's first
// position.
using ChunkStep = std::function<Tensors(std::any& state, const Tensors& chunk, int offset)>;
// The black box of a ChunkStep: a request without chunks is one step from an empty state; a chunked request (the
// incremental property's, cases/signature.h) runs its chunks in order from an empty state, concatenates their
// outputs along the axis (an output without it: the last chunk's) and says it did (kChunkedAnswer). A step that
// throws on a chunk is the layer's finding: LayerRaised, naming the chunk.
NamedBlackBox chunked_black_box(ChunkStep step, const Signature& signature);

// Throws std::invalid_argument, as audit() does before it asks the layer anything, when the signature is bad or the
// options do not fit it (a property it cannot take, --padding without padding): callers that start adapters call it
// first.
void validate_audit(const Signature& signature, const AuditOptions& opts);

// A saved case (its lengths, permutations and inputs x, e.g. read back from report.json) evaluated again through
// `layer` and judged as the audit judges a case, with the tolerance of opts.dtype (required: float32, float64,
// float16 or bfloat16) and opts.amplification: L(x) and L(P x), every output compared. With `twice` (the saved
// finding was nondeterministic) x is answered twice and the permutations play no part; a history-dependent finding's
// x is answered, then its earlier request, then x again. The verdict is holds, violated, non-finite,
// nondeterministic or history-dependent; counterexample holds the saved case with every output's comparison
// (with both sides when it fails). Throws std::invalid_argument for a case that does not fit the
// signature, and whatever the layer throws.
// With a reference (the agreement property requires one), x is the reference's to answer, as audit_against asks.
AuditResult reevaluate(const NamedBlackBox& layer, const Signature& signature, const Counterexample& saved,
                       bool twice, const AuditOptions& opts, const NamedBlackBox* reference = nullptr);

}  // namespace permcheck
