// The catalog's attention rows over named inputs (cross-attention, masks, pairwise biases).
#include "layers/catalog_parts.h"

#include "layers/cross_attention.h"

namespace permcheck::catalog_parts {

struct AttentionInputs {
    bool memory = false;         // q:n,4 and mem:m,4, else self-attention over x:n,4
    bool memory_positions = false;
    bool mask = false;           // pad:n:mask
    bool bias = false;           // bias:n,n
};

template <class S> SignatureLayerFn<S> attention_over(const AttentionInputs& how, Draw<S>& draw) {
    return [a = CrossAttention<S>::random(kWidth, draw, how.memory_positions), how](const NamedTensors<S>& in) {
        const Mat<S> q = as_matrix(in.at(how.memory ? "q" : "x"));
        const Mat<S> mem = how.memory ? as_matrix(in.at("mem")) : q;
        const std::vector<bool> padded = how.mask ? as_mask(in.at("pad")) : std::vector<bool>{};
        const Mat<S> bias = how.bias ? as_matrix(in.at("bias")) : Mat<S>{};
        return NamedTensors<S>{{"y", as_tensor<S>(a(q, mem, padded, bias))}};
    };
}

void add_signature_attention(std::vector<SignatureFamily>& c) {
    const SignatureText cross{{"n=1..6", "m=1..6"}, {"q:n,4", "mem:m,4"}, {"y:n,4"},
                              {{"n", Property::equivariance, true}, {"m", Property::invariance, true}}};
    c.push_back(signature_family<true>("cross-attention", "queries n x 4 attend over a memory m x 4", cross,
                                       []<class S>(std::type_identity<S>, Draw<S>& draw) {
                                           return attention_over<S>({.memory = true}, draw);
                                       }));
    SignatureText positions = cross;
    positions.expectations[1].holds = false;
    c.push_back(signature_family<true>("cross-attention+memory-positions",
                                        "cross-attention with a sinusoidal position signal on the memory", positions,
                                        []<class S>(std::type_identity<S>, Draw<S>& draw) {
                                            return attention_over<S>({.memory = true, .memory_positions = true}, draw);
                                        }));
    c.push_back(signature_family<true>("attention+key-padding-mask",
                                        "self-attention with a key-padding mask that moves with the tokens",
                                        {{"n=1..6"}, {"x:n,4", "pad:n:mask"}, {"y:n,4"},
                                         {{"n", Property::equivariance, true}}},
                                        []<class S>(std::type_identity<S>, Draw<S>& draw) {
                                            return attention_over<S>({.mask = true}, draw);
                                        }));
    c.push_back(signature_family<true>("attention+pairwise-bias", "self-attention with an n x n score bias, P B P^T",
                                       {{"n=1..6"}, {"x:n,4", "bias:n,n"}, {"y:n,4"},
                                        {{"n", Property::equivariance, true}}},
                                       []<class S>(std::type_identity<S>, Draw<S>& draw) {
                                           return attention_over<S>({.bias = true}, draw);
                                       }));
}


}  // namespace permcheck::catalog_parts
