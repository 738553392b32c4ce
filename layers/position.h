// Position signals: the only thing that tells a symmetric layer where a token stands.
//
// Absolute signals (sinusoidal, learned) are added to the data. Relative signals (RoPE, ALiBi, T5 buckets)
// enter attention scores and depend only on offsets j - i. Every signal takes the index of its first position
// (`offset`), so that "shift every position by a constant" is a property that can be checked.
#pragma once

#include "scalars/weights.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

// Sinusoidal signal of Vaswani et al. (2017): PE[p][2i] = sin(p w_i), PE[p][2i+1] = cos(p w_i),
// w_i = 10000^(-2i/d). A table of constants: computed in double, converted exactly.
// Row r of the table is the signal of position positions[r].
template <class S> Mat<S> sinusoidal_signal_at(const std::vector<long>& positions, Eigen::Index d) {
    Mat<S> pe(static_cast<Eigen::Index>(positions.size()), d);
    for (Eigen::Index p = 0; p < pe.rows(); ++p) {
        const double pos = static_cast<double>(positions[static_cast<std::size_t>(p)]);
        for (Eigen::Index j = 0; j < d; ++j) {
            const double w = std::pow(10000.0, -static_cast<double>(j - j % 2) / static_cast<double>(d));
            pe(p, j) = sc::from_double<S>(j % 2 == 0 ? std::sin(pos * w) : std::cos(pos * w));
        }
    }
    return pe;
}

// Positions offset, offset + 1, ..., offset + n - 1.
inline std::vector<long> consecutive_positions(Eigen::Index n, long offset) {
    std::vector<long> p(static_cast<std::size_t>(n));
    for (std::size_t r = 0; r < p.size(); ++r) p[r] = offset + static_cast<long>(r);
    return p;
}

template <class S> Mat<S> sinusoidal_signal(Eigen::Index n, Eigen::Index d, long offset = 0) {
    return sinusoidal_signal_at<S>(consecutive_positions(n, offset), d);
}

enum class AbsoluteKind { sinusoidal, learned };

// x -> x + PE[offset .. offset+n).
template <class S> struct AbsolutePosition {
    AbsoluteKind kind = AbsoluteKind::sinusoidal;
    Mat<S> table;  // learned only: max_len x d
    long offset = 0;

    static AbsolutePosition sinusoidal() { return {AbsoluteKind::sinusoidal, {}, 0}; }
    static AbsolutePosition learned(Eigen::Index max_len, Eigen::Index d, Draw<S>& draw) {
        return {AbsoluteKind::learned, draw_matrix(max_len, d, draw), 0};
    }

    Mat<S> signal(Eigen::Index n, Eigen::Index d) const {
        if (kind == AbsoluteKind::sinusoidal) return sinusoidal_signal<S>(n, d, offset);
        if (offset < 0 || offset + n > table.rows() || d != table.cols())
            throw std::out_of_range("learned position table holds positions [0, " + std::to_string(table.rows()) +
                                    ") of width " + std::to_string(table.cols()) + "; asked for [" +
                                    std::to_string(offset) + ", " + std::to_string(offset + n) + ") of width " +
                                    std::to_string(d));
        return table.block(offset, 0, n, d);
    }
    Mat<S> operator()(const Mat<S>& x) const { return x + signal(x.rows(), x.cols()); }
};

// Rotary embedding with rational rotations. Each feature pair i turns by a fixed angle theta_i per position,
// with cos and sin taken from a Pythagorean parametrisation (t = dyadic ~ tan(theta_i / 2),
// cos = (1 - t^2)/(1 + t^2), sin = 2t/(1 + t^2)). Position p turns by R_i^p, computed by exact powers, so
// R^a R^b = R^(a+b) holds exactly in rationals and the relative-position property is checkable with zero
// tolerance (proofs-notes/relative-position.md). theta_i follows RoPE's 10000^(-2i/d) schedule.
template <class S> struct Rope {
    long offset = 0;

    struct Turn {
        S c, s;
    };

    static Turn base_turn(Eigen::Index pair, Eigen::Index dim) {
        const double theta = std::pow(10000.0, -2.0 * static_cast<double>(pair) / static_cast<double>(dim));
        const double t = std::ldexp(std::round(std::ldexp(std::tan(theta / 2), 12)), -12);
        const S ts = sc::from_double<S>(t);
        const S den = S(1) + ts * ts;
        return {(S(1) - ts * ts) / den, S(2) * ts / den};
    }
    static Turn compose(const Turn& a, const Turn& b) { return {a.c * b.c - a.s * b.s, a.s * b.c + a.c * b.s}; }
    static Turn power(Turn base, long p) {
        if (p < 0) {
            base.s = -base.s;
            p = -p;
        }
        Turn acc{S(1), S(0)};
        while (p > 0) {
            if (p & 1) acc = compose(acc, base);
            base = compose(base, base);
            p >>= 1;
        }
        return acc;
    }

    // Rotates row r of q (n x dim, dim even) by its own position, positions[r]: the rotation of position ids
    // given as data.
    static Mat<S> at(const Mat<S>& q, const std::vector<long>& positions) {
        const Eigen::Index n = q.rows(), dim = q.cols();
        if (dim % 2 != 0) throw std::invalid_argument("RoPE needs an even head width, got " + std::to_string(dim));
        if (static_cast<Eigen::Index>(positions.size()) != n)
            throw std::invalid_argument("RoPE needs one position per row");
        Mat<S> out(n, dim);
        for (Eigen::Index i = 0; i < dim / 2; ++i) {
            const Turn step = base_turn(i, dim);
            for (Eigen::Index r = 0; r < n; ++r) {
                const Turn turn = power(step, positions[static_cast<std::size_t>(r)]);
                const S a = q(r, 2 * i), b = q(r, 2 * i + 1);
                out(r, 2 * i) = a * turn.c - b * turn.s;
                out(r, 2 * i + 1) = a * turn.s + b * turn.c;
            }
        }
        return out;
    }

    // Rotates rows of q (n x dim, dim even): row r stands at position offset + r.
    Mat<S> operator()(const Mat<S>& q) const {
        const Eigen::Index n = q.rows(), dim = q.cols();
        if (dim % 2 != 0) throw std::invalid_argument("RoPE needs an even head width, got " + std::to_string(dim));
        Mat<S> out(n, dim);
        for (Eigen::Index i = 0; i < dim / 2; ++i) {
            const Turn step = base_turn(i, dim);
            Turn turn = power(step, offset);
            for (Eigen::Index r = 0; r < n; ++r) {
                const S a = q(r, 2 * i), b = q(r, 2 * i + 1);
                out(r, 2 * i) = a * turn.c - b * turn.s;
                out(r, 2 * i + 1) = a * turn.s + b * turn.c;
                turn = compose(turn, step);
            }
        }
        return out;
    }
};

// T5's bidirectional relative-position bucket of offset (key - query): exact buckets for small offsets,
// logarithmic ones beyond, and a separate half of the buckets for each sign.
inline int t5_bucket(long relative, int num_buckets = 32, int max_distance = 128) {
    const int half = num_buckets / 2;
    int bucket = relative > 0 ? half : 0;
    const long dist = relative < 0 ? -relative : relative;
    const int max_exact = half / 2;
    if (dist < max_exact) return bucket + static_cast<int>(dist);
    const double scaled = std::log(static_cast<double>(dist) / max_exact) /
                          std::log(static_cast<double>(max_distance) / max_exact) * (half - max_exact);
    return bucket + std::min(half - 1, max_exact + static_cast<int>(scaled));
}

enum class BiasKind { alibi, t5 };

// Additive score bias B[i][j] for one head, a function of the offset j - i only.
template <class S> struct ScoreBias {
    BiasKind kind = BiasKind::alibi;
    Mat<S> t5_table;  // heads x buckets
    long offset = 0;  // index of the first position; the bias does not depend on it (that is the claim)

    static ScoreBias alibi() { return {BiasKind::alibi, {}, 0}; }
    static ScoreBias t5(Eigen::Index heads, Draw<S>& draw) { return {BiasKind::t5, draw_matrix(heads, 32, draw), 0}; }

    // ALiBi slopes 2^(-8(h+1)/H): dyadic whenever 8/H is an integer (H = 1, 2, 4, 8).
    static S alibi_slope(Eigen::Index head, Eigen::Index heads) {
        return sc::from_double<S>(std::exp2(-8.0 * static_cast<double>(head + 1) / static_cast<double>(heads)));
    }

    Mat<S> operator()(Eigen::Index n, Eigen::Index head, Eigen::Index heads) const {
        return at(consecutive_positions(n, offset), head, heads);
    }

    // The bias between the tokens at positions[i] (queries) and positions[j] (keys): position ids given as data.
    Mat<S> at(const std::vector<long>& positions, Eigen::Index head, Eigen::Index heads) const {
        if (kind == BiasKind::t5 && (head < 0 || head >= t5_table.rows()))
            throw std::out_of_range("T5 bias table holds " + std::to_string(t5_table.rows()) + " heads; asked for head " +
                                    std::to_string(head));
        const auto n = static_cast<Eigen::Index>(positions.size());
        Mat<S> b(n, n);
        const S slope = kind == BiasKind::alibi ? alibi_slope(head, heads) : S(0);
        for (Eigen::Index i = 0; i < n; ++i)
            for (Eigen::Index j = 0; j < n; ++j) {
                const long qi = positions[static_cast<std::size_t>(i)], kj = positions[static_cast<std::size_t>(j)];
                if (kind == BiasKind::alibi)
                    b(i, j) = -slope * S(static_cast<int>(qi > kj ? qi - kj : kj - qi));
                else
                    b(i, j) = t5_table(head, t5_bucket(kj - qi));
            }
        return b;
    }
};

}  // namespace permcheck
