"""A small reduced model and its data as Python source, so that ``repro.py`` needs no file.

A maintainer reads an issue, copies ``repro.py``, runs it: nothing to download. So when the
reduced model is small (:data:`MAX_NODES` operators, all of its tensor constants together at
most :data:`MAX_CONST_BYTES` bytes), ``repro.py`` builds it with ``onnx.helper`` (nodes,
graph, value types, opsets) and ``onnx.numpy_helper`` (the constants' exact values), and its
inputs and expected outputs are NumPy literals when they hold at most :data:`MAX_DATA_BYTES`
bytes each. Larger ones stay in ``model.onnx`` / ``inputs.npz`` / ``reference.npz``: a
listing of thousands of numbers helps nobody.

Every piece of source made here is checked before it is used, by running it: an array
literal must give the same dtype, shape and bytes (NaN, infinities, -0.0, float16 and
integer dtypes included; a NaN with a payload NumPy cannot spell falls back to the file),
and the built model must be semantically the model (:func:`differences`: the same graph,
attribute values, value types, opsets, and initializer arrays, whatever their storage in the
protobuf). What cannot be spelled (sequence types, sparse tensors, model-local functions,
dtypes NumPy lacks such as bfloat16) falls back to the files.
"""
from __future__ import annotations

import numpy as np

#: The most operators (subgraphs' included) a model built inline in repro.py may have.
MAX_NODES = 20
#: The most bytes all tensor constants (initializers, Constant values, tensor attributes) of an
#: inline model may hold together: a few hundred numbers, which still read as a listing.
MAX_CONST_BYTES = 4096
#: The most bytes the inputs (or the expected outputs) may hold together to be written inline.
MAX_DATA_BYTES = 4096

#: NumPy dtypes an array literal spells exactly.
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
_MAKE_NODE_PARAMS = {"op_type", "inputs", "outputs", "name", "doc_string", "domain", "overload"}
_WIDTH = 100


class NotInline(Exception):
    """This model or array is not written inline; the message says why (for repro.json)."""


def _float_text(v, dtype: str) -> str:
    x = float(v)
    if x != x:
        return "np.nan"
    if x in (float("inf"), float("-inf")):
        return "np.inf" if x > 0 else "-np.inf"
    if dtype != "float64":  # NumPy's shortest spelling for the narrow type, when it parses back exactly
        short = str(getattr(np, dtype)(v))
        try:
            if getattr(np, dtype)(float(short)).tobytes() == getattr(np, dtype)(v).tobytes():
                return short
        except ValueError:
            pass
    return repr(x)


def _items(flat: np.ndarray) -> list:
    name = flat.dtype.name
    if name == "bool":
        return ["True" if x else "False" for x in flat.tolist()]
    if flat.dtype.kind in "iu":
        return [str(int(x)) for x in flat.tolist()]
    return [_float_text(x, name) for x in flat]


def _wrap(items: list, indent: str, lead: int = 0) -> str:
    """``items`` comma-separated, wrapped at :data:`_WIDTH` columns after ``indent`` (one line
    when they fit after ``lead`` more characters of the line they start on)."""
    one = ", ".join(items)
    if len(indent) + lead + len(one) + 40 <= _WIDTH:
        return one
    lines, line = [], ""
    for it in items:
        piece = it + ", "
        if line and len(indent) + len(line) + len(piece) > _WIDTH:
            lines.append(line.rstrip())
            line = ""
        line += piece
    lines.append(line.rstrip().rstrip(","))
    return "\n" + "\n".join(indent + "    " + ln for ln in lines) + "\n" + indent


def array_source(a, indent: str = "", lead: int = 0) -> str:
    """A NumPy expression giving exactly ``a`` (dtype, shape, every bit); NotInline if none."""
    a = np.asarray(a)
    if a.dtype.name not in DTYPES:
        raise NotInline(f"dtype {a.dtype.name} has no exact NumPy literal")
    dt = f"np.{a.dtype.name}" if a.dtype.name != "bool" else "np.bool_"
    if a.ndim == 0:
        text = f"np.array({_items(a.reshape(1))[0]}, dtype={dt})"
    else:
        text = f"np.array([{_wrap(_items(a.reshape(-1)), indent, lead)}], dtype={dt})"
        if a.ndim != 1:
            text += f".reshape({', '.join(str(d) for d in a.shape)})"
    back = eval(text, {"np": np})  # our own literal, checked to give the array back
    if back.dtype != a.dtype or back.shape != a.shape or back.tobytes() != a.tobytes():
        raise NotInline("its values do not round-trip through a literal (a NaN payload)")
    return text


def data_source(arrays: dict, function: str, what: str, limit: int = MAX_DATA_BYTES) -> str:
    """``def function():`` returning the dict of named arrays, as literals; NotInline when too big."""
    size = sum(np.asarray(a).nbytes for a in arrays.values())
    if size > limit:
        raise NotInline(f"{what} hold {size} bytes, more than {limit}")
    lines = [f"def {function}():", f'    """{what[0].upper() + what[1:]}, exactly as dlgate ran them."""']
    if not arrays:
        lines.append("    return {}")
    else:
        lines.append("    return {")
        for name, a in arrays.items():
            lines.append(f"        {name!r}: {array_source(a, '        ', len(repr(name)) + 2)},")
        lines.append("    }")
    return "\n".join(lines) + "\n"


# ---- the model -------------------------------------------------------------------------------


def _elem_name(t: int) -> str:
    from onnx import TensorProto

    return f"TensorProto.{TensorProto.DataType.Name(t)}"


def _value_info(v) -> str:
    kind = v.type.WhichOneof("value")
    if kind != "tensor_type":
        raise NotInline(f"value {v.name!r} is a {kind or 'untyped value'}")
    t = v.type.tensor_type
    if not t.elem_type:
        raise NotInline(f"value {v.name!r} has no element type")
    if not t.HasField("shape"):
        shape = "None"
    else:
        dims = []
        for d in t.shape.dim:
            dims.append(str(d.dim_value) if d.HasField("dim_value") else repr(d.dim_param) if d.dim_param else "None")
        shape = "[" + ", ".join(dims) + "]"
    return f"helper.make_tensor_value_info({v.name!r}, {_elem_name(t.elem_type)}, {shape})"


def _tensor(t, indent: str, budget: list) -> str:
    from onnx import numpy_helper

    if t.data_location == 1:  # TensorProto.EXTERNAL
        raise NotInline(f"tensor {t.name!r} is stored outside the model")
    a = numpy_helper.to_array(t)
    budget[0] += a.nbytes
    if budget[0] > MAX_CONST_BYTES:
        raise NotInline(f"its constants hold more than {MAX_CONST_BYTES} bytes")
    name = f", name={t.name!r}" if t.name else ""
    return f"numpy_helper.from_array({array_source(a, indent)}{name})"


def _attribute(a, indent: str, budget: list, count: list) -> str:
    from onnx import AttributeProto as A

    if a.ref_attr_name:
        raise NotInline(f"attribute {a.name!r} refers to a function's attribute")
    if a.type == A.FLOAT:
        return _float_text(np.float32(a.f), "float32").replace("np.nan", "float('nan')").replace(
            "np.inf", "float('inf')")
    if a.type == A.INT:
        return str(a.i)
    if a.type == A.STRING:
        return repr(a.s)
    if a.type == A.TENSOR:
        return _tensor(a.t, indent, budget)
    if a.type == A.GRAPH:
        return _graph(a.g, indent, budget, count)
    if a.type in (A.FLOATS, A.INTS, A.STRINGS):
        vals = list(a.floats if a.type == A.FLOATS else a.ints if a.type == A.INTS else a.strings)
        if not vals:
            raise NotInline(f"attribute {a.name!r} is an empty list (its type cannot be inferred)")
        if a.type == A.FLOATS:
            items = [_float_text(np.float32(v), "float32").replace("np.nan", "float('nan')").replace(
                "np.inf", "float('inf')") for v in vals]
        else:
            items = [str(v) if a.type == A.INTS else repr(v) for v in vals]
        return "[" + ", ".join(items) + "]"
    raise NotInline(f"attribute {a.name!r} is of type {A.AttributeType.Name(a.type)}")


def _node(n, indent: str, budget: list, count: list) -> str:
    count[0] += 1
    if count[0] > MAX_NODES:
        raise NotInline(f"it has more than {MAX_NODES} operators")
    args = [repr(n.op_type), repr(list(n.input)), repr(list(n.output))]
    if n.name:
        args.append(f"name={n.name!r}")
    if n.domain:
        args.append(f"domain={n.domain!r}")
    for a in n.attribute:
        if a.name in _MAKE_NODE_PARAMS or not a.name.isidentifier():
            raise NotInline(f"attribute {a.name!r} cannot be a keyword argument of make_node")
        args.append(f"{a.name}={_attribute(a, indent + '    ', budget, count)}")
    return f"helper.make_node({', '.join(args)})"


def _graph(g, indent: str, budget: list, count: list) -> str:
    """``helper.make_graph(...)`` for ``g``, nested subgraphs included."""
    if g.sparse_initializer:
        raise NotInline("it has sparse initializers")
    inner = indent + "    "

    def block(items: list) -> str:
        if not items:
            return "[]"
        return "[\n" + "".join(f"{inner}    {x},\n" for x in items) + inner + "]"

    nodes = block([_node(n, inner + "    ", budget, count) for n in g.node])
    parts = [nodes, repr(g.name), block([_value_info(v) for v in g.input]),
             block([_value_info(v) for v in g.output]),
             block([_tensor(t, inner + "    ", budget) for t in g.initializer])]
    if g.value_info:
        parts.append("value_info=" + block([_value_info(v) for v in g.value_info]))
    return "helper.make_graph(\n" + ",\n".join(inner + p for p in parts) + ",\n" + indent + ")"


def model_source(model_bytes: bytes) -> str:
    """``def build_model():`` building the model with onnx.helper; NotInline when it is too big
    or holds what the helpers cannot spell. The result is checked to rebuild the same model."""
    import onnx

    m = onnx.load_from_string(model_bytes)
    if m.functions:
        raise NotInline("it defines model-local functions")
    graph = _graph(m.graph, "    ", [0], [0])
    opsets = ", ".join(f"helper.make_opsetid({o.domain!r}, {o.version})" for o in m.opset_import)
    extra = "".join(f", {k}={getattr(m, k)!r}" for k in ("producer_name", "producer_version", "domain")
                    if getattr(m, k))
    if m.model_version:
        extra += f", model_version={m.model_version}"
    lines = ["def build_model():",
             '    """The reduced model, built with onnx.helper; model.onnx, when beside this file, holds the same."""',
             "    from onnx import TensorProto, helper, numpy_helper",
             "",
             f"    graph = {graph}",
             f"    model = helper.make_model(graph, ir_version={m.ir_version}, opset_imports=[{opsets}]{extra})"]
    if m.metadata_props:
        props = {p.key: p.value for p in m.metadata_props}
        lines.append(f"    helper.set_model_props(model, {props!r})")
    lines.append("    return model")
    src = "\n".join(lines) + "\n"
    built = build(src)
    diff = differences(m, built)
    if diff:
        raise NotInline(f"the model built inline differs: {diff[0]}")
    return src


def build(src: str):
    """The model that ``model_source``'s text builds."""
    scope = {"np": np}
    exec(compile(src, "<repro.py build_model>", "exec"), scope)  # source made here, checked to rebuild the model
    return scope["build_model"]()


def _normalized(model):
    """A copy of ``model`` in a canonical form: tensors re-encoded from their arrays (raw_data or
    typed fields alike), attributes sorted by name, doc strings dropped."""
    import onnx
    from onnx import numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.doc_string = ""

    def tensor(t):
        new = numpy_helper.from_array(numpy_helper.to_array(t), t.name)
        t.Clear()
        t.CopyFrom(new)

    def graph(g):
        g.doc_string = ""
        for t in g.initializer:
            tensor(t)
        for v in list(g.input) + list(g.output) + list(g.value_info):
            v.doc_string = ""
        for n in g.node:
            n.doc_string = ""
            attrs = sorted(n.attribute, key=lambda a: a.name)
            for a in attrs:
                a.doc_string = ""
                if a.HasField("t"):
                    tensor(a.t)
                if a.HasField("g"):
                    graph(a.g)
                for sub in a.graphs:
                    graph(sub)
            del n.attribute[:]
            n.attribute.extend(attrs)

    graph(m.graph)
    return m


def differences(a, b) -> list:
    """How ModelProtos ``a`` and ``b`` differ semantically, as lines (empty: the same model):
    opsets, IR version, graph inputs/outputs/value types, nodes and their attributes, and the
    initializers' names, dtypes, shapes and bytes."""
    from onnx import numpy_helper

    out = []
    na, nb = _normalized(a), _normalized(b)
    if a.ir_version != b.ir_version:
        out.append(f"IR version {a.ir_version} vs {b.ir_version}")
    if sorted((o.domain, o.version) for o in a.opset_import) != sorted((o.domain, o.version) for o in b.opset_import):
        out.append("opset imports differ")

    def walk(ga, gb, where):
        for field in ("input", "output", "value_info"):
            if [v.SerializeToString(deterministic=True) for v in getattr(ga, field)] != \
                    [v.SerializeToString(deterministic=True) for v in getattr(gb, field)]:
                out.append(f"{where}: graph {field} differ")
        if len(ga.initializer) != len(gb.initializer):
            out.append(f"{where}: {len(ga.initializer)} vs {len(gb.initializer)} initializers")
        for ta, tb in zip(ga.initializer, gb.initializer):
            xa, xb = numpy_helper.to_array(ta), numpy_helper.to_array(tb)
            if ta.name != tb.name or xa.dtype != xb.dtype or xa.shape != xb.shape or xa.tobytes() != xb.tobytes():
                out.append(f"{where}: initializer {ta.name!r} differs")
        if len(ga.node) != len(gb.node):
            out.append(f"{where}: {len(ga.node)} vs {len(gb.node)} nodes")
        for k, (x, y) in enumerate(zip(ga.node, gb.node)):
            for a_, b_ in zip(x.attribute, y.attribute):
                if a_.HasField("g") and b_.HasField("g"):
                    walk(a_.g, b_.g, f"{where}/node {k} {x.op_type}.{a_.name}")
            xs = [a_.SerializeToString(deterministic=True) for a_ in x.attribute if not a_.HasField("g")]
            ys = [b_.SerializeToString(deterministic=True) for b_ in y.attribute if not b_.HasField("g")]
            if (x.op_type, x.domain, list(x.input), list(x.output), x.name, xs) != \
                    (y.op_type, y.domain, list(y.input), list(y.output), y.name, ys) or \
                    [a_.name for a_ in x.attribute] != [b_.name for b_ in y.attribute]:
                out.append(f"{where}: node {k} ({x.op_type}) differs")

    walk(na.graph, nb.graph, "graph")
    return out
