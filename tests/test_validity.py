"""Validity of a large batch: 2,000 models of 1-20 nodes from one seed, restricted to
onnxruntime's probed support, pass ONNX's full checker, run on onnxruntime's CPU provider
with graph optimizations disabled, and agree with the PyTorch module.

Agreement is checked at two levels. Per node: every operator's PyTorch implementation,
fed onnxruntime's own intermediate values, reproduces onnxruntime's outputs (this checks
both lowerings of every node in every model). Whole model: where the PyTorch run is
numerically valid (no NaN/Inf anywhere), the outputs agree, unless the first node where
the two runs diverge sees agreeing inputs and amplifies their rounding-level differences
(a discontinuity such as Floor, or ill-conditioning such as Tan near a pole), or
onnxruntime overflows to Inf where the result is finite: legitimate differences or runtime
defects, not lowering errors.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import helper

from dlgate.case import make_case
from dlgate.graph.generator import GenConfig, Generator
from dlgate.graph.ir import random_values
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops.registry import all_specs, get
from dlgate.oracle import ub
from tests import pinned_support
from tests.helpers import TOL, U8S8_SATURATING, finite, mismatch, ort_run, saturating_cpu

N, CHUNKS = 2000, 8


#: One xdist worker runs the whole module: the batch's operator lists, gathered as the chunks
#: check its cases, serve the coverage test, which would otherwise generate all 2,000 again.
pytestmark = pytest.mark.xdist_group("validity")


@pytest.fixture(scope="module")
def generator(tmp_path_factory):
    # onnxruntime's pinned support (tests/pinned_support.py) where it matches, else probed
    root = str(tmp_path_factory.getbasetemp().parent / "dlgate-cache")
    return Generator(GenConfig(min_nodes=1, max_nodes=20, support=pinned_support.support("onnxruntime", root)))


#: The operator names of the batch's cases by index, as the tests of this process made them
#: (a case is a pure function of the generator's configuration, its seed and its index).
_OPS: dict = {}


def _case(generator, i: int):
    c = make_case(generator, "validity", "v", i)
    _OPS[i] = c.graph.op_names()
    return c


def _expose_all(model_bytes: bytes, g) -> bytes:
    m = onnx.load_from_string(model_bytes)
    have = {o.name for o in m.graph.output}
    for n in g.nodes:
        for t in n.outputs:
            if g.name(t) not in have:
                tt = g.tensors[t]
                from dlgate import dtypes

                m.graph.output.append(helper.make_tensor_value_info(g.name(t), dtypes.ONNX[tt.dtype], list(tt.shape)))
    return m.SerializeToString()


def _torch_node(n, ins):
    with torch.no_grad():
        outs = get(n.op).torch(n.attrs, *[torch.from_numpy(np.array(x, copy=True)) for x in ins])
    return [y.numpy() for y in (outs if isinstance(outs, (tuple, list)) else (outs,))]


def _ill_conditioned(n, ins) -> bool:
    """Whether the node's own output moves beyond tolerance when its float inputs move by
    a few units of rounding: two correct implementations may then differ."""
    rng = np.random.default_rng(0)
    base = _torch_node(n, ins)
    for _ in range(3):
        noisy = [x * (1 + ub.NOISE[x.dtype.name] * rng.uniform(-1, 1, x.shape)).astype(x.dtype)
                 if x.dtype.name in ub.NOISE else x for x in (np.asarray(v) for v in ins)]
        if any(mismatch(a, b) for a, b in zip(base, _torch_node(n, noisy))):
            return True
    return False


def _cancellation(n, ins, a, b) -> bool:
    """Normalizations subtract a mean from values of their own magnitude: implementations
    may differ by a few units of rounding of max|x|, times |scale| / sqrt(epsilon). LRN:
    onnxruntime slides its window sum along the channels (adding the square that enters,
    subtracting the one that leaves), so a large square leaves its rounding behind in the
    small windows after it: a few units of rounding of the largest square of the column,
    times the number of channels, relative to the divisor's base. Other operators whose
    rounding error the oracle bounds by their operands (a DFT...): ``_operand_bound``."""
    if n.op == "LRN":
        x = np.asarray(ins[0])
        if x.dtype.name not in ub.NOISE or not x.size:
            return False
        xw = x.astype(np.float64)
        y = _torch_node(n, [xw])[0]
        size, c = n.attrs["size"], x.shape[1]
        top = (xw * xw).max(axis=1, keepdims=True)
        base = np.abs(xw) / np.maximum(np.abs(y), np.finfo(np.float64).tiny)  # (bias + alpha/size * ss) ** beta
        ss_err = 8 * ub.NOISE[x.dtype.name] * c * top
        rel = n.attrs["beta"] * (n.attrs["alpha"] / size) * ss_err / base ** (1 / n.attrs["beta"])
        bound = np.abs(y) * rel + 8 * ub.NOISE[x.dtype.name] * np.abs(y)
        return bool((np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)) <= bound).all())
    if get(n.op).family != "norm" or "epsilon" not in n.attrs:
        return bool(_operand_bound(n, ins, a, b))
    x = np.asarray(ins[0])
    if x.dtype.name not in ub.NOISE or not x.size:
        return False
    gain = max((float(np.abs(np.asarray(v)).max()) for v in ins[1:2] if np.asarray(v).size), default=1.0)
    bound = 8 * ub.NOISE[x.dtype.name] * float(np.abs(x).max()) * gain / np.sqrt(n.attrs["epsilon"])
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max()) <= bound


def _operand_bound(n, ins, a, b) -> bool | None:
    """Where the oracle bounds a node's rounding error by its operands (``ub.rounding_bound``:
    a DFT's twiddle angles, a cancelling addition, a fused motif...), whether onnxruntime's
    output ``a`` lies within twice that bound (as the oracle's instability check allows) plus
    the tolerance of the reference's ``b``; None for other nodes."""
    y = np.asarray(b)
    if y.dtype.name not in ub.NOISE or not y.size:
        return None
    t_ins = [torch.from_numpy(np.array(x, copy=True)) for x in ins]
    bound = ub.rounding_bound(get(n.op), n.attrs, t_ins, torch.from_numpy(y.copy()))
    if bound is None:
        return None
    rtol, atol = TOL[y.dtype.name]
    yw = y.astype(np.float64)
    err = np.abs(np.asarray(a, np.float64) - yw)
    return bool((err <= 2 * bound.numpy() + atol + rtol * np.abs(yw)).all())


def _half(*arrays) -> bool:
    return any(np.asarray(a).dtype == np.float16 for a in arrays)


def _check_case(case):
    g = case.graph
    where = f"case {case.id} ops {g.op_names()}"
    onnx.checker.check_model(onnx.load_from_string(case.model_bytes), full_check=True)
    feeds = [random_values(np.random.default_rng(case.index), g.tensors[t]) for t in g.inputs]
    names = [g.name(t) for t in g.outputs] + [g.name(t) for n in g.nodes for t in n.outputs if t not in g.outputs]
    try:
        ort_vals = dict(zip(names, ort_run(_expose_all(case.model_bytes, g), g, feeds)))
    except Exception as e:
        # an attribute regime onnxruntime declines (recurrent layout=1...), which probing
        # by operator x dtype x opset cannot see: the backend would call it unsupported
        from dlgate.backends.onnxruntime import OnnxRuntime

        if OnnxRuntime.__new__(OnnxRuntime).unsupported(e):
            return "unsupported"
        raise
    env_ort = {t: x for t, x in zip(g.inputs, feeds)}
    env_ort.update({t: np.asarray(g.values[t]) for t in g.consts})
    env_ort.update({t: ort_vals[g.name(t)] for n in g.nodes for t in n.outputs})
    # Per node: both lowerings of every node agree on identical inputs. Not for float16:
    # onnxruntime's CPU provider runs float16 operators it has no kernel for in float32 and
    # drops the casts between consecutive ones, so a float16 value it exposes is not the
    # value the next operator consumed.
    for n in g.nodes:
        ins = [env_ort[t] for t in n.inputs]
        outs = [env_ort[t] for t in n.outputs]
        if not finite(*ins) or _half(*ins, *outs):
            continue
        if ub.undefined_at(g, g.nodes.index(n), n, [torch.from_numpy(np.array(x, copy=True)) for x in ins]):
            continue  # integer overflow or an out-of-range cast: runtimes differ legitimately
        for t, y in zip(n.outputs, _torch_node(n, ins)):
            if finite(y, env_ort[t]):
                err = mismatch(env_ort[t], y)
                if err is not None and (_ill_conditioned(n, ins) or _cancellation(n, ins, env_ort[t], y)):
                    continue  # e.g. LayerNormalization of a row constant to a few ulps
                if err is not None and n.op in U8S8_SATURATING and saturating_cpu():
                    continue  # onnxruntime's documented u8s8 saturation on this CPU (tests.helpers)
                assert err is None, f"{where}: node {n.op} {n.attrs}: {err}"
    # Whole model, where the reference run is numerically valid.
    with torch.no_grad():
        env_t = GraphModule(g).run([torch.from_numpy(x.copy()) for x in feeds])
    env_t = {t: v.detach().numpy() for t, v in env_t.items()}
    if not finite(*env_t.values()):
        return "invalid"
    bad = [t for t in g.outputs if mismatch(env_ort[t], env_t[t]) is not None]
    if not bad:
        return "agree"
    # The first node where the runs diverge must see agreeing inputs (so the two models
    # are wired and parameterized alike), and the divergence must come from the operator
    # itself amplifying rounding-level input differences (its own output moves when fed
    # the other run's inputs: ill-conditioning or a discontinuity), or from float16.
    for n in g.nodes:
        if any(mismatch(env_ort[t], env_t[t]) for t in n.outputs):
            ins_ort, ins_t = [env_ort[t] for t in n.inputs], [env_t[t] for t in n.inputs]
            assert all(mismatch(a, b) is None for a, b in zip(ins_ort, ins_t)), f"{where}: inputs of {n.op} differ"
            if ub.undefined_at(g, g.nodes.index(n), n, [torch.from_numpy(np.array(x, copy=True)) for x in ins_t]):
                return "undefined"  # an out-of-range cast or integer overflow: runtimes differ legitimately
            moved = any(mismatch(a, b) for a, b in zip(_torch_node(n, ins_ort), _torch_node(n, ins_t)))
            # onnxruntime overflowing where the result is finite (its float64 Softplus computes
            # log(1 + exp(x)) literally): a runtime defect, not a lowering disagreement
            overflow = not finite(*[env_ort[t] for t in n.outputs]) and finite(*[env_t[t] for t in n.outputs])
            conditioned = _ill_conditioned(n, ins_ort) or any(
                _cancellation(n, ins_ort, env_ort[t], env_t[t]) for t in n.outputs)
            if n.op in U8S8_SATURATING and saturating_cpu():
                return "amplified"  # onnxruntime's documented u8s8 saturation on this CPU (tests.helpers)
            assert moved or overflow or _half(*ins_ort) or conditioned, (
                f"{where}: outputs {bad} differ from node {n.op} {n.attrs} on, though its inputs agree")
            return "amplified"
    raise AssertionError(f"{where}: outputs differ but no node diverges")


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_batch_is_valid_and_agrees(generator, chunk):
    outcome = {}
    for i in range(chunk, N, CHUNKS):
        r = _check_case(_case(generator, i))
        outcome[r] = outcome.get(r, 0) + 1
    valid = outcome.get("agree", 0) + outcome.get("amplified", 0)
    assert outcome.get("agree", 0) >= 0.9 * valid, outcome


def test_batch_covers_the_operator_set(generator):
    specs = all_specs()
    seen = set()
    for i in range(N):
        seen.update(_OPS[i] if i in _OPS else _case(generator, i).graph.op_names())
    onnx_types = {op for n in seen for op in (specs[n].onnx_op, *specs[n].onnx_ops)}
    assert len(onnx_types) >= 170, sorted(onnx_types)
    # nearly every spec onnxruntime runs in some form (its probed support) is drawn; every
    # spec at all is drawn by the unrestricted generator (test_ops_coverage)
    supported = {name for name, _, _ in generator.cfg.support}
    assert len(supported - seen) <= 0.03 * len(supported), sorted(supported - seen)
