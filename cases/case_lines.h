// Internal to cases/ (the case's draw, cases/case_draw.cpp, and its shrinks, cases/case_shrinks.cpp): a tensor's
// elements seen along one dim, and the lines of a mask that pad every position.
#pragma once

#include "cases/signature.h"

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace permcheck::case_lines {

// A tensor's elements seen along one dim: `outer` blocks of `len` slices of `inner` consecutive values.
struct Lines {
    std::size_t outer = 1, len = 0, inner = 1;
    Lines(const std::vector<int>& shape, std::size_t k) : len(static_cast<std::size_t>(shape[k])) {
        std::tie(outer, inner) = outer_inner(shape, k);
    }
    std::size_t at(std::size_t o, std::size_t i, std::size_t r) const { return (o * len + i) * inner + r; }
};

inline std::optional<std::size_t> first_axis_dim(const TensorSpec& t) {
    for (std::size_t k = 0; k < t.dims.size(); ++k)
        if (t.dims[k].is_axis()) return k;
    return std::nullopt;
}

inline const Axis& axis_named(const Signature& s, const std::string& name) {
    for (const Axis& a : s.axes)
        if (a.name == name) return a;
    throw std::invalid_argument("no axis named '" + name + "'");
}

// The value of a mask entry that pads, in the mask's polarity.
inline double pad_value(const TensorSpec& spec) { return spec.kind == TensorKind::mask_keep ? 0.0 : 1.0; }

// Calls padded(lines, o, r) for every non-empty line (o, r) along an axis dim of t whose entries all equal `pads`,
// until it returns false; false then.
template <class F> bool each_padded_line(const TensorSpec& spec, const Tensor& t, double pads, F padded) {
    for (std::size_t k = 0; k < spec.dims.size(); ++k) {
        if (!spec.dims[k].is_axis()) continue;
        const Lines lines(t.shape, k);
        for (std::size_t o = 0; o < lines.outer && lines.len > 0; ++o)
            for (std::size_t r = 0; r < lines.inner; ++r) {
                bool all = true;
                for (std::size_t i = 0; i < lines.len && all; ++i) all = t.values[lines.at(o, i, r)] == pads;
                if (all && !padded(lines, o, r)) return false;
            }
    }
    return true;
}


}  // namespace permcheck::case_lines
