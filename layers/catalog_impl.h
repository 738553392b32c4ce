// The definition of build_layer, separate so that a new scalar type (symbolic, degree-tracking) can
// instantiate it in its own translation unit.
#pragma once

#include "layers/catalog.h"

#include <stdexcept>

namespace permcheck {

namespace detail {
template <class S> LayerFn<S> pooled(LayerFn<S> inner, Pool how) {
    return [inner = std::move(inner), how](const Mat<S>& x) { return pool(inner(x), how); };
}
template <class S> LayerFn<S> attention_with(const LayerSpec& spec, Eigen::Index d, Draw<S>& draw, long offset,
                                             const std::string& signal) {
    Attention<S> a = Attention<S>::random({d, spec.heads, spec.causal}, draw);
    if (signal == "rope") a.rope = Rope<S>{offset};
    if (signal == "alibi") a.bias = ScoreBias<S>::alibi();
    if (signal == "t5") a.bias = ScoreBias<S>::t5(spec.heads, draw);
    if (a.bias) a.bias->offset = offset;
    if (signal == "sinusoidal" || signal == "learned") {
        AbsolutePosition<S> pos = signal == "sinusoidal" ? AbsolutePosition<S>::sinusoidal()
                                                         : AbsolutePosition<S>::learned(128, d, draw);
        pos.offset = offset;
        return [a = std::move(a), pos = std::move(pos)](const Mat<S>& x) { return a(pos(x)); };
    }
    return [a = std::move(a)](const Mat<S>& x) { return a(x); };
}
}  // namespace detail

template <class S> LayerFn<S> build_layer(const std::string& name, Eigen::Index d, Draw<S>& draw, long offset) {
    const LayerSpec& spec = find_layer(name);
    if (name == "linear") return Linear<S>::random(d, d, draw);
    if (name == "mlp") return Mlp<S>::random(d, 2 * d, d, draw);
    if (name == "layernorm") return LayerNorm<S>::random(d, draw);
    if (name == "attention" || name == "mha" || name == "causal-attention")
        return detail::attention_with<S>(spec, d, draw, offset, "");
    if (name == "encoder") return EncoderBlock<S>::random({d, spec.heads, false}, draw);
    for (const char* signal : {"sinusoidal", "learned", "rope", "alibi", "t5"})
        if (name == std::string("attention+") + signal) return detail::attention_with<S>(spec, d, draw, offset, signal);
    if (name == "rnn") return ElmanRnn<S>::random(d, d, draw);
    if (name == "rnn-final-state") {
        ElmanRnn<S> rnn = ElmanRnn<S>::random(d, d, draw);
        return [rnn = std::move(rnn)](const Mat<S>& x) { return rnn.final_state(x); };
    }
    if (name == "deepsets") return DeepSets<S>::random(d, 2 * d, d, draw);
    for (Pool how : {Pool::sum, Pool::mean, Pool::max, Pool::first, Pool::last}) {
        const std::string suffix = how == Pool::first || how == Pool::last ? "-readout" : "-pool";
        if (name == std::string("attention-") + pool_name(how) + suffix)
            return detail::pooled<S>(detail::attention_with<S>(spec, d, draw, offset, ""), how);
        if (name == std::string("attention+sinusoidal-") + pool_name(how) + suffix)
            return detail::pooled<S>(detail::attention_with<S>(spec, d, draw, offset, "sinusoidal"), how);
    }
    throw std::logic_error("catalog entry '" + name + "' has no builder");
}

}  // namespace permcheck
