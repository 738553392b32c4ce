// RapidCheck generators whose shrinking is part of the value (Shrinkable<T>), so that a failure is reported
// at its smallest: fewest positions, fewest moved positions, simplest values.
#pragma once

#include "permutation.h"

#include <rapidcheck.h>

#include <cstdint>
#include <vector>

namespace permcheck::gen {

// Non-negative k -> 0, -1, 1, -2, 2, ...: an integer generator that shrinks toward 0 through small values,
// since rc::gen::inRange shrinks toward its lower end.
inline rc::Gen<int> signed_toward_zero(int magnitude) {
    return rc::gen::map(rc::gen::inRange(0, 2 * magnitude + 1), [](int k) { return k % 2 ? -(k + 1) / 2 : k / 2; });
}

// Values in [-8, 8]. Half are simple (multiples of 1/4, often equal: ties are where index-dependent code
// hides), half generic (k / 2^e with e up to 20). Both shrink toward 0, then toward small integers.
inline rc::Gen<double> value() {
    rc::Gen<double> simple = rc::gen::map(signed_toward_zero(32), [](int k) { return k / 4.0; });
    rc::Gen<double> generic = rc::gen::mapcat(rc::gen::inRange(0, 21), [](int e) {
        return rc::gen::map(signed_toward_zero(8 << e), [e](int k) { return std::ldexp(static_cast<double>(k), -e); });
    });
    return rc::gen::oneOf(simple, generic);
}

inline Mat<double> to_matrix(const std::vector<std::vector<double>>& rows, int d) {
    Mat<double> x(static_cast<Eigen::Index>(rows.size()), d);
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (int j = 0; j < d; ++j) x(static_cast<Eigen::Index>(i), j) = rows[i][static_cast<std::size_t>(j)];
    return x;
}

inline rc::Gen<std::vector<double>> row(int d) {
    return rc::gen::container<std::vector<double>>(static_cast<std::size_t>(d), value());
}

// n x d inputs of three kinds, so that ties (where index-dependent code hides) are common:
//  - independent rows of independent values;
//  - rows drawn from a small palette of rows, so that whole rows repeat;
//  - entries drawn from a small palette of values, so that single features tie across positions.
inline rc::Gen<Mat<double>> sequence(int n, int d) {
    const auto count = static_cast<std::size_t>(n);
    rc::Gen<Mat<double>> independent =
        rc::gen::map(rc::gen::container<std::vector<std::vector<double>>>(count, row(d)),
                     [d](const std::vector<std::vector<double>>& rows) { return to_matrix(rows, d); });
    rc::Gen<Mat<double>> repeated_rows = rc::gen::mapcat(rc::gen::inRange(1, n + 1), [d, count](int palette_size) {
        return rc::gen::map(
            rc::gen::pair(
                rc::gen::container<std::vector<std::vector<double>>>(static_cast<std::size_t>(palette_size), row(d)),
                rc::gen::container<std::vector<int>>(count, rc::gen::inRange(0, palette_size))),
            [d](const std::pair<std::vector<std::vector<double>>, std::vector<int>>& pp) {
                std::vector<std::vector<double>> rows;
                for (int k : pp.second) rows.push_back(pp.first[static_cast<std::size_t>(k)]);
                return to_matrix(rows, d);
            });
    });
    rc::Gen<Mat<double>> repeated_values = rc::gen::mapcat(rc::gen::inRange(1, 4), [n, d](int palette_size) {
        return rc::gen::map(
            rc::gen::pair(rc::gen::container<std::vector<double>>(static_cast<std::size_t>(palette_size), value()),
                          rc::gen::container<std::vector<int>>(static_cast<std::size_t>(n * d),
                                                               rc::gen::inRange(0, palette_size))),
            [n, d](const std::pair<std::vector<double>, std::vector<int>>& pp) {
                Mat<double> x(n, d);
                for (int i = 0; i < n * d; ++i)
                    x(i / d, i % d) = pp.first[static_cast<std::size_t>(pp.second[static_cast<std::size_t>(i)])];
                return x;
            });
    });
    return rc::gen::oneOf(independent, repeated_rows, repeated_values);
}

// Every element of S_n, built as a Fisher-Yates shuffle whose i-th step swaps i with i - k_i. Each k_i shrinks
// toward 0 (no swap), so shrinking removes moved positions first: a failure that needs one swap is reported
// as one transposition.
inline rc::Gen<Permutation> permutation(int n) {
    if (n <= 1) return rc::gen::just(Permutation::identity(n < 0 ? 0 : n));
    return rc::gen::map(
        rc::gen::container<std::vector<int>>(static_cast<std::size_t>(n - 1), rc::gen::inRange(0, n)),
        [n](const std::vector<int>& ks) {
            std::vector<int> p(static_cast<std::size_t>(n));
            for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
            for (int i = 1; i < n; ++i) {
                const int k = ks[static_cast<std::size_t>(i - 1)] % (i + 1);
                std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(i - k)]);
            }
            return Permutation(std::move(p));
        });
}

}  // namespace permcheck::gen
