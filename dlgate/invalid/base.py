"""What every disruption rule shares: a rule's interface, the model's known types and
shapes, and ONNX's verdict on a model (the full checker with strict shape inference)."""
from __future__ import annotations

import random
from dataclasses import dataclass

import onnx
from onnx import TensorProto, defs

#: Tensor element types a rule may give a tensor where the operator does not take it: the
#: ones every runtime can hold (dlgate's own, plus the other fixed-width integers).
DTYPES = (TensorProto.BOOL, TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16,
          TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64, TensorProto.FLOAT16,
          TensorProto.FLOAT, TensorProto.DOUBLE)
#: The prefix of every name a rule makes (a node, a tensor), so that none clashes with a
#: name of the model (dlgate's are ``t<N>``, ``c_<N>``, ``n<N>_<Op>``...).
PREFIX = "invalid_"
#: ``OpSchema.max_input`` of a variadic operator.
UNBOUNDED = 2 ** 31 - 1


def type_name(elem_type: int) -> str:
    """An element type's ONNX name in lower case (``float``, ``bool``, ``int16``)."""
    return TensorProto.DataType.Name(elem_type).lower()


@dataclass(frozen=True)
class Site:
    """Where a rule applies: the node (its index in the graph) and what there, a small
    JSON-friendly tuple the rule reads back (an input position, an attribute name...)."""

    node: int
    what: tuple = ()


class Known:
    """The valid model's value types: element type and shape of every named tensor (graph
    inputs, constants, declared intermediates and outputs, and what shape inference adds),
    with the model's opset. Shapes are lists of ints, or None for a dimension that is
    symbolic or unknown."""

    def __init__(self, model: onnx.ModelProto):
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        inferred = onnx.shape_inference.infer_shapes(model)
        self.types: dict = {}
        g = inferred.graph
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            t = vi.type.tensor_type
            if vi.type.HasField("tensor_type") and t.elem_type:
                dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim] \
                    if t.HasField("shape") else None
                self.types[vi.name] = (t.elem_type, dims)
        for init in g.initializer:
            self.types[init.name] = (init.data_type, list(init.dims))

    def elem(self, name: str) -> int | None:
        return self.types.get(name, (None, None))[0]

    def shape(self, name: str) -> list | None:
        return self.types.get(name, (None, None))[1]

    def schema(self, node: onnx.NodeProto):
        """The node's operator schema at the model's opset, or None (another domain)."""
        if node.domain not in ("", "ai.onnx"):
            return None
        try:
            return defs.get_schema(node.op_type, self.opset)
        except defs.SchemaError:
            return None


class Rule:
    """One rule of ONNX broken on purpose. ``sites`` lists, in graph order, where the rule can
    be broken in a valid model; ``apply`` breaks it at one site, changing nothing else, and
    returns what it did in words (``detail``) and data (``record``, JSON)."""

    #: The rule's name in metadata, configs and reports.
    name = ""
    #: One line: what a model this rule makes breaks.
    breaks = ""

    def sites(self, model: onnx.ModelProto, known: Known) -> list:
        raise NotImplementedError

    def apply(self, model: onnx.ModelProto, known: Known, site: Site, rng: random.Random) -> dict:
        """Change ``model`` in place; returns ``{"detail": str, ...}``."""
        raise NotImplementedError


def input_type_param(schema, position: int) -> str | None:
    """The type parameter (``T``) of a node's input at ``position`` under ``schema``: the
    formal input there, or the last one when it is variadic; None past the end or when the
    formal input names a fixed type rather than a parameter."""
    formals = schema.inputs
    if not formals:
        return None
    if position >= len(formals):
        last = formals[-1]
        if last.option != defs.OpSchema.FormalParameterOption.Variadic:
            return None
        formal = last
    else:
        formal = formals[position]
    constraints = {c.type_param_str for c in schema.type_constraints}
    return formal.type_str if formal.type_str in constraints else None


def allowed(schema, param: str) -> set:
    """The element types (TensorProto enums) the schema's type parameter ``param`` takes."""
    for c in schema.type_constraints:
        if c.type_param_str == param:
            out = set()
            for s in c.allowed_type_strs:
                if s.startswith("tensor(") and s.endswith(")"):
                    out.add(_ELEM.get(s[len("tensor("):-1]))
            return out - {None}
    return set()


_ELEM = {type_name(k): k for k in TensorProto.DataType.values()}
_ELEM.update({"float": TensorProto.FLOAT, "double": TensorProto.DOUBLE})


def rejection(model: onnx.ModelProto) -> str | None:
    """Why ONNX's full checker (``full_check=True``: strict shape and type inference)
    rejects ``model``, in its first line; None when it accepts it."""
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        return (lines[0] if lines else type(e).__name__)[:500]
    return None


def insert_before(model: onnx.ModelProto, index: int, node: onnx.NodeProto) -> None:
    """Put ``node`` into the graph just before node ``index`` (topological order kept)."""
    nodes = list(model.graph.node)
    nodes.insert(index, node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
