// The properties a layer family can be checked for, and what the theory expects of each: the columns of the
// verdict matrix. Here, below check/, because a catalog entry states its own expectations.
#pragma once

namespace permcheck {

enum class Property {
    equivariance,      // sequence output: L(P x) = P L(x)
    invariance,        // pooled output:   L(P x) = L(x)
    shift,             // every position index + c: L_c(x) = L_0(x)   (relative position signals)
    reversal,          // L(R x) = R L(x) for the reversal R
    causal_prefix,     // P fixes the last position: L(P x)[n-1] = L(x)[n-1]
    padding,           // pads inserted, masked: the outputs at the real positions unchanged (audits only)
};

// What a layer answers: n rows, one per position (a sequence layer), or one vector (a pooled layer).
enum class Output { sequence, pooled };

// A property that applies to a layer family, with the verdict the theory expects (true = holds).
struct Expectation {
    Property property;
    bool holds;
};

}  // namespace permcheck
