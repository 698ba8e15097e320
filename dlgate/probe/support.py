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
import threading
import time

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

#: Bumped when the probing policy or the cache document changes, so stale caches are not
#: reused. 5: a hang is called at ``deadline_s`` (30 s, was 120 s) and ends its combination
#: (it was waited for once per instance); a crash or memory exhaustion counts only when a
#: fresh worker repeats it; the document records ``probe_tries`` and
#: ``deadline_s`` and no longer its wall time, so it is the same however many runs (a kill,
#: a resume) produced it.
PROBE_VERSION = 5

#: Seconds a single-operator instance may take before it is called a hang (``dlgate probe
#: --deadline``). TVM 0.27's slowest instances that answer take about 20 s on a loaded
#: core (sequence operators); a hang is kept as a finding however long it lasts, so waiting
#: longer would buy nothing but wall time.
DEADLINE_S = 30.0

_FINDING = {W.CRASH: "crashes", W.TIMEOUT: "hangs", W.OOM: "exhausts memory",
            W.COMPILE_ERROR: "fails", W.RUN_ERROR: "fails"}


#: Outcomes that may be the worker's history rather than the instance: run once more, fresh.
_AGAIN = (W.CRASH, W.OOM)


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


def probe_one(worker: W.Worker, tries: int, name: str, sig: tuple, opset: int,
              deadline: float | None = None) -> tuple:
    """(supported, note) for one combination, run in ``worker``. ``deadline``: the seconds
    an instance may take (at most the worker's own timeout) before it is called a hang;
    the first hang ends the combination, a finding already, so a hanging combination costs
    one deadline and not one per instance. The limit is the instance's own, not what is
    left of the combination's, so whether an instance hangs does not depend on how long
    the ones before it took.

    An instance that crashes or exhausts memory is run again in a fresh worker, and only a
    repeat counts: a worker that has served thousands of compiles carries their state (TVM
    0.27's passed the 4 GB cap on a Shape that needs little, after about 5,000), and the
    answer must not depend on what the worker ran before, which differs between a probe
    in one go and one resumed from its journal."""
    built, note = 0, ""
    limit = worker.timeout_s if deadline is None else min(worker.timeout_s, deadline)
    for k in range(tries):
        g = single_op_graph(name, sig, opset, k)
        if g is None:
            continue
        built += 1
        inputs = [random_values(np.random.default_rng(k), g.tensors[t]) for t in g.inputs]
        model = Model(single_op_model(g, k), g)
        out = worker.execute(model, inputs, timeout_s=limit)
        if out.status in _AGAIN:
            # the worker died with it; a fresh one runs it again and only a repeat counts
            out = worker.execute(model, inputs, timeout_s=limit)
        err = out.error or {}
        text = (err.get("message") or "").strip().splitlines()
        text = f"{err.get('type', '')}: {text[0][:200] if text else ''}"
        if out.status == W.UNSUPPORTED:
            return False, text
        if out.status == W.UNAVAILABLE:
            raise ProbeError(err.get("message", "the backend cannot run here"))
        if out.status in _FINDING:
            note = f"{_FINDING[out.status]} (kept, a potential finding): {text}"
        if out.status == W.TIMEOUT:
            break
    if not built:
        return False, "no single-operator instance could be generated"
    return True, note


class Journal:
    """The finished combinations of a probe, one JSON line each, appended as they finish,
    so a probe that is killed resumes where it stopped and a rerun reuses what is done.

    The first line is a header naming what the answers depend on beyond the file's name
    (keyed like the cache: system, version, generator and probe versions): the instances
    per combination and the deadline. A journal whose header differs is started over. A
    line cut short by a kill is dropped (and cut from the file), so its combination runs
    again."""

    def __init__(self, path: str, header: dict):
        self.path = path
        self.done: dict = {}
        self._lock = threading.Lock()
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        whole = data[: data.rfind(b"\n") + 1]
        lines = whole.decode(errors="replace").splitlines()
        if lines and _json_or_none(lines[0]) == header:
            for line in lines[1:]:
                row = _json_or_none(line)
                if isinstance(row, dict) and "op" in row:
                    self.done.setdefault((row["op"], tuple(row["sig"]), row["opset"]), (row["supported"], row["note"]))
            if len(whole) != len(data):
                os.truncate(path, len(whole))
        else:
            with open(path, "w") as f:
                f.write(json.dumps(header, sort_keys=True) + "\n")
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    def add(self, combo: tuple, supported: bool, note: str, seconds: float) -> None:
        """Record a finished combination: one write of one line (with its wall time, which
        the document leaves out)."""
        name, sig, opset = combo
        line = json.dumps({"op": name, "sig": list(sig), "opset": opset, "supported": supported, "note": note,
                           "seconds": round(seconds, 3)}) + "\n"
        with self._lock:
            if self._fd is None:  # closed by an interrupted probe: its descriptor number may be another file's now
                return
            os.write(self._fd, line.encode())
            self.done[combo] = (supported, note)

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _json_or_none(line: str):
    try:
        return json.loads(line)
    except ValueError:
        return None


def probe(system: str, opsets=None, jobs: int = 1, progress=None, ops=None, deadline: float = DEADLINE_S,
          journal: str | None = None) -> dict:
    """Probe every combination (of ``ops``, default all, at ``opsets``, default the
    backend's probe opsets), spread over ``jobs`` workers; returns the cache document.

    ``deadline``: seconds an instance may take (:func:`probe_one`). ``journal``: a file that
    records each finished combination (:class:`Journal`); those it holds are not probed
    again, and the document is the same however many runs it took. ``progress(done,
    total, resumed=, running=)`` is called about once a second: ``resumed`` of ``done``
    came from the journal, ``running`` lists (combination, seconds so far) in flight, so
    a slow combination shows as one rather than as a stall."""
    cls = load(system)
    opsets = list(opsets or cls.probe_opsets or range(DEFAULT_OPSET_RANGE[0], DEFAULT_OPSET_RANGE[1] + 1))
    todo = [c for c in combos(opsets) if ops is None or c[0] in ops]
    header = {"dlgate_probe_journal": 1, "system": system, "generator": GENERATOR_VERSION, "probe": PROBE_VERSION,
              "tries": cls.probe_tries, "deadline_s": deadline}
    book = Journal(journal, header) if journal else None
    found: dict = {c: book.done[c] for c in todo if book and c in book.done}
    resumed = len(found)
    left = [c for c in todo if c not in found]
    jobs = max(1, min(jobs, len(left) or 1))
    running: dict = {}
    stop = threading.Event()
    errors: list = []
    lock = threading.Lock()
    workers = [W.Worker(BackendSpec(system), timeout_s=deadline) for _ in range(jobs)]

    def run(k: int) -> None:
        try:
            for c in left[k::jobs]:
                if stop.is_set():
                    return
                t0 = time.monotonic()
                running[k] = (c, t0)
                res = probe_one(workers[k], cls.probe_tries, *c, deadline=deadline)
                if stop.is_set():  # the probe is being abandoned: an answer now may be the stop's doing
                    return
                if book:
                    book.add(c, *res, time.monotonic() - t0)
                with lock:
                    found[c] = res
        except BaseException as e:  # raised in the caller's thread
            errors.append(e)
            stop.set()
        finally:
            running.pop(k, None)

    def report() -> None:
        if progress:
            now = time.monotonic()
            progress(len(found), len(todo), resumed=resumed,
                     running=sorted(((c, now - t0) for c, t0 in list(running.values())), key=lambda r: -r[1]))

    threads = [threading.Thread(target=run, args=(k,), daemon=True, name=f"probe-{k}") for k in range(jobs)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(1.0)
                report()
        if errors:
            raise errors[0]
        version = next((w.describe["version"] for w in workers if w.describe), None) or version_of(system)
    finally:
        stop.set()
        for w in workers:
            w.close()
        if book:
            book.close()
    report()
    rows = sorted(((c, *found[c]) for c in todo), key=lambda r: (r[0][0], r[0][2], r[0][1]))
    return {
        "system": system,
        "version": version,
        "dlgate": __version__,
        "generator": GENERATOR_VERSION,
        "opsets": opsets,
        "probe_tries": cls.probe_tries,
        "deadline_s": deadline,
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


def journal_path(system: str, version: str) -> str:
    """The probe's journal, beside its cache document and keyed like it."""
    return cache_path(system, version)[: -len(".json")] + ".journal"


def load_or_probe(system: str, refresh: bool = False, jobs: int = 1, progress=None,
                  deadline: float | None = None) -> dict:
    """The cached document of ``system`` as installed, else probed (resuming its journal)
    and cached. ``refresh`` probes afresh, journal included; a ``deadline`` other than the
    cached document's probes again too."""
    version = version_of(system)
    path = cache_path(system, version)
    if not refresh and os.path.exists(path):
        with open(path) as f:
            doc = json.load(f)
        if deadline is None or doc.get("deadline_s") == deadline:
            return doc
    journal = journal_path(system, version)
    if refresh and os.path.exists(journal):
        os.unlink(journal)
    doc = probe(system, jobs=jobs, progress=progress, deadline=deadline or DEADLINE_S, journal=journal)
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
