"""Readable names of the operators in an ONNX model, in ONNX's own terms.

A failure's reduced model (``repros/<fingerprint>/model.onnx``) holds the nodes the compiler
was actually given. dlgate's identity (``typed``: ``Add(float32;...op=Sub,spelling=value_floats)``)
speaks of the generator's specs and attribute *regimes*; a compiler engineer reads ONNX: a
``Constant`` whose ``value_floats`` feeds a ``Sub``, with the attribute values the model holds.
So every report (``summary.md``, ``junit.xml``, the HTML page, issues) names operators from the
ONNX graph with this module, and keeps dlgate's spec names for its details.

:func:`model_label` gives ``Constant(value_floats=[0.5]) → Sub(float32)``: each node's
``op_type`` (with its domain when not ONNX's), the distinct dtypes of its inputs, and the
attributes the node sets, with their values (dtype-valued ones such as Cast's ``to`` by
name). :func:`op_types` gives the distinct operator types of a whole model.
"""
from __future__ import annotations

import math
import os

#: ONNX element types by their TensorProto number, named as NumPy and dlgate name them
#: (``float`` is float32, ``double`` float64); the rest keep ONNX's name in lower case.
_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
           9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64",
           15: "complex128", 16: "bfloat16"}
#: Integer attributes whose value is an element type (``Cast(to=1)`` reads ``to=float32``).
DTYPE_ATTRIBUTES = frozenset({"to", "dtype", "stash_type", "output_dtype", "softmax_precision"})
#: Most list elements and characters one attribute value shows before an ellipsis.
LIST_ITEMS, VALUE_CHARS = 6, 40


def dtype_name(elem_type: int) -> str:
    if elem_type in _DTYPES:
        return _DTYPES[elem_type]
    from onnx import TensorProto

    try:
        return TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"type{elem_type}"


def _number(x) -> str:
    """A float as ONNX stored it (float32), shortest: 2.6 rather than 2.5999999046325684."""
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return str(x)
        import numpy as np

        return f"{float(np.float32(x)):.7g}"
    return str(x)


def _items(xs) -> str:
    xs = list(xs)
    shown = ", ".join(_number(x) for x in xs[:LIST_ITEMS])
    return f"[{shown}{', …' if len(xs) > LIST_ITEMS else ''}]"


def _tensor(t) -> str:
    """A tensor attribute (Constant's ``value``): its values when it has a few, else its type."""
    from onnx import numpy_helper

    shape = "x".join(str(d) for d in t.dims)
    try:
        arr = numpy_helper.to_array(t)
    except Exception:  # an encoding numpy cannot read: the type says enough
        return f"{dtype_name(t.data_type)}[{shape}]"
    if arr.size <= LIST_ITEMS:
        vals = _items(arr.reshape(-1).tolist())
        return f"{dtype_name(t.data_type)}{vals}" if arr.ndim else f"{dtype_name(t.data_type)}({vals[1:-1]})"
    return f"{dtype_name(t.data_type)}[{shape}]"


def attribute_value(a) -> str:
    """One attribute's value as the model holds it, short: ``2.6``, ``[1, 1, 0, 0]``, ``"linear"``,
    ``float32`` (an element type), ``float32[3x4]`` (a large tensor), ``<graph: 2 nodes>``."""
    from onnx import AttributeProto as A
    from onnx import helper

    if a.type == A.INT and a.name in DTYPE_ATTRIBUTES:
        text = dtype_name(a.i)
    elif a.type == A.TENSOR:
        text = _tensor(a.t)
    elif a.type == A.GRAPH:
        text = f"<graph: {len(a.g.node)} nodes>"
    elif a.type == A.GRAPHS:
        text = f"<{len(a.graphs)} graphs>"
    elif a.type in (A.SPARSE_TENSOR, A.SPARSE_TENSORS):
        text = "<sparse tensor>"
    elif a.type in (A.TYPE_PROTO, A.TYPE_PROTOS):
        text = "<type>"
    elif a.type == A.TENSORS:
        text = f"<{len(a.tensors)} tensors>"
    else:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            text = '"' + v.decode("utf-8", "replace") + '"'
        elif isinstance(v, (list, tuple)):
            text = _items(x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v)
        else:
            text = _number(v)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS - 1] + "…"


def _types(model) -> dict:
    """Tensor name -> element type, from the graph's inputs, initializers and value infos, what
    shape inference adds, and the Constant nodes' own values."""
    import onnx

    try:
        g = onnx.shape_inference.infer_shapes(model, strict_mode=False).graph
    except Exception:  # an invalid model: what it declares itself
        g = model.graph
    out = {}
    for v in list(g.input) + list(g.value_info) + list(g.output):
        if v.type.WhichOneof("value") == "tensor_type" and v.type.tensor_type.elem_type:
            out.setdefault(v.name, v.type.tensor_type.elem_type)
    for t in g.initializer:
        out.setdefault(t.name, t.data_type)
    for n in g.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.output:
            for a in n.attribute:
                kind = {"value": None, "value_float": 1, "value_floats": 1, "value_int": 7, "value_ints": 7,
                        "value_string": 8, "value_strings": 8}.get(a.name, -1)
                if kind is None:
                    out.setdefault(n.output[0], a.t.data_type)
                elif kind != -1:
                    out.setdefault(n.output[0], kind)
    return out


def _op(node) -> str:
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"


def node_label(node, types: dict) -> str:
    """``Sub(float32)``, ``Cast(int64; to=float32)``, ``Constant(value_floats=[0.5, 2])``: the
    operator, the distinct dtypes of its inputs in order, the attributes it sets."""
    dts = list(dict.fromkeys(dtype_name(types[x]) for x in node.input if x and x in types))
    attrs = [f"{a.name}={attribute_value(a)}" for a in node.attribute]
    inside = "; ".join(p for p in (", ".join(dts), ", ".join(attrs)) if p)
    return f"{_op(node)}({inside})" if inside else _op(node)


def model_label(model, limit: int = 8) -> str:
    """The model's nodes in graph (topological) order as :func:`node_label` names them, joined
    by `` → ``; past ``limit`` nodes, the rest by type only (a reduced model has a few)."""
    nodes = list(model.graph.node)
    types = _types(model)
    head = [node_label(n, types) for n in nodes[:limit]]
    rest = list(dict.fromkeys(_op(n) for n in nodes[limit:]))
    label = " → ".join(head)
    if rest:
        label += f" → … ({len(nodes) - limit} more: {', '.join(rest)})"
    return label


def op_types(model) -> list:
    """The distinct operator types of a model's top graph, in graph order."""
    return list(dict.fromkeys(_op(n) for n in model.graph.node))


def load(path: str):
    """The ONNX model at ``path`` (weights kept in the file only), or None when there is none or
    it cannot be read: a report says what it knows and goes on."""
    if not os.path.isfile(path):
        return None
    try:
        import onnx

        return onnx.load(path, load_external_data=False)
    except Exception:
        return None


def folder_label(out_dir: str, folder: str | None) -> str | None:
    """:func:`model_label` of ``<out_dir>/<folder>/model.onnx`` (a repro or a case bundle), or
    None where that model is missing or unreadable."""
    if not folder:
        return None
    m = load(os.path.join(out_dir, folder, "model.onnx"))
    return model_label(m) if m is not None else None


def folder_op_types(out_dir: str, folder: str | None) -> list | None:
    """:func:`op_types` of ``<out_dir>/<folder>/model.onnx``, or None where it cannot be read."""
    if not folder:
        return None
    m = load(os.path.join(out_dir, folder, "model.onnx"))
    return op_types(m) if m is not None else None
