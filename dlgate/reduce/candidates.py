"""The candidates a reduction tries, as plain functions of a graph and its inputs: a cut (removed
operators' outputs fed as inputs or constants carrying the reference's values), a
short-circuit, inputs made constants or dropped, shapes halved, attributes changed to
smaller or other-regime values, each re-inferred by the operators' specs; and the case a
candidate becomes (``as_case``), checked by ONNX's full checker. The reducer
(``dlgate.reduce.reducer``) decides which to keep."""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import torch

from dlgate.check import Prepared
from dlgate.graph import dynamic
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.onnx_model import Builder, to_onnx
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops.base import TensorType
from dlgate.ops.registry import get
from dlgate.reduce.identity import regime
from dlgate.seeds import sub_seed


def intermediates(graph: Graph, inputs: list) -> dict:
    """Every tensor's value in the reference run (PyTorch eager)."""
    with torch.no_grad():
        env = GraphModule(graph).run([torch.from_numpy(np.array(x, copy=True)) for x in inputs])
    return {t: v.detach().numpy().copy() for t, v in env.items()}


def cut_map(graph: Graph, env: dict, keep: list, as_const=(), need_input: bool = True) -> tuple:
    """(graph, inputs, order) of the operators ``keep`` (indices, topological order kept);
    ``order[k]`` is the tensor of ``graph`` that tensor ``k`` of the cut graph is. Tensors
    the kept operators consume from removed operators become graph inputs fed ``env``'s
    values, or constants with those values for those in ``as_const``. With
    ``need_input``, a cut left with no graph input feeds its first constant instead."""
    kept = [graph.nodes[i] for i in sorted(keep)]
    produced = {t for n in kept for t in n.outputs}
    consumed = {t for n in kept for t in n.inputs}
    old_consts, as_const = set(graph.consts), set(as_const)
    ins, consts = [], []
    for n in kept:
        for t in n.inputs:
            if t in produced or t in ins or t in consts:
                continue
            fed = t not in old_consts and t not in graph.inputs
            (consts if t in old_consts or (fed and t in as_const) else ins).append(t)
    if need_input and not ins and consts:  # feed the first constant instead
        ins.append(consts.pop(0))
    outs = [t for t in graph.outputs if t in produced]
    outs += [t for n in kept for t in n.outputs if t not in consumed and t not in outs]
    order = ins + consts + [t for n in kept for t in n.outputs]
    remap = {t: k for k, t in enumerate(order)}
    values = {remap[t]: (graph.values[t] if t in old_consts else np.array(env[t], copy=True)) for t in consts}
    g = Graph(tensors=[graph.tensors[t] for t in order],
              nodes=[Node(n.op, n.attrs, [remap[t] for t in n.inputs], [remap[t] for t in n.outputs]) for n in kept],
              inputs=[remap[t] for t in ins], consts=[remap[t] for t in consts],
              outputs=[remap[t] for t in outs], opset=graph.opset, values=values)
    g.dynamic = declared(graph, g, order)
    feeds = [np.array(env[t], copy=True) for t in ins]
    return g, feeds, order


def declared(graph: Graph, g: Graph, order: list | None = None) -> dict | None:
    """``g``'s symbolic dims, cut from ``graph``'s: every graph input of ``graph`` that ``g``
    keeps as a graph input keeps its declared symbols (``order[k]`` is the tensor of
    ``graph`` that tensor ``k`` of ``g`` is; None: the same ids). A candidate is compiled
    for symbolic dims as the case was, and run at its first binding only (a rewrite that
    fires only on symbolic dims keeps failing), or None when none is left."""
    if not graph.dynamic:
        return None
    origin = order if order is not None else list(range(len(g.tensors)))
    at = {origin[t]: k for k, t in enumerate(g.inputs)}
    dims = [[at[graph.inputs[p]], axis, sym] for p, axis, sym in graph.dynamic["dims"] if graph.inputs[p] in at]
    return {"dims": sorted(dims), "bindings": []} if dims else None


def cut(graph: Graph, env: dict, keep: list) -> tuple:
    """(graph, inputs) of the operators ``keep``; tensors they consume from removed
    operators become inputs fed ``env``'s values (see :func:`cut_map`)."""
    g, feeds, _ = cut_map(graph, env, keep)
    return g, feeds


def fed(graph: Graph, keep: list) -> list:
    """The tensors the operators ``keep`` consume from removed operators."""
    kept = [graph.nodes[i] for i in sorted(keep)]
    produced = {t for n in kept for t in n.outputs}
    out = []
    for n in kept:
        for t in n.inputs:
            if t not in produced and t not in graph.consts and t not in graph.inputs and t not in out:
                out.append(t)
    return out


def reinfer(graph: Graph, types: list, nodes: list) -> Graph | None:
    """The graph with ``nodes`` re-typed from ``types`` (see ``dlgate.graph.dynamic.reinfer``),
    its inputs' symbolic dims declared as ``graph``'s were (:func:`declared`)."""
    g = dynamic.reinfer(graph, types, nodes)
    if g is not None:
        g.dynamic = declared(graph, g)
    return g


def _sliced(x: np.ndarray, shape: tuple) -> np.ndarray:
    # np.require keeps a 0-d input 0-d (np.ascontiguousarray makes it 1-d)
    return np.require(x[tuple(slice(0, d) for d in shape)], requirements="C")


def reshaped(graph: Graph, inputs: list, shapes: dict):
    """(graph, inputs) with each graph input or constant ``t`` of ``shapes`` given that
    shape (its values sliced) and every output type re-inferred, or None when an
    operator's constraints reject it."""
    types = list(graph.tensors)
    for t, shape in shapes.items():
        types[t] = TensorType(types[t].dtype, tuple(shape))
    g = reinfer(graph, types, graph.nodes)
    if g is None:
        return None
    feeds = [_sliced(x, shapes[t]) if t in shapes else x for t, x in zip(graph.inputs, inputs)]
    for t in graph.consts:
        if t in shapes:
            g.values[t] = _sliced(np.asarray(graph.values[t]), shapes[t])
    return g, feeds


def resized(graph: Graph, inputs: list, k: int, shape: tuple):
    """(graph, inputs) with input ``k`` of ``shape`` (its values sliced) and every output
    type re-inferred, or None when an operator's constraints reject it."""
    return reshaped(graph, inputs, {graph.inputs[k]: tuple(shape)})


def _smaller(v):
    """A simpler value of an attribute, or None: integers halved, lists of integers halved
    element-wise, floats rounded to one decimal."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v // 2 if v > 1 else None
    if isinstance(v, float):
        r = round(v, 1)
        return r if r != v else None
    if isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        out = [x // 2 if x > 1 else x for x in v]
        return out if out != v else None
    return None


#: Per integer regime (:func:`dlgate.reduce.identity.regime`), the values of the other
#: regimes to try, nearest first.
_INT_ALTERNATIVES = {"0": (1, 2, -1, -2), "1": (2, 0, -1, -2), ">1": (1, 0, -1, -2),
                     "-1": (-2, 0, 1, 2), "<-1": (-1, 0, 1, 2)}
#: At most this many judged probes per attribute for its regime.
_ALT_PROBES = 8


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _numbers(v) -> bool:
    if isinstance(v, (list, tuple)):
        return all(_numbers(x) for x in v)
    return _is_int(v) or isinstance(v, float)


def alternatives(v) -> list:
    """Values of attribute value ``v`` in other regimes, in a fixed order: a boolean
    flipped; an integer at 0, 1, 2, -1, -2 (those of another regime, nearest first); a
    float negated, and 0 (1 and -1 for 0); a list of numbers (up to 8 elements, nested or
    not) changed one element at a time the same way. Strings, ``None`` and long lists:
    none (they always matter)."""
    if isinstance(v, bool):
        return [not v]
    if _is_int(v):
        return list(_INT_ALTERNATIVES[regime(v)])
    if isinstance(v, float):
        return [1.0, -1.0] if v == 0 else [-v, 0.0]
    if isinstance(v, (list, tuple)) and 0 < len(v) <= 8 and _numbers(v):
        out = []
        for i, x in enumerate(v):
            for y in alternatives(x):
                alt = list(v)
                alt[i] = y
                out.append(type(v)(alt))
        return out
    return []


def reattributed(graph: Graph, k: int, attrs: dict):
    """The graph with operator ``k``'s attributes replaced and every type re-inferred, or
    None when the specs reject it: its ``requires``, or its lowering (an attribute value
    the spec never draws, such as a negative scale under a square root)."""
    import random

    n = graph.nodes[k]
    try:
        get(n.op).onnx(Builder(graph.opset, random.Random(0)), attrs, [f"x{i}" for i in range(len(n.inputs))],
                       [f"y{i}" for i in range(len(n.outputs))])
    except Exception:  # the lowering cannot write this instance: not a candidate
        return None
    nodes = [Node(m.op, attrs if i == k else m.attrs, m.inputs, m.outputs) for i, m in enumerate(graph.nodes)]
    return reinfer(graph, graph.tensors, nodes)


def constified(graph: Graph, inputs: list, ks: list):
    """(graph, inputs) with graph inputs ``ks`` (indices) made constants of their values."""
    ts = [graph.inputs[k] for k in ks]
    values = dict(graph.values)
    for k, t in zip(ks, ts):
        values[t] = np.array(inputs[k], copy=True)
    g = Graph(graph.tensors, graph.nodes, [t for t in graph.inputs if t not in ts], list(graph.consts) + ts,
              graph.outputs, graph.opset, values)
    g.dynamic = declared(graph, g)
    return g, [x for k, x in enumerate(inputs) if k not in ks]


def bypassed(graph: Graph, inputs: list, k: int, s: int):
    """(graph, inputs, order) without operator ``k``, whose consumers and graph output read
    its input ``s`` instead of its output; the types after it re-inferred, tensors nothing
    uses left out (``order`` as in :func:`cut_map`), or None when a spec rejects it."""
    o = graph.nodes[k].outputs[0]
    swap = lambda ts: [s if t == o else t for t in ts]  # noqa: E731
    nodes = [Node(n.op, n.attrs, swap(n.inputs), n.outputs) for i, n in enumerate(graph.nodes) if i != k]
    outputs = list(dict.fromkeys(swap(graph.outputs)))
    g = reinfer(Graph(graph.tensors, nodes, graph.inputs, graph.consts, outputs, graph.opset, dict(graph.values)),
                graph.tensors, nodes)
    if g is None:
        return None
    env = {t: x for t, x in zip(graph.inputs, inputs)}
    return cut_map(g, env, list(range(len(nodes))), need_input=False)


def without_inputs(graph: Graph, inputs: list, ks: list):
    """(graph, inputs) with graph inputs ``ks`` (indices), which nothing consumes, dropped."""
    g = Graph(graph.tensors, graph.nodes, [t for k, t in enumerate(graph.inputs) if k not in ks], graph.consts,
              graph.outputs, graph.opset, dict(graph.values))
    g.dynamic = declared(graph, g)
    return g, [x for k, x in enumerate(inputs) if k not in ks]


def as_case(base: Prepared, graph: Graph, inputs: list, what: str = "reduced") -> Prepared:
    """A case of ``graph`` and ``inputs`` cut from ``base`` (its id suffixed ``-<what>``):
    valid inputs by construction, the model serialized from ``base``'s seed. A cut of an
    extreme case (``graph.extreme``) is one too: its values may hold NaN and Inf."""
    if getattr(base.graph, "extreme", None) is not None and graph.extreme is None:
        graph.extreme = base.graph.extreme
    model = to_onnx(graph, sub_seed(base.meta.get("seed", 0), "onnx"), doc=f"dlgate {what} {base.id}")
    return Prepared(f"{base.id}-{what}", dict(base.meta), graph, model.SerializeToString(), inputs,
                    {"valid": True, "method": what, "reason": ""})


#: Seconds ONNX's checker may take on one candidate in its forked child.
CHECK_DEADLINE_S = 30.0


def _check_here(model: bytes) -> bool:
    import onnx

    try:
        onnx.checker.check_model(onnx.load_from_string(model), full_check=True)
    except Exception:
        return False
    return True


def _checks(model: bytes) -> bool:
    """ONNX's full checker (strict shape inference) accepts the model. It runs in a forked
    child where the platform forks: its C++ shape inference dies by SIGSEGV on some
    malformed candidates the reducer's attribute probes make (onnx 1.23's GatherND with
    ``batch_dims=-2``), which in this process would end the whole run. A candidate that
    kills the checker, or keeps it past ``CHECK_DEADLINE_S``, is not valid. The child only
    checks and leaves by ``os._exit``; a fork costs milliseconds, a probe of the candidate
    by its compiler far more."""
    if not hasattr(os, "fork"):
        return _check_here(model)
    pid = os.fork()
    if pid == 0:  # the child: check, and leave without running the parent's exit handlers
        try:
            code = 0 if _check_here(model) else 1
        except BaseException:
            code = 1
        os._exit(code)
    deadline = time.monotonic() + CHECK_DEADLINE_S
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return False
        time.sleep(0.002)


def wrong_cone(graph, v: dict) -> list:
    """Indices of the operators the wrong outputs of ``v`` (its comparison's ``differing``,
    else ``output``) depend on; every operator when it names none (a wrong number of
    outputs). A cause whose operators lie outside them is not this output's."""
    cmp = v.get("comparison") or {}
    outs = cmp.get("differing") or ([cmp["output"]] if cmp.get("output") is not None else [])
    outs = [graph.outputs[o] for o in outs if isinstance(o, int) and 0 <= o < len(graph.outputs)]
    return graph.ancestors(outs) if outs else list(range(len(graph.nodes)))


def nearest_first(graph, comparison: dict | None) -> list:
    """Every operator of ``graph``, in the order a wrong answer (its ``comparison``) is
    looked for in: those its first wrong output (the one its finding is described by)
    depends on, nearest it first (a wrong value is most often made where it is read), then
    those of its other wrong outputs, nearest first, then the rest in graph order."""
    cmp = comparison or {}
    order = sorted(wrong_cone(graph, {"comparison": {"output": cmp.get("output")}}), reverse=True)
    order += sorted(set(wrong_cone(graph, {"comparison": cmp})) - set(order), reverse=True)
    return order + [i for i in range(len(graph.nodes)) if i not in set(order)]
