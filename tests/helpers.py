"""Shared test helpers: running a graph on the references and comparing results."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort

from dlgate.graph.ir import Graph

TOL = {"float16": (1e-2, 1e-2), "float32": (1e-3, 1e-4), "float64": (1e-6, 1e-9)}


def ort_run(model: bytes, g: Graph, feeds: list, all_nodes: bool = False) -> list:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {g.name(t): x for t, x in zip(g.inputs, feeds)})


def finite(*arrays) -> bool:
    return all(not np.issubdtype(a.dtype, np.floating) or np.isfinite(a).all() for a in arrays)


def mismatch(a: np.ndarray, b: np.ndarray, scale: float = 1.0) -> str | None:
    """None when a and b agree in dtype, shape, non-finite positions and values."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    if np.issubdtype(a.dtype, np.floating):
        rtol, atol = TOL[str(a.dtype)]
        x, y = a.astype(np.float64), b.astype(np.float64)
        if not np.array_equal(np.isnan(x), np.isnan(y)):
            return "NaN positions differ"
        if not np.allclose(x, y, rtol=rtol, atol=atol * scale, equal_nan=True):
            bad = ~np.isclose(x, y, rtol=rtol, atol=atol * scale, equal_nan=True)
            return f"values differ at {int(bad.sum())} places, e.g. {x[bad][:3]} vs {y[bad][:3]}"
        return None
    if not np.array_equal(a, b):
        return f"values differ at {int((a != b).sum())} places"
    return None


def generated_cases(out_dir, gen, root: str, campaign: str, limit: int):
    """The prepared cases ``root``/``campaign``/0, 1, ... of generator ``gen`` (at most
    ``limit``), written under ``out_dir`` one at a time: an end-to-end test reads on until
    it has compared enough cases of each kind, and stops there."""
    from dlgate.case import make_case
    from dlgate.check import load_case, prepare

    for i in range(limit):
        yield prepare(*load_case(make_case(gen, root, campaign, i).write(str(out_dir))))
