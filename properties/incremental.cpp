// Incremental: cached decoding gives the one-pass outputs. The sequence is cut into m >= 2 consecutive chunks, drawn
// both ways (several-token chunks: a prefill, then multi-token chunks; or a prefill, then one-token steps); the
// layer is called on the chunks in order, starting with no cache, and the outputs of every chunk, concatenated
// along the axis, must equal those of one call on the whole sequence (a causal layer's prefix runs equal it). The
// chunked call is one request (kChunksInput, cases/signature.h) that only a layer decoding in chunks answers (an
// adapter's "chunked": true, a C++ ChunkStep, a reference layer with a cache, layers/cached_attention.h): a layer
// that ignores the chunking is an error, never a pass.
// Outputs without the axis are not compared, nor slots the case's masks pad. Shrunk to the fewest chunks, then the
// shortest sequence: a cache whose positions restart at every chunk is shown at two chunks.
// proofs-notes/incremental.md.
#include "properties/cuts.h"
#include "properties/property.h"

#include <algorithm>

namespace permcheck {

namespace {

using properties::Cuts;
using properties::cuts_of;

// Chunked cases take at most this many one-token steps (each is a call of the layer).
constexpr int kMostSteps = 8;

// The chunks' ends, the last the sequence's length.
Tensor chunk_ends(const Cuts& c, int n) {
    Tensor t{{static_cast<int>(c.at.size()) + 1}, {}};
    for (int e : c.at) t.values.push_back(e);
    t.values.push_back(n);
    return t;
}

Case with_chunks(Case c, const std::string& axis, std::vector<int> at) {
    properties::put_cuts(c, {axis, std::move(at), -1, true});
    c.perms = identities(c.lengths);
    return c;
}

// c without position `gone` of the axis, the chunks' ends moved with it; nothing when a chunk would be left empty,
// fewer than two would stay, or the deletion is refused.
std::optional<Case> without(const Signature& s, const Case& c, int gone) {
    const Cuts cuts = *cuts_of(c);
    std::optional<Case> smaller = without_elements(s, c, cuts.axis, {gone});
    if (!smaller) return std::nullopt;
    const int n = smaller->lengths.at(cuts.axis);
    std::vector<int> at;
    for (int end : cuts.at) {
        const int moved = end > gone ? end - 1 : end;
        if (moved <= (at.empty() ? 0 : at.back()) || moved >= n) return std::nullopt;
        at.push_back(moved);
    }
    if (at.empty()) return std::nullopt;
    return with_chunks(std::move(*smaller), cuts.axis, std::move(at));
}

rc::Seq<Case> incremental_shrinks(const std::shared_ptr<const Signature>& s, const Case& c) {
    std::vector<Case> out;
    const Cuts cuts = *cuts_of(c);
    const std::vector<int>& at = cuts.at;
    for (std::size_t k = 0; k < at.size() && at.size() > 1; ++k) {  // fewer chunks: two joined
        std::vector<int> fewer = at;
        fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(k));
        out.push_back(with_chunks(c, cuts.axis, std::move(fewer)));
    }
    for (int i = 0; i < c.lengths.at(cuts.axis); ++i)  // a shorter sequence
        if (auto k = without(*s, c, i)) out.push_back(std::move(*k));
    const Lengths lengths = c.lengths;
    auto simpler = rc::seq::mapMaybe(signature_case_shrinks(s, c), [lengths, cuts](Case k) {
        if (k.lengths != lengths) return rc::Maybe<Case>();
        return rc::Maybe<Case>(with_chunks(std::move(k), cuts.axis, cuts.at));
    });
    return rc::seq::concat(rc::seq::fromContainer(std::move(out)), std::move(simpler));
}

class Incremental : public PropertyRules {
public:
    const char* name() const override { return "incremental"; }
    const char* adjective() const override { return "incremental-consistent"; }
    SideNames sides(bool) const override { return {"L(x in chunks)", "L(x)", "|L(x in chunks) - L(x)|"}; }
    const char* meaning() const override {
        return "decoding the sequence in chunks, a cache carried between them, gives the outputs of one pass";
    }
    std::string case_text(const Case& c) const override {
        const auto cuts = cuts_of(c);
        if (!cuts) return "no chunks";
        std::string out = cuts->axis + " in " + std::to_string(cuts->at.size() + 1) + " chunks:";
        int first = 0;
        for (double end : chunk_ends(*cuts, c.lengths.at(cuts->axis)).values) {
            out += " [" + std::to_string(first) + ", " + std::to_string(static_cast<int>(end)) + ")";
            first = static_cast<int>(end);
        }
        return out;
    }
    bool permutes() const override { return false; }
    std::vector<PropertyOption> options() const override { return {properties::sequence_axis_option()}; }
    CallPlan plan() const override {
        return {.chunked = true, .raising_is_finding = true, .judges_outputs_without_axes = false};
    }
    const char* output_claim() const override { return "decoded in chunks equal to one pass"; }
    std::string compared_text() const override { return "L(x) decoded in chunks against L(x) in one pass"; }
    const char* verdict_meaning(bool holds) const override { return holds ? "cache consistent" : "cached decoding differs"; }

    PropertyArgs completed_args(const Signature& s, PropertyArgs a) const override {
        a.axis = properties::sequence_axis(s, a, "incremental");
        properties::require_sequence_axis(s, a.axis, "incremental");
        for (const TensorSpec& t : s.inputs)
            if (std::count_if(t.dims.begin(), t.dims.end(), [&](const Dim& d) { return d.axis == a.axis; }) > 1)
                throw std::invalid_argument("--property incremental: the input " + t.name + " is pairwise over " +
                                            a.axis + ", which has no chunk of its own");
        return a;
    }

    LengthSchedule lengths(const Signature& s, const PropertyArgs& a, int cases, std::uint64_t seed) const override {
        return properties::lengths_with_room_to_cut(s, a.axis, cases, seed);
    }

    // Even cases: a prefill and multi-token chunks (m in [2, min(n, 4)], the ends distinct); odd cases: a prefill,
    // then one-token steps to the end (at most kMostSteps).
    void draw(const Signature&, const PropertyArgs& a, Case& c, const rc::Random& random, int index, int) const override {
        rc::Random own(random);
        own.split();
        gen::Sampler draw(own.split(), 100);
        const int n = c.lengths.at(a.axis);
        std::vector<int> at;
        if (index % 2 == 1) {
            const int steps = draw.uniform(1, std::min(n - 1, kMostSteps) + 1);
            for (int e = n - steps; e < n; ++e) at.push_back(e);
        } else {
            at = properties::distinct_ends(draw, n, n < 2 ? 1 : draw.uniform(2, std::min(n, 4) + 1));
        }
        c = with_chunks(std::move(c), a.axis, std::move(at));
    }

    // x itself, and the chunking.
    Tensors transformed(const Signature&, const PropertyArgs&, const Case& c) const override {
        const auto cuts = cuts_of(c);
        if (!cuts || !cuts->chunked) throw std::invalid_argument("an incremental case without its chunks");
        Tensors x = c.inputs;
        x[kChunksInput + cuts->axis] = chunk_ends(*cuts, c.lengths.at(cuts->axis));
        return x;
    }
    Tensor expected(const TensorSpec&, const Case&, const Tensor& y) const override { return y; }
    std::vector<bool> ignored(const Signature& s, const Case& c, const TensorSpec& output,
                              const std::vector<int>& shape) const override {
        const auto cuts = cuts_of(c);
        if (!cuts) return {};
        return properties::ignored_off_axis(s, c.inputs, cuts->axis, output, shape);
    }
    const Tensors& compared_layout(const Case& c, const Tensors&) const override { return c.inputs; }

    rc::Shrinkable<Case> shrinkable(const std::shared_ptr<const Signature>& s, const PropertyArgs&, Case c) const override {
        if (!cuts_of(c)) return shrinkable_signature_case(s, std::move(c));  // an input answered twice: no chunks
        return rc::shrinkable::shrinkRecur(std::move(c), [s](const Case& k) { return incremental_shrinks(s, k); });
    }
    void validate_saved(const Signature&, const Case& c) const override {
        const auto cuts = cuts_of(c);
        if (!cuts || !cuts->chunked || cuts->at.empty())
            throw std::invalid_argument("the saved incremental case has no chunks");
        const auto n = c.lengths.find(cuts->axis);
        if (n == c.lengths.end()) throw std::invalid_argument("the saved chunks name no axis of the signature");
        int last = 0;
        for (int e : cuts->at) {
            if (e <= last || e >= n->second) throw std::invalid_argument("the saved chunks' ends are not ascending in (0, n)");
            last = e;
        }
    }
};

}  // namespace

const PropertyRules& incremental_rules() {
    static const Incremental rules;
    return rules;
}

}  // namespace permcheck
