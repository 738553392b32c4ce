// A decoder block that decodes in chunks with a key-value cache, the reference layers of the incremental property
// (proofs-notes/incremental.md): a token embedding, one causal attention head over the unpadded keys, and the
// position of each token numbered by the layer itself, as decoders do when no position ids are given (token i at
// position i; in a chunk, the cache's length plus i), with RoPE on q and k or an ALiBi bias at those positions.
// Called on the whole sequence, it is one chunk from an empty cache. Two bugs of cached paths that public trackers
// report: positions that restart at 0 in every chunk instead of after the cache (`restart`), and an ALiBi bias
// sized by the query length, so that only the chunk's own keys are biased and the cached ones get none
// (`bias_by_query_length`).
#pragma once

#include "layers/attention.h"
#include "layers/embedding.h"
#include "layers/position.h"

#include <cmath>
#include <vector>

namespace permcheck {

enum class CachedSignal { rope, alibi };

struct CachedDesign {
    CachedSignal signal = CachedSignal::rope;
    bool restart = false;               // each chunk numbers its tokens from 0 (the bug), not from the cache's length
    bool bias_by_query_length = false;  // the ALiBi bias covers the chunk's keys only (the bug), not the cached ones
};

template <class S> struct CachedAttention {
    CachedDesign design;
    Embedding<S> embed;
    Mat<S> wq, wk, wv, wo;

    static CachedAttention random(const CachedDesign& how, Eigen::Index vocabulary, Eigen::Index d, Draw<S>& draw) {
        return {how, Embedding<S>::random(vocabulary, d, draw), draw_matrix(d, d, draw), draw_matrix(d, d, draw),
                draw_matrix(d, d, draw), draw_matrix(d, d, draw)};
    }

    // What the chunks before have left: their keys (rotated at the positions they were given) and values, which of
    // them are pads, and their positions.
    struct Cache {
        Mat<S> k, v;
        std::vector<bool> padded;
        std::vector<long> positions;
    };

    // The whole sequence decoded in chunks ending at `ends` (ascending, the last the length); the outputs of every
    // chunk, one row per token. A query that sees no key (a pad) gets a zero row.
    Mat<S> operator()(const std::vector<int>& ids, const std::vector<bool>& padded, const std::vector<int>& ends) const {
        Cache cache{Mat<S>(0, wk.cols()), Mat<S>(0, wv.cols()), {}, {}};
        Mat<S> y(static_cast<Eigen::Index>(ids.size()), wo.cols());
        int first = 0;
        for (int end : ends) {
            const std::vector<int> chunk_ids(ids.begin() + first, ids.begin() + end);
            const std::vector<bool> chunk_padded(padded.begin() + first, padded.begin() + end);
            y.middleRows(first, end - first) = step(cache, chunk_ids, chunk_padded);
            first = end;
        }
        return y;
    }

private:
    // One chunk: its tokens' queries against the cache and its own keys; the cache grows by them.
    Mat<S> step(Cache& cache, const std::vector<int>& ids, const std::vector<bool>& padded) const {
        const Eigen::Index n = static_cast<Eigen::Index>(ids.size()), past = cache.k.rows();
        const std::vector<long> positions = consecutive_positions(n, design.restart ? 0 : static_cast<long>(past));
        const Mat<S> x = embed(ids);
        Mat<S> q = x * wq, k = x * wk;
        if (design.signal == CachedSignal::rope) {
            q = Rope<S>::at(q, positions);
            k = Rope<S>::at(k, positions);
        }
        cache.k = stacked(cache.k, k);
        cache.v = stacked(cache.v, Mat<S>(x * wv));
        cache.padded.insert(cache.padded.end(), padded.begin(), padded.end());
        cache.positions.insert(cache.positions.end(), positions.begin(), positions.end());
        Mat<S> s = q * cache.k.transpose();
        s *= sc::from_double<S>(1.0 / std::sqrt(static_cast<double>(x.cols())));
        if (design.signal == CachedSignal::alibi) {
            const S slope = ScoreBias<S>::alibi_slope(0, 1);
            for (Eigen::Index i = 0; i < n; ++i)
                for (Eigen::Index j = design.bias_by_query_length ? past : 0; j < past + n; ++j)
                    s(i, j) -= slope * S(static_cast<int>(std::abs(positions[static_cast<std::size_t>(i)] -
                                                                   cache.positions[static_cast<std::size_t>(j)])));
        }
        const auto sees = [&](Eigen::Index i, Eigen::Index j) { return !cache.padded[static_cast<std::size_t>(j)] && j <= past + i; };
        return softmax_over(s, sees) * cache.v * wo;
    }

    static Mat<S> stacked(const Mat<S>& top, const Mat<S>& bottom) {
        Mat<S> out(top.rows() + bottom.rows(), bottom.cols());
        if (top.rows() > 0) out.topRows(top.rows()) = top;
        out.bottomRows(bottom.rows()) = bottom;
        return out;
    }
};

}  // namespace permcheck
