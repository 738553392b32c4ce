// A post-norm transformer encoder block (Vaswani et al. 2017): y = LN(x + Attn(x)); z = LN(y + MLP(y)).
#pragma once

#include "layers/attention.h"
#include "layers/pointwise.h"

namespace permcheck {

template <class S> struct EncoderBlock {
    Attention<S> attention;
    LayerNorm<S> norm1, norm2;
    Mlp<S> mlp;

    static EncoderBlock random(const AttentionShape& shape, Draw<S>& draw) {
        Attention<S> a = Attention<S>::random(shape, draw);
        LayerNorm<S> n1 = LayerNorm<S>::random(shape.d, draw);
        Mlp<S> m = Mlp<S>::random(shape.d, 2 * shape.d, shape.d, draw);
        LayerNorm<S> n2 = LayerNorm<S>::random(shape.d, draw);
        return {std::move(a), std::move(n1), std::move(n2), std::move(m)};
    }
    Mat<S> operator()(const Mat<S>& x) const {
        const Mat<S> y = norm1(Mat<S>(x + attention(x)));
        return norm2(Mat<S>(y + mlp(y)));
    }
};

}  // namespace permcheck
