"""Auditing a graph layer from pytest: message passing over an edge list, with a pooled readout.

    PYTHONPATH=PREFIX/share/permcheck/python python3 -m pytest examples/pytest -p permcheck.pytest_plugin

Two axes: renumbering the nodes renumbers y's rows (the edge list's indices follow, `index=nodes`), reordering
the edges changes nothing; the readout g is invariant to both. An aggregator that reads the incoming messages in
edge-list order (a recurrent one) is caught on the edges axis.
"""
import pytest
import torch

import permcheck

SIGNATURE = dict(axes=["nodes=1..8", "edges=0..16"],
                 inputs=["x:nodes,4", "edge_index:2,edges:index=nodes", "edge_attr:edges,3"],
                 outputs=["y:nodes,4", "g:4"])


class MessagePassing(torch.nn.Module):
    """m_e = relu(x[src] Wm + edge_attr We) to each edge's target; y = tanh(x Ws + sum of m) ; g = sum of y."""

    def __init__(self, recurrent=False):
        super().__init__()
        self.m, self.e, self.s = torch.nn.Linear(4, 4), torch.nn.Linear(3, 4, bias=False), torch.nn.Linear(4, 4)
        self.r = torch.nn.Linear(4, 4, bias=False)
        self.recurrent = recurrent

    def forward(self, x, edge_index, edge_attr):
        source, target = edge_index
        messages = torch.relu(self.m(x[source]) + self.e(edge_attr))
        aggregate = torch.zeros_like(x[:, :4])
        if self.recurrent:  # h = tanh(h Wr + m), message after message in edge-list order
            for k in range(messages.shape[0]):
                t = target[k]
                aggregate = aggregate.index_put((t[None],), torch.tanh(self.r(aggregate[t]) + messages[k])[None])
        else:
            aggregate = aggregate.index_add(0, target, messages)
        y = torch.tanh(self.s(x) + aggregate)
        return {"y": y, "g": y.sum(0)}


def test_message_passing_is_equivariant_in_nodes_and_invariant_in_edges():
    torch.manual_seed(0)
    permcheck.assert_equivariant(MessagePassing(), **SIGNATURE)


def test_a_recurrent_aggregator_depends_on_the_edge_order():
    torch.manual_seed(0)
    result = permcheck.audit(MessagePassing(recurrent=True), **SIGNATURE)
    assert result.verdict == "violated" and result.counterexample.axis_at_fault == "edges"
    assert result.counterexample.lengths["edges"] == 2  # shrunk to two edges into one node
