// A C++ layer served to `permcheck audit --exec` with <permcheck/serve.h>: single-head self-attention over the
// rows of x, softmax(x Wq (x Wk)^T / sqrt(d)) x Wv, permutation equivariant; with --positions it adds a position
// signal sin(i + j) to row i of x first, which gives order back, and the audit finds it violated.
//
//   permcheck audit --exec "build/examples/serve_attention" --dim 4                      # holds, exit 0
//   permcheck audit --exec "build/examples/serve_attention --positions" --dim 4          # violated, exit 1
//   permcheck audit --exec "build/examples/serve_attention --pool" --dim 4 --output pooled  # holds: the mean of the rows
#include <permcheck/serve.h>

#include <Eigen/Dense>

#include <cmath>
#include <iostream>
#include <string>

namespace {

// Fixed weights of any width d (the audit's --dim): small numbers of a deterministic formula.
Eigen::MatrixXd weights(Eigen::Index d, int which) {
    Eigen::MatrixXd w(d, d);
    for (Eigen::Index i = 0; i < d; ++i)
        for (Eigen::Index j = 0; j < d; ++j)
            w(i, j) = std::sin(1.0 + 3.0 * which + 0.7 * static_cast<double>(i) + 1.3 * static_cast<double>(j)) /
                      std::sqrt(static_cast<double>(d));
    return w;
}

Eigen::MatrixXd attention(const Eigen::MatrixXd& x) {
    const Eigen::Index d = x.cols();
    const Eigen::MatrixXd q = x * weights(d, 0), k = x * weights(d, 1), v = x * weights(d, 2);
    Eigen::MatrixXd scores = q * k.transpose() / std::sqrt(static_cast<double>(d));
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        scores.row(i).array() = (scores.row(i).array() - scores.row(i).maxCoeff()).exp();
        scores.row(i) /= scores.row(i).sum();
    }
    return scores * v;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "--positions") {
        return permcheck::serve([](const Eigen::MatrixXd& x) {
            Eigen::MatrixXd with_positions = x;
            for (Eigen::Index i = 0; i < x.rows(); ++i)
                for (Eigen::Index j = 0; j < x.cols(); ++j) with_positions(i, j) += std::sin(static_cast<double>(i + j));
            return attention(with_positions);
        });
    }
    if (mode == "--pool") {  // a vector answer: a pooled layer
        return permcheck::serve([](const Eigen::MatrixXd& x) -> Eigen::VectorXd {
            return attention(x).colwise().mean().transpose();
        });
    }
    if (!mode.empty()) {
        std::cerr << "usage: serve_attention [--positions | --pool]\n";
        return 2;
    }
    return permcheck::serve(attention);
}
