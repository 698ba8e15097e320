"""The repro bundle of an invalid-model finding, beside the reduced ones
(``OUT/repros/<fingerprint>/``, once per fingerprint), so that it is reported, filed and
downloaded like any other: ``model.onnx`` (the invalid model as run), ``inputs.npz``,
``reference.npz`` (empty: nothing is compared), ``graph.txt`` and ``graph.mmd``,
``repro.json``, and a ``repro.py`` that needs only NumPy and the compiler under test. Its
test is inverted from a wrong answer's: it exits 0 when the compiler rejects the model with
an error, 1 when it accepts and runs it or gives no answer within the time limit, and dies
with the compiler when it crashes.

A Relax-level invalid finding (``tvm-relax-invalid``: its ONNX model is valid, the module TVM
builds is not) has no ONNX repro: its bundle's repro is ``repro_tvmscript.py``
(:mod:`dlgate.reduce.tvmscript_invalid`; ``repro.py`` is the same script, the name every
bundle's repro has), written when its pass list reproduces the finding."""
from __future__ import annotations

import os

import numpy as np
import onnx

from dlgate import GENERATOR_VERSION, __version__
from dlgate.backends.registry import load
from dlgate.check import save_bundle
from dlgate.gate.journal import write_json
from dlgate.reduce.bundle import PACKAGES, environment
from dlgate.reduce.listing import listing, mermaid
from dlgate.reduce.tvmscript_invalid import write_invalid_tvmscript
from dlgate.secrets import redact

#: Seconds ``repro.py`` waits for the compiler before it calls the model a hang.
TIMEOUT_S = 600

_SCRIPT = '''"""dlgate: {title}

The model breaks one rule of ONNX on purpose ({rule}: {breaks}):
{detail}
onnx.checker (full_check=True) says: {checker}

A correct compiler rejects it with an error: this script exits 0 then, and 1 when the
compiler accepts and runs the model or gives no answer within {timeout} s; a crash kills it.
Needs NumPy and the compiler; reads model.onnx and inputs.npz from its own folder.
"""
import os
import signal
import sys

import numpy as np

{backend}

HERE = os.path.dirname(os.path.abspath(__file__))
INPUT_NAMES = {inputs!r}
OUTPUT_NAMES = {outputs!r}


def main():
    model = open(os.path.join(HERE, "model.onnx"), "rb").read()
    with np.load(os.path.join(HERE, "inputs.npz")) as z:
        inputs = [z[n] for n in INPUT_NAMES]
    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, lambda *_: (print("BUG: no answer within {timeout} s (hang)"), os._exit(1)))
        signal.alarm({timeout})
    try:
        run(model, INPUT_NAMES, inputs, OUTPUT_NAMES)
    except Exception as e:  # the compiler's own error: what it should do
        lines = str(e).strip().splitlines()
        print("OK: the compiler rejects the invalid model: %s%s" % (type(e).__name__, ": " + lines[0] if lines else ""))
        return 0
    print("BUG: the compiler accepted and ran a model that ONNX rejects ({rule} at {node})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
'''


def _drawn(model: bytes) -> tuple:
    """(listing, Mermaid diagram) of ``model``: the reducer's, which infer the tensors' types,
    or, where ONNX's shape inference cannot run on the invalid model (an input out of an
    operator's bounds), ONNX's own text and a diagram of the nodes and their edges alone."""
    try:
        return listing(model), mermaid(model)
    except Exception:  # noqa: BLE001 - onnx's inference errors on a model broken on purpose
        g = onnx.load_from_string(model).graph
        producer = {o: k for k, n in enumerate(g.node) for o in n.output if o}
        lines = ["flowchart TD"] + [f'  n{k}["{n.op_type}"]' for k, n in enumerate(g.node)]
        lines += [f"  n{producer[i]} --> n{k}" for k, n in enumerate(g.node) for i in n.input if i in producer]
        return onnx.printer.to_text(g) + "\n", "\n".join(lines) + "\n"


def write(out: str, case, spec, v: dict, info: dict, pool=None, same=None) -> str | None:
    """Write the bundle of finding ``v`` (its ``identity`` set) on invalid ``case`` under
    ``out/repros/<fingerprint>/`` unless it exists; its path relative to ``out``, or None
    when the backend gives no standalone code to run a model (``repro_source``) or, for a
    Relax-level finding, no TVMScript repro can be written (``pool`` runs its workers,
    ``same`` judges a pass list: :func:`dlgate.reduce.tvmscript_invalid.write_invalid_tvmscript`)."""
    ident = v["identity"]
    rel = os.path.join("repros", ident["fingerprint"])
    d = os.path.join(out, rel)
    if os.path.exists(os.path.join(d, "repro.json")):
        return rel
    g = case.graph
    tvmscript = None
    if info.get("level") == "relax":
        if pool is None:
            return None
        os.makedirs(d, exist_ok=True)
        provenance = f"campaign {case.meta.get('campaign')}, case {case.id}, root {case.meta.get('root')}"
        tvmscript = write_invalid_tvmscript(pool, d, case, spec, v, info, same, provenance)
        if not tvmscript.get("script"):
            if not os.listdir(d):
                os.rmdir(d)
            return None
        save_bundle(out, case, subdir=rel)
        with open(os.path.join(d, tvmscript["script"])) as f:
            text = redact(f.read())
        for name in (tvmscript["script"], "repro.py"):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
    else:
        source = load(spec.name).repro_source(spec)
        if not source:
            return None
        save_bundle(out, case, subdir=rel)
        title = f"{v['verdict'].replace('_', ' ')} on {v['backend']}: {info['rule']} at {info['op_type']}"
        text = _SCRIPT.format(title=title, rule=info["rule"], breaks=info.get("breaks", ""), node=info["node"],
                              detail=info.get("detail", ""), checker=info.get("checker", ""), timeout=TIMEOUT_S,
                              backend=source.rstrip("\n"), inputs=[g.name(t) for t in g.inputs],
                              outputs=[g.name(t) for t in g.outputs])
        with open(os.path.join(d, "repro.py"), "w") as f:
            f.write(redact(text))
    np.savez(os.path.join(d, "reference.npz"))
    text, diagram = _drawn(case.model)
    with open(os.path.join(d, "graph.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(d, "graph.mmd"), "w") as f:
        f.write(diagram)
    doc = {"campaign": case.meta.get("campaign"), "root": case.meta.get("root"), "case": case.id,
           "verdict": v["verdict"], "backend": v["backend"], "backend_spec": spec.label(),
           "signature": (v.get("signature") or {}).get("id"), "signature_text": (v.get("signature") or {}).get("text", ""),
           "detail": v.get("detail", ""), "versions": v.get("versions", {}), "pattern": info["op_type"],
           "nodes": len(g.nodes), "original_nodes": len(g.nodes), "dlgate": __version__, "generator": GENERATOR_VERSION,
           "opset": g.opset, "environment": environment(), "fingerprint": ident["fingerprint"],
           "cluster": ident["cluster"], "typed": ident["typed"], "identity_text": ident["text"], "invalid": info,
           "self_contained": False}
    if tvmscript is not None:
        doc["tvmscript"] = tvmscript
        doc["self_contained"] = not tvmscript.get("reads")
    if PACKAGES.get(spec.name):
        doc["package"] = PACKAGES[spec.name]
    if ident.get("memory_safety"):
        doc["memory_safety"] = ident["memory_safety"]
    write_json(os.path.join(d, "repro.json"), doc)
    return rel
