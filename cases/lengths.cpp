#include "cases/lengths.h"

#include <algorithm>
#include <cmath>

namespace permcheck {

namespace {
constexpr int kLongEvery = 10;  // one case in ten is a long one: a bounded share of the calls

bool is_long_slot(int i) { return (i + 1) % kLongEvery == 0; }

// k-th of `count` long lengths, rising geometrically from first to last.
int long_length(int k, int count, int first, int last) {
    if (count <= 1) return last;
    const double t = static_cast<double>(k) / static_cast<double>(count - 1);
    const double v = std::exp(std::log(first) + t * (std::log(last) - std::log(first)));
    return std::clamp(static_cast<int>(std::lround(v)), first, last);
}

// j-th of `count` short lengths from [lo, hi].
int short_length(int j, int count, int lo, int hi) {
    const int range = hi - lo + 1;
    if (4 * range <= count) return lo + j % range;  // every length, in rising rounds
    if (count <= 1) return hi;
    return lo + static_cast<int>(std::lround(static_cast<double>(j) * (range - 1) / (count - 1)));  // spread, ends in hi
}
}  // namespace

std::vector<int> audit_lengths(const LengthPlan& plan) {
    const bool long_ones = plan.long_len > plan.max_len;
    int long_count = 0;
    for (int i = 0; i < plan.cases; ++i) long_count += long_ones && is_long_slot(i);
    const int short_count = plan.cases - long_count;
    const int lo = plan.max_len > 1 ? std::max(plan.min_len, 2) : plan.min_len;
    std::vector<int> lengths;
    lengths.reserve(static_cast<std::size_t>(std::max(plan.cases, 0)));
    for (int i = 0, j = 0, k = 0; i < plan.cases; ++i) {
        if (long_ones && is_long_slot(i))
            lengths.push_back(long_length(k++, long_count, plan.max_len + 1, plan.long_len));
        else
            lengths.push_back(short_length(j++, short_count, lo, plan.max_len));
    }
    return lengths;
}

}  // namespace permcheck
