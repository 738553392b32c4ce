// A signature and its items for stacked batches (docs/protocol.md, "Batched requests"): x:n,1,2 with a mask pad:n,1, the
// batch dim of size 1 where INPUT and OUTPUT put it. Shared by the protocol's tests (tests/test_protocol.cpp) and
// the subprocess adapter's (tests/test_exec_adapter.cpp).
#pragma once

#include "cases/signature.h"

#include <vector>

namespace permcheck::test {

inline Signature stacked_signature(const char* input, const char* output) {
    Signature s;
    s.axes = {parse_axis("n=1..8")};
    s.inputs = {parse_input(input), parse_input("pad:n,1:mask")};
    s.outputs = {parse_output(output)};
    return s;
}
inline Tensors stacked_item(int n, double base) {  // x:n,1,2 with values base, base + 1, ...; pad all true but the last
    Tensors t;
    t["x"] = {{n, 1, 2}, {}};
    for (int k = 0; k < 2 * n; ++k) t["x"].values.push_back(base + k);
    t["pad"] = {{n, 1}, std::vector<double>(n, 1.0)};
    t["pad"].values.back() = 0.0;
    return t;
}

}  // namespace permcheck::test
