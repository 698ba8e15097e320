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

A TVM finding (``tvm``, ``tvm-relax``) also gets ``repro_tvmscript.py``: the Relax module as
TVMScript plus the shortest pass sequence that still fails, needing only TVM and NumPy
(:mod:`dlgate.reduce.tvmscript`, :mod:`dlgate.reduce.passes`; ``tvmscript.npz`` beside it when
its data is too large to write inline).

This module writes and reads bundles; ``repro.py`` is assembled by :mod:`dlgate.reduce.script`,
the listing and diagram by :mod:`dlgate.reduce.listing`, Polygraphy's files by
:mod:`dlgate.reduce.polygraphy`.
"""
from __future__ import annotations

import json
import os

import numpy as np

from dlgate import GENERATOR_VERSION, __version__
from dlgate.backends.base import BackendSpec
from dlgate.check import Prepared, save_bundle
from dlgate.gate.journal import write_json
from dlgate.reduce.identity import identity, pattern
from dlgate.reduce.listing import listing, mermaid
from dlgate.reduce.polygraphy import polygraphy_command, polygraphy_inputs
from dlgate.reduce.passes import sequence
from dlgate.reduce.script import repro_script, self_contained, sources
from dlgate.reduce.tvmscript import outcome, write_tvmscript
from dlgate.secrets import redact

#: Seconds a TVM finding's pass-list reduction may take, at most (each try starts a worker).
TVMSCRIPT_SECONDS = 90.0
#: The package index's name of each compiler: the releases ``dlgate bisect-releases`` installs.
PACKAGES = {"onnxruntime": "onnxruntime", "tvm": "apache-tvm", "inductor": "torch", "tensorrt": "tensorrt"}


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


def tvm_repro(pool, cfg, d: str, case: Prepared, spec: BackendSpec, verdict: dict, reference: list,
              max_seconds: float = 120.0, log=print) -> dict | None:
    """For a TVM finding (``tvm`` or ``tvm-relax`` on the CPU): its pass list reduced and
    ``repro_tvmscript.py`` written beside ``repro.py`` (:mod:`dlgate.reduce.tvmscript`), the
    outcome recorded in repro.json (``tvmscript``). None, and nothing written, for others."""
    if sequence(spec) is None:
        return None
    info = read_repro(d)
    provenance = (f"campaign {info.get('campaign')}, case {info.get('case')}, root {info.get('root')}, "
                  f"reduced from {info.get('original_nodes')} to {len(case.graph.nodes)} operators")
    got = write_tvmscript(pool, cfg, d, case, spec, verdict, reference, provenance,
                          max_seconds=min(max_seconds, TVMSCRIPT_SECONDS))
    info["tvmscript"] = got
    write_json(os.path.join(d, "repro.json"), info)
    log(f"dlgate: {os.path.basename(d)}: {outcome(got)}")
    return got


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
