"""Assemble a generated graph into a Relax ``IRModule``, deterministically.

The module computes what the ONNX model computes, in a shape the ONNX importer never
writes, so that TVM's Relax passes meet structure of their own:

- a run of consecutive nodes is wrapped as a **private function** (``private=True``: no
  global symbol, only ``main`` calls it) with a dataflow block of its own; ``main`` calls it
  and takes its outputs out of the returned **tuple**;
- every function's operators sit in a **dataflow block**; the bindings around it (a
  parameter's ``match_cast``, an output's) sit in an ordinary block outside it;
- some element-wise operators are written as TE computations: a **PrimFunc** in the module,
  called by ``R.call_tir``;
- a dynamic graph's symbolic dimensions (``graph.dynamic``) are **symbolic shape
  variables**: an input declares them in ``main``'s signature, or is declared by rank
  alone and binds them with ``match_cast``; shapes computed from them (Reshape's -1,
  Flatten) are arithmetic on them; the private function takes variables of its own.

Which run is wrapped, which operators become ``call_tir`` and which bindings use
``match_cast`` is drawn from ``seed``: the same
graph and seed give the same module, and the same TVMScript text, in any process.
"""
from __future__ import annotations

import random

import numpy as np
import tvm
import tvm.sym
from tvm import relax, tirx

from dlgate import dtypes as dt
from dlgate.graph.dynamic import symbolic_shapes
from dlgate.graph.ir import Graph
from dlgate.materialize.relax.lowerings import TE_LOWERINGS, NoRelaxLowering, Site, lower

#: Chance that a run of nodes is wrapped as a private function, that an input is declared
#: by rank and bound by ``match_cast``, and that an output is checked by ``match_cast``.
WRAP_SHARE = 0.75
CAST_INPUT_SHARE = 0.5
CAST_OUTPUT_SHARE = 0.5
#: Chance that an operator with a TE form (``TE_LOWERINGS``) is lowered through it.
CALL_TIR_SHARE = 0.3
#: The private function's name in the module.
SUB_FUNCTION = "subgraph"


def structure(graph: Graph, seed: int, plain: bool = False) -> dict:
    """The module's drawn structure: ``wrap`` (the [first, last) node range wrapped as a
    function, or None), ``cast_inputs`` and ``cast_outputs`` (graph tensor ids bound by
    ``match_cast``), ``call_tir`` (indices of the nodes written as TE computations).
    ``plain``: none of it (one function of operator calls, every input declared)."""
    if plain:
        return {"wrap": None, "cast_inputs": [], "cast_outputs": [], "call_tir": []}
    rng = random.Random(seed)
    n = len(graph.nodes)
    wrap = None
    if n and rng.random() < WRAP_SHARE:
        first = rng.randrange(n)
        last = rng.randint(first + 1, n)
        if _live_outs(graph, first, last):
            wrap = (first, last)
    cast_inputs = [t for t in graph.inputs if rng.random() < CAST_INPUT_SHARE]
    cast_outputs = [t for t in graph.outputs if rng.random() < CAST_OUTPUT_SHARE]
    call_tir = [k for k, node in enumerate(graph.nodes) if node.op in TE_LOWERINGS and rng.random() < CALL_TIR_SHARE]
    return {"wrap": wrap, "cast_inputs": cast_inputs, "cast_outputs": cast_outputs, "call_tir": call_tir}


_ANALYZER = tvm.sym.Analyzer()


def _te_broadcasts_safely(xs: list) -> bool:
    """Whether a TE computation of ``xs`` (``TE_LOWERINGS``, TOPI's broadcasting) indexes every
    operand in bounds at every binding of its symbolic dims: each pair of aligned dims is
    static, provably the same size, or a static 1. TOPI takes a symbol met with a constant
    above 1 (``batch`` against ``5``) to be that constant, and reads past the operand where
    the symbol binds to 1, which ONNX broadcasting allows: such a node keeps its Relax
    operator, whose lowering broadcasts by the runtime size."""
    if len(xs) < 2:
        return True
    shapes = []
    for x in xs:
        shape = getattr(x.ty, "shape", None)
        if not isinstance(shape, relax.ShapeExpr):
            return False
        shapes.append(list(shape.values))
    rank = max(len(v) for v in shapes)
    for axis in range(1, rank + 1):
        dims = [v[-axis] for v in shapes if len(v) >= axis]
        static = [isinstance(d, tirx.IntImm) for d in dims]
        if all(static):
            continue
        sizes = [d for d, st in zip(dims, static) if not (st and int(d.value) == 1)]
        if any(not _ANALYZER.can_prove_equal(sizes[0], d) for d in sizes[1:]):
            return False
    return True


def to_relax(graph: Graph, seed: int, plain: bool = False) -> tvm.IRModule:
    """``graph`` as a Relax IRModule whose ``main`` takes the graph's inputs in order and
    returns its outputs (one tensor, or a tuple of them). Raises ``NoRelaxLowering`` for an
    operator the direct path does not lower."""
    return assemble(graph, structure(graph, seed, plain))


def assemble(graph: Graph, shape: dict) -> tvm.IRModule:
    """``graph`` as a Relax IRModule of the given structure (``structure``'s keys)."""
    return _Assembler(graph, shape).build()


def script(mod: tvm.IRModule) -> str:
    """The module's TVMScript text. Constants print as ``metadata[...]`` references: TVM
    0.27 crashes (SIGSEGV in ``ToJSONGraph``) printing their values with ``show_meta``."""
    return mod.script()


class _Assembler:
    def __init__(self, graph: Graph, shape: dict):
        self.g = graph
        self.shape = shape
        self.bb = relax.BlockBuilder()
        if graph.dynamic:
            self.expected = symbolic_shapes(graph)
        else:
            self.expected = {t: tuple(ty.shape) for t, ty in enumerate(graph.tensors)}
        symbols = sorted({d for t in graph.inputs for d in self.expected[t] if isinstance(d, str)})
        self.symbols = {s: tirx.Var(s, "int64") for s in symbols}
        self.consts = set(graph.consts)

    # -- shapes ---------------------------------------------------------------------------
    def _type(self, t: int, symbols: dict, fresh: str) -> relax.TensorType:
        """Tensor ``t``'s Relax type: its sizes, a symbol's variable from ``symbols`` where
        it follows one, a fresh variable (``fresh`` + axis) where it varies otherwise."""
        dims = []
        for axis, d in enumerate(self.expected[t]):
            if isinstance(d, str):
                dims.append(symbols[d])
            elif d is None:
                dims.append(tirx.Var(f"{fresh}{axis}", "int64"))
            else:
                dims.append(tirx.IntImm("int64", int(d)))
        return relax.TensorType(dims, self.g.tensors[t].dtype)

    def _const(self, t: int) -> relax.Constant:
        ty = self.g.tensors[t]
        return relax.const(np.asarray(self.g.values[t], dtype=dt.NUMPY[ty.dtype]), ty.dtype)

    # -- bodies ---------------------------------------------------------------------------
    def _lower(self, first: int, last: int, env: dict) -> None:
        """Emit nodes [first, last) into the current dataflow block."""
        bb, g = self.bb, self.g
        te = set(self.shape.get("call_tir", ()))
        for k in range(first, last):
            node = g.nodes[k]
            xs = [env[t] if t in env else self._const(t) for t in node.inputs]
            if k in te and _te_broadcasts_safely(xs):  # a PrimFunc of the module, called by R.call_tir
                outs = [bb.emit_te(TE_LOWERINGS[node.op], *xs, primfunc_name_hint=f"te_{node.op.lower()}")]
            else:
                outs = lower(Site(node.op, node.attrs, [g.tensors[t] for t in node.inputs], xs,
                                  [g.tensors[t] for t in node.outputs]))
            for t, y in zip(node.outputs, outs):
                env[t] = y if isinstance(y, relax.Var) else bb.emit(y, name_hint=g.name(t))
                if not isinstance(env[t].ty.shape, relax.ShapeExpr):
                    # Relax types the call by rank alone (a symbol broadcast against a size
                    # above 1 it cannot prove equal), and no pass can lower a call so typed
                    raise NoRelaxLowering(
                        f"no Relax lowering for {node.op} on symbolic shapes "
                        f"{', '.join(str(x.ty.shape) for x in xs)}: Relax infers no shape for its result")

    def _subfunction(self) -> tuple:
        """Emit the private function; returns (its GlobalVar, the graph tensors it takes,
        the graph tensors it returns)."""
        g, bb = self.g, self.bb
        first, last = self.shape["wrap"]
        ins = _live_ins(g, first, last)
        outs = _live_outs(g, first, last)
        # variables of its own: a symbol's name stays, a size that varies otherwise is fresh
        own = {s: tirx.Var(s, "int64") for s in self.symbols}
        params = [relax.Var(g.name(t), self._type(t, own, f"{g.name(t)}_d")) for t in ins]
        env = dict(zip(ins, params))
        with bb.function(SUB_FUNCTION, params, private=True):
            with bb.dataflow():
                self._lower(first, last, env)
                if len(outs) == 1:
                    ret = bb.emit_output(env[outs[0]])
                else:
                    ret = bb.emit_output(relax.Tuple([env[t] for t in outs]))
            bb.emit_func_output(ret)
        return bb.get().get_global_var(SUB_FUNCTION), ins, outs

    def build(self) -> tvm.IRModule:
        g, bb = self.g, self.bb
        wrap = self.shape["wrap"]
        sub = self._subfunction() if wrap else None
        cast_in, cast_out = set(self.shape["cast_inputs"]), set(self.shape["cast_outputs"])
        params = []
        for t in g.inputs:
            ty = g.tensors[t]
            sinfo = relax.TensorType(dtype=ty.dtype, ndim=ty.rank) if t in cast_in \
                else self._type(t, self.symbols, f"{g.name(t)}_d")
            params.append(relax.Var(g.name(t), sinfo))
        env: dict = {}
        with bb.function("main", params):
            for t, p in zip(g.inputs, params):  # outside the dataflow block
                env[t] = bb.match_cast(p, self._type(t, self.symbols, f"{g.name(t)}_d"), name_hint=f"{g.name(t)}_cast") \
                    if t in cast_in else p
            with bb.dataflow():
                if sub is None:
                    self._lower(0, len(g.nodes), env)
                else:
                    gv, ins, outs = sub
                    first, last = wrap
                    self._lower(0, first, env)
                    call = bb.emit(relax.Call(gv, [env[t] if t in env else self._const(t) for t in ins]),
                                   name_hint="sub")
                    for k, t in enumerate(outs):
                        env[t] = call if len(outs) == 1 else bb.emit(relax.TupleGetItem(call, k), name_hint=g.name(t))
                    self._lower(last, len(g.nodes), env)
                results = [bb.emit_output(env[t] if t in env else self._const(t)) for t in g.outputs]
            for k, t in enumerate(g.outputs):  # outside the dataflow block again
                if t in cast_out:
                    results[k] = bb.match_cast(results[k], self._type(t, self.symbols, f"{g.name(t)}_out"),
                                               name_hint=f"{g.name(t)}_checked")
            bb.emit_func_output(results[0] if len(results) == 1 else relax.Tuple(results))
        return bb.get()


def _live_ins(g: Graph, first: int, last: int) -> list:
    """Tensors the nodes [first, last) read and do not make, constants aside, in order."""
    made = {t for n in g.nodes[first:last] for t in n.outputs}
    out: list = []
    for n in g.nodes[first:last]:
        for t in n.inputs:
            if t not in made and t not in g.consts and t not in out:
                out.append(t)
    return out


def _live_outs(g: Graph, first: int, last: int) -> list:
    """Tensors the nodes [first, last) make that later nodes read or the graph returns."""
    later = {t for n in g.nodes[last:] for t in n.inputs} | set(g.outputs)
    return [t for n in g.nodes[first:last] for t in n.outputs if t in later]
