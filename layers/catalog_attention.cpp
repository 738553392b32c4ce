// The catalog's self-attention rows (every position signal) and the encoder block, in every scalar.
#include "layers/catalog_parts.h"

#include "layers/layers.h"

namespace permcheck::catalog_parts {

template <class S> LayerFn<S> attention_with(const AttentionDesign& design, Eigen::Index d, Draw<S>& draw, long offset) {
    Attention<S> a = Attention<S>::random({d, design.heads, design.causal}, draw);
    if (design.signal == Signal::rope) a.rope = Rope<S>{offset};
    if (design.signal == Signal::alibi) a.bias = ScoreBias<S>::alibi();
    if (design.signal == Signal::t5) a.bias = ScoreBias<S>::t5(design.heads, draw);
    if (a.bias) a.bias->offset = offset;
    if (design.signal == Signal::sinusoidal || design.signal == Signal::learned) {
        AbsolutePosition<S> pos = design.signal == Signal::sinusoidal ? AbsolutePosition<S>::sinusoidal()
                                                                      : AbsolutePosition<S>::learned(128, d, draw);
        pos.offset = offset;
        return [a = std::move(a), pos = std::move(pos)](const Mat<S>& x) { return a(pos(x)); };
    }
    return [a = std::move(a)](const Mat<S>& x) { return a(x); };
}

LayerFamily attention(std::string name, std::string description, AttentionDesign design, const Theory& theory) {
    return family(std::move(name), std::move(description), Output::sequence, theory,
                  [design]<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long offset) {
                      return attention_with<S>(design, d, draw, offset);
                  });
}


void add_attention(std::vector<LayerFamily>& c, const LayerFamily& attn, const LayerFamily& sinusoidal) {
    c.push_back(attn);
    c.push_back(attention("mha", "two-head self-attention", {.heads = 2}, {}));
    c.push_back(attention("causal-attention", "self-attention with a causal mask, no position signal",
                          {.causal = true}, {.symmetric = false, .causal = true}));
    c.push_back(family("encoder", "post-norm encoder block: attention, residual, LayerNorm, MLP", Output::sequence, {},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return EncoderBlock<S>::random({d, 1, false}, draw);
                       },
                       kLayerNormGrowth * kLayerNormGrowth));
    c.push_back(sinusoidal);
    c.push_back(attention("attention+learned", "learned absolute position table added, then attention",
                          {.signal = Signal::learned}, {.symmetric = false, .absolute = true}));
    const Theory relative{.symmetric = false, .relative = true};
    c.push_back(attention("attention+rope", "attention with rotary position embedding on queries and keys",
                          {.signal = Signal::rope}, relative));
    c.push_back(attention("attention+alibi", "attention with ALiBi linear distance bias on the scores",
                          {.signal = Signal::alibi}, {.symmetric = false, .relative = true, .reversal_symmetric = true}));
    c.push_back(attention("attention+t5", "attention with T5 bucketed relative bias on the scores",
                          {.signal = Signal::t5}, relative));
}


}  // namespace permcheck::catalog_parts
