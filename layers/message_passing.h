// Message passing over a graph given as an edge list (issue 12): nodes x (N x d), edges (src[e] -> dst[e]) with
// edge features a (E x de). Each edge sends m_e = x[src] Wm + a_e We to its destination; a node aggregates its
// incoming messages (sum, mean, or elementwise max; a node without neighbours gets 0), and
//   y = x Ws + aggregate Wa        (N x d: equivariant in the nodes, invariant to the order of the edges)
//   g = sum over nodes of y        (1 x d: a graph-level readout, invariant to both)
// Symmetry-breaking counterparts: `node_index_feature` adds each node's index to its first feature (violates
// node equivariance); `edge_order` aggregates like a recurrent aggregator, h <- h / 2 + m_e in edge-list order
// (violates edge-order invariance). Rational in x and a for sum and mean (proofs-notes/signature-audit.md).
#pragma once

#include "scalars/weights.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

enum class Aggregation { sum, mean, max };

template <class S> struct MessagePassing {
    Mat<S> wm, we, ws, wa;  // d x d, de x d, d x d, d x d
    Aggregation aggregation = Aggregation::sum;
    bool node_index_feature = false;
    bool edge_order = false;

    static MessagePassing random(Eigen::Index d, Eigen::Index de, Draw<S>& draw, Aggregation aggregation) {
        return {draw_matrix(d, d, draw), draw_matrix(de, d, draw), draw_matrix(d, d, draw), draw_matrix(d, d, draw),
                aggregation, false, false};
    }

    // Incoming messages aggregated per node (N x d).
    Mat<S> aggregate(const Mat<S>& messages, const std::vector<int>& dst, Eigen::Index nodes) const {
        Mat<S> agg = Mat<S>::Zero(nodes, messages.cols());
        std::vector<int> count(static_cast<std::size_t>(nodes), 0);
        for (std::size_t e = 0; e < dst.size(); ++e) {
            const int v = dst[e];
            const Mat<S> row = messages.row(static_cast<Eigen::Index>(e));
            if (edge_order) {
                agg.row(v) = agg.row(v) * sc::from_double<S>(0.5) + row;
            } else if (aggregation == Aggregation::max && count[static_cast<std::size_t>(v)] > 0) {
                for (Eigen::Index j = 0; j < agg.cols(); ++j) agg(v, j) = sc::max(agg(v, j), row(0, j));
            } else {
                agg.row(v) += row;
            }
            ++count[static_cast<std::size_t>(v)];
        }
        if (aggregation == Aggregation::mean && !edge_order)
            for (Eigen::Index v = 0; v < nodes; ++v)
                if (count[static_cast<std::size_t>(v)] > 0) agg.row(v) /= S(count[static_cast<std::size_t>(v)]);
        return agg;
    }

    // y (N x d); the readout is readout(y).
    Mat<S> operator()(const Mat<S>& x, const std::vector<int>& src, const std::vector<int>& dst, const Mat<S>& a) const {
        if (src.size() != dst.size() || static_cast<Eigen::Index>(src.size()) != a.rows() || x.cols() != wm.rows() ||
            a.cols() != we.rows())
            throw std::invalid_argument("message passing: " + std::to_string(src.size()) + " sources, " +
                                        std::to_string(dst.size()) + " destinations, " + std::to_string(a.rows()) +
                                        " edge feature rows");
        Mat<S> messages(a.rows(), wm.cols());
        for (std::size_t e = 0; e < src.size(); ++e) {
            if (src[e] < 0 || src[e] >= x.rows() || dst[e] < 0 || dst[e] >= x.rows())
                throw std::invalid_argument("an edge names a node outside [0, " + std::to_string(x.rows()) + ")");
            messages.row(static_cast<Eigen::Index>(e)) = x.row(src[e]) * wm;
        }
        messages += a * we;
        Mat<S> y = x * ws + aggregate(messages, dst, x.rows()) * wa;
        if (node_index_feature)
            for (Eigen::Index v = 0; v < y.rows(); ++v) y(v, 0) += S(static_cast<int>(v));
        return y;
    }

    // The same layer over real incidence matrices src, dst (edges x nodes): edge e's message is
    // (src_e x) Wm + a_e We, node v receives sum_e dst(e, v) m_e (divided, for mean, by its in-degree
    // sum_e dst(e, v) when that is not 0). With one-hot rows it is operator() on the edge list those rows spell;
    // for any real rows it is a rational function of every input (proofs-notes/signature-audit.md). Sum and mean
    // aggregation, or with edge_order the recurrent aggregator of recurrent().
    Mat<S> over_incidence(const Mat<S>& x, const Mat<S>& src, const Mat<S>& dst, const Mat<S>& a) const {
        if (aggregation == Aggregation::max)
            throw std::invalid_argument("message passing over incidence matrices aggregates by sum or mean only");
        if (src.rows() != a.rows() || dst.rows() != a.rows() || src.cols() != x.rows() || dst.cols() != x.rows())
            throw std::invalid_argument("message passing: the incidence matrices must be edges x nodes");
        const Mat<S> messages = src * x * wm + a * we;
        Mat<S> agg = edge_order ? recurrent(messages, dst) : Mat<S>(dst.transpose() * messages);
        if (aggregation == Aggregation::mean)
            for (Eigen::Index v = 0; v < x.rows(); ++v) {
                S degree = S(0);
                for (Eigen::Index e = 0; e < dst.rows(); ++e) degree += dst(e, v);
                if (!(degree == S(0))) agg.row(v) /= degree;
            }
        Mat<S> y = x * ws + agg * wa;
        if (node_index_feature)
            for (Eigen::Index v = 0; v < y.rows(); ++v) y(v, 0) += S(static_cast<int>(v));
        return y;
    }

    // The recurrent aggregator over incidence rows: h <- h / 2 + dst_e^T m_e, every node at every edge, in
    // edge-list order (rational, node-equivariant, not invariant to the order of the edges).
    static Mat<S> recurrent(const Mat<S>& messages, const Mat<S>& dst) {
        Mat<S> h = Mat<S>::Zero(dst.cols(), messages.cols());
        for (Eigen::Index e = 0; e < dst.rows(); ++e) {
            const Mat<S> received = dst.row(e).transpose() * messages.row(e);
            h = h * sc::from_double<S>(0.5) + received;
        }
        return h;
    }

    static Mat<S> readout(const Mat<S>& y) {
        Mat<S> g = Mat<S>::Zero(1, y.cols());
        for (Eigen::Index v = 0; v < y.rows(); ++v) g += y.row(v);
        return g;
    }
};

}  // namespace permcheck
