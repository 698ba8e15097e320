"""Repro bundles: what a compiler engineer downloads to see a bug in a minute.

A bundle folder holds ``model.onnx``, ``inputs.npz``, ``reference.npz`` (the reference's
outputs), ``repro.py`` (standalone: NumPy, onnx and the compiler under test; it prints what
went wrong and exits 1 while the bug is present, 0 once it is fixed), ``graph.txt`` (a
short listing), ``graph.mmd`` (a Mermaid diagram, which GitHub renders), and
``repro.json`` (verdict, signature, fingerprint, versions, provenance).

A small reduced model (:mod:`dlgate.reduce.inline`: at most 20 operators, 4 KB of constants)
is built inside ``repro.py`` with ``onnx.helper``, and small inputs and expected outputs are
NumPy literals there, so the script pasted into an issue is the whole repro; larger ones are
read from the files beside it. ``repro.py`` prints, per output, the expected value, the
compiler's, onnx.reference's and a float64 evaluation's at the worst element. For TensorRT the
bundle also holds ``inputs.json`` (Polygraphy's input format) and ``repro.py`` prints the
equivalent ``polygraphy run`` command.
"""
from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass

import numpy as np

from dlgate import GENERATOR_VERSION, __version__
from dlgate import markdown as md
from dlgate.backends.base import BackendSpec
from dlgate.backends.registry import load
from dlgate.check import Prepared, save_bundle
from dlgate.gate.journal import write_json
from dlgate.oracle.compare import DEFAULT_TOLERANCES
from dlgate.reduce import inline as IN
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
"""dlgate repro: @@TITLE@@

Needs only NumPy, onnx and the compiler under test (@@COMPILER@@). Run it from anywhere:

    python repro.py

@@SELF@@ It prints what goes wrong and exits 1 while the bug is present, 0 once it is fixed.
Beside the expected outputs dlgate stored (its reference's), it prints what onnx's reference
evaluator (onnx.reference) gives, and a float64 evaluation where the model is floating-point.
Found by dlgate @@DLGATE@@ (generator @@GENERATOR@@): @@PROVENANCE@@.
"""
import os
import signal
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = @@EXPECTED@@
#: dtype -> (rtol, atol); floats compare as |got - ref| <= atol * max(1, max|ref|) + rtol * |ref|
TOLERANCES = @@TOLERANCES@@
TIMEOUT_S = @@TIMEOUT@@
#: The same check with NVIDIA's Polygraphy (TensorRT against onnxruntime), run in this folder; None
#: unless the compiler under test is TensorRT.
POLYGRAPHY = @@POLYGRAPHY@@

# ---- the compiler under test, configured as dlgate ran it ------------------------------------
@@BACKEND@@
# ---------------------------------------------------------------------------------------------


# ---- the reduced model, its inputs and the expected outputs ----------------------------------
@@MODEL@@


@@INPUTS@@


@@EXPECTED_OUTPUTS@@
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


def to_float64(model):
    """The model with every float16, bfloat16 and float32 tensor made float64 (inputs, outputs,
    value types, constants, Cast targets and other dtype attributes), or None when it has none."""
    from onnx import TensorProto, numpy_helper

    narrow = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    found = []

    def value(v):
        if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type in narrow:
            v.type.tensor_type.elem_type = TensorProto.DOUBLE
            found.append(v.name)

    def tensor(t):
        if t.data_type in narrow:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))
            found.append(t.name)

    def graph(g):
        for v in list(g.input) + list(g.output) + list(g.value_info):
            value(v)
        for t in g.initializer:
            tensor(t)
        for n in g.node:
            for a in n.attribute:
                if a.name in ("to", "dtype", "stash_type", "output_dtype") and a.type == a.INT and a.i in narrow:
                    a.i = TensorProto.DOUBLE
                    found.append(n.name)
                if a.HasField("t"):
                    tensor(a.t)
                if a.HasField("g"):
                    graph(a.g)
                for sub in a.graphs:
                    graph(sub)

    graph(m.graph)
    return m if found else None


def _why(e):
    text = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, text[0][:300] if text else "")


def references(model, feeds):
    """[(label, outputs or None, why not)]: onnx.reference on the model, and on it in float64."""
    try:
        from onnx.reference import ReferenceEvaluator
    except ImportError as e:
        return [("onnx.reference", None, "not applicable: " + _why(e))]
    rows = []
    try:
        rows.append(("onnx.reference", [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feeds)], ""))
    except Exception as e:  # an operator onnx.reference lacks, or gets wrong
        rows.append(("onnx.reference", None, "not applicable: " + _why(e)))
    wide = to_float64(model)
    if wide is None:
        rows.append(("float64 evaluation", None,
                     "not applicable: no float16, bfloat16 or float32 tensor (onnx.reference's is the float64 one)"
                     if any(v.type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
                            for v in list(model.graph.input) + list(model.graph.output)) else
                     "not applicable: the model has no float16, bfloat16 or float32 tensor"))
        return rows
    try:
        f64 = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in feeds.items()}
        rows.append(("float64 evaluation", [np.asarray(o) for o in ReferenceEvaluator(wide).run(None, f64)], ""))
    except Exception as e:
        rows.append(("float64 evaluation", None, "not applicable: " + _why(e)))
    return rows


def _where(r, g):
    """The index to show: the worst element of ``g`` against ``r``, else the first one."""
    if r.size == 0:
        return None
    first = (0,) * r.ndim
    if g is None or g.shape != r.shape:
        return first
    if r.dtype.kind == "f" or g.dtype.kind == "f":
        rd, gd = r.astype(np.float64), g.astype(np.float64)
        odd = (np.isnan(rd) != np.isnan(gd)) | (np.isinf(rd) & (rd != gd))
        if odd.any():
            return tuple(int(i) for i in np.argwhere(odd)[0])
        err = np.where(np.isfinite(rd) & np.isfinite(gd), np.abs(gd - rd), 0.0)
        return tuple(int(i) for i in np.unravel_index(int(err.argmax()), r.shape)) if err.max() > 0 else first
    bad = np.argwhere(g != r)
    return tuple(int(i) for i in bad[0]) if len(bad) else first


def _line(label, x, r, at):
    if x is None:
        return "    %-22s none" % label
    x = np.asarray(x)
    if x.shape != r.shape:
        return "    %-22s shape %s (expected %s)" % (label, list(x.shape), list(r.shape))
    value = x[at].item() if at is not None else "(empty)"
    if r.dtype.kind == "f" and x.dtype.kind in "fiub":
        rd, xd = r.astype(np.float64), x.astype(np.float64)
        fin = np.isfinite(rd) & np.isfinite(xd)
        same = bool(((np.isnan(rd) == np.isnan(xd)) & (~np.isinf(rd) | (rd == xd))).all())
        err = float(np.abs(xd - rd)[fin].max()) if fin.any() else 0.0
        note = "max abs error vs expected %.4g%s" % (err, "" if same else ", and NaN/Inf elsewhere")
    else:
        diff = int((x != r).sum())
        note = "equal to expected" if not diff else "%d of %d elements differ from expected" % (diff, r.size)
    return "    %-22s %-24r %s" % (label, value, note)


def explain(out_names, ref, got, rows):
    """Expected versus actual per output, at its worst element, with onnx.reference's and the
    float64 evaluation's values there."""
    print("Expected versus actual (each output at its worst element):")
    for k, name in enumerate(out_names):
        r = ref[k]
        g = None if got is None or k >= len(got) else np.asarray(got[k])
        at = _where(r, g)
        print("  output %d %r, %s%s%s:" % (k, name, r.dtype, list(r.shape), "" if at is None else " at %s" % (at,)))
        print("    %-22s %r" % ("expected (stored)", r[at].item() if at is not None else "(empty)"))
        if got is None:
            print("    %-22s none: the compiler failed (above)" % "actual (compiler)")
        else:
            print(_line("actual (compiler)", g, r, at))
        for label, outs, why in rows:
            if outs is None:
                print("    %-22s %s" % (label, why))
            else:
                print(_line(label, outs[k] if k < len(outs) else None, r, at))


def _hang(signum, frame):
    print("BUG: the compiler gave no answer within %d s (hang)" % TIMEOUT_S)
    sys.stdout.flush()
    os._exit(1)


def polygraphy(model, feeds):
    """Print the Polygraphy command; write model.onnx and inputs.json (Polygraphy's format: a
    JSON list of feed dicts, each array the base64 of np.save's bytes) beside this file if missing."""
    import base64
    import io
    import json

    wrote = []
    if not os.path.exists(os.path.join(HERE, "model.onnx")):
        onnx.save(model, os.path.join(HERE, "model.onnx"))
        wrote.append("model.onnx")
    if not os.path.exists(os.path.join(HERE, "inputs.json")):
        def encode(a):
            buf = io.BytesIO()
            np.save(buf, np.array(a, order="C"), allow_pickle=False)  # keeps a scalar rank 0
            return {"array": base64.b64encode(buf.getvalue()).decode(), "polygraphy_class": "ndarray"}
        with open(os.path.join(HERE, "inputs.json"), "w") as f:
            json.dump([{k: encode(v) for k, v in feeds.items()}], f, indent=4)
            f.write("\\n")
        wrote.append("inputs.json")
    print("The same check with Polygraphy, in %s%s:" % (HERE, " (wrote %s)" % ", ".join(wrote) if wrote else ""))
    print("  " + POLYGRAPHY)


def main():
    model = load_model()
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    out_names = [o.name for o in model.graph.output]
    feeds = load_inputs()
    inputs = [feeds[n] for n in names]
    stored = load_expected()
    ref = [stored[n] for n in out_names]
    if POLYGRAPHY:
        polygraphy(model, feeds)
    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _hang)
        signal.alarm(TIMEOUT_S)
    try:
        got = run(model.SerializeToString(), names, inputs, out_names)
    except Exception as e:  # the compiler failing to compile or run is the bug
        if hasattr(signal, "SIGALRM"):
            signal.alarm(0)
        print("BUG: %s: %s" % (type(e).__name__, str(e).strip()[:4000]))
        print("dlgate saw: %s" % EXPECTED["detail"][:1000])
        explain(out_names, ref, None, references(model, feeds))
        return 1
    if hasattr(signal, "SIGALRM"):
        signal.alarm(0)
    problems = compare(ref, got)
    if problems:
        print("BUG: wrong result (%s)" % EXPECTED["verdict"])
        for p in problems:
            print("  " + p)
    else:
        print("OK: the outputs match the reference; the bug dlgate saw (%s) is not present" % EXPECTED["verdict"])
    explain(out_names, ref, got, references(model, feeds))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
'''

_LOAD_MODEL_FILE = '''def load_model():
    """The reduced model, from model.onnx beside this file (too large to build here)."""
    return onnx.load(os.path.join(HERE, "model.onnx"))'''
_LOAD_MODEL_INLINE = '''

def load_model():
    return build_model()'''
_LOAD_NPZ = '''def @@FUNCTION@@():
    """@@WHAT@@, from @@FILE@@ beside this file (too large to write here)."""
    with np.load(os.path.join(HERE, "@@FILE@@")) as z:
        return {k: np.array(z[k]) for k in z.files}'''

#: The package index's name of each compiler: the releases ``dlgate bisect-releases`` installs.
PACKAGES = {"onnxruntime": "onnxruntime", "tvm": "apache-tvm", "inductor": "torch", "tensorrt": "tensorrt"}
#: Polygraphy's JSON type marker for a NumPy array (the ``polygraphy_class`` key of its ``save_json``).
POLYGRAPHY_CLASS = "ndarray"


@dataclass
class Sources:
    """repro.py's data sections, and what each reads: ``inline``, or the file (and why)."""

    model: str
    inputs: str
    expected: str
    how: dict


def _npz_loader(function: str, what: str, file: str) -> str:
    return _LOAD_NPZ.replace("@@FUNCTION@@", function).replace("@@WHAT@@", what).replace("@@FILE@@", file)


def sources(model: bytes, inputs: dict, expected: dict) -> Sources:
    """repro.py's model, inputs and expected outputs: inline when small (:mod:`dlgate.reduce.inline`),
    else read from the bundle's files; ``how`` records which, and why not inline."""
    how = {}
    try:
        model_src = IN.model_source(model).rstrip("\n") + _LOAD_MODEL_INLINE
        how["model"] = "inline"
    except IN.NotInline as e:
        model_src, how["model"] = _LOAD_MODEL_FILE, f"model.onnx: {e}"
    parts = []
    for arrays, fn, what, file in ((inputs, "load_inputs", "the inputs", "inputs.npz"),
                                   (expected, "load_expected", "the expected outputs", "reference.npz")):
        key = fn.split("_")[1]
        try:
            parts.append(IN.data_source(arrays, fn, what).rstrip("\n"))
            how[key] = "inline"
        except IN.NotInline as e:
            parts.append(_npz_loader(fn, what[0].upper() + what[1:], file))
            how[key] = f"{file}: {e}"
    return Sources(model_src, parts[0], parts[1], how)


def _file_sources() -> Sources:
    """Every section read from the bundle's files (repro.py before inline models)."""
    return Sources(_LOAD_MODEL_FILE, _npz_loader("load_inputs", "The inputs", "inputs.npz"),
                   _npz_loader("load_expected", "The expected outputs", "reference.npz"),
                   {"model": "model.onnx", "inputs": "inputs.npz", "expected": "reference.npz"})


def self_contained(how: dict) -> bool:
    """Whether repro.py needs no other file of its bundle."""
    return bool(how) and all(v == "inline" for v in how.values())


def polygraphy_command(spec: BackendSpec, model: bytes, inputs: dict, reference: dict,
                       tolerances: dict | None = None) -> str | None:
    """The Polygraphy command that runs the model on TensorRT against onnxruntime with the exact
    inputs (``inputs.json``), at dlgate's tolerances for each output; None unless ``spec`` is
    TensorRT. dlgate's absolute tolerance scales with the output's largest magnitude, Polygraphy's
    does not: the per-output ``--atol`` given is the scaled one."""
    if spec.name != "tensorrt":
        return None
    import onnx

    from dlgate.backends.tensorrt import LEVELS

    m = onnx.load_from_string(model)
    tol = dict(DEFAULT_TOLERANCES, **(tolerances or {}))
    args = ["polygraphy", "run", "model.onnx", "--trt", "--onnxrt", "--load-inputs", "inputs.json"]
    opts = dict(spec.options)
    if spec.opt_level in LEVELS:
        args += ["--builder-optimization-level", str(LEVELS[spec.opt_level])]
    if opts.get("fp16"):
        args.append("--fp16")
    if opts.get("workspace_mb"):
        args += ["--pool-limit", f"workspace:{int(opts['workspace_mb'])}M"]
    inits = {t.name for t in m.graph.initializer}
    dynamic = [f"{v.name}:[{','.join(str(d) for d in np.asarray(inputs[v.name]).shape)}]" for v in m.graph.input
               if v.name in inputs and v.name not in inits
               and any(not d.HasField("dim_value") for d in v.type.tensor_type.shape.dim)]
    if dynamic:
        args += ["--input-shapes", *dynamic]
    atol, rtol = [], []
    for name, r in reference.items():
        r = np.asarray(r)
        if r.dtype.kind != "f":
            atol.append(f"{name}:0")
            rtol.append(f"{name}:0")
            continue
        rt, at = tol.get(r.dtype.name, (1e-2, 1e-3))
        fin = np.isfinite(r)
        scale = max(1.0, float(np.abs(r[fin].astype(np.float64)).max())) if fin.any() else 1.0
        atol.append(f"{name}:{at * scale:.6g}")
        rtol.append(f"{name}:{rt:.6g}")
    if atol:
        args += ["--atol", *atol, "--rtol", *rtol]
    return " ".join(shlex.quote(a) for a in args)


def polygraphy_inputs(inputs: dict) -> str:
    """``inputs.json`` for ``polygraphy run --load-inputs``: what Polygraphy's ``save_json`` writes
    for a list of one feed dict (a JSON list of objects; each array an object holding ``array``,
    the base64 of ``np.save``'s bytes, and the type marker), in the graph's input order."""
    import base64
    import io

    def encode(a):
        buf = io.BytesIO()
        np.save(buf, np.array(a, order="C"), allow_pickle=False)  # keeps a scalar rank 0
        return {"array": base64.b64encode(buf.getvalue()).decode(), "polygraphy_class": POLYGRAPHY_CLASS}

    return json.dumps([{k: encode(np.asarray(v)) for k, v in inputs.items()}], indent=4) + "\n"


def load_polygraphy_inputs(text: str) -> list:
    """The feed dicts of an ``inputs.json``, decoded as Polygraphy's ``load_json`` decodes them."""
    import base64
    import io

    def hook(d):
        if d.get("polygraphy_class") == POLYGRAPHY_CLASS:
            return np.load(io.BytesIO(base64.b64decode(d["array"].encode(), validate=True)), allow_pickle=False)
        return d

    return json.loads(text, object_hook=hook)


def repro_script(spec: BackendSpec, verdict: dict, provenance: str, tolerances: dict | None = None,
                 src: Sources | None = None, polygraphy: str | None = None) -> str:
    cls = load(spec.name)
    backend = cls.repro_source(spec)
    if backend is None:
        backend = ("def run(model_bytes, input_names, inputs, output_names):\n"
                   f"    raise SystemExit('{spec.name} has no standalone driver: run this folder with dlgate: "
                   f"dlgate check . --backend {spec.name}"
                   + (", or the Polygraphy command above" if polygraphy else "") + "')\n")
    src = src or _file_sources()
    tol = {k: list(v) for k, v in dict(DEFAULT_TOLERANCES, **(tolerances or {})).items()}
    expected = {"verdict": verdict["verdict"], "backend": verdict["backend"],
                "signature": (verdict.get("signature") or {}).get("id"), "detail": verdict.get("detail", "")}
    if self_contained(src.how):
        self_line = ("Self-contained: the model, its inputs and the expected outputs are written below; it\n"
                     "reads no other file.")
    else:
        files = [v.split(":")[0] for v in src.how.values() if v != "inline"]
        self_line = f"It reads {', '.join(files)} from its own folder (too large to write here)."
    subs = {"TITLE": f"{verdict['verdict']} on {verdict['backend']}", "COMPILER": spec.name, "DLGATE": __version__,
            "GENERATOR": GENERATOR_VERSION, "PROVENANCE": provenance, "SELF": self_line, "EXPECTED": repr(expected),
            "TOLERANCES": repr(tol), "TIMEOUT": str(REPRO_TIMEOUT_S), "POLYGRAPHY": repr(polygraphy),
            "BACKEND": backend.rstrip("\n"), "MODEL": src.model, "INPUTS": src.inputs,
            "EXPECTED_OUTPUTS": src.expected}
    return re.sub(r"@@([A-Z_]+)@@", lambda m: subs[m.group(1)], _TEMPLATE)


def write_repro(out_dir: str, case: Prepared, spec: BackendSpec, verdict: dict, reference: list,
                info: dict, tolerances: dict | None = None) -> str:
    """Write the bundle for a (reduced) failing case; returns its folder."""
    d = save_bundle(os.path.dirname(out_dir) or ".", case, subdir=os.path.basename(out_dir))
    g = case.graph
    refs = {g.name(t): np.asarray(x) for t, x in zip(g.outputs, reference)}
    feeds = {g.name(t): np.asarray(x) for t, x in zip(g.inputs, case.inputs)}
    np.savez(os.path.join(d, "reference.npz"), **refs)
    provenance = (f"campaign {info.get('campaign')}, case {info.get('case')}, root {info.get('root')}, "
                  f"reduced from {info.get('original_nodes')} to {len(g.nodes)} operators")
    from dlgate.secrets import redact  # repro.py embeds the failure's detail

    src = sources(case.model, feeds, refs)
    poly = polygraphy_command(spec, case.model, feeds, refs, tolerances)
    if poly:
        with open(os.path.join(d, "inputs.json"), "w") as f:
            f.write(polygraphy_inputs(feeds))
    with open(os.path.join(d, "repro.py"), "w") as f:
        f.write(redact(repro_script(spec, verdict, provenance, tolerances, src, poly)))
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
               typed=ident["typed"], identity_text=ident["text"], repro_reads=src.how,
               self_contained=self_contained(src.how))
    if PACKAGES.get(spec.name):
        doc["package"] = PACKAGES[spec.name]
    if poly:
        doc["polygraphy"] = poly
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
