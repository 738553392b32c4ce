// The moves of a signature's tensors (cases/signature.h): every input permuted along the axes it has (a pairwise
// input P B P^T, an index input's values renumbered), an output moved along its own, with the harness bugs a test may
// plant (cases/test_hooks.cpp) played here.
#include "cases/signature.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace permcheck {

namespace {

// `in`, of this shape, moved along dim k by p into a new vector: out[.., i, ..] = in[.., p[i], ..].
std::vector<double> permuted_along(const std::vector<int>& shape, const std::vector<double>& in, std::size_t k,
                                   const Permutation& p) {
    const auto len = static_cast<std::size_t>(shape[k]);
    if (static_cast<std::size_t>(p.size()) != len)
        throw std::invalid_argument("a permutation of " + std::to_string(p.size()) + " positions applied to a dim of " +
                                    std::to_string(len));
    const auto [outer, inner] = outer_inner(shape, k);
    std::vector<double> out(in.size());
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < len; ++i) {
            const std::size_t from = (o * len + static_cast<std::size_t>(p[static_cast<int>(i)])) * inner;
            std::copy_n(in.begin() + static_cast<std::ptrdiff_t>(from), inner,
                        out.begin() + static_cast<std::ptrdiff_t>((o * len + i) * inner));
        }
    return out;
}

// t moved along every dim named by an axis, each value copied once per dim that moves (none: t as it is); with
// `first_only`, only along the first dim of each axis (the planted pairwise bug).
Tensor moved(const TensorSpec& spec, const Permutations& perms, const Tensor& t, bool first_only) {
    if (t.shape.size() != spec.dims.size())
        throw std::invalid_argument(spec.name + " has " + std::to_string(t.shape.size()) + " dims, its spec " +
                                    std::to_string(spec.dims.size()));
    Tensor out{t.shape, {}};
    const std::vector<double>* from = &t.values;
    std::set<std::string> seen;
    for (std::size_t k = 0; k < spec.dims.size(); ++k) {
        const Dim& d = spec.dims[k];
        if (!d.is_axis()) continue;
        if (first_only && !seen.insert(d.axis).second) continue;
        const auto it = perms.find(d.axis);
        if (it == perms.end() || it->second.is_identity()) continue;
        out.values = permuted_along(t.shape, *from, k, it->second);
        from = &out.values;
    }
    if (from == &t.values) out.values = t.values;
    return out;
}

// Every value v of an index tensor becomes the new position of v: q[v], with q = p^-1 (p under the planted bug).
void renumber(Tensor& t, const Permutation& p, bool with_p) {
    const Permutation q = with_p ? p : p.inverse();
    for (double& v : t.values) {
        const auto i = static_cast<long>(v);
        if (static_cast<double>(i) != v || i < 0 || i >= q.size())
            throw std::invalid_argument("index value " + std::to_string(v) + " is outside [0, " +
                                        std::to_string(q.size()) + ")");
        v = q[static_cast<int>(i)];
    }
}

}  // namespace

Permutations identities(const Lengths& lengths) {
    Permutations perms;
    for (const auto& [axis, len] : lengths) perms[axis] = Permutation::identity(len);
    return perms;
}

Tensors permute_inputs(const Signature& s, const Permutations& perms, const Tensors& inputs) {
    const test_only::HarnessBug bug = test_only::planted_harness_bug();
    Tensors out;
    // Tensors the signature does not name go along as they are. (A named pair, not a structured binding: clang 14,
    // which builds the fuzzers, cannot capture a binding in a lambda.)
    for (const auto& entry : inputs) {
        const std::string& name = entry.first;
        if (std::none_of(s.inputs.begin(), s.inputs.end(), [&name](const TensorSpec& spec) { return spec.name == name; }))
            out.emplace(name, entry.second);
    }
    for (const TensorSpec& spec : s.inputs) {
        const auto it = inputs.find(spec.name);
        if (it == inputs.end()) throw std::invalid_argument("no input named '" + spec.name + "'");
        const bool left = (is_mask(spec.kind) && bug == test_only::HarnessBug::mask_wrong_axis) ||
                          (spec.kind == TensorKind::position && bug == test_only::HarnessBug::positions_kept);
        Tensor t = left ? it->second : moved(spec, perms, it->second, bug == test_only::HarnessBug::pairwise_without_transpose);
        if (spec.kind == TensorKind::index) {
            const auto p = perms.find(spec.index_axis);
            if (p != perms.end()) renumber(t, p->second, bug == test_only::HarnessBug::index_with_p);
        }
        out[spec.name] = std::move(t);
    }
    return out;
}

Tensor permute_output(const TensorSpec& t, const Permutations& perms, const Tensor& y) { return moved(t, perms, y, false); }

}  // namespace permcheck
