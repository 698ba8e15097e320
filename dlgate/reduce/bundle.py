"""Repro bundles: what a compiler engineer downloads to see a bug in a minute.

A bundle folder holds ``model.onnx``, ``inputs.npz``, ``reference.npz`` (the reference's
outputs), ``repro.py`` (standalone: NumPy, onnx and the compiler under test; it prints what
went wrong and exits 1 while the bug is present, 0 once it is fixed), ``graph.txt`` (a
short listing), ``graph.mmd`` (a Mermaid diagram, which GitHub renders), and
``repro.json`` (verdict, signature, fingerprint, versions, provenance).
"""
from __future__ import annotations

import json
import os

import numpy as np

from dlgate import GENERATOR_VERSION, __version__
from dlgate import markdown as md
from dlgate.backends.base import BackendSpec
from dlgate.backends.registry import load
from dlgate.check import Prepared, save_bundle
from dlgate.gate.journal import write_json
from dlgate.oracle.compare import DEFAULT_TOLERANCES
from dlgate.reduce.identity import identity, pattern

#: Seconds repro.py waits for the compiler before calling it a hang.
REPRO_TIMEOUT_S = 600


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


_TEMPLATE = '''#!/usr/bin/env python3
"""dlgate repro: {title}

Needs only NumPy, onnx and the compiler under test ({compiler}). Run it from anywhere:

    python repro.py

It prints what goes wrong and exits 1 while the bug is present, 0 once it is fixed.
Found by dlgate {dlgate} (generator {generator}): {provenance}.
"""
import os
import signal
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = {expected!r}
#: dtype -> (rtol, atol); floats compare as |got - ref| <= atol * max(1, max|ref|) + rtol * |ref|
TOLERANCES = {tolerances!r}
TIMEOUT_S = {timeout}

# ---- the compiler under test, configured as dlgate ran it ------------------------------------
{backend}
# ---------------------------------------------------------------------------------------------


def compare(ref, got):
    """Problems found comparing the compiler's outputs with the reference's, as text."""
    if len(got) != len(ref):
        return ["the compiler returned %d outputs, expected %d" % (len(got), len(ref))]
    problems = []
    for k, (r, g) in enumerate(zip(ref, got)):
        g = np.asarray(g)
        if g.shape != r.shape:
            problems.append("output %d: shape %s, expected %s" % (k, list(g.shape), list(r.shape)))
            continue
        if g.dtype != r.dtype:
            problems.append("output %d: dtype %s, expected %s" % (k, g.dtype, r.dtype))
            continue
        if r.dtype.kind != "f":
            bad = np.argwhere(g != r)
            if len(bad):
                problems.append("output %d: %d of %d elements differ (exact dtype), first at %s: %s vs %s"
                                % (k, len(bad), r.size, tuple(bad[0]), g[tuple(bad[0])], r[tuple(bad[0])]))
            continue
        if (np.isnan(g) != np.isnan(r)).any() or (np.isinf(g) != np.isinf(r)).any() or \\
                (np.isinf(r) & (np.sign(g) != np.sign(r))).any():
            problems.append("output %d: NaN/Inf at different positions" % k)
            continue
        rtol, atol = TOLERANCES.get(r.dtype.name, (1e-2, 1e-3))
        fin = np.isfinite(r)
        rd, gd = r.astype(np.float64), g.astype(np.float64)
        err = np.where(fin, np.abs(gd - rd), 0.0)
        scale = max(1.0, float(np.abs(rd[fin]).max())) if fin.any() else 1.0
        bad = np.argwhere(err > atol * scale + rtol * np.abs(np.where(fin, rd, 0.0)))
        if len(bad):
            i = tuple(bad[0])
            rel = float((err / np.maximum(np.abs(np.where(fin, rd, 1.0)), 1e-30)).max())
            problems.append("output %d: %d of %d elements differ; max abs error %.4g, max rel error %.4g; "
                            "first at %s: got %r, expected %r" % (k, len(bad), r.size, float(err.max()), rel, i,
                                                                  g[i].item(), r[i].item()))
    return problems


def _hang(signum, frame):
    print("BUG: the compiler gave no answer within %d s (hang)" % TIMEOUT_S)
    sys.stdout.flush()
    os._exit(1)


def main():
    model = onnx.load(os.path.join(HERE, "model.onnx"))
    inits = {{i.name for i in model.graph.initializer}}
    names = [i.name for i in model.graph.input if i.name not in inits]
    out_names = [o.name for o in model.graph.output]
    with np.load(os.path.join(HERE, "inputs.npz")) as z:
        inputs = [np.array(z[n]) for n in names]
    with np.load(os.path.join(HERE, "reference.npz")) as z:
        ref = [np.array(z[n]) for n in out_names]
    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _hang)
        signal.alarm(TIMEOUT_S)
    try:
        got = run(model.SerializeToString(), names, inputs, out_names)
    except Exception as e:  # the compiler failing to compile or run is the bug
        print("BUG: %s: %s" % (type(e).__name__, str(e).strip()[:4000]))
        print("dlgate saw: %s" % EXPECTED["detail"][:1000])
        return 1
    problems = compare(ref, got)
    if problems:
        print("BUG: wrong result (%s)" % EXPECTED["verdict"])
        for p in problems:
            print("  " + p)
        return 1
    print("OK: the outputs match the reference; the bug dlgate saw (%s) is not present" % EXPECTED["verdict"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def repro_script(spec: BackendSpec, verdict: dict, provenance: str, tolerances: dict | None = None) -> str:
    cls = load(spec.name)
    src = cls.repro_source(spec)
    if src is None:
        src = ("def run(model_bytes, input_names, inputs, output_names):\n"
               f"    raise SystemExit('{spec.name} has no standalone driver: run this folder with dlgate: "
               f"dlgate check . --backend {spec.name}')\n")
    tol = {k: list(v) for k, v in dict(DEFAULT_TOLERANCES, **(tolerances or {})).items()}
    expected = {"verdict": verdict["verdict"], "backend": verdict["backend"],
                "signature": (verdict.get("signature") or {}).get("id"), "detail": verdict.get("detail", "")}
    title = f"{verdict['verdict']} on {verdict['backend']}"
    return _TEMPLATE.format(title=title, compiler=spec.name, dlgate=__version__, generator=GENERATOR_VERSION,
                            provenance=provenance, expected=expected, tolerances=tol, timeout=REPRO_TIMEOUT_S,
                            backend=src.rstrip("\n"))


def write_repro(out_dir: str, case: Prepared, spec: BackendSpec, verdict: dict, reference: list,
                info: dict, tolerances: dict | None = None) -> str:
    """Write the bundle for a (reduced) failing case; returns its folder."""
    d = save_bundle(os.path.dirname(out_dir) or ".", case, subdir=os.path.basename(out_dir))
    g = case.graph
    np.savez(os.path.join(d, "reference.npz"), **{g.name(t): np.asarray(x) for t, x in zip(g.outputs, reference)})
    provenance = (f"campaign {info.get('campaign')}, case {info.get('case')}, root {info.get('root')}, "
                  f"reduced from {info.get('original_nodes')} to {len(g.nodes)} operators")
    from dlgate.secrets import redact  # repro.py embeds the failure's detail

    with open(os.path.join(d, "repro.py"), "w") as f:
        f.write(redact(repro_script(spec, verdict, provenance, tolerances)))
    with open(os.path.join(d, "graph.txt"), "w") as f:
        f.write(listing(case.model))
    with open(os.path.join(d, "graph.mmd"), "w") as f:
        f.write(mermaid(case.model))
    ident = info.get("identity") or identity(verdict["verdict"], spec.name, verdict.get("error"), g)
    info = {k: v for k, v in info.items() if k != "identity"}
    doc = dict(info, verdict=verdict["verdict"], backend=verdict["backend"], backend_spec=spec.label(),
               signature=(verdict.get("signature") or {}).get("id"),
               signature_text=(verdict.get("signature") or {}).get("text", ""), detail=verdict.get("detail", ""),
               comparison=verdict.get("comparison"), versions=verdict.get("versions", {}),
               pattern=pattern(g), nodes=len(g.nodes), dlgate=__version__, generator=GENERATOR_VERSION,
               opset=g.opset, environment=environment(), fingerprint=ident["fingerprint"], cluster=ident["cluster"],
               typed=ident["typed"], identity_text=ident["text"])
    write_json(os.path.join(d, "repro.json"), doc)
    return d


def environment() -> dict:
    """Versions of everything on dlgate's side of a repro: Python, the platform, NumPy,
    onnx, the reference (PyTorch) and the solver."""
    import platform

    out = {"python": platform.python_version(), "platform": platform.platform(), "numpy": np.__version__}
    for mod, key in (("onnx", "onnx"), ("torch", "torch"), ("z3", "z3-solver")):
        try:
            m = __import__(mod)
            out[key] = m.get_full_version() if mod == "z3" else m.__version__
        except Exception:  # an optional component missing is recorded as such
            out[key] = "absent"
    return out


def read_repro(d: str) -> dict:
    with open(os.path.join(d, "repro.json")) as f:
        return json.load(f)
