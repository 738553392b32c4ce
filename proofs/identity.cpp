#include "proofs/identity.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace permcheck::identity {

void require_trials(int trials) {
    if (trials < 1 || trials > kMaxTrials)
        throw std::invalid_argument("the number of trials must be in [1, " + std::to_string(kMaxTrials) + "], got " +
                                    std::to_string(trials));
}

double log2_bound(long long degree_total, int bits, int trials) {
    if (degree_total <= 0) return -std::numeric_limits<double>::infinity();
    return trials * (std::log2(static_cast<double>(degree_total)) - bits);
}

const char* symmetric_word(Property p) { return p == Property::invariance ? "invariant" : "equivariant"; }

std::string certificate_verdict(bool conclusive, bool holds, Property p) {
    if (!conclusive) return "not certified";
    return (holds ? "certified " : "certified not ") + std::string(symmetric_word(p));
}

NamedMove move_along(const Lengths& lengths, const std::string& axis, const Permutation& g) {
    NamedMove m{axis, g, {}};
    for (const auto& [other, len] : lengths) m.perms[other] = other == axis ? g : Permutation::identity(len);
    return m;
}

std::vector<NamedMove> generator_moves(const Lengths& lengths) {
    std::vector<NamedMove> moves;
    for (const auto& [axis, len] : lengths)
        for (const Permutation& g : Permutation::generators(len)) moves.push_back(move_along(lengths, axis, g));
    return moves;
}

}  // namespace permcheck::identity
