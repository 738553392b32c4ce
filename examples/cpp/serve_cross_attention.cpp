// A C++ layer over named tensors served to `permcheck audit --exec` with <permcheck/serve.h>: cross-attention of
// queries q (n x d) over a memory mem (m x d), y = softmax(q mem^T / sqrt(d)) mem (n x d). It is equivariant along
// n and invariant to the order of the memory; with --memory-positions it adds a position signal to the memory,
// and the audit finds it violated along m.
//
//   permcheck audit --exec "build/examples/serve_cross_attention"
//     --axis n=1..8 --axis m=1..8 --input q:n,4 --input mem:m,4 --output y:n,4            (holds, exit 0)
//   permcheck audit --exec "build/examples/serve_cross_attention --memory-positions"
//     --axis n=1..8 --axis m=1..8 --input q:n,4 --input mem:m,4 --output y:n,4            (violated, exit 1)
#include <permcheck/serve.h>

#include <Eigen/Dense>

#include <cmath>
#include <iostream>
#include <stdexcept>
#include <string>

namespace {

// A tensor of two dims as a matrix (its values are row-major), and back.
Eigen::MatrixXd matrix(const permcheck::Tensor& t, const std::string& name) {
    if (t.shape.size() != 2) throw std::invalid_argument("input " + name + " must have two dims");
    return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
        t.values.data(), t.shape[0], t.shape[1]);
}

permcheck::Tensor tensor(const Eigen::MatrixXd& m) {
    permcheck::Tensor t{{static_cast<int>(m.rows()), static_cast<int>(m.cols())}, {}};
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) t.values.push_back(m(i, j));
    return t;
}

permcheck::Tensors cross_attention(const permcheck::Tensors& inputs, bool memory_positions) {
    const Eigen::MatrixXd q = matrix(inputs.at("q"), "q");
    Eigen::MatrixXd mem = matrix(inputs.at("mem"), "mem");
    if (memory_positions)
        for (Eigen::Index i = 0; i < mem.rows(); ++i) mem.row(i).array() += 0.5 * static_cast<double>(i);
    Eigen::MatrixXd scores = q * mem.transpose() / std::sqrt(static_cast<double>(q.cols()));
    for (Eigen::Index i = 0; i < scores.rows(); ++i) {
        scores.row(i).array() = (scores.row(i).array() - scores.row(i).maxCoeff()).exp();
        scores.row(i) /= scores.row(i).sum();
    }
    return {{"y", tensor(scores * mem)}};
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (!mode.empty() && mode != "--memory-positions") {
        std::cerr << "usage: serve_cross_attention [--memory-positions]\n";
        return 2;
    }
    const bool memory_positions = !mode.empty();
    return permcheck::serve([memory_positions](const permcheck::Tensors& inputs) {
        return cross_attention(inputs, memory_positions);
    });
}
