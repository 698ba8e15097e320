"""Diversity metrics on hand-built graphs with known answers."""
from __future__ import annotations

import pytest

from dlgate import stats


def _t(shape, dtype="float32"):
    return {"dtype": dtype, "shape": list(shape)}


def _graph():
    # x -> Relu -> Add(·, x) -> Sigmoid ; Relu also feeds Sigmoid2
    return {
        "tensors": [_t([2, 3]), _t([2, 3]), _t([2, 3]), _t([2, 3]), _t([2, 3])],
        "nodes": [
            {"op": "Relu", "attrs": {}, "inputs": [0], "outputs": [1]},
            {"op": "Add", "attrs": {}, "inputs": [1, 0], "outputs": [2]},
            {"op": "Sigmoid", "attrs": {}, "inputs": [2], "outputs": [3]},
            {"op": "Sigmoid", "attrs": {}, "inputs": [1], "outputs": [4]},
        ],
        "inputs": [0], "consts": [], "outputs": [3, 4], "opset": 18,
    }


def test_graph_level_metrics():
    r = stats.compute([_graph()], ops=("Relu", "Add", "Sigmoid"))
    assert r["NOO"] == 4
    assert r["NOT"] == 3
    assert r["NOP"] == 3  # Relu->Add, Add->Sigmoid, Relu->Sigmoid
    assert r["NTR"] == 1  # Relu->Add->Sigmoid
    assert r["NSA"] == 3  # both Sigmoids see the same input type and attributes


def test_operation_level_metrics():
    r = stats.compute([_graph()], ops=("Relu", "Add", "Sigmoid"))
    assert r["OTC"] == pytest.approx(1.0)
    assert r["IDC"] == pytest.approx(1.0)
    # out-degrees: Relu {2}, Add {1}, Sigmoid {0}
    assert r["ODC"] == pytest.approx(1.0)
    # successors: Relu {Add, Sigmoid}, Add {Sigmoid}, Sigmoid {}
    assert r["SEC"] == pytest.approx((2 / 3 + 1 / 3) / 3)
    assert r["DEC"] == pytest.approx((1 / 9) / 3)
    assert r["SAC"] == pytest.approx(1.0)
    assert r["div_E"] == pytest.approx(3 / 9)
    assert 0 < r["div_V"] < 1


def test_missing_types_are_listed():
    r = stats.compute([_graph()], ops=("Relu", "Add", "Sigmoid", "Tanh"))
    assert r["types_missing"] == ["Tanh"] and r["OTC"] == pytest.approx(0.75)


def test_render_has_every_metric():
    text = stats.render(stats.compute([_graph()], ops=("Relu", "Add", "Sigmoid")))
    for m in stats.GRAPH_METRICS + stats.OP_METRICS:
        assert m in text
