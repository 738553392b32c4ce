// The catalog's message-passing rows over named inputs (edge lists and incidence matrices).
#include "layers/catalog_parts.h"

#include "layers/message_passing.h"

namespace permcheck::catalog_parts {

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
template <class S> SignatureLayerFn<S> graph_over_edge_list(const GraphDesign& how, Draw<S>& draw) {
    return [mp = message_passing<S>(how, draw), how](const NamedTensors<S>& in) {
        const NamedTensor<S>& edges = in.at("edge_index");
        return graph_output<S>(how, mp(as_matrix(in.at("x")), index_row(edges, 0), index_row(edges, 1),
                                       as_matrix(in.at("edge_attr"))));
    };
}

// Over real incidence matrices src, dst (edges x nodes; a one-hot row is an edge of the edge list): the same
// layer for sum and mean, where it is a rational function of every input (proofs-notes/signature-audit.md).
template <class S> SignatureLayerFn<S> graph_over_incidence(const GraphDesign& how, Draw<S>& draw) {
    return [mp = message_passing<S>(how, draw), how](const NamedTensors<S>& in) {
        return graph_output<S>(how, mp.over_incidence(as_matrix(in.at("x")), as_matrix(in.at("src")),
                                                      as_matrix(in.at("dst")), as_matrix(in.at("edge_attr"))));
    };
}

SignatureText graph_text(const GraphDesign& how, bool incidence) {
    SignatureText t{{"nodes=1..6", "edges=0..10"}, {"x:nodes,4"}, {how.readout ? "g:4" : "y:nodes,4"},
                    {{"nodes", how.readout ? Property::invariance : Property::equivariance, !how.node_index_feature},
                     {"edges", Property::invariance, !how.edge_order}}};
    if (incidence) {
        t.inputs.push_back("src:edges,nodes");
        t.inputs.push_back("dst:edges,nodes");
    } else {
        t.inputs.push_back("edge_index:2,edges:index=nodes");
    }
    t.inputs.push_back("edge_attr:edges,3");
    return t;
}

// Over incidence matrices the layer is a rational function of its inputs (certificates); over an edge list not.
template <bool Incidence> SignatureFamily graph(std::string name, std::string description, const GraphDesign& how) {
    return signature_family<Incidence>(std::move(name), std::move(description), graph_text(how, Incidence),
                                       [how]<class S>(std::type_identity<S>, Draw<S>& draw) {
                                           if constexpr (Incidence) return graph_over_incidence<S>(how, draw);
                                           else return graph_over_edge_list<S>(how, draw);
                                       });
}

void add_signature_graphs(std::vector<SignatureFamily>& c) {
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


}  // namespace permcheck::catalog_parts
