// Where a case's sequence axis is cut, the part of a case that causal, packing and incremental share (Case::part):
// ascending positions in (0, n) of `axis`. The causal property's one cut k keeps the prefix [0, k); the packing
// property's cuts end its packed sequences but the last, and `piece` is the sequence run alone (0 the first); the
// incremental property's (`chunked`) end its chunks but the last. In the part: names "axis", lists "at", numbers
// "piece" (packing) and "chunked" (1, incremental).
#pragma once

#include "cases/signature.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace permcheck::properties {

struct Cuts {
    std::string axis;
    std::vector<int> at;
    int piece = -1;
    bool chunked = false;
    // The positions [first, second) compared in a sequence of n: the causal prefix [0, at[0]), or the packed
    // sequence `piece`; {0, n} for chunks, or when the cuts say neither.
    std::pair<int, int> span(int n) const {
        if (chunked) return {0, n};
        if (piece < 0) return {0, at.empty() ? n : at.front()};
        if (static_cast<std::size_t>(piece) > at.size()) return {0, n};
        const auto p = static_cast<std::size_t>(piece);
        return {p == 0 ? 0 : at[p - 1], p == at.size() ? n : at[p]};
    }
};

// The case's cuts; none when its part has none (an input answered twice, a saved case without them).
inline std::optional<Cuts> cuts_of(const Case& c) {
    const auto axis = c.part.names.find("axis");
    const auto at = c.part.lists.find("at");
    if (axis == c.part.names.end() || at == c.part.lists.end()) return std::nullopt;
    return Cuts{axis->second, at->second, static_cast<int>(c.part.number("piece", -1)), c.part.number("chunked") != 0};
}

// c with `cuts` as its part.
inline void put_cuts(Case& c, const Cuts& cuts) {
    c.part = {};
    c.part.names["axis"] = cuts.axis;
    c.part.lists["at"] = cuts.at;
    if (cuts.piece >= 0) c.part.numbers["piece"] = cuts.piece;
    if (cuts.chunked) c.part.numbers["chunked"] = 1;
}

}  // namespace permcheck::properties
