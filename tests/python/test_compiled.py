"""A module against torch.compile(module), one call of the agreement property: compiled code that agrees holds,
with its compile time said; a compiled module that ran partly in eager Python (a graph break, a recompile limit)
is never counted as agreeing."""
import pytest
import torch
import torch._dynamo

import permcheck

SIGNATURE = dict(axes=["n=1..8"], inputs=["src:1,n,8"], outputs=["y:1,n,8"], cases=30)


def _layer():
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                            batch_first=True).eval()


def test_the_inductor_compiled_layer_agrees_with_the_layer_and_its_compile_time_is_said():
    layer = _layer()
    result = permcheck.audit(torch.compile(layer, dynamic=True), reference=layer, **SIGNATURE)
    assert result.verdict == "holds", result.explanation()
    assert result.compiled["compile_seconds"] > 0
    assert result.compiled["graph_breaks"] == 0 and result.compiled["eager_frames"] == 0


class Breaks(torch.nn.Module):
    """Reads a value back to Python in the middle (a graph break): half of it runs in eager."""

    def __init__(self):
        super().__init__()
        self.layer = _layer()

    def forward(self, src):
        y = self.layer(src)
        return y * 2 if y.sum().item() > 1e9 else y


def test_a_graph_break_is_said_and_not_counted_as_agreement():
    module = Breaks()
    result = permcheck.audit(torch.compile(module, backend="eager"), reference=module, **SIGNATURE)
    assert result.verdict == "undecided" and not result
    assert result.compiled["graph_breaks"] > 0 and "graph break" in result.explanation()
    with pytest.raises(permcheck.AuditError, match="eager"):
        permcheck.assert_agree(torch.compile(module, backend="eager"), module, **SIGNATURE)


def test_a_recompile_limit_is_said_and_not_counted_as_agreement(monkeypatch):
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 1)
    layer = _layer()
    result = permcheck.audit(torch.compile(layer, dynamic=False, backend="eager"), reference=layer, **SIGNATURE)
    assert result.verdict == "undecided" and result.compiled["eager_frames"] > 0
    assert "recompile limit" in result.explanation()
