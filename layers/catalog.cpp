#include "layers/catalog_impl.h"
#include "scalars/degree.h"
#include "scalars/symbolic.h"

#include <stdexcept>

namespace permcheck {

namespace {
LayerSpec seq(std::string name, std::string description, bool symmetric) {
    LayerSpec s;
    s.name = std::move(name);
    s.description = std::move(description);
    s.symmetric = symmetric;
    return s;
}
LayerSpec pooled(std::string name, std::string description, bool symmetric) {
    LayerSpec s = seq(std::move(name), std::move(description), symmetric);
    s.output = Output::pooled;
    return s;
}
// LayerNorm divides by a row's standard deviation, at least sqrt(eps) = 2^-8 (proofs-notes/float-tolerance.md).
constexpr double kLayerNormGrowth = 256.0;

std::vector<LayerSpec> make_catalog() {
    std::vector<LayerSpec> c;
    c.push_back(seq("linear", "x W + b, the same map at every position", true));
    c.push_back(seq("mlp", "two-layer perceptron with ReLU, per position", true));
    LayerSpec ln = seq("layernorm", "LayerNorm over each position's features", true);
    ln.amplification = kLayerNormGrowth;
    c.push_back(ln);
    c.push_back(seq("attention", "single-head scaled dot-product self-attention", true));
    LayerSpec mha = seq("mha", "two-head self-attention", true);
    mha.heads = 2;
    c.push_back(mha);
    LayerSpec causal = seq("causal-attention", "self-attention with a causal mask, no position signal", false);
    causal.causal = true;
    c.push_back(causal);
    LayerSpec enc = seq("encoder", "post-norm encoder block: attention, residual, LayerNorm, MLP", true);
    enc.amplification = kLayerNormGrowth * kLayerNormGrowth;
    c.push_back(enc);
    c.push_back(seq("attention+sinusoidal", "sinusoidal position signal added, then attention", false));
    c.push_back(seq("attention+learned", "learned absolute position table added, then attention", false));
    for (const char* rel : {"rope", "alibi", "t5"}) {
        const std::string what = std::string(rel) == "rope"    ? "rotary position embedding on queries and keys"
                                 : std::string(rel) == "alibi" ? "ALiBi linear distance bias on the scores"
                                                               : "T5 bucketed relative bias on the scores";
        LayerSpec r = seq(std::string("attention+") + rel, "attention with " + what, false);
        r.relative = true;
        r.reversal_symmetric = std::string(rel) == "alibi";
        c.push_back(r);
    }
    c.push_back(seq("rnn", "Elman RNN (tanh), every step's state", false));
    c.push_back(pooled("attention-sum-pool", "attention, then sum over positions", true));
    c.push_back(pooled("attention-mean-pool", "attention, then mean over positions", true));
    c.push_back(pooled("attention-max-pool", "attention, then max over positions", true));
    c.push_back(pooled("attention-first-readout", "attention, then the first position's row", false));
    c.push_back(pooled("attention-last-readout", "attention, then the last position's row", false));
    c.push_back(pooled("attention+sinusoidal-mean-pool", "sinusoidal signal, attention, mean pooling", false));
    c.push_back(pooled("deepsets", "DeepSets: rho(sum_i phi(x_i))", true));
    c.push_back(pooled("rnn-final-state", "Elman RNN, final state only", false));
    return c;
}
}  // namespace

const std::vector<LayerSpec>& catalog() {
    static const std::vector<LayerSpec> c = make_catalog();
    return c;
}

std::string layer_names(const char* separator) {
    std::string out;
    for (const LayerSpec& s : catalog()) out += (out.empty() ? "" : separator) + s.name;
    return out;
}

const LayerSpec& find_layer(const std::string& name) {
    for (const LayerSpec& s : catalog())
        if (s.name == name) return s;
    throw std::invalid_argument("unknown layer '" + name + "'; valid layers: " + layer_names());
}

template LayerFn<float> build_layer<float>(const std::string&, Eigen::Index, Draw<float>&, long);
template LayerFn<double> build_layer<double>(const std::string&, Eigen::Index, Draw<double>&, long);
template LayerFn<long double> build_layer<long double>(const std::string&, Eigen::Index, Draw<long double>&, long);
template LayerFn<Rational> build_layer<Rational>(const std::string&, Eigen::Index, Draw<Rational>&, long);
template LayerFn<RationalStandin> build_layer<RationalStandin>(const std::string&, Eigen::Index,
                                                               Draw<RationalStandin>&, long);
template LayerFn<Degree> build_layer<Degree>(const std::string&, Eigen::Index, Draw<Degree>&, long);
template LayerFn<Symbolic> build_layer<Symbolic>(const std::string&, Eigen::Index, Draw<Symbolic>&, long);

}  // namespace permcheck
