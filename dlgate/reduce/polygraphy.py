"""TensorRT's side of a repro bundle: the inputs in Polygraphy's JSON format (``inputs.json``)
and the equivalent ``polygraphy run`` command ``repro.py`` prints."""
from __future__ import annotations

import json
import shlex

import numpy as np

from dlgate.backends.base import BackendSpec
from dlgate.backends.tensorrt import LEVELS
from dlgate.oracle.compare import DEFAULT_TOLERANCES

#: Polygraphy's JSON type marker for a NumPy array (the ``polygraphy_class`` key of its ``save_json``).
POLYGRAPHY_CLASS = "ndarray"


def polygraphy_command(spec: BackendSpec, model: bytes, inputs: dict, reference: dict,
                       tolerances: dict | None = None) -> str | None:
    """The Polygraphy command that runs the model on TensorRT against onnxruntime with the exact
    inputs (``inputs.json``), at dlgate's tolerances for each output; None unless ``spec`` is
    TensorRT. dlgate's absolute tolerance scales with the output's largest magnitude, Polygraphy's
    does not: the per-output ``--atol`` given is the scaled one."""
    if spec.name != "tensorrt":
        return None
    import onnx

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
