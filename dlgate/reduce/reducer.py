"""Shrinking a failing case while its failure keeps its signature.

The graph is cut rather than rewritten: removing an operator turns each of its outputs
that a kept operator consumes into a new graph input carrying the *reference's value* of
that tensor on the original inputs. The kept operators therefore see exactly the values
they saw in the failing run, so a miscompilation that depends on them survives the cut,
and no re-solving of shapes or re-search of inputs is needed. Probes:

1. each operator alone (most compiler bugs need one or two operators);
2. greedy one-at-a-time removal, last operator first, repeated to a fixpoint;
3. shapes: each input dimension halved in turn (the input's values sliced), every
   operator's output type re-inferred by its spec and the model re-checked by ONNX's full
   checker, repeated while it keeps failing;
4. attributes: each operator's integer attributes halved (lists element-wise) and float
   attributes rounded to one decimal, with the same re-inference and checks as shapes;
5. values: the inputs rounded to two decimals, then to integers, where it still fails.

A probe keeps a candidate when the backend, run in its isolated worker like any case,
fails the same way: the same verdict class and, for errors and crashes, the same
normalized signature; for mismatches, a mismatch on the same backend (the mismatch
signature names the graph's operators, which reduction changes by design). The search is
deterministic (a fixed order of candidates) and bounded by ``max_seconds`` and
``max_probes``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from dlgate.backends.base import BackendSpec, Model
from dlgate.check import CheckConfig, Prepared, judge_backend
from dlgate.graph.ir import Graph, Node
from dlgate.materialize.onnx_model import to_onnx
from dlgate.materialize.torch_model import GraphModule
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import all_finite
from dlgate.seeds import sub_seed

_VALUE_CLASSES = (V.MISMATCH, V.SHAPE_MISMATCH, V.DTYPE_MISMATCH)


@dataclass
class Target:
    backend: BackendSpec
    verdict: str
    signature: str | None = None

    def matches(self, v: V.Verdict) -> bool:
        if v.verdict != self.verdict:
            return False
        if v.verdict in _VALUE_CLASSES:
            return True
        return (v.signature or {}).get("id") == self.signature


@dataclass
class Reduced:
    case: Prepared
    verdict: V.Verdict
    original_nodes: int
    probes: int = 0
    seconds: float = 0.0
    hit_limit: bool = False
    log: list = field(default_factory=list)


def intermediates(graph: Graph, inputs: list) -> dict:
    """Every tensor's value in the reference run (PyTorch eager)."""
    with torch.no_grad():
        env = GraphModule(graph).run([torch.from_numpy(np.array(x, copy=True)) for x in inputs])
    return {t: v.detach().numpy().copy() for t, v in env.items()}


def cut(graph: Graph, env: dict, keep: list) -> tuple:
    """(graph, inputs) of the operators ``keep`` (indices, topological order kept); tensors
    they consume from removed operators become inputs fed ``env``'s values."""
    kept = [graph.nodes[i] for i in sorted(keep)]
    produced = {t for n in kept for t in n.outputs}
    consumed = {t for n in kept for t in n.inputs}
    old_consts = set(graph.consts)
    ins, consts = [], []
    for n in kept:
        for t in n.inputs:
            if t in produced or t in ins or t in consts:
                continue
            (consts if t in old_consts else ins).append(t)
    if not ins and consts:  # a model needs an input: feed the first constant instead
        ins.append(consts.pop(0))
    outs = [t for t in graph.outputs if t in produced]
    outs += [t for n in kept for t in n.outputs if t not in consumed and t not in outs]
    order = ins + consts + [t for n in kept for t in n.outputs]
    remap = {t: k for k, t in enumerate(order)}
    g = Graph(tensors=[graph.tensors[t] for t in order],
              nodes=[Node(n.op, n.attrs, [remap[t] for t in n.inputs], [remap[t] for t in n.outputs]) for n in kept],
              inputs=[remap[t] for t in ins], consts=[remap[t] for t in consts],
              outputs=[remap[t] for t in outs], opset=graph.opset,
              values={remap[t]: graph.values[t] for t in consts})
    feeds = [np.array(env[t], copy=True) for t in ins]
    return g, feeds


def reinfer(graph: Graph, types: list, nodes: list) -> Graph | None:
    """The graph with ``nodes`` and every operator's output types re-inferred by its spec
    from ``types`` (whose graph inputs may have changed), or None when a spec rejects it."""
    from dlgate.spec.base import all_true
    from dlgate.spec.registry import get

    types = list(types)
    for n in nodes:
        spec = get(n.op)
        ins = [types[i] for i in n.inputs]
        try:
            if not all_true(spec.requires(ins, n.attrs)):
                return None
            outs = spec.infer(ins, n.attrs)
        except Exception:  # attributes that encode the old shapes, or cannot go together
            return None
        if any(d < 1 for o in outs for d in o.shape):
            return None
        for o, ty in zip(n.outputs, outs):
            types[o] = ty
    return Graph(types, nodes, graph.inputs, graph.consts, graph.outputs, graph.opset, dict(graph.values))


def resized(graph: Graph, inputs: list, k: int, shape: tuple):
    """(graph, inputs) with input ``k`` of ``shape`` (its values sliced) and every output
    type re-inferred, or None when an operator's constraints reject it."""
    from dlgate.spec.base import TensorType

    types = list(graph.tensors)
    t = graph.inputs[k]
    types[t] = TensorType(types[t].dtype, shape)
    g = reinfer(graph, types, graph.nodes)
    if g is None:
        return None
    feeds = list(inputs)
    feeds[k] = np.ascontiguousarray(inputs[k][tuple(slice(0, d) for d in shape)])
    return g, feeds


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


def reattributed(graph: Graph, k: int, attrs: dict):
    """The graph with operator ``k``'s attributes replaced and every type re-inferred, or
    None when the specs reject it."""
    nodes = [Node(n.op, attrs if i == k else n.attrs, n.inputs, n.outputs) for i, n in enumerate(graph.nodes)]
    return reinfer(graph, graph.tensors, nodes)


def _checks(model: bytes) -> bool:
    """ONNX's full checker (strict shape inference) accepts the model."""
    import onnx

    try:
        onnx.checker.check_model(onnx.load_from_string(model), full_check=True)
    except Exception:
        return False
    return True


class Reducer:
    def __init__(self, pool, cfg: CheckConfig, target: Target, max_seconds: float = 120.0, max_probes: int = 200):
        self.pool, self.cfg, self.target = pool, cfg, target
        self.max_seconds, self.max_probes = max_seconds, max_probes
        self.probes = 0

    def _case(self, base: Prepared, graph: Graph, inputs: list) -> Prepared:
        model = to_onnx(graph, sub_seed(base.meta.get("seed", 0), "onnx"), doc=f"dlgate reduced {base.id}")
        return Prepared(f"{base.id}-reduced", dict(base.meta), graph, model.SerializeToString(), inputs,
                        {"valid": True, "method": "reduced", "reason": ""})

    def probe(self, case: Prepared) -> V.Verdict | None:
        """The candidate's verdict when it still fails the target way, else None."""
        self.probes += 1
        ref = self.pool.execute(self.cfg.reference, Model(case.model, case.graph), case.inputs)
        if not ref.ok or not all_finite(ref.outputs):
            return None
        v = judge_backend(self.pool, case, self.cfg, self.target.backend, ref.outputs, crosscheck=False, explain=True)
        return v if self.target.matches(v) else None

    def reduce(self, case: Prepared) -> Reduced:
        t0 = time.perf_counter()
        graph = case.graph
        env = intermediates(graph, case.inputs)
        n = len(graph.nodes)
        best_keep = list(range(n))
        first = self.probe(case)
        if first is None:
            raise ValueError(f"{case.id} does not fail as {self.target.verdict} on {self.target.backend.label()}")
        best = (case, first)
        out = Reduced(case, first, n)

        def over() -> bool:
            return time.perf_counter() - t0 > self.max_seconds or self.probes >= self.max_probes

        def attempt(keep: list) -> bool:
            nonlocal best, best_keep
            if over():
                out.hit_limit = True
                return False
            g, feeds = cut(graph, env, keep)
            if not g.outputs:
                return False
            cand = self._case(case, g, feeds)
            v = self.probe(cand)
            if v is None:
                return False
            best, best_keep = (cand, v), list(keep)
            out.log.append(f"kept {len(keep)} of {n} operators: {', '.join(graph.nodes[i].op for i in sorted(keep))}")
            return True

        if n > 1:
            for i in range(n):  # one operator alone
                if attempt([i]):
                    break
        changed = len(best_keep) > 1
        while changed and len(best_keep) > 1 and not over():
            changed = False
            for i in sorted(best_keep, reverse=True):
                if i in best_keep and len(best_keep) > 1 and attempt([k for k in best_keep if k != i]):
                    changed = True

        def accept(g: Graph, feeds: list, what: str) -> bool:
            nonlocal best
            if over():
                out.hit_limit = True
                return False
            cand = self._case(case, g, feeds)
            if not _checks(cand.model):
                return False
            v = self.probe(cand)
            if v is None:
                return False
            best = (cand, v)
            out.log.append(what)
            return True

        shrinking = True
        while shrinking and not over():
            shrinking = False
            g0, feeds0 = best[0].graph, best[0].inputs
            for k, t in enumerate(g0.inputs):
                for j, d in enumerate(g0.tensors[t].shape):
                    if d > 1:
                        shape = tuple(d // 2 if i == j else x for i, x in enumerate(g0.tensors[t].shape))
                        tried = resized(g0, feeds0, k, shape)
                        if tried is not None and accept(*tried, f"input {k} shape {shape}"):
                            shrinking = True
                            break
                if shrinking:
                    break
        for k in range(len(best[0].graph.nodes)):
            for key in sorted(best[0].graph.nodes[k].attrs):
                while not over():
                    g0, feeds0 = best[0].graph, best[0].inputs
                    value = _smaller(g0.nodes[k].attrs[key])
                    if value is None:
                        break
                    tried = reattributed(g0, k, dict(g0.nodes[k].attrs, **{key: value}))
                    if tried is None or not accept(tried, feeds0, f"{g0.nodes[k].op}.{key} = {value}"):
                        break
        for decimals in (2, 0):
            g0, feeds0 = best[0].graph, best[0].inputs
            simpler = [np.round(x, decimals).astype(x.dtype) if x.dtype.kind == "f" else x for x in feeds0]
            if any(not np.array_equal(a, b, equal_nan=True) for a, b in zip(simpler, feeds0)):
                accept(g0, simpler, f"inputs rounded to {decimals} decimals")
        out.case, out.verdict = best
        out.probes, out.seconds = self.probes, time.perf_counter() - t0
        return out
