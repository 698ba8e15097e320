"""Reducing an inconsistency: the smallest case whose twin still disagrees with it.

The reducer (:mod:`dlgate.reduce.reducer`) cuts operators, inputs, shapes and attributes
from the case as for any finding; a candidate is kept where the compiler still computes
otherwise on the candidate's own twin, of the same rewrite kind and from the same seed
(the rewrite draws its site among the candidate's), the same way (``how``: values, shape,
or the twin's error). No reference is needed. The reduced case, with its twin, is saved
beside the case's bundle, and gives the finding its identity: the fingerprint is the
reduced case's operators with the rewrite kind and how it differs, the cluster the same
without the operators (one cause met through several operators), as the reducer's other
findings have.
"""
from __future__ import annotations

import json
import os
import re

from dlgate.backends.base import Model
from dlgate.backends.registry import load
from dlgate.check import save_bundle
from dlgate.oracle import verdict as V
from dlgate.oracle.compare import DEFAULT_TOLERANCES
from dlgate.oracle.signature import signature
from dlgate.reduce.reducer import NotReproduced, Reducer, Target, _key
from dlgate.rewrite import NotEquivalent, make_twin
from dlgate.rewrite import oracle as EQ


class TwinReducer(Reducer):
    """A reducer whose target is an inconsistency of ``kind``'s twin (``how`` it differs)."""

    def __init__(self, pool, cfg, spec, kind: str, seed: int, how: str, max_seconds: float = 60.0,
                 prefer: dict | None = None):
        super().__init__(pool, cfg, Target(spec, EQ.INCONSISTENT), max_seconds=max_seconds)
        self.spec, self.kind, self.seed, self.how, self.prefer = spec, kind, seed, how, prefer

    def probe(self, case):
        key = _key(case)
        if key in self._seen:
            return self._seen[key]
        self.probes += 1
        v = None
        try:
            twin = make_twin(case.graph, case.model, self.seed, (self.kind,), self.prefer)
        except NotEquivalent:
            twin = None
        if twin is not None:
            original = self.pool.execute(self.spec, Model(case.model, case.graph), case.inputs)
            t = EQ.judge_twin(self.pool, case, self.spec, original, twin, self.cfg.tolerances, confirm=0)
            if t["status"] == EQ.INCONSISTENT and t.get("how") == self.how:
                v = V.Verdict(self.spec.label(), EQ.INCONSISTENT, t.get("detail", ""), t.get("signature"),
                              t.get("comparison"), error=t.get("error"))
        self._seen[key] = v
        return v

    def judge(self, case):
        return self.probe(case)


def reduce_twin(pool, case, ccfg, spec, t: dict, kind: str, out_dir: str, seconds: float,
                prefer: dict | None = None) -> None:
    """Reduce inconsistency ``t`` (a twin record of ``case`` on ``spec``) in place: adds
    ``reduced`` (operators, probes, where its bundle is) and ``identity``. ``prefer``: the
    case's twin's ``where``, so that each candidate's twin goes where the case's went (the
    same mode, dtype and producing operator) while there is such a place."""
    seed = EQ.twin_seed(int(case.meta.get("seed") or 0))
    red = TwinReducer(pool, ccfg, spec, kind, seed, t.get("how", ""), max_seconds=seconds, prefer=prefer)
    try:
        r = red.reduce(case)
    except NotReproduced:
        t["reduced"] = {"error": "the inconsistency did not show again when reduction began"}
        return
    ops = [n.op for n in r.case.graph.nodes]
    sub = os.path.join("cases", case.id, "twin-reduced-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", spec.label()).strip("-"))
    d = save_bundle(out_dir, r.case, subdir=sub)
    EQ.save_twin_of(d, r.case, seed, kind, prefer)
    script = repro_script(spec, ccfg.tolerances, f"dlgate case {case.id}, {kind} twin, reduced")
    if script is not None:
        with open(os.path.join(d, "repro.py"), "w") as f:
            f.write(script)
    err = t.get("error")
    fp = signature(EQ.INCONSISTENT, spec.name, err, extra=f"{t.get('how')} | {kind} | {'>'.join(ops)}")
    cl = signature(EQ.INCONSISTENT, spec.name, err, extra=f"{t.get('how')} | {kind}")
    t["reduced"] = {"operators": ops, "nodes": len(ops), "from_nodes": r.original_nodes, "probes": r.probes,
                    "hit_limit": r.hit_limit, "bundle": os.path.relpath(d, out_dir)}
    t["identity"] = {"fingerprint": fp["id"], "cluster": cl["id"], "pattern": ">".join(ops), "typed": "",
                     "text": fp["text"], "cluster_text": cl["text"]}
    if script is not None:
        t["identity"]["repro"] = t["reduced"]["bundle"]


def repro_script(spec, tolerances: dict | None, provenance: str) -> str | None:
    """A standalone ``repro.py`` for a reduced inconsistency: runs ``model.onnx`` and
    ``twin.onnx`` beside it on the same inputs (``inputs.npz``) with nothing but NumPy and
    the compiler's own package (``Backend.repro_source``), and exits 1 when they differ
    beyond the case's tolerances, printing where; None where the backend cannot be driven
    without dlgate."""
    source = load(spec.name).repro_source(spec)
    if source is None:
        return None
    tol = dict(DEFAULT_TOLERANCES, **(tolerances or {}))
    return _TEMPLATE.format(provenance=provenance, backend=spec.label(), source=source,
                            tolerances=json.dumps({k: list(v) for k, v in sorted(tol.items())}))


_TEMPLATE = '''"""Repro: {backend} computes otherwise on twin.onnx than on model.onnx, though the two
models are equivalent (twin.json says which rewrite made the twin). {provenance}.
Run: python repro.py (exit status 1 while the inconsistency holds)."""
import os
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCES = {tolerances}

{source}


def outputs(path, feeds):
    m = onnx.load(path)
    inits = {{i.name for i in m.graph.initializer}}
    names = [i.name for i in m.graph.input if i.name not in inits]
    return run(m.SerializeToString(), names, [feeds[n] for n in names], [o.name for o in m.graph.output])


def main():
    with np.load(os.path.join(HERE, "inputs.npz")) as z:
        feeds = {{k: z[k] for k in z.files}}
    a = outputs(os.path.join(HERE, "model.onnx"), feeds)
    try:
        b = outputs(os.path.join(HERE, "twin.onnx"), feeds)
    except Exception as e:  # the compiler runs the model and fails on its equivalent twin
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"model.onnx runs; twin.onnx fails: {{type(e).__name__}}: {{first}}")
        print("inconsistent")
        return 1
    bad = 0
    for i, (x, y) in enumerate(zip(a, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            print(f"output {{i}}: {{y.dtype}}{{list(y.shape)}} on the twin, {{x.dtype}}{{list(x.shape)}} on the model")
            bad += 1
            continue
        if x.dtype.kind == "f":
            rtol, atol = TOLERANCES.get(str(x.dtype), (0.0, 0.0))
            fx = np.isfinite(x)
            scale = max(1.0, float(np.abs(x[fx]).max())) if fx.any() else 1.0
            ok = np.array_equal(np.isnan(x), np.isnan(y)) and np.array_equal(np.isinf(x) & (x > 0), np.isinf(y) & (y > 0)) \\
                and np.array_equal(np.isinf(x) & (x < 0), np.isinf(y) & (y < 0)) \\
                and bool(np.all(np.abs(np.where(fx, x - y, 0)) <= atol * scale + rtol * np.abs(np.where(fx, x, 0))))
        else:
            ok = np.array_equal(x, y)
        if not ok:
            print(f"output {{i}} differs: model {{x.ravel()[:8]}}, twin {{y.ravel()[:8]}}")
            bad += 1
    print("inconsistent" if bad else "consistent: the two models agree")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
'''


def reduce_findings(pool, case, ccfg, rec: dict, out_dir: str, reduce: bool = True, seconds: float = 60.0) -> None:
    """Reduce each inconsistent twin of ``rec`` (:func:`reduce_twin`) and give it
    its identity from the reduced case; without reduction (``reduce`` false, or it fails)
    the identity is the whole case's (its signature)."""
    kind = (rec.get("rewrite") or {}).get("kind")
    specs = {s.label(): s for s in ccfg.backends}
    for t in EQ.findings(rec):
        spec = specs.get(t["backend"])
        if not reduce or spec is None or kind is None or (t.get("confirm") or {}).get("reproduced") is False:
            continue
        if t.get("shape"):  # only the symbolic model run at two shapes shows it: the case stays whole
            t["reduced"] = {"error": "the inconsistency shows at a further binding of the symbolic shapes, which "
                                     "the reducer's candidates (run at their first binding) cannot show"}
            continue
        reduce_twin(pool, case, ccfg, spec, t, kind, out_dir, seconds, (rec.get("rewrite") or {}).get("where"))
