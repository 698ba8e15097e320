"""Support probing (NNSmith's dtype test): which operator x dtype x opset combinations a
system accepts, found by running single-operator models, cached per system version.

A combination is unsupported when the system *declares* one of a few single-operator
instances unimplemented (onnxruntime's NOT_IMPLEMENTED, TVM's OpNotImplemented...). Any
other failure, a crash included, is a potential finding and keeps the combination.
Generation restricted to the supported set then spends its budget on real findings
rather than on "not implemented".
"""
from __future__ import annotations

import json
import os
import time

import numpy as np

from dlgate import GENERATOR_VERSION, __version__
from dlgate.graph.generator import DEFAULT_OPSET_RANGE
from dlgate.graph.ir import random_values
from dlgate.probe.runners import get_runner
from dlgate.probe.single import single_op_graph, single_op_model
from dlgate.spec import schema
from dlgate.spec.registry import all_specs

#: Bumped when the probing policy changes, so stale caches are not reused.
PROBE_VERSION = 3


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
    """(supported, note) for one combination."""
    runner = get_runner(system)
    built, note = 0, ""
    for k in range(runner.probe_tries):
        g = single_op_graph(name, sig, opset, k)
        if g is None:
            continue
        built += 1
        feeds = {g.name(t): random_values(np.random.default_rng(k), g.tensors[t]) for t in g.inputs}
        try:
            runner.run(single_op_model(g, k), feeds)
        except Exception as e:  # classified: a declared gap, or a finding to keep
            text = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
            if runner.unsupported(e):
                return False, f"{type(e).__name__}: {text}"
            note = f"fails (kept, a potential finding): {type(e).__name__}: {text}"
    if not built:
        return False, "no single-operator instance could be generated"
    return True, note


def _worker(system: str, items: list, conn) -> None:
    # What the probed system prints (importer errors, C++ warnings) is noise here.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    for i, combo in items:
        conn.send(("start", i))  # a pipe write is synchronous: nothing is lost if we die next
        conn.send(("done", i, *probe_one(system, *combo)))
    conn.close()


def _run_isolated(system: str, todo: list, jobs: int, timeout: float, progress=None) -> dict:
    """Probe in worker processes. A worker that dies (segfault, abort) or hangs past
    ``timeout`` on one combination is replaced, and that combination is recorded as
    supported with the reason: a crash is a finding, not a declared gap."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("spawn")
    items = list(enumerate(todo))
    results: dict = {}
    workers: dict = {}  # parent end of the pipe -> [process, remaining items, in-flight, since]

    def start(chunk):
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_worker, args=(system, chunk, child), daemon=True)
        proc.start()
        child.close()
        workers[parent] = [proc, list(chunk), None, time.monotonic()]

    def retire(conn, why):
        proc, remaining, inflight, _ = workers.pop(conn)
        if proc.is_alive():
            proc.kill()
        proc.join()
        conn.close()
        if inflight is not None:
            results[inflight] = (True, why(proc))
        rest = [it for it in remaining if it[0] not in results]
        if rest:
            start(rest)

    for k in range(jobs):
        if items[k::jobs]:
            start(items[k::jobs])
    while workers:
        for conn in wait(list(workers), timeout=1.0):
            w = workers[conn]
            try:
                msg = conn.recv()
            except EOFError:  # finished, or died
                retire(conn, lambda p: f"crashes (kept, a potential finding): exit code {p.exitcode}")
                continue
            if msg[0] == "start":
                w[2], w[3] = msg[1], time.monotonic()
            else:
                results[msg[1]] = (msg[2], msg[3])
                w[1] = [it for it in w[1] if it[0] != msg[1]]
                w[2] = None
                if progress:
                    progress(len(results), len(todo))
        for conn, (_, _, inflight, since) in list(workers.items()):
            if inflight is not None and time.monotonic() - since > timeout:
                retire(conn, lambda p: f"hangs (kept, a potential finding): no answer in {timeout:.0f} s")
    return results


def probe(system: str, opsets=None, jobs: int = 1, progress=None, ops=None, timeout: float = 120.0) -> dict:
    """Probe every combination (of ``ops``, default all, at ``opsets``, default the
    system's probe opsets) in isolated workers; returns the cache document."""
    runner = get_runner(system)
    opsets = list(opsets or runner.probe_opsets or range(DEFAULT_OPSET_RANGE[0], DEFAULT_OPSET_RANGE[1] + 1))
    todo = [c for c in combos(opsets) if ops is None or c[0] in ops]
    start = time.perf_counter()
    found = _run_isolated(system, todo, max(1, jobs), timeout, progress)
    rows = sorted(((todo[i], *found[i]) for i in range(len(todo))), key=lambda r: (r[0][0], r[0][2], r[0][1]))
    return {
        "system": system,
        "version": runner.version(),
        "dlgate": __version__,
        "generator": GENERATOR_VERSION,
        "opsets": opsets,
        "seconds": round(time.perf_counter() - start, 2),
        "supported": [[n, list(s), o] for (n, s, o), ok, _ in rows if ok],
        "unsupported": [[n, list(s), o, why] for (n, s, o), ok, why in rows if not ok],
        "findings": [[n, list(s), o, why] for (n, s, o), ok, why in rows if ok and why],
    }


def load_or_probe(system: str, refresh: bool = False, jobs: int = 1, progress=None) -> dict:
    runner = get_runner(system)
    path = cache_path(system, runner.version())
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
