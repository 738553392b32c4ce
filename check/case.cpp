#include "check/case.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace permcheck {

MatrixCase without_position(const MatrixCase& c, int k) {
    MatrixCase smaller = c;
    smaller.x.resize(c.x.rows() - 1, c.x.cols());
    for (Eigen::Index i = 0, r = 0; i < c.x.rows(); ++i)
        if (i != k) smaller.x.row(r++) = c.x.row(i);
    smaller.perm = c.perm.without_row(k);
    return smaller;
}

MatrixCase without_positions(const MatrixCase& c, int k, int count) {
    MatrixCase smaller = c;
    for (int deleted = 0; deleted < count; ++deleted) smaller = without_position(smaller, k);
    return smaller;
}

namespace {
// Blocks of positions to delete at once, halves first: a long failing case (hundreds of positions) reaches a
// short one in a few dozen evaluations instead of one evaluation per position.
std::vector<std::pair<int, int>> deletable_blocks(int n, int min_len) {
    std::vector<std::pair<int, int>> blocks;
    for (int size = n / 2; size >= 2; size /= 2)
        for (int k = 0; k + size <= n && n - size >= min_len; k += size) blocks.emplace_back(k, size);
    return blocks;
}
}  // namespace

rc::Seq<MatrixCase> case_shrinks(const MatrixCase& c, int min_len) {
    const int n = static_cast<int>(c.x.rows());
    const auto with_perm = [c](Permutation p) {
        MatrixCase fewer = c;
        fewer.perm = std::move(p);
        return fewer;
    };
    const auto with_input = [c](Mat<double> x) {
        MatrixCase simpler = c;
        simpler.x = std::move(x);
        return simpler;
    };
    std::vector<MatrixCase> parameters;
    if (c.weight_seed != 0) {
        parameters.push_back(c);
        parameters.back().weight_seed = 0;
    }
    if (c.shift != 1) {
        parameters.push_back(c);
        parameters.back().shift = 1;
    }
    return rc::seq::concat(rc::seq::map(rc::seq::fromContainer(deletable_blocks(n, min_len)),
                                        [c](std::pair<int, int> b) { return without_positions(c, b.first, b.second); }),
                           rc::seq::map(rc::seq::range(0, n > min_len ? n : 0),
                                        [c](int k) { return without_position(c, k); }),
                           rc::seq::map(gen::permutation_shrinks(c.perm), with_perm),
                           rc::seq::map(gen::value_shrinks(c.x), with_input),
                           rc::seq::fromContainer(std::move(parameters)));
}

rc::Shrinkable<MatrixCase> shrinkable_case(MatrixCase c, int min_len) {
    return rc::shrinkable::shrinkRecur(std::move(c), [min_len](const MatrixCase& k) { return case_shrinks(k, min_len); });
}

rc::Gen<MatrixCase> case_generator(const CaseSpace& space) {
    if (space.min_len < 1 || space.max_len < space.min_len)
        throw std::invalid_argument("sequence lengths must satisfy 1 <= min-len <= max-len, got " +
                                    std::to_string(space.min_len) + " and " + std::to_string(space.max_len));
    if (space.d < 1) throw std::invalid_argument("the width d must be at least 1, got " + std::to_string(space.d));
    return rc::Gen<MatrixCase>([space](const rc::Random& random, int size) {
        gen::Sampler draw(random, size);
        const int n = draw.in_range(space.min_len, space.max_len + 1);
        MatrixCase c;
        c.x = draw.sequence(n, space.d);
        c.perm = draw.permutation(n);
        if (space.white_box) {
            c.weight_seed = static_cast<std::uint64_t>(draw.uniform(0, 1 << 30));
            c.shift = draw.in_range(1, 65);
        }
        return shrinkable_case(std::move(c), space.min_len);
    });
}

}  // namespace permcheck
