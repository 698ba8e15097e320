"""Lower a generated graph to an ``onnx.ModelProto``, deterministically."""
from __future__ import annotations

import random

import numpy as np
import onnx
from onnx import helper, numpy_helper

from dlgate import dtypes as dt
from dlgate import __version__
from dlgate.graph.dynamic import symbolic_shapes
from dlgate.graph.ir import Graph
from dlgate.ops.base import SPELL_DEFAULTS
from dlgate.ops.registry import get


class Builder:
    """What an operator's ``onnx`` lowering writes into.

    ``rng`` only decides spelling that does not change meaning (Isra's lesson that
    importers break on the edges of the spec): whether an attribute equal to its default
    is written out or omitted.
    """

    def __init__(self, opset: int, rng: random.Random):
        self.opset = opset
        self.rng = rng
        #: Spell every attribute equal to its default out (an instance drawn under the
        #: degenerate regime, ``SPELL_DEFAULTS``); set per node by ``to_onnx``.
        self.explicit = False
        self.nodes: list = []
        self.initializers: list = []
        self._n = 0

    def fresh(self, hint: str = "c") -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def node(self, op_type: str, inputs, outputs, **attrs) -> list:
        attrs = {k: v for k, v in attrs.items() if v is not None}
        outputs = list(outputs) if not isinstance(outputs, int) else [self.fresh("tmp") for _ in range(outputs)]
        name = f"n{len(self.nodes)}_{op_type}"
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, name=name, **attrs))
        return outputs

    def const(self, value, dtype: str | None = None, hint: str = "c", bits: int = 0) -> str:
        """An initializer of ``value``; ``bits`` 4 writes int8 or uint8 values as INT4 or
        UINT4 (packed two to a byte, as ONNX stores them)."""
        arr = np.asarray(value, dtype=dtype) if dtype else np.asarray(value)
        name = self.fresh(hint)
        if bits == 4:
            self.initializers.append(int4_tensor(arr, name))
        else:
            self.initializers.append(numpy_helper.from_array(arr, name))
        return name

    def ints(self, values, hint: str = "c") -> str:
        """A 1-D int64 constant input (axes, shape, pads, repeats...)."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1), hint=hint)

    def opt(self, value, default):
        """``value``, or None (omit the attribute) half the time when it equals the default;
        always ``value`` when ``explicit``."""
        if value == default and not self.explicit and self.rng.random() < 0.5:
            return None
        return value


def int4_tensor(arr: np.ndarray, name: str) -> onnx.TensorProto:
    """An INT4 (int8 ``arr``) or UINT4 (uint8) initializer of the same values; each value
    must fit in 4 bits."""
    signed = arr.dtype == np.int8
    if arr.dtype not in (np.int8, np.uint8):
        raise TypeError(f"4-bit constants are written from int8 or uint8 values, not {arr.dtype}")
    lo, hi = (-8, 7) if signed else (0, 15)
    if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        raise ValueError(f"{name}: values outside {lo}..{hi} do not fit in 4 bits")
    kind = onnx.TensorProto.INT4 if signed else onnx.TensorProto.UINT4
    return helper.make_tensor(name, kind, list(arr.shape), arr.reshape(-1).astype(np.int64).tolist())


def value_info(name: str, t, shape=None) -> onnx.ValueInfoProto:
    """A tensor's declared type; ``shape`` overrides its dims (a symbol's name for a
    ``dim_param``, None for an unknown size)."""
    return helper.make_tensor_value_info(name, dt.ONNX[t.dtype], list(t.shape if shape is None else shape))


def to_onnx(graph: Graph, spelling_seed: int, doc: str = "") -> onnx.ModelProto:
    b = Builder(graph.opset, random.Random(spelling_seed))
    name = graph.name
    for node in graph.nodes:
        spec = get(node.op)
        b.explicit = bool(node.attrs.get(SPELL_DEFAULTS))
        spec.onnx(b, node.attrs, [name(t) for t in node.inputs], [name(t) for t in node.outputs])
    b.explicit = False
    inits = [numpy_helper.from_array(np.asarray(graph.values[t]), name(t)) for t in graph.consts]
    produced = {t for n in graph.nodes for t in n.outputs}
    # A dynamic graph declares its inputs' symbolic dims; an intermediate whose size varies
    # otherwise than a symbol gets no declared type at all, an output an unknown size.
    shapes = symbolic_shapes(graph) if graph.dynamic else {}
    vis = [value_info(name(t), graph.tensors[t], shapes.get(t)) for t in sorted(produced)
           if t not in set(graph.outputs) and None not in shapes.get(t, ())]
    g = helper.make_graph(
        b.nodes,
        "dlgate",
        [value_info(name(t), graph.tensors[t], shapes.get(t)) for t in graph.inputs],
        [value_info(name(t), graph.tensors[t], shapes.get(t)) for t in graph.outputs],
        initializer=inits + b.initializers,
        value_info=vis,
        doc_string=doc,
    )
    opset = [helper.make_opsetid("", graph.opset)]
    model = helper.make_model(g, opset_imports=opset, producer_name="dlgate", producer_version=__version__)
    model.ir_version = helper.find_min_ir_version_for(opset)
    return model


# -- subgraphs: If branches, Loop and Scan bodies -------------------------------------------

class SubBuilder(Builder):
    """A ``Builder`` for a subgraph attribute (an If branch, a Loop or Scan body): every name
    it makes (tensors, nodes) starts with ``prefix``, so none clashes with, or shadows, a
    name of the enclosing graph (ONNX forbids both). ``rng`` is the enclosing builder's, so
    the spelling stays one deterministic stream."""

    def __init__(self, opset: int, rng: random.Random, prefix: str):
        super().__init__(opset, rng)
        self.prefix = prefix

    def fresh(self, hint: str = "c") -> str:
        return self.prefix + super().fresh(hint)

    def node(self, op_type: str, inputs, outputs, **attrs) -> list:
        out = super().node(op_type, inputs, outputs, **attrs)
        self.nodes[-1].name = self.prefix + self.nodes[-1].name
        return out


def lower_graph(b: Builder, graph: Graph, names: dict | None = None) -> dict:
    """Emit ``graph``'s operators into ``b`` and its constants as ``b``'s initializers.
    Tensor ``t`` is named ``names[t]`` where given (a formal input of the subgraph, or a
    tensor of the enclosing graph read from the outer scope), else ``b``'s prefix (if any)
    followed by ``graph.name(t)``. Returns the tensor id -> name map."""
    prefix = getattr(b, "prefix", "")
    names = dict(names or {})
    for t in range(len(graph.tensors)):
        names.setdefault(t, prefix + graph.name(t))
    for t in graph.consts:
        arr = np.asarray(graph.values[t], dtype=dt.NUMPY[graph.tensors[t].dtype])
        b.initializers.append(numpy_helper.from_array(arr, names[t]))
    for node in graph.nodes:
        was, b.explicit = b.explicit, b.explicit or bool(node.attrs.get(SPELL_DEFAULTS))
        get(node.op).onnx(b, node.attrs, [names[t] for t in node.inputs], [names[t] for t in node.outputs])
        b.explicit = was
    return names


def make_subgraph(b: Builder, name: str, inputs: list, outputs: list, value_infos: list = ()) -> onnx.GraphProto:
    """The ``GraphProto`` of what ``b`` holds; ``inputs``, ``outputs`` and ``value_infos``
    are (name, TensorType) pairs."""
    return helper.make_graph(
        b.nodes, name,
        [value_info(n, t) for n, t in inputs],
        [value_info(n, t) for n, t in outputs],
        initializer=b.initializers,
        value_info=[value_info(n, t) for n, t in value_infos],
    )
