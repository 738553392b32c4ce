// Permutations of positions, acting on rows: (P x)[i] = x[p[i]] (docs/ARCHITECTURE.md).
#pragma once

#include "scalars/mat.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace permcheck {

class Permutation {
public:
    Permutation() = default;
    // One-line notation: p[i] is the source row of output row i. Throws unless p is a permutation of 0..n-1.
    explicit Permutation(std::vector<int> p) : p_(std::move(p)) { validate(); }

    static Permutation identity(int n) {
        std::vector<int> p(static_cast<std::size_t>(n));
        std::iota(p.begin(), p.end(), 0);
        return Permutation(std::move(p));
    }
    static Permutation transposition(int n, int a, int b) {
        Permutation t = identity(n);
        if (a < 0 || b < 0 || a >= n || b >= n)
            throw std::invalid_argument("transposition (" + std::to_string(a) + " " + std::to_string(b) +
                                        ") is outside 0.." + std::to_string(n - 1));
        std::swap(t.p_[static_cast<std::size_t>(a)], t.p_[static_cast<std::size_t>(b)]);
        return t;
    }
    // The cycle (0 1 ... n-1): row i takes row i+1 (mod n).
    static Permutation rotation(int n) {
        std::vector<int> p(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = (i + 1) % n;
        return Permutation(std::move(p));
    }
    // The sequence read backwards.
    static Permutation reversal(int n) {
        std::vector<int> p(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = n - 1 - i;
        return Permutation(std::move(p));
    }
    // The two generators of S_n used by certificates: (0 1) and (0 1 ... n-1) (proofs-notes/generators.md).
    static std::vector<Permutation> generators(int n) {
        if (n < 2) return {};
        return {transposition(n, 0, 1), rotation(n)};
    }

    int size() const { return static_cast<int>(p_.size()); }
    int operator[](int i) const { return p_[static_cast<std::size_t>(i)]; }
    const std::vector<int>& one_line() const { return p_; }

    Permutation inverse() const {
        std::vector<int> q(p_.size());
        for (std::size_t i = 0; i < p_.size(); ++i) q[static_cast<std::size_t>(p_[i])] = static_cast<int>(i);
        return Permutation(std::move(q));
    }
    // then(q) acts as "first this, then q": apply(then(q), x) == q.apply(this->apply(x)).
    Permutation then(const Permutation& q) const {
        if (q.size() != size())
            throw std::invalid_argument("cannot compose permutations of " + std::to_string(size()) + " and " +
                                        std::to_string(q.size()) + " positions");
        std::vector<int> r(p_.size());
        for (std::size_t i = 0; i < p_.size(); ++i) r[i] = p_[static_cast<std::size_t>(q.p_[i])];
        return Permutation(std::move(r));
    }
    bool is_identity() const { return moved() == 0; }
    int moved() const {
        int m = 0;
        for (std::size_t i = 0; i < p_.size(); ++i) m += p_[i] != static_cast<int>(i);
        return m;
    }

    // The permutation of the other n-1 rows once input row k, and the row of P x that holds it, are removed:
    // every other row keeps its source, renumbered. Shrinking uses it to delete a position (cases/signature_case.h).
    Permutation without_row(int k) const {
        std::vector<int> q;
        for (int v : p_)
            if (v != k) q.push_back(v > k ? v - 1 : v);
        return Permutation(std::move(q));
    }
    // The same permutation with i made a fixed point (one moved position fewer, or two for a transposition).
    Permutation fixing(int i) const {
        std::vector<int> q = p_;
        const auto pre = std::find(q.begin(), q.end(), i);
        *pre = q[static_cast<std::size_t>(i)];
        q[static_cast<std::size_t>(i)] = i;
        return Permutation(std::move(q));
    }

    template <class S> Mat<S> apply(const Mat<S>& x) const {
        if (x.rows() != size())
            throw std::invalid_argument("permutation of " + std::to_string(size()) + " positions applied to " +
                                        std::to_string(x.rows()) + " rows");
        Mat<S> y(x.rows(), x.cols());
        for (int i = 0; i < size(); ++i) y.row(i) = x.row((*this)[i]);
        return y;
    }

    // Cycle notation with the fixed points left out, e.g. "(0 1)", "(0 2 1)(3 4)", "()" for the identity.
    std::string cycles() const {
        std::string out;
        std::vector<bool> seen(p_.size(), false);
        for (std::size_t s = 0; s < p_.size(); ++s) {
            if (seen[s] || p_[s] == static_cast<int>(s)) continue;
            out += "(";
            for (std::size_t i = s; !seen[i]; i = static_cast<std::size_t>(p_[i])) {
                seen[i] = true;
                if (i != s) out += ' ';
                out += std::to_string(i);
            }
            out += ")";
        }
        return out.empty() ? "()" : out;
    }

    friend bool operator==(const Permutation& a, const Permutation& b) { return a.p_ == b.p_; }

private:
    void validate() const {
        std::vector<bool> seen(p_.size(), false);
        for (int v : p_) {
            if (v < 0 || v >= static_cast<int>(p_.size()) || seen[static_cast<std::size_t>(v)])
                throw std::invalid_argument("not a permutation of 0.." + std::to_string(p_.size() - 1) +
                                            ": entry " + std::to_string(v) + " is out of range or repeated");
            seen[static_cast<std::size_t>(v)] = true;
        }
    }

    std::vector<int> p_;
};

}  // namespace permcheck
