"""A repro bundle's views of its model: ONNX's own text syntax (``graph.txt``) and a Mermaid
diagram (``graph.mmd``, which GitHub renders in an issue)."""
from __future__ import annotations

from dlgate import markdown as md


def listing(model: bytes) -> str:
    """The model in ONNX's own text syntax (``onnx.printer``): what the compiler was given."""
    import onnx

    return onnx.printer.to_text(onnx.load_from_string(model)) + "\n"


def _vtype(v) -> str:
    import onnx

    kind = v.type.WhichOneof("value")
    if kind != "tensor_type" or not v.type.tensor_type.elem_type:
        return {"sequence_type": "sequence", "optional_type": "optional"}.get(kind, "?")  # or an untyped tensor
    t = v.type.tensor_type
    dims = ", ".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim)
    return f"{onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name}[{dims}]"


def _attr_text(node) -> str:
    import onnx

    parts = []
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode(errors="replace")
        if isinstance(v, (list, tuple)) and len(v) > 8 or isinstance(v, onnx.TensorProto):
            continue
        parts.append(md.mermaid(f"{a.name}={v}"))
    return "<br/>" + ", ".join(parts) if parts else ""


def mermaid(model: bytes) -> str:
    """A Mermaid flowchart of the ONNX graph: inputs, initializers, operators (with short
    attributes), outputs; edges carry the tensor types ONNX's shape inference gives."""
    import onnx

    m = onnx.shape_inference.infer_shapes(onnx.load_from_string(model))
    g = m.graph
    types = {v.name: _vtype(v) for v in list(g.input) + list(g.value_info) + list(g.output)}
    ids: dict = {}

    def node_id(name: str) -> str:
        return ids.setdefault(name, f"v{len(ids)}")

    lines = ["flowchart TD"]
    inits = {t.name: t for t in g.initializer}
    for v in g.input:
        if v.name not in inits:
            lines.append(f'  {node_id(v.name)}(["input {md.mermaid(v.name)}<br/>{md.mermaid(types.get(v.name, ""))}"])')
    for t in g.initializer:
        dims = ", ".join(str(d) for d in t.dims)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).name
        lines.append(f'  {node_id(t.name)}[("const {md.mermaid(t.name)}<br/>{dtype}[{dims}]")]')
    producer = {}
    for k, n in enumerate(g.node):
        lines.append(f'  n{k}["{md.mermaid(n.op_type)}{_attr_text(n)}"]')
        for o in n.output:
            producer[o] = f"n{k}"
    for k, n in enumerate(g.node):
        for i in n.input:
            if not i:
                continue
            src = producer.get(i) or node_id(i)
            label = md.mermaid(types.get(i, "")) if i in producer else ""
            lines.append(f'  {src} -->|"{label}"| n{k}' if label else f"  {src} --> n{k}")
    for v in g.output:
        lines.append(f'  out_{node_id(v.name)}(("output {md.mermaid(v.name)}<br/>{md.mermaid(types.get(v.name, ""))}"))')
        lines.append(f"  {producer.get(v.name, node_id(v.name))} --> out_{node_id(v.name)}")
    return "\n".join(lines) + "\n"
