// The catalog's per-position, recurrent, DeepSets and pooled rows, in every scalar.
#include "layers/catalog_parts.h"

#include "layers/layers.h"

namespace permcheck::catalog_parts {

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


}  // namespace permcheck::catalog_parts
