// Which cases a run asks (its schedule) and how answers are asked of a batched side: grouped by lengths, in
// calls of at most its capacity (audit/audit_engine.h).
#include "audit/audit_engine.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

namespace permcheck::engine {

Schedule Schedule::of(const AuditOptions& o, Draw draw) {
    Schedule s;
    s.draw = std::move(draw);
    rc::Random random(o.seed);
    for (int i = 0; i < o.cases; ++i) {
        const rc::Random case_random = random.split();
        if (!in_shard(i, o.shard)) continue;
        s.index.push_back(i);
        s.randoms.push_back(case_random);
    }
    // Spread over the run, since the first cases are the smallest (RapidCheck's size grows with the case index)
    // and a zero input hides dropout.
    const std::size_t count = s.size();
    for (int k = 0; k < o.repeat_checks && count > 0; ++k)
        s.repeated.insert(std::min(count - 1, static_cast<std::size_t>(k + 1) * count /
                                                  static_cast<std::size_t>(o.repeat_checks + 1)));
    return s;
}

std::vector<Answer<Tensors>> answer_grouped(const std::vector<Tensors>& inputs, const std::vector<Lengths>& keys,
                                            std::size_t capacity, const Batching<Tensors>& batching,
                                            std::vector<BatchCall>* calls) {
    std::map<Lengths, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < inputs.size(); ++i) groups[keys[i]].push_back(i);
    std::vector<std::vector<std::size_t>> members;  // the positions of each call's inputs
    std::vector<std::vector<Tensors>> parts;
    for (const auto& group : groups)
        for (std::size_t start = 0; start < group.second.size(); start += capacity) {
            const std::size_t end = std::min(group.second.size(), start + capacity);
            members.emplace_back(group.second.begin() + static_cast<long>(start), group.second.begin() + static_cast<long>(end));
            parts.emplace_back();
            for (std::size_t i : members.back()) parts.back().push_back(inputs[i]);
        }
    std::vector<std::vector<Answer<Tensors>>> got(parts.size());
    const auto failed = [&](std::size_t p, const std::string& error) {
        got[p].assign(parts[p].size(), Answer<Tensors>{std::nullopt, error, ""});
    };
    if (batching.call_all) {
        try {
            got = batching.call_all(parts);
            got.resize(parts.size());
        } catch (const std::exception& e) {  // got still holds an empty answer per part
            for (std::size_t p = 0; p < parts.size(); ++p) failed(p, e.what());
        }
    } else {
        for (std::size_t p = 0; p < parts.size(); ++p) {
            try {
                got[p] = batching.call(parts[p]);
            } catch (const std::exception& e) {
                failed(p, e.what());
            }
        }
    }
    std::vector<Answer<Tensors>> out(inputs.size());
    for (std::size_t p = 0; p < parts.size(); ++p) {
        if (got[p].size() != parts[p].size())
            failed(p, "the batched call answered " + std::to_string(got[p].size()) + " items for " +
                          std::to_string(parts[p].size()) + " inputs");
        for (std::size_t k = 0; k < parts[p].size(); ++k) out[members[p][k]] = std::move(got[p][k]);
    }
    if (calls) {
        calls->assign(inputs.size(), BatchCall{});
        const bool stacked = batching.stacked && batching.stacked();
        for (std::size_t p = 0; p < parts.size(); ++p) {
            const auto items = std::make_shared<const std::vector<Tensors>>(std::move(parts[p]));
            for (std::size_t k = 0; k < members[p].size(); ++k) (*calls)[members[p][k]] = BatchCall{items, k, stacked};
        }
    }
    return out;
}

std::size_t capacity_of(const Batching<Tensors>& batching) {
    const int k = batching.call && batching.capacity ? batching.capacity() : 0;
    return k > 1 ? static_cast<std::size_t>(k) : 1;
}

// A worker whose black box batches takes this many times the box's capacity of cases at once.
constexpr std::size_t kBlockPerCapacity = 4;

std::size_t block_size_of(const Batching<Tensors>& batching) {
    const std::size_t k = capacity_of(batching);
    return k > 1 ? kBlockPerCapacity * k : 1;
}

}  // namespace permcheck::engine
