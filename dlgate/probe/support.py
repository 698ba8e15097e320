"""Support probing (NNSmith's dtype test): which operator x dtype x opset combinations a
system accepts, found by running single-operator models, cached per system version.

A combination is unsupported when the system declares one of a few single-operator
instances unimplemented; other failures are findings and keep the combination. Generation restricted to the supported set then spends its budget on real
findings rather than on "not implemented".
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from dlgate import GENERATOR_VERSION, __version__
from dlgate.graph.generator import DEFAULT_OPSET_RANGE
from dlgate.graph.ir import random_values
from dlgate.probe.runners import get_runner
from dlgate.probe.single import single_op_graph, single_op_model
from dlgate.spec import schema
from dlgate.spec.registry import all_specs

TRIES = 4
#: Bumped when the probing policy changes, so stale caches are not reused.
PROBE_VERSION = 2


def cache_dir() -> str:
    return os.environ.get("DLGATE_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "dlgate"))


def cache_path(system: str, version: str) -> str:
    return os.path.join(cache_dir(), "support", f"{system}-{version}-gen{GENERATOR_VERSION}-p{PROBE_VERSION}.json")


def combos(opsets) -> list:
    out = []
    for name, spec in all_specs().items():
        for opset in opsets:
            if spec.available(opset):
                out += [(name, sig, opset) for sig in spec.dtypes if schema.allowed(spec.onnx_op, sig, opset)]
    return out


def probe_one(system: str, name: str, sig: tuple, opset: int) -> tuple:
    """(supported, reason) for one combination.

    Unsupported means the system *declares* it does not handle an instance (onnxruntime's
    NOT_IMPLEMENTED, TVM's OpNotImplemented...). Any other failure is a potential bug, not a
    gap, so the combination stays in the generated set.
    """
    runner = get_runner(system)
    built = 0
    for k in range(TRIES):
        g = single_op_graph(name, sig, opset, k)
        if g is None:
            continue
        built += 1
        feeds = {g.name(t): random_values(np.random.default_rng(k), g.tensors[t]) for t in g.inputs}
        try:
            runner.run(single_op_model(g, k), feeds)
        except Exception as e:  # classified below: a declared gap, or a finding to keep
            if runner.unsupported(e):
                first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
                return False, f"{type(e).__name__}: {first}"
    if not built:
        return False, "no single-operator instance could be generated"
    return True, ""


def _probe_chunk(args):
    system, chunk = args
    return [(c, *probe_one(system, *c)) for c in chunk]


def probe(system: str, opsets=None, jobs: int = 1, progress=None) -> dict:
    """Probe every combination; returns the cache document."""
    runner = get_runner(system)
    opsets = list(opsets or range(DEFAULT_OPSET_RANGE[0], DEFAULT_OPSET_RANGE[1] + 1))
    todo = combos(opsets)
    start = time.perf_counter()
    results = []
    if jobs > 1:
        chunks = [todo[i::jobs * 4] for i in range(jobs * 4)]
        with ProcessPoolExecutor(jobs) as pool:
            for part in pool.map(_probe_chunk, [(system, c) for c in chunks]):
                results += part
                if progress:
                    progress(len(results), len(todo))
    else:
        for i, c in enumerate(todo):
            results.append((c, *probe_one(system, *c)))
            if progress and i % 50 == 0:
                progress(i + 1, len(todo))
    results.sort(key=lambda r: (r[0][0], r[0][2], r[0][1]))
    return {
        "system": system,
        "version": runner.version(),
        "dlgate": __version__,
        "generator": GENERATOR_VERSION,
        "opsets": opsets,
        "seconds": round(time.perf_counter() - start, 2),
        "supported": [[n, list(s), o] for (n, s, o), ok, _ in results if ok],
        "unsupported": [[n, list(s), o, why] for (n, s, o), ok, why in results if not ok],
    }


def load_or_probe(system: str, refresh: bool = False, jobs: int = 1, progress=None) -> dict:
    runner = get_runner(system)
    path = cache_path(system, runner.version())
    if not refresh and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    doc = probe(system, jobs=jobs, progress=progress)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=0)
    os.replace(tmp, path)
    return doc


def support_set(doc: dict) -> frozenset:
    """The generator's ``support`` argument from a probe document."""
    return frozenset((n, tuple(s), o) for n, s, o in doc["supported"])
