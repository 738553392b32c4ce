// LibTorch's own layers as black boxes: torch::nn::MultiheadAttention and torch::nn::TransformerEncoderLayer,
// with no mask, a causal mask or a key padding mask, in eval or train mode, audited in-process by
// check/blackbox.h; and torch::nn::TransformerDecoderLayer (cross-attention with a memory: equivariant in the
// targets, invariant to the order of the memory) as a named black box over its signature (cases/signature.h). This header names no torch type: only torch_adapter.cpp includes <torch/torch.h>
// (one slow translation unit), and code that includes this header compiles in ordinary time.
//
// The key padding mask travels with the input. A padding mask is part of the layer's input: the statement to
// test is L(P x, P m) = P L(x, m). A black box sees only x, so the mask must be a function of x that commutes
// with P: position i is padding when its first feature is negative (a flag feature; if that would pad every
// position, none is padded: the rule then depends only on the multiset of rows, so it still commutes with P).
// A negative flag pads about half the positions of a generated input, so most cases have some padding. Then
// m(P x) = P m(x) and auditing x -> L(x, m(x)) is exactly the statement above; the expected verdict is holds.
// A mask fixed by index ("pad the last position", key-padding-fixed) does not move with the tokens: the token
// that lands in the last position is dropped instead, so that audit is violated, and it tests a mistake in
// the harness, not a property of the layer (proofs-notes/torch-key-padding.md).
#pragma once

#include "check/signature_audit.h"

#include <cstdint>
#include <string>

namespace permcheck::adapters {

enum class TorchLayer { mha, encoder_layer, decoder_layer };
enum class TorchMask { none, causal, key_padding, key_padding_fixed };

struct TorchOptions {
    TorchLayer layer = TorchLayer::mha;
    TorchMask mask = TorchMask::none;
    bool train = false;        // train mode: dropout is active
    int dim = 8;               // embed_dim = d_model = features per position
    int heads = 2;             // must divide dim
    double dropout = 0.1;      // of attention weights (mha) and of the encoder layer's three dropouts
    Arithmetic dtype = Arithmetic::float64;  // the module's parameters and computation: float64 | float32 | bfloat16
    std::uint64_t seed = 0;    // torch::manual_seed before the weights are drawn (and for dropout's draws)
};

// mha | encoder-layer | decoder-layer; throws std::invalid_argument
TorchLayer parse_torch_layer(const std::string& name);
const char* torch_layer_name(TorchLayer l);
const char* torch_mask_name(TorchMask m);

// The verdict the theory expects: holds, violated (causal, key-padding-fixed) or nondeterministic (train mode
// with dropout > 0). The decoder layer's causal mask is on its targets.
Verdict expected_verdict(const TorchOptions& o);

// The amplification of the float tolerance (ToleranceModel): 1 for attention (convex combinations), that of two
// LayerNorms for the encoder layer (as the catalog's encoder entry), of three for the decoder layer.
double torch_amplification(TorchLayer l);

// A readable name, e.g. "torch::nn::MultiheadAttention(dim=8, heads=2, mask=causal, eval, float64)".
std::string torch_name(const TorchOptions& o);

// Builds the module (torch::manual_seed(seed) first) and returns it as a black box: n x dim in, n x dim out.
// One LibTorch thread per call, so results do not depend on the machine's core count. Throws
// std::invalid_argument on bad options (e.g. heads not dividing dim).
BlackBox torch_black_box(const TorchOptions& o);

// The decoder layer's signature: axes n (targets) and m (memory), each in [min_len, max_len]; inputs tgt:n,dim
// and memory:m,dim; output y:n,dim (equivariant in n, invariant to m).
Signature torch_decoder_signature(const TorchOptions& o, int min_len, int max_len);
// The decoder layer (dim_feedforward 4 * dim) as a named black box over that signature; mask none or causal
// (on the targets). Throws std::invalid_argument on bad options, a key padding mask included.
NamedBlackBox torch_decoder_black_box(const TorchOptions& o);

}  // namespace permcheck::adapters
