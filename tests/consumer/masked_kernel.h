// A user's masked attention kernel over several inputs (x:n,4 and a key padding mask pad:n:mask), written with
// Eigen against permcheck's installed API: the kernel, its padding-normalisation bug (the softmax denominator also
// counts the padded keys), and a reference implementation written another way (two passes, no Eigen).
#pragma once

#include <permcheck/audit.h>

#include <cmath>
#include <string>
#include <vector>

namespace consumer {

inline permcheck::Signature kernel_signature() {
    return permcheck::Signature{{permcheck::parse_axis("n=1..6")},
                                {permcheck::parse_input("x:n,4"), permcheck::parse_input("pad:n:mask")},
                                {permcheck::parse_output("y:n,4")}};
}

// Self-attention with q = k = v = x; `count_pads`: the bug, padded keys in the denominator with weight exp(0).
inline permcheck::Tensors attention(const permcheck::Tensors& in, bool count_pads) {
    const Eigen::MatrixXd x = permcheck::tensor_matrix::as_matrix(in.at("x"));
    const std::vector<bool> pad = permcheck::tensor_matrix::as_mask(in.at("pad"));
    const Eigen::MatrixXd scores = x * x.transpose() / std::sqrt(static_cast<double>(x.cols()));
    Eigen::MatrixXd weights = Eigen::MatrixXd::Zero(x.rows(), x.rows());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        double total = 0.0;
        for (Eigen::Index j = 0; j < x.rows(); ++j) {
            if (pad[static_cast<std::size_t>(j)]) {
                total += count_pads ? 1.0 : 0.0;
                continue;
            }
            weights(i, j) = std::exp(scores(i, j));
            total += weights(i, j);
        }
        weights.row(i) /= total;
    }
    return {{"y", permcheck::tensor_matrix::as_tensor(weights * x)}};
}

inline permcheck::Tensors masked_kernel(const permcheck::Tensors& in) { return attention(in, false); }
inline permcheck::Tensors pads_in_the_denominator(const permcheck::Tensors& in) { return attention(in, true); }

// The reference: plain loops over the row-major values, the maximum subtracted before exp.
inline permcheck::Tensors reference_attention(const permcheck::Tensors& in) {
    const permcheck::Tensor& x = in.at("x");
    const int n = x.shape[0], d = x.shape[1];
    const auto at = [&](int i, int c) { return x.values[static_cast<std::size_t>(i * d + c)]; };
    permcheck::Tensor y{{n, d}, std::vector<double>(static_cast<std::size_t>(n * d), 0.0)};
    for (int i = 0; i < n; ++i) {
        std::vector<double> s(static_cast<std::size_t>(n), -INFINITY);
        double top = -INFINITY;
        for (int j = 0; j < n; ++j) {
            if (in.at("pad").values[static_cast<std::size_t>(j)] != 0.0) continue;
            double dot = 0.0;
            for (int c = 0; c < d; ++c) dot += at(i, c) * at(j, c);
            s[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(d));
            top = std::max(top, s[static_cast<std::size_t>(j)]);
        }
        double total = 0.0;
        for (double& v : s) total += (v = std::exp(v - top));
        for (int j = 0; j < n; ++j)
            for (int c = 0; c < d; ++c)
                y.values[static_cast<std::size_t>(i * d + c)] += s[static_cast<std::size_t>(j)] / total * at(j, c);
    }
    return {{"y", y}};
}

}  // namespace consumer
