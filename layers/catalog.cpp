#include "layers/catalog.h"

#include "layers/layers.h"
#include "layers/make_family.h"

#include <stdexcept>

namespace permcheck {

namespace {
// What the theory says of a layer, from which the properties that apply follow.
struct Theory {
    bool symmetric = true;            // equivariant (sequence output) or invariant (pooled output)
    bool relative = false;            // position enters only through offsets: shifting all positions changes nothing
    bool reversal_symmetric = false;  // relative layers whose bias is symmetric in the offset (ALiBi)
    bool absolute = false;            // an absolute position signal: shifting every position changes the output
    bool causal = false;              // causal mask, no position signal: output i ignores the order before i
};

std::vector<Expectation> expectations_of(Output output, const Theory& t) {
    if (output == Output::pooled) return {{Property::invariance, t.symmetric}};
    std::vector<Expectation> e{{Property::equivariance, t.symmetric}};
    if (t.relative) {
        e.push_back({Property::shift, true});
        e.push_back({Property::reversal, t.reversal_symmetric});
    }
    if (t.absolute) e.push_back({Property::shift, false});
    if (t.causal) e.push_back({Property::causal_prefix, true});
    return e;
}

// LayerNorm divides by a row's standard deviation, at least sqrt(eps) = 2^-8 (proofs-notes/float-tolerance.md).
constexpr double kLayerNormGrowth = 256.0;

template <class Make>
LayerFamily family(std::string name, std::string description, Output output, const Theory& theory, Make make,
                   double amplification = 1.0) {
    LayerFamily f = make_family(std::move(name), output, std::move(make), expectations_of(output, theory), amplification);
    f.description = std::move(description);
    return f;
}

enum class Signal { none, sinusoidal, learned, rope, alibi, t5 };

struct AttentionDesign {
    Eigen::Index heads = 1;
    bool causal = false;
    Signal signal = Signal::none;
};

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

// `inner`, then pooled over positions, built by inner's own factories from the same draws: the pooled family is
// the composition by construction, and says so for the certificate.
LayerFamily pooled(std::string name, std::string description, const LayerFamily& inner, Pool how, bool symmetric) {
    const auto shared = std::make_shared<const LayerFamily>(inner);
    LayerFamily f = family(std::move(name), std::move(description), Output::pooled, {.symmetric = symmetric},
                           [shared, how]<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long offset) {
                               return [layer = shared->factory<S>()(d, draw, offset), how](const Mat<S>& x) {
                                   return pool(layer(x), how);
                               };
                           });
    f.composition = Composition{shared, how};
    return f;
}

void add_per_position(std::vector<LayerFamily>& c) {
    c.push_back(family("linear", "x W + b, the same map at every position", Output::sequence, {},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return Linear<S>::random(d, d, draw);
                       }));
    c.push_back(family("mlp", "two-layer perceptron with ReLU, per position", Output::sequence, {},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return Mlp<S>::random(d, 2 * d, d, draw);
                       }));
    c.push_back(family("layernorm", "LayerNorm over each position's features", Output::sequence, {},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return LayerNorm<S>::random(d, draw);
                       },
                       kLayerNormGrowth));
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

void add_recurrent_and_pooled(std::vector<LayerFamily>& c, const LayerFamily& attn, const LayerFamily& sinusoidal) {
    c.push_back(family("rnn", "Elman RNN (tanh), every step's state", Output::sequence, {.symmetric = false},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return ElmanRnn<S>::random(d, d, draw);
                       }));
    c.push_back(pooled("attention-sum-pool", "attention, then sum over positions", attn, Pool::sum, true));
    c.push_back(pooled("attention-mean-pool", "attention, then mean over positions", attn, Pool::mean, true));
    c.push_back(pooled("attention-max-pool", "attention, then max over positions", attn, Pool::max, true));
    c.push_back(pooled("attention-first-readout", "attention, then the first position's row", attn, Pool::first, false));
    c.push_back(pooled("attention-last-readout", "attention, then the last position's row", attn, Pool::last, false));
    c.push_back(pooled("attention+sinusoidal-mean-pool", "sinusoidal signal, attention, mean pooling", sinusoidal,
                       Pool::mean, false));
    c.push_back(family("deepsets", "DeepSets: rho(sum_i phi(x_i))", Output::pooled, {},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return DeepSets<S>::random(d, 2 * d, d, draw);
                       }));
    c.push_back(family("rnn-final-state", "Elman RNN, final state only", Output::pooled, {.symmetric = false},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return [rnn = ElmanRnn<S>::random(d, d, draw)](const Mat<S>& x) { return rnn.final_state(x); };
                       }));
}

std::vector<LayerFamily> make_catalog() {
    // The inner layers of the pooled ones, which are rows of their own too.
    const LayerFamily attn = attention("attention", "single-head scaled dot-product self-attention", {}, {});
    const LayerFamily sinusoidal = attention("attention+sinusoidal", "sinusoidal position signal added, then attention",
                                             {.signal = Signal::sinusoidal}, {.symmetric = false, .absolute = true});
    std::vector<LayerFamily> c;
    add_per_position(c);
    add_attention(c, attn, sinusoidal);
    add_recurrent_and_pooled(c, attn, sinusoidal);
    return c;
}
}  // namespace

const std::vector<LayerFamily>& catalog() {
    static const std::vector<LayerFamily> c = make_catalog();
    return c;
}

std::string layer_names(const char* separator) {
    std::string out;
    for (const LayerFamily& f : catalog()) out += (out.empty() ? "" : separator) + f.name;
    return out;
}

const LayerFamily& find_layer(const std::string& name) {
    for (const LayerFamily& f : catalog())
        if (f.name == name) return f;
    throw std::invalid_argument("unknown layer '" + name + "'; valid layers: " + layer_names());
}

}  // namespace permcheck
