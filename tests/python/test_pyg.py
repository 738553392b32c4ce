"""PyTorch Geometric's current layers audited as its users run them: message passing (GCNConv, GATConv, SAGEConv
with an LSTM aggregation over edges sorted by target), global pools over a batch vector, and a dense readout of a
batch of graphs whose edges stay inside their graph (`index=nodes,within=batch`)."""
import pytest
import torch
from torch_geometric.nn import GATConv, GCNConv, SAGEConv, global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.utils import to_dense_adj

import permcheck

GRAPH = dict(axes=["nodes=1..8", "edges=0..16"], inputs=["x:nodes,4", "edge_index:2,edges:index=nodes"],
             outputs=["y:nodes,4"])


@pytest.mark.parametrize("layer", [lambda: GCNConv(4, 4), lambda: GATConv(4, 4, heads=2, concat=False)],
                         ids=["GCNConv", "GATConv"])
def test_message_passing_is_equivariant_in_the_nodes_and_invariant_in_the_edges(layer):
    torch.manual_seed(0)
    permcheck.assert_equivariant(layer().eval(), **GRAPH)


# PyG's LSTM aggregation requires the edges sorted by target and at least one edge.
SORTED = dict(axes=["nodes=1..5", "edges=1..8"], inputs=["x:nodes,4", "edge_index:2,edges:index=nodes,sorted=1"],
              outputs=["y:nodes,4"])


def test_an_lstm_aggregation_is_equivariant_in_the_nodes_and_reads_the_order_of_a_neighbourhood():
    torch.manual_seed(0)
    sage = SAGEConv(4, 4, aggr="lstm").double().eval()
    permcheck.assert_equivariant(sage, along="nodes", **SORTED)
    result = permcheck.audit(sage, along="edges", **SORTED)
    assert result.verdict == "violated" and result.counterexample.lengths["edges"] == 2  # two edges into one node


class Pool(torch.nn.Module):
    def __init__(self, pool):
        super().__init__()
        self.pool = pool

    def forward(self, x, batch, size):
        return self.pool(x, batch, size=int(size))


@pytest.mark.parametrize("pool", [global_add_pool, global_mean_pool, global_max_pool])
def test_a_global_pool_is_equivariant_in_the_graphs(pool):
    permcheck.assert_equivariant(Pool(pool), axes=["nodes=1..8", "graphs=1..4"],
                                 inputs=["x:nodes,4", "batch:nodes:index=graphs,sorted"], outputs=["g:graphs,4"],
                                 arguments={"x": "x", "batch": "batch", "size": "length:graphs"})


class InDegrees(torch.nn.Module):
    """Each graph's in-degrees, sorted, read off its dense adjacency matrix (to_dense_adj over the batch vector)."""

    def forward(self, edge_index, batch):
        return to_dense_adj(edge_index, batch, max_num_nodes=8).sum(-2).sort(-1).values


def _dense(within):
    edges = "edge_index:2,edges:index=nodes" + (",within=batch" if within else "")
    return dict(axes=["nodes=1..8", "graphs=1..3", "edges=0..8"], inputs=[edges, "batch:nodes:index=graphs,sorted"],
                outputs=["d:graphs,8"])


def test_a_dense_readout_holds_when_the_edges_stay_inside_their_graph():
    permcheck.assert_equivariant(InDegrees(), **_dense(within=True))


def test_edges_that_cross_graphs_break_a_dense_readout():
    result = permcheck.audit(InDegrees(), **_dense(within=False))
    assert result.verdict == "violated", result.explanation()
    saved = result.record["counterexample"]["inputs"]
    edges, batch = saved["edge_index"], saved["batch"]
    assert any(batch[s] != batch[t] for s, t in zip(*edges))  # an edge between two graphs


def test_within_names_a_batch_vector():
    result = permcheck.audit(InDegrees(), axes=["nodes=1..8", "graphs=1..3", "edges=0..8"],
                             inputs=["edge_index:2,edges:index=nodes,within=x", "batch:nodes:index=graphs"],
                             outputs=["d:graphs,8"])
    assert result.verdict == "error" and "within=x" in result.explanation()
