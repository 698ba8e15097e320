"""Support probing (NNSmith's dtype test): which operator x dtype x opset combinations a
backend accepts, found by running single-operator models, cached per backend version.

A combination is unsupported when the backend *declares* one of a few single-operator
instances unimplemented (its ``unsupported``: onnxruntime's NOT_IMPLEMENTED, TVM's
OpNotImplemented...). Any other failure, a crash or hang included, is a potential finding
and keeps the combination. Probing runs in the same isolated workers as every other
compile and run (:mod:`dlgate.exec.worker`). Generation restricted to the supported set
then spends its budget on real findings rather than on "not implemented".
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dlgate import GENERATOR_VERSION, __version__
from dlgate.backends.base import BackendSpec, Model, Unavailable
from dlgate.backends.registry import create, load
from dlgate.exec import worker as W
from dlgate.graph.generator import DEFAULT_OPSET_RANGE, NEWEST_OPSET, OLDEST_OPSET
from dlgate.graph.ir import random_values
from dlgate.ops import schema
from dlgate.ops.registry import all_specs
from dlgate.probe.single import single_op_graph, single_op_model

#: Bumped when the probing policy changes, so stale caches are not reused.
PROBE_VERSION = 4

_FINDING = {W.CRASH: "crashes", W.TIMEOUT: "hangs", W.OOM: "exhausts memory",
            W.COMPILE_ERROR: "fails", W.RUN_ERROR: "fails"}


class ProbeError(RuntimeError):
    """The backend cannot be probed here (not installed, no GPU...)."""


def cache_dir() -> str:
    """Where probe results are cached: ``$DLGATE_CACHE`` (a relative path is taken from the
    current folder, so a CI cache step can point at a folder in the workspace; the Action's
    ``cache-dir`` input sets it), else ``~/.cache/dlgate``."""
    return os.path.abspath(os.environ.get("DLGATE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "dlgate"))


def cache_path(system: str, version: str) -> str:
    safe = system.replace(":", "-").replace("/", "-")
    return os.path.join(cache_dir(), "support", f"{safe}-{version}-gen{GENERATOR_VERSION}-p{PROBE_VERSION}.json")


def combos(opsets) -> list:
    out = []
    for name, spec in all_specs().items():
        for opset in opsets:
            if spec.available(opset):
                out += [(name, sig, opset) for sig in spec.dtypes if schema.allowed(spec.onnx_op, sig, opset)]
    return out


def probe_one(worker: W.Worker, tries: int, name: str, sig: tuple, opset: int) -> tuple:
    """(supported, note) for one combination, run in ``worker``."""
    built, note = 0, ""
    for k in range(tries):
        g = single_op_graph(name, sig, opset, k)
        if g is None:
            continue
        built += 1
        inputs = [random_values(np.random.default_rng(k), g.tensors[t]) for t in g.inputs]
        out = worker.execute(Model(single_op_model(g, k), g), inputs)
        err = out.error or {}
        text = (err.get("message") or "").strip().splitlines()
        text = f"{err.get('type', '')}: {text[0][:200] if text else ''}"
        if out.status == W.UNSUPPORTED:
            return False, text
        if out.status == W.UNAVAILABLE:
            raise ProbeError(err.get("message", "the backend cannot run here"))
        if out.status in _FINDING:
            note = f"{_FINDING[out.status]} (kept, a potential finding): {text}"
    if not built:
        return False, "no single-operator instance could be generated"
    return True, note


def probe(system: str, opsets=None, jobs: int = 1, progress=None, ops=None, timeout: float = 120.0) -> dict:
    """Probe every combination (of ``ops``, default all, at ``opsets``, default the
    backend's probe opsets), spread over ``jobs`` workers; returns the cache document."""
    cls = load(system)
    opsets = list(opsets or cls.probe_opsets or range(DEFAULT_OPSET_RANGE[0], DEFAULT_OPSET_RANGE[1] + 1))
    todo = [c for c in combos(opsets) if ops is None or c[0] in ops]
    jobs = max(1, min(jobs, len(todo) or 1))
    start = time.perf_counter()
    found: dict = {}
    workers = [W.Worker(BackendSpec(system), timeout_s=timeout) for _ in range(jobs)]

    def run(k: int) -> None:
        for i in range(k, len(todo), jobs):
            found[i] = probe_one(workers[k], cls.probe_tries, *todo[i])
            if progress:
                progress(len(found), len(todo))

    try:
        with ThreadPoolExecutor(jobs) as pool:
            for f in [pool.submit(run, k) for k in range(jobs)]:
                f.result()
        version = next((w.describe["version"] for w in workers if w.describe), None) or version_of(system)
    finally:
        for w in workers:
            w.close()
    rows = sorted(((todo[i], *found[i]) for i in range(len(todo))), key=lambda r: (r[0][0], r[0][2], r[0][1]))
    return {
        "system": system,
        "version": version,
        "dlgate": __version__,
        "generator": GENERATOR_VERSION,
        "opsets": opsets,
        "seconds": round(time.perf_counter() - start, 2),
        "supported": [[n, list(s), o] for (n, s, o), ok, _ in rows if ok],
        "unsupported": [[n, list(s), o, why] for (n, s, o), ok, why in rows if not ok],
        "findings": [[n, list(s), o, why] for (n, s, o), ok, why in rows if ok and why],
    }


def version_of(system: str) -> str:
    """The backend's version, for the cache key (constructs it in this process)."""
    try:
        return create(BackendSpec(system)).version()
    except Unavailable as e:
        raise ProbeError(str(e)) from None


def load_or_probe(system: str, refresh: bool = False, jobs: int = 1, progress=None) -> dict:
    path = cache_path(system, version_of(system))
    if not refresh and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    doc = probe(system, jobs=jobs, progress=progress)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=0)
    os.replace(tmp, path)
    return doc


def support_set(doc: dict) -> frozenset:
    """The generator's ``support`` argument from a probe document. An opset between probed
    ones takes the answer of the nearest lower probed opset."""
    probed = sorted(doc["opsets"])
    out = set()
    for n, s, o in doc["supported"]:
        nxt = [p for p in probed if p > o]
        hi = nxt[0] - 1 if nxt else max(DEFAULT_OPSET_RANGE[1], o)
        out.update((n, tuple(s), v) for v in range(o, hi + 1))
    return frozenset(out)


def opset_ceiling(execute, newest: int | None = None, oldest: int | None = None) -> dict:
    """The newest opset (and with it the IR version) a backend loads: a single Add at each
    opset from ``newest`` down, run through ``execute(model, inputs) -> Outcome`` (a warm
    worker's). An opset counts as loaded unless the backend refuses the model (declared
    unsupported, or an import or compile error); a crash or hang is a finding, not a limit.
    Returns ``{"opset", "ir_version", "refused": {opset: why}}``."""
    newest, oldest = newest or NEWEST_OPSET, oldest or OLDEST_OPSET
    refused = {}
    for opset in range(newest, oldest - 1, -1):
        g = single_op_graph("Add", ("float32", "float32"), opset, 0)
        model = single_op_model(g, 0)
        inputs = [random_values(np.random.default_rng(0), g.tensors[t]) for t in g.inputs]
        out = execute(Model(model, g), inputs)
        if out.status not in (W.UNSUPPORTED, W.COMPILE_ERROR):
            import onnx

            return {"opset": opset, "ir_version": onnx.load_from_string(model).ir_version, "refused": refused}
        err = out.error or {}
        first = (err.get("message") or "").strip().splitlines()
        refused[opset] = f"{err.get('type', out.status)}: {first[0][:200] if first else ''}"
    return {"opset": oldest, "ir_version": None, "refused": refused}
