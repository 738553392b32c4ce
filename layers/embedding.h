// Token embedding: a table lookup. The same token gives the same row wherever it stands, so an embedding
// carries identity and nothing about position (proofs-notes/embeddings-encode-identity.md).
#pragma once

#include "scalars/weights.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

template <class S> struct Embedding {
    Mat<S> table;  // vocab x d

    static Embedding random(Eigen::Index vocab, Eigen::Index d, Draw<S>& draw) { return {draw_matrix(vocab, d, draw)}; }

    Mat<S> operator()(const std::vector<int>& tokens) const {
        Mat<S> out(static_cast<Eigen::Index>(tokens.size()), table.cols());
        for (std::size_t p = 0; p < tokens.size(); ++p) {
            if (tokens[p] < 0 || tokens[p] >= table.rows())
                throw std::out_of_range("token id " + std::to_string(tokens[p]) + " at position " + std::to_string(p) +
                                        " is outside the vocabulary [0, " + std::to_string(table.rows()) + ")");
            out.row(static_cast<Eigen::Index>(p)) = table.row(tokens[p]);
        }
        return out;
    }
};

}  // namespace permcheck
