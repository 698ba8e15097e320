"""A repro bundle's ``repro.py``: a standalone script (NumPy, onnx and the compiler under test)
that prints what went wrong and exits 1 while the bug is present, 0 once it is fixed. A small
model is built inside it with ``onnx.helper`` and small inputs and expected outputs are NumPy
literals there (:mod:`dlgate.reduce.inline`), so the script pasted into an issue is the
whole repro; larger ones are read from the files beside it."""
from __future__ import annotations

import re
from dataclasses import dataclass

from dlgate import GENERATOR_VERSION, __version__
from dlgate.backends.base import BackendSpec
from dlgate.backends.registry import load
from dlgate.oracle.compare import DEFAULT_TOLERANCES
from dlgate.reduce import inline as IN

#: Seconds repro.py waits for the compiler before calling it a hang.
REPRO_TIMEOUT_S = 600
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


def repro_script(spec: BackendSpec, verdict: dict, provenance: str, tolerances: dict | None = None,
                 src: Sources | None = None, polygraphy: str | None = None) -> str:
    cls = load(spec.name)
    backend = cls.repro_source(spec)
    if backend is None:
        # exit status 2, not 1: nothing was run, so "the bug is present" (1) would be a lie
        backend = ("def run(model_bytes, input_names, inputs, output_names):\n"
                   "    import sys\n"
                   f"    sys.stderr.write('{spec.name} has no standalone driver: run this folder with dlgate: "
                   f"dlgate check . --backend {spec.name}"
                   + (", or the Polygraphy command above" if polygraphy else "") + "\\n')\n"
                   "    raise SystemExit(2)\n")
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
