// A small language-model block over token ids, position ids and a padding mask, the inputs of the models users
// ship (`forward(input_ids, attention_mask, position_ids)`): a token embedding, a position signal read from the
// position ids (or, the common bug, from the row index), single-head attention over the unpadded keys, optionally
// causal (by row index or by position id), and optionally pooled. The reference layers of the position-aware
// properties (proofs-notes/position-aware-audits.md): which of equivariance with the position ids moved as data,
// shift and padding each one keeps follows from how it reads order.
#pragma once

#include "layers/embedding.h"
#include "layers/attention.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

enum class IdSignal {
    rope,           // rotary embedding of q and k at each token's position id
    rope_by_index,  // rotary embedding at the row index: the position ids are ignored
    alibi,          // -slope |pos_i - pos_j| on the scores
    t5,             // a learned bias per bucket of pos_j - pos_i
    learned,        // a learned table row per position id, added to the embedding
    sinusoidal,     // the sinusoidal signal of each position id, added to the embedding
};
// Key j visible to query i when j <= i, or pos_j <= pos_i; packed: j <= i in the same packed sequence (no position id
// 0 in (j, i]: a sequence starts where its position id is 0).
enum class CausalBy { none, index, position, packed };
enum class Readout {
    sequence,     // a row per token
    masked_mean,  // the mean over the real tokens
    mean_all,     // the mean over every row, pads included (the padding bug of pooled models)
};

struct TokenAttentionDesign {
    IdSignal signal = IdSignal::rope;
    CausalBy causal = CausalBy::none;
    Readout readout = Readout::sequence;
    bool mask_ignored = false;  // attention over every key, pads included
};

template <class S> struct TokenAttention {
    TokenAttentionDesign design;
    Embedding<S> embed;  // vocabulary x d
    Mat<S> wq, wk, wv, wo;
    Mat<S> learned;      // positions x d (IdSignal::learned)
    ScoreBias<S> bias;   // alibi or t5

    static TokenAttention random(const TokenAttentionDesign& how, Eigen::Index vocabulary, Eigen::Index positions,
                                 Eigen::Index d, Draw<S>& draw) {
        // The braces draw in order: the embedding, wq, wk, wv, wo, the learned table, the T5 table.
        return {how, Embedding<S>::random(vocabulary, d, draw), draw_matrix(d, d, draw), draw_matrix(d, d, draw),
                draw_matrix(d, d, draw), draw_matrix(d, d, draw),
                how.signal == IdSignal::learned ? draw_matrix(positions, d, draw) : Mat<S>(),
                how.signal == IdSignal::t5 ? ScoreBias<S>::t5(1, draw) : ScoreBias<S>::alibi()};
    }

    // ids, positions and padded (true = a pad) hold one entry per token. A query that sees no key (a pad under a
    // causal mask) gets a zero row.
    Mat<S> operator()(const std::vector<int>& ids, const std::vector<long>& positions,
                      const std::vector<bool>& padded) const {
        const auto n = static_cast<Eigen::Index>(ids.size());
        if (positions.size() != ids.size() || padded.size() != ids.size())
            throw std::invalid_argument("token ids, position ids and the mask must have one entry per token");
        Mat<S> x = embed(ids);
        if (design.signal == IdSignal::sinusoidal) x += sinusoidal_signal_at<S>(positions, x.cols());
        if (design.signal == IdSignal::learned) x += gathered(positions);
        Mat<S> q = x * wq, k = x * wk;
        if (design.signal == IdSignal::rope || design.signal == IdSignal::rope_by_index) {
            const std::vector<long> at =
                design.signal == IdSignal::rope ? positions : consecutive_positions(n, 0);
            q = Rope<S>::at(q, at);
            k = Rope<S>::at(k, at);
        }
        Mat<S> s = q * k.transpose();
        s *= sc::from_double<S>(1.0 / std::sqrt(static_cast<double>(x.cols())));
        if (design.signal == IdSignal::alibi || design.signal == IdSignal::t5) s += bias.at(positions, 0, 1);
        const Mat<S> v = x * wv;
        const auto sees = [&](Eigen::Index i, Eigen::Index j) { return visible(i, j, positions, padded); };
        Mat<S> y = softmax_over(s, sees) * v * wo;
        if (design.readout == Readout::sequence) return y;
        return pooled(y, padded);
    }

private:
    Mat<S> gathered(const std::vector<long>& positions) const {
        Mat<S> rows(static_cast<Eigen::Index>(positions.size()), learned.cols());
        for (std::size_t r = 0; r < positions.size(); ++r) {
            if (positions[r] < 0 || positions[r] >= learned.rows())
                throw std::out_of_range("position id " + std::to_string(positions[r]) + " is outside the table [0, " +
                                        std::to_string(learned.rows()) + ")");
            rows.row(static_cast<Eigen::Index>(r)) = learned.row(positions[r]);
        }
        return rows;
    }

    bool visible(Eigen::Index i, Eigen::Index j, const std::vector<long>& positions, const std::vector<bool>& padded) const {
        const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
        if (padded[uj] && !design.mask_ignored) return false;
        if (design.causal == CausalBy::index) return j <= i;
        if (design.causal == CausalBy::position) return positions[uj] <= positions[ui];
        if (design.causal == CausalBy::packed) {
            for (std::size_t k = uj + 1; k <= ui; ++k)
                if (positions[k] == 0) return false;
            return j <= i;
        }
        return true;
    }

    Mat<S> pooled(const Mat<S>& y, const std::vector<bool>& padded) const {
        Mat<S> sum = Mat<S>::Zero(1, y.cols());
        int count = 0;
        for (Eigen::Index r = 0; r < y.rows(); ++r)
            if (design.readout == Readout::mean_all || !padded[static_cast<std::size_t>(r)]) {
                sum += y.row(r);
                ++count;
            }
        if (count > 0) sum /= S(count);
        return sum;
    }
};

}  // namespace permcheck
