#include "layers/catalog.h"

#include "layers/cached_attention.h"
#include "layers/cross_attention.h"
#include "layers/layers.h"
#include "layers/message_passing.h"
#include "layers/token_attention.h"
#include "layers/make_family.h"

#include <optional>
#include <stdexcept>

namespace permcheck {

namespace {
// What the theory says of a layer, from which the properties that apply follow.
struct Theory {
    bool symmetric = true;            // equivariant (sequence output) or invariant (pooled output)
    bool relative = false;            // position enters only through offsets: shifting all positions changes nothing
    bool reversal_symmetric = false;  // relative layers whose bias is symmetric in the offset (ALiBi)
    bool absolute = false;            // an absolute position signal: shifting every position changes the output
    bool causal = false;              // causal mask, no position signal: output i ignores the order before i
    std::optional<bool> cut = std::nullopt;  // the causal property's row: whether no output sees a later token
};

std::vector<Expectation> expectations_of(Output output, const Theory& t) {
    if (output == Output::pooled) return {{Property{"invariance"}, "n", t.symmetric}};
    std::vector<Expectation> e{{Property{"equivariance"}, "n", t.symmetric}};
    if (t.relative) {
        e.push_back({Property{"shift"}, "n", true});
        e.push_back({Property{"reversal"}, "n", t.reversal_symmetric});
    }
    if (t.absolute) e.push_back({Property{"shift"}, "n", false});
    if (t.causal) e.push_back({Property{"causal-prefix"}, "n", true});
    if (t.cut) e.push_back({Property{"causal"}, "n", *t.cut});
    return e;
}

// LayerNorm divides by a row's standard deviation, at least sqrt(eps) = 2^-8 (proofs-notes/float-tolerance.md).
constexpr double kLayerNormGrowth = 256.0;

template <class Make>
Family family(std::string name, std::string description, Output output, const Theory& theory, Make make,
              double amplification = 1.0) {
    Family f = make_family(std::move(name), output, std::move(make), expectations_of(output, theory), amplification);
    f.description = std::move(description);
    return f;
}

enum class Signal { none, sinusoidal, learned, rope, alibi, t5 };

struct AttentionDesign {
    Eigen::Index heads = 1;
    bool causal = false;
    Signal signal = Signal::none;
};

template <class S> using SequenceFn = std::function<Mat<S>(const Mat<S>&)>;

template <class S> SequenceFn<S> attention_with(const AttentionDesign& design, Eigen::Index d, Draw<S>& draw, long offset) {
    Attention<S> a = Attention<S>::random({d, design.heads, design.causal}, draw);
    if (design.signal == Signal::rope) a.rope = Rope<S>{offset};
    if (design.signal == Signal::alibi) a.bias = ScoreBias<S>::alibi();
    if (design.signal == Signal::t5) a.bias = ScoreBias<S>::t5(design.heads, draw);
    if (a.bias) a.bias->offset = offset;
    if (design.signal == Signal::sinusoidal || design.signal == Signal::learned) {
        AbsolutePosition<S> pos = design.signal == Signal::sinusoidal ? AbsolutePosition<S>::sinusoidal()
                                                                      : AbsolutePosition<S>::learned(128, d, draw);
        pos.offset = offset;
        return [a = std::move(a), pos = std::move(pos)](const Mat<S>& x) { return a(pos(x)); };
    }
    return [a = std::move(a)](const Mat<S>& x) { return a(x); };
}

// The builder of an attention family's layer, for every scalar.
auto attention_make(AttentionDesign design) {
    return [design]<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long offset) {
        return attention_with<S>(design, d, draw, offset);
    };
}

Family attention(std::string name, std::string description, AttentionDesign design, const Theory& theory) {
    return family(std::move(name), std::move(description), Output::sequence, theory, attention_make(design));
}

// `inner` (built by `inner_make`), then pooled over positions, from the same draws: the pooled family is the
// composition by construction, and says so for the certificate.
template <class Make>
Family pooled(std::string name, std::string description, const Family& inner, Make inner_make, Pool how, bool symmetric) {
    Family f = family(std::move(name), std::move(description), Output::pooled, {.symmetric = symmetric},
                      [inner_make, how]<class S>(std::type_identity<S> scalar, Eigen::Index d, Draw<S>& draw, long offset) {
                          return [layer = inner_make(scalar, d, draw, offset), how](const Mat<S>& x) {
                              return pool(Mat<S>(layer(x)), how);
                          };
                      });
    f.composition = Composition{std::make_shared<const Family>(inner), how};
    return f;
}

void add_per_position(std::vector<Family>& c) {
    c.push_back(family("linear", "x W + b, the same map at every position", Output::sequence, {},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return Linear<S>::random(d, d, draw);
                       }));
    c.push_back(family("mlp", "two-layer perceptron with ReLU, per position", Output::sequence, {.cut = true},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return Mlp<S>::random(d, 2 * d, d, draw);
                       }));
    c.push_back(family("layernorm", "LayerNorm over each position's features", Output::sequence, {},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return LayerNorm<S>::random(d, draw);
                       },
                       kLayerNormGrowth));
}

void add_attention(std::vector<Family>& c, const Family& attn, const Family& sinusoidal) {
    c.push_back(attn);
    c.push_back(attention("mha", "two-head self-attention", {.heads = 2}, {}));
    c.push_back(attention("causal-attention", "self-attention with a causal mask, no position signal",
                          {.causal = true}, {.symmetric = false, .causal = true, .cut = true}));
    c.push_back(family("encoder", "post-norm encoder block: attention, residual, LayerNorm, MLP", Output::sequence, {},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return EncoderBlock<S>::random({d, 1, false}, draw);
                       },
                       kLayerNormGrowth * kLayerNormGrowth));
    c.push_back(sinusoidal);
    c.push_back(attention("attention+learned", "learned absolute position table added, then attention",
                          {.signal = Signal::learned}, {.symmetric = false, .absolute = true}));
    const Theory relative{.symmetric = false, .relative = true};
    c.push_back(attention("attention+rope", "attention with rotary position embedding on queries and keys",
                          {.signal = Signal::rope}, {.symmetric = false, .relative = true, .cut = false}));
    c.push_back(attention("attention+alibi", "attention with ALiBi linear distance bias on the scores",
                          {.signal = Signal::alibi}, {.symmetric = false, .relative = true, .reversal_symmetric = true}));
    c.push_back(attention("attention+t5", "attention with T5 bucketed relative bias on the scores",
                          {.signal = Signal::t5}, relative));
}

void add_recurrent_and_pooled(std::vector<Family>& c, const Family& attn, const Family& sinusoidal) {
    c.push_back(family("rnn", "Elman RNN (tanh), every step's state", Output::sequence, {.symmetric = false, .cut = true},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return ElmanRnn<S>::random(d, d, draw);
                       }));
    const auto a = attention_make({});
    c.push_back(pooled("attention-sum-pool", "attention, then sum over positions", attn, a, Pool::sum, true));
    c.push_back(pooled("attention-mean-pool", "attention, then mean over positions", attn, a, Pool::mean, true));
    c.push_back(pooled("attention-max-pool", "attention, then max over positions", attn, a, Pool::max, true));
    c.push_back(pooled("attention-first-readout", "attention, then the first position's row", attn, a, Pool::first, false));
    c.push_back(pooled("attention-last-readout", "attention, then the last position's row", attn, a, Pool::last, false));
    c.push_back(pooled("attention+sinusoidal-mean-pool", "sinusoidal signal, attention, mean pooling", sinusoidal,
                       attention_make({.signal = Signal::sinusoidal}), Pool::mean, false));
    c.push_back(family("deepsets", "DeepSets: rho(sum_i phi(x_i))", Output::pooled, {},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return DeepSets<S>::random(d, 2 * d, d, draw);
                       }));
    c.push_back(family("rnn-final-state", "Elman RNN, final state only", Output::pooled, {.symmetric = false},
                       []<class S>(std::type_identity<S>, Eigen::Index d, Draw<S>& draw, long) {
                           return [rnn = ElmanRnn<S>::random(d, d, draw)](const Mat<S>& x) { return rnn.final_state(x); };
                       }));
}

void add_sequence_layers(std::vector<Family>& c) {
    // The inner layers of the pooled ones, which are rows of their own too.
    const Family attn = attention("attention", "single-head scaled dot-product self-attention", {}, {.cut = false});
    const Family sinusoidal = attention("attention+sinusoidal", "sinusoidal position signal added, then attention",
                                        {.signal = Signal::sinusoidal}, {.symmetric = false, .absolute = true});
    add_per_position(c);
    add_attention(c, attn, sinusoidal);
    add_recurrent_and_pooled(c, attn, sinusoidal);
}

// ------------------------------------------------------------------------------ layers over named inputs

// A family over named inputs: its name, description, the texts of its flags and the theory along each axis; its
// factories are named_family's (layers/make_family.h).
Family described(std::string name, std::string description, std::vector<std::string> axes,
                 std::vector<std::string> inputs, std::vector<std::string> outputs, std::vector<Expectation> expectations) {
    Family f;
    f.name = std::move(name);
    f.description = std::move(description);
    f.axes = std::move(axes);
    f.inputs = std::move(inputs);
    f.outputs = std::move(outputs);
    f.expectations = std::move(expectations);
    return f;
}

constexpr Eigen::Index kWidth = 4;  // the features of every signature row (the `4` of its texts)

struct AttentionInputs {
    bool memory = false;         // q:n,4 and mem:m,4, else self-attention over x:n,4
    bool memory_positions = false;
    bool mask = false;           // pad:n:mask
    bool bias = false;           // bias:n,n
};

template <class S> LayerFn<S> attention_over(const AttentionInputs& how, Draw<S>& draw) {
    return [a = CrossAttention<S>::random(kWidth, draw, how.memory_positions), how](const NamedTensors<S>& in) {
        const Mat<S> q = as_matrix(in.at(how.memory ? "q" : "x"));
        const Mat<S> mem = how.memory ? as_matrix(in.at("mem")) : q;
        const std::vector<bool> padded = how.mask ? as_mask(in.at("pad")) : std::vector<bool>{};
        const Mat<S> bias = how.bias ? as_matrix(in.at("bias")) : Mat<S>{};
        return NamedTensors<S>{{"y", as_tensor<S>(a(q, mem, padded, bias))}};
    };
}

void add_named_attention(std::vector<Family>& c) {
    const auto add = [&c](const char* name, const char* description, std::vector<std::string> axes,
                          std::vector<std::string> inputs, std::vector<Expectation> e, const AttentionInputs& how) {
        Family text = described(name, description, std::move(axes), std::move(inputs), {"y:n,4"}, std::move(e));
        c.push_back(named_family<true>(std::move(text), [how]<class S>(std::type_identity<S>, Draw<S>& draw) {
            return attention_over<S>(how, draw);
        }));
    };
    const std::vector<Expectation> cross{{Property{"equivariance"}, "n", true}, {Property{"invariance"}, "m", true}};
    add("cross-attention", "queries n x 4 attend over a memory m x 4", {"n=1..6", "m=1..6"}, {"q:n,4", "mem:m,4"},
        cross, {.memory = true});
    std::vector<Expectation> positions = cross;
    positions[1].holds = false;
    add("cross-attention+memory-positions", "cross-attention with a sinusoidal position signal on the memory",
        {"n=1..6", "m=1..6"}, {"q:n,4", "mem:m,4"}, positions, {.memory = true, .memory_positions = true});
    add("attention+key-padding-mask", "self-attention with a key-padding mask that moves with the tokens", {"n=1..6"},
        {"x:n,4", "pad:n:mask"}, {{Property{"equivariance"}, "n", true}}, {.mask = true});
    add("attention+pairwise-bias", "self-attention with an n x n score bias, P B P^T", {"n=1..6"},
        {"x:n,4", "bias:n,n"}, {{Property{"equivariance"}, "n", true}}, {.bias = true});
}

struct GraphDesign {
    Aggregation aggregation = Aggregation::sum;
    bool node_index_feature = false, edge_order = false;
    bool readout = false;  // g:4 = the sum over nodes of y, instead of y
};

template <class S> MessagePassing<S> message_passing(const GraphDesign& how, Draw<S>& draw) {
    MessagePassing<S> mp = MessagePassing<S>::random(kWidth, 3, draw, how.aggregation);
    mp.node_index_feature = how.node_index_feature;
    mp.edge_order = how.edge_order;
    return mp;
}

template <class S> NamedTensors<S> graph_output(const GraphDesign& how, const Mat<S>& y) {
    if (how.readout) return {{"g", as_tensor<S>(MessagePassing<S>::readout(y), true)}};
    return {{"y", as_tensor<S>(y)}};
}

// Over an edge list: x:nodes,4, edge_index:2,edges:index=nodes, edge_attr:edges,3.
template <class S> LayerFn<S> graph_over_edge_list(const GraphDesign& how, Draw<S>& draw) {
    return [mp = message_passing<S>(how, draw), how](const NamedTensors<S>& in) {
        const NamedTensor<S>& edges = in.at("edge_index");
        return graph_output<S>(how, mp(as_matrix(in.at("x")), index_row(edges, 0), index_row(edges, 1),
                                       as_matrix(in.at("edge_attr"))));
    };
}

// Over real incidence matrices src, dst (edges x nodes; a one-hot row is an edge of the edge list): the same
// layer for sum and mean, where it is a rational function of every input (proofs-notes/signature-audit.md).
template <class S> LayerFn<S> graph_over_incidence(const GraphDesign& how, Draw<S>& draw) {
    return [mp = message_passing<S>(how, draw), how](const NamedTensors<S>& in) {
        return graph_output<S>(how, mp.over_incidence(as_matrix(in.at("x")), as_matrix(in.at("src")),
                                                      as_matrix(in.at("dst")), as_matrix(in.at("edge_attr"))));
    };
}

Family graph_text(std::string name, std::string description, const GraphDesign& how, bool incidence) {
    std::vector<std::string> inputs{"x:nodes,4"};
    if (incidence) {
        inputs.push_back("src:edges,nodes");
        inputs.push_back("dst:edges,nodes");
    } else {
        inputs.push_back("edge_index:2,edges:index=nodes");
    }
    inputs.push_back("edge_attr:edges,3");
    return described(std::move(name), std::move(description), {"nodes=1..6", "edges=0..10"}, std::move(inputs),
                     {how.readout ? "g:4" : "y:nodes,4"},
                     {{how.readout ? Property{"invariance"} : Property{"equivariance"}, "nodes", !how.node_index_feature},
                      {Property{"invariance"}, "edges", !how.edge_order}});
}

// Over incidence matrices the layer is a rational function of its inputs (certificates); over an edge list not.
template <bool Incidence> Family graph(std::string name, std::string description, const GraphDesign& how) {
    return named_family<Incidence>(graph_text(std::move(name), std::move(description), how, Incidence),
                                       [how]<class S>(std::type_identity<S>, Draw<S>& draw) {
                                           if constexpr (Incidence) return graph_over_incidence<S>(how, draw);
                                           else return graph_over_edge_list<S>(how, draw);
                                       });
}

void add_named_graphs(std::vector<Family>& c) {
    const char* over = "message passing over edge_index with edge features, ";
    c.push_back(graph<false>("message-passing-sum", std::string(over) + "sum aggregation", {}));
    c.push_back(graph<false>("message-passing-mean", std::string(over) + "mean aggregation (0 without neighbours)",
                             {.aggregation = Aggregation::mean}));
    c.push_back(graph<false>("message-passing-max", std::string(over) + "elementwise max aggregation",
                             {.aggregation = Aggregation::max}));
    c.push_back(graph<false>("message-passing-readout", "sum message passing, then the sum over nodes (graph level)",
                             {.readout = true}));
    c.push_back(graph<false>("message-passing+node-index", "sum message passing plus each node's index in a feature",
                             {.node_index_feature = true}));
    c.push_back(graph<false>("message-passing+edge-order",
                             "a recurrent aggregator: h <- h / 2 + m_e in edge-list order", {.edge_order = true}));
    const char* incidence = "message passing over real incidence matrices src, dst (edges x nodes), ";
    c.push_back(graph<true>("message-passing-sum-incidence", std::string(incidence) + "sum aggregation", {}));
    c.push_back(graph<true>("message-passing-mean-incidence", std::string(incidence) + "mean aggregation",
                            {.aggregation = Aggregation::mean}));
    c.push_back(graph<true>("message-passing-readout-incidence", std::string(incidence) + "sum, then graph readout",
                            {.readout = true}));
    c.push_back(graph<true>("message-passing+node-index-incidence", std::string(incidence) + "sum, plus node index",
                            {.node_index_feature = true}));
    c.push_back(graph<true>("message-passing+edge-order-incidence",
                            std::string(incidence) + "h <- h / 2 + dst_e^T m_e in edge order", {.edge_order = true}));
}

// Over token ids, position ids and a keep mask (1 = a real token), the inputs of a language model: V = 8 token ids,
// P = 64 positions (so that exact RoPE powers stay small). Each row's verdicts: equivariance along n with the
// position ids moved as data (order reaches the layer only through them), shift (the encoding is relative) and
// padding (pads, masked, leave the real tokens' outputs as they were), proofs-notes/position-aware-audits.md.
constexpr Eigen::Index kVocabulary = 8, kPositions = 64;

struct PositionVerdicts {
    bool equivariance = true, shift = true;
    std::optional<bool> padding = true;         // the padding row, where the table has one
    std::optional<bool> causal = std::nullopt;  // the causal and packing rows, where the table has them
    std::optional<bool> packing = std::nullopt;
};

// The values of an integer input (token or position ids) as T.
template <class T, class S> std::vector<T> as_integers(const NamedTensor<S>& t) {
    std::vector<T> out;
    for (const S& v : t.values) out.push_back(static_cast<T>(sc::to_double(v)));
    return out;
}

Family over_ids(std::string name, std::string description, const TokenAttentionDesign& how, const PositionVerdicts& v) {
    const bool pooled = how.readout != Readout::sequence;
    const Property along = pooled ? Property{"invariance"} : Property{"equivariance"};
    Family text = described(std::move(name), std::move(description), {"n=1..6"},
                            {"ids:n:token=" + std::to_string(kVocabulary), "pos:n:position=" + std::to_string(kPositions),
                             "keep:n:mask=keep"},
                            {pooled ? "g:4" : "y:n,4"},
                            {{along, "n", v.equivariance}, {Property{"shift"}, "n", v.shift}});
    if (v.padding) text.expectations.push_back({Property{"padding"}, "n", *v.padding});
    if (v.causal) text.expectations.push_back({Property{"causal"}, "n", *v.causal});
    if (v.packing) text.expectations.push_back({Property{"packing"}, "n", *v.packing});
    return named_family<false>(std::move(text),
                                   [how, pooled]<class S>(std::type_identity<S>, Draw<S>& draw) {
                                       return [a = TokenAttention<S>::random(how, kVocabulary, kPositions, kWidth, draw),
                                               pooled](const NamedTensors<S>& in) {
                                           const Mat<S> y = a(as_integers<int>(in.at("ids")),
                                                              as_integers<long>(in.at("pos")), as_mask(in.at("keep"), true));
                                           return NamedTensors<S>{{pooled ? "g" : "y", as_tensor<S>(y, pooled)}};
                                       };
                                   });
}

void add_named_positions(std::vector<Family>& c) {
    const char* lm = "token embedding and one attention head, ";
    const auto row = [&](const char* name, const std::string& what, const TokenAttentionDesign& how,
                         const PositionVerdicts& v) { c.push_back(over_ids(name, lm + what, how, v)); };
    row("tokens+rope", "RoPE at the position ids", {}, {.causal = false, .packing = false});
    row("tokens+alibi", "ALiBi bias of the position ids", {.signal = IdSignal::alibi}, {});
    row("tokens+t5", "T5 bucketed bias of the position ids", {.signal = IdSignal::t5}, {});
    row("tokens+learned", "a learned table row per position id added", {.signal = IdSignal::learned}, {.shift = false});
    row("tokens+sinusoidal", "the sinusoidal signal of the position ids added", {.signal = IdSignal::sinusoidal},
        {.shift = false});
    row("tokens+rope-by-index", "RoPE at the row index, the position ids ignored", {.signal = IdSignal::rope_by_index},
        {.equivariance = false, .padding = false});
    row("tokens+rope+causal-by-index", "RoPE at the position ids, causal by row index",
        {.causal = CausalBy::index}, {.equivariance = false, .causal = true, .packing = false});
    row("tokens+rope+causal-by-position", "RoPE at the position ids, causal by position id",
        {.causal = CausalBy::position}, {.causal = true, .packing = false});
    // Packed sequences apart by the position restart; a pad's own position id 0 would start a sequence too, so no
    // padding row.
    row("tokens+rope+packed", "RoPE at the position ids, causal within each packed sequence (from position id 0)",
        {.causal = CausalBy::packed}, {.equivariance = false, .padding = std::nullopt, .causal = true, .packing = true});
    row("tokens+rope+mask-ignored", "RoPE at the position ids, the mask ignored", {.mask_ignored = true},
        {.padding = false});
    row("tokens+rope-masked-mean", "RoPE, then the mean over the kept tokens", {.readout = Readout::masked_mean}, {});
    row("tokens+rope-mean-with-pads", "RoPE, then the mean over every row, pads included",
        {.readout = Readout::mean_all}, {.padding = false});
}

// Decoders that number their tokens themselves and decode in chunks with a key-value cache, over token ids and a
// keep mask: causal, order by the row index (not equivariant), and decoding in chunks equal to one pass when the
// cache keeps the positions right (layers/cached_attention.h). A chunked request (kChunksInput) is decoded chunk by
// chunk; any other request is one chunk.
Family cached(std::string name, std::string description, const CachedDesign& how, bool incremental) {
    Family text = described(std::move(name), "token embedding and one causal attention head with a key-value cache, " +
                                                 std::move(description),
                            {"n=1..6"}, {"ids:n:token=" + std::to_string(kVocabulary), "keep:n:mask=keep"}, {"y:n,4"},
                            {{Property{"equivariance"}, "n", false}, {Property{"causal"}, "n", true},
                             {Property{"incremental"}, "n", incremental}});
    return named_family<false>(std::move(text), [how]<class S>(std::type_identity<S>, Draw<S>& draw) {
        return [a = CachedAttention<S>::random(how, kVocabulary, kWidth, draw)](const NamedTensors<S>& in) {
            const std::vector<int> ids = as_integers<int>(in.at("ids"));
            const auto chunks = in.find(kChunksInput + "n");
            const std::vector<int> ends = chunks == in.end() ? std::vector<int>{static_cast<int>(ids.size())}
                                                             : as_integers<int>(chunks->second);
            return NamedTensors<S>{{"y", as_tensor<S>(a(ids, as_mask(in.at("keep"), true), ends))}};
        };
    });
}

void add_cached_decoders(std::vector<Family>& c) {
    c.push_back(cached("cached-rope", "RoPE at the positions it numbers, after the cache in a chunk", {}, true));
    c.push_back(cached("cached-rope-restart", "RoPE at the positions it numbers, from 0 in every chunk (the bug)",
                       {.restart = true}, false));
    c.push_back(cached("cached-alibi", "ALiBi at the positions it numbers, over the cached keys too",
                       {.signal = CachedSignal::alibi}, true));
    c.push_back(cached("cached-alibi-by-query-length",
                       "ALiBi sized by the query length: over the chunk's own keys only (the bug)",
                       {.signal = CachedSignal::alibi, .bias_by_query_length = true}, false));
}

std::vector<Family> make_catalog() {
    std::vector<Family> c;
    add_sequence_layers(c);
    add_named_attention(c);
    add_named_graphs(c);
    add_named_positions(c);
    add_cached_decoders(c);
    return c;
}
}  // namespace

const std::vector<Family>& catalog() {
    static const std::vector<Family> c = make_catalog();
    return c;
}

std::string layer_names(const char* separator) {
    std::string out;
    for (const Family& f : catalog()) out += (out.empty() ? "" : separator) + f.name;
    return out;
}

const Family& find_layer(const std::string& name) {
    for (const Family& f : catalog())
        if (f.name == name) return f;
    throw std::invalid_argument("unknown layer '" + name + "'; valid layers: " + layer_names());
}

}  // namespace permcheck
