// The properties a layer family can be checked for, and what the theory expects of each: the columns of the
// verdict matrix. Here, below check/, because a catalog entry states its own expectations.
#pragma once

#include <string>

namespace permcheck {

enum class Property {
    equivariance,      // sequence output: L(P x) = P L(x)
    invariance,        // pooled output:   L(P x) = L(x)
    shift,             // every position index + c: L_c(x) = L_0(x)   (relative position signals)
    reversal,          // L(R x) = R L(x) for the reversal R
    causal_prefix,     // P fixes the last position: L(P x)[n-1] = L(x)[n-1]
    padding,           // pads inserted, masked: the outputs at the real positions unchanged
    causal,            // the sequence cut after k positions: the first k outputs unchanged, L(x[:k]) = L(x)[:k]
    packing,           // sequences packed into one row: each one's outputs its own run's, L(s_j) = L(pack)[s_j]
    incremental,       // the sequence decoded in chunks, a cache carried between them: the one-pass outputs
    agreement,         // the layer and a reference implementation answer the same input alike: L(x) = R(x)
};

// A chunked request (the incremental property): besides the signature's inputs, an entry named kChunksInput + AXIS
// whose values are the ends of the chunks along AXIS (ascending, the last the axis's length); a layer that decoded the
// request chunk by chunk, in order, answers besides its outputs an entry named kChunkedAnswer (an adapter says
// "chunked": true). No name of a signature starts with '#'.
inline const std::string kChunksInput = "#chunks:";
inline const std::string kChunkedAnswer = "#chunked";

// What a layer answers: n rows, one per position (a sequence layer), or one vector (a pooled layer).
enum class Output { sequence, pooled };

// A property that applies to a layer family along one of its axes (equivariance when the family's outputs have the
// axis, invariance when they lack it; for shift, the axis of the positions; for padding, the padded one), with the
// verdict the theory expects (true = holds): a row of the verdict table.
struct Expectation {
    Property property;
    std::string axis;
    bool holds = true;
};

}  // namespace permcheck
