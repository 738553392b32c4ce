// Causal prefix: reordering the positions before the last leaves the last output alone, L(P x)[n-1] = L(x)[n-1]
// for every P that fixes the last position: what causal attention without a position signal keeps (it sees the
// prefix as a set) and an RNN breaks (it reads the prefix in order). A property of the reference layers.
// proofs-notes/causal-attention.md.
#include "properties/equivariance.h"

#include <algorithm>
#include <set>

namespace permcheck {

namespace {

// p with its last position fixed: the relative order of the others kept and n-1 moved to the end, a permutation that
// shrinks toward the identity as p does.
Permutation fixing_last(const Permutation& p) {
    const int n = p.size();
    if (n == 0) return p;
    std::vector<int> q;
    for (int v : p.one_line())
        if (v != n - 1) q.push_back(v);
    q.push_back(n - 1);
    return Permutation(std::move(q));
}

Case fixed_last(Case c, const std::string& axis) {
    for (auto& [name, p] : c.perms) p = name == axis ? fixing_last(p) : Permutation::identity(p.size());
    return c;
}

// The entries of t at the last element of the output's axis (its first axis dim: a reference layer's sequence output
// has one) along every dim that follows it.
Tensor last_along(const TensorSpec& spec, const Tensor& t) {
    const auto first = std::find_if(spec.dims.begin(), spec.dims.end(), [](const Dim& d) { return d.is_axis(); });
    const std::string axis = first == spec.dims.end() ? "" : first->axis;
    Tensor out = t;
    for (std::size_t k = 0; k < spec.dims.size() && k < out.shape.size(); ++k)
        if (spec.dims[k].axis == axis && out.shape[k] > 0) {
            std::set<int> gone;
            for (int i = 0; i + 1 < out.shape[k]; ++i) gone.insert(i);
            delete_along(out, k, gone);
        }
    return out;
}

class CausalPrefix : public OneAxisEquivariance {
public:
    const char* name() const override { return "causal-prefix"; }
    const char* adjective() const override { return "blind to the order of its prefix"; }
    SideNames sides(bool) const override { return {"L(P x)[n-1]", "L(x)[n-1]", "|L(P x)[n-1] - L(x)[n-1]|"}; }
    const char* meaning() const override {
        return "reordering the positions before the last leaves the last output alone";
    }
    void draw(const Signature&, const PropertyArgs& a, Case& c, const rc::Random&, int, int) const override {
        c = fixed_last(std::move(c), a.axis);
    }
    Tensor compared(const TensorSpec& t, const Case&, const Tensor& answer) const override {
        return last_along(t, answer);
    }
    Tensor expected(const TensorSpec& t, const Case&, const Tensor& y) const override {
        return last_along(t, y);
    }
    rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs& a, Case c) const override {
        return rc::shrinkable::shrinkRecur(std::move(c), [s, axis = a.axis](const Case& k) {
            return rc::seq::map(signature_case_shrinks(s, k), [axis](Case m) { return fixed_last(std::move(m), axis); });
        });
    }
};

}  // namespace

const PropertyRules& causal_prefix_rules() {
    static const CausalPrefix rules;
    return rules;
}

}  // namespace permcheck
