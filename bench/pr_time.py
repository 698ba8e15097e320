"""Where a head-versus-base run's time goes: the triage before ``base_first`` and now, side by side.

    python bench/pr_time.py --base-python BASE_PY [--head-path DIR] [--config configs/weekly.yaml]
                            [--models N] [--backend tvm ...] [--seed S] [--order old,new] [--keep DIR]
                            [--diff FILE [--compiler tvm]]

One process runs the same campaign (the config's settings, the same seed, so the same
models) twice, head versus base:

* **old**: ``base_first: false, reduce_pre_existing: true, reuse_reductions: false``, the
  gate's triage before them: every failure confirmed and reduced, then run on the base
  build; every failure reduced again, whatever cause it shares with an earlier one.
* **new**: the config as it is (``configs/pr.yaml``: the base build first, a failure it
  shares neither confirmed nor reduced; ``configs/weekly.yaml``: shared failures reduced
  too, for the issues it files), one reduction per cause.

For each it prints cases per hour (the ratio new/old), dlgate's own share of the campaign
loop's wall time (everything but the backends' own compile and run times and the
reference's, as the workers measure them; worker start-up counted as dlgate's, and
also shown apart), and the time by phase (exclusive wall seconds: the case itself,
confirmation, base-build runs, reductions and localisations, a wrong answer's cut runs trying
the causes reduced before it, looking behind failures, worker start-up), the reductions made
and reused, and the failures each found (new, pre-existing),
so that what the new triage no longer does can be checked against what it still finds.

With ``--diff FILE`` (a unified diff of the compiler, as ``dlgate run --diff`` takes it) the
two runs are instead **plain** and **aimed**: the config as it is, without and with the
change's targets (``configs/pr.yaml``: what a pull request's check costs with and without
targeting, on the same seed), with the same phases, so that targeting's extra time can be
told apart by what it is spent on; ``--order plain,aimed`` or ``aimed,plain``.

``--head-path DIR`` puts DIR first on the path of this process and its workers (the build
under test, e.g. ``pip install --no-deps --target DIR apache-tvm==0.26.0``); the process
re-executes itself once to do so. ``--base-python`` is an interpreter (or a script that
execs one) of the base build's environment, which must import this dlgate.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_REEXEC = "DLGATE_PR_TIME_HEAD"


def _reexec(head_path: str) -> None:
    """Run again with ``head_path`` (and this repository) first on PYTHONPATH, once."""
    if os.environ.get(_REEXEC) == head_path:
        return
    env = dict(os.environ, **{_REEXEC: head_path})
    env["PYTHONPATH"] = os.pathsep.join([head_path, REPO] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                                               if p and p not in (head_path, REPO)])
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env)


class Phases:
    """Exclusive wall time per phase: a phase's time less that of the phases it calls."""

    def __init__(self):
        self.excl: Counter = Counter()
        self.calls: Counter = Counter()
        self.stack: list = []

    def wrap(self, name: str, fn):
        def timed(*a, **k):
            t0 = time.perf_counter()
            self.stack.append(0.0)
            try:
                return fn(*a, **k)
            finally:
                el = time.perf_counter() - t0
                inner = self.stack.pop()
                self.excl[name] += el - inner
                self.calls[name] += 1
                if self.stack:
                    self.stack[-1] += el
        return timed


def _instrument(ph: Phases) -> list:
    """Time the gate's phases (module attributes replaced; the list restores them)."""
    from dlgate.gate import multibug as M
    from dlgate.gate import triage as T
    from dlgate.gate.run import loop as R
    from dlgate.reduce import reducer

    saved = []

    def patch(mod, attr, name):
        saved.append((mod, attr, getattr(mod, attr)))
        setattr(mod, attr, ph.wrap(name, getattr(mod, attr)))

    patch(R, "preflight", "worker start-up (preflight)")
    patch(R, "check", "case (reference and backends)")
    patch(R, "_load", "generation and input search")
    patch(T, "confirm", "confirmation")
    patch(T, "on_base", "base build")
    patch(T, "on_reduced", "base build")
    patch(reducer.Reducer, "reduce", "reduction or localisation")
    patch(T.Reductions, "reuse_wrong", "a wrong answer's reuse (cut runs)")
    patch(M, "search", "look-behind (cut cases)")
    patch(M, "check", "look-behind (cut cases)")
    patch(M, "reference_values", "look-behind (cut cases)")
    return saved


def _restore(saved: list) -> None:
    for mod, attr, fn in reversed(saved):
        setattr(mod, attr, fn)


def _reductions(out: str) -> dict:
    """Reductions made, reused, and failures left unreduced (pre-existing), from the journal."""
    from dlgate.gate.decide import findings
    from dlgate.gate.journal import read_records

    n = Counter()
    for rec in read_records(os.path.join(out, "results.jsonl")):
        for x, _ in findings(rec):
            i = x.get("identity") or {}
            if (i.get("reduction") or {}).get("reused"):
                n["reused"] += 1
            elif i.get("reduced"):
                n["reduced"] += 1
            elif i.get("not_reduced"):
                n["not reduced (pre-existing)"] += 1
    return dict(n)


def run_one(cfg, root: str, out: str, log_path: str, change=None) -> dict:
    from dlgate.gate.run import loop as R

    ph = Phases()
    saved = _instrument(ph)
    t0 = time.perf_counter()
    try:
        with open(log_path, "w") as logf:
            code = R.run(cfg, root, "--seed", out, fresh=True, progress=False,
                         log=lambda *a: print(*a, file=logf, flush=True), change=change)
    finally:
        _restore(saved)
    total = time.perf_counter() - t0
    with open(os.path.join(out, "stats.json")) as f:
        stats = json.load(f)
    with open(os.path.join(out, "verdict.json")) as f:
        verdict = json.load(f)
    return {"code": code, "total": total, "stats": stats, "verdict": verdict, "phases": dict(ph.excl),
            "calls": dict(ph.calls), "reductions": _reductions(out)}


def _causes(verdict: dict, cls: str) -> set:
    return {(g["backend"], g["verdict"], g.get("cluster") if g["verdict"] not in ("mismatch", "shape_mismatch",
                                                                                 "dtype_mismatch") else g["typed"])
            for g in verdict[cls]}


def report(name: str, r: dict) -> None:
    s, v = r["stats"], r["verdict"]
    wall, backend, start = s["wall_s"], s["backend_s"], s["worker_start_s"]
    ours = wall - backend
    print(f"{name}: {v['cases']} cases in {wall:.0f} s: {3600 * v['cases'] / wall:.1f} cases/hour; exit status "
          f"{r['code']}")
    print(f"  inside the backends and the reference: {backend:.0f} s; dlgate's own share {100 * ours / wall:.1f}% "
          f"({ours:.0f} s, of which worker start-up {start:.0f} s; without it {100 * (ours - start) / wall:.1f}%)")
    phases = dict(r["phases"])  # worker restarts after a crash or a timeout count in the phase they happen in
    phases["the rest (identity, repros, journal, reports)"] = r["total"] - sum(phases.values())
    print(f"  by phase (exclusive wall time, of {r['total']:.0f} s with the reports):")
    for k, x in sorted(phases.items(), key=lambda kv: -kv[1]):
        calls = r["calls"].get(k)
        print(f"    {k:44} {x:8.1f} s  {100 * x / r['total']:5.1f}%" + (f"  ({calls} calls)" if calls else ""))
    print(f"  reductions: {r['reductions'] or 'none'}")
    print(f"  new: {len(v['new'])} group(s), {len(_causes(v, 'new'))} cause(s); pre-existing: "
          f"{len(v['pre_existing'])} group(s), {len(_causes(v, 'pre_existing'))} cause(s); "
          f"findings behind others: {v['findings_behind']}; counts: {v['counts']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-python", required=True, help="interpreter (or script) of the base build's environment")
    ap.add_argument("--head-path", help="a folder put first on the path: the build under test")
    ap.add_argument("--config", default=os.path.join(REPO, "configs", "weekly.yaml"))
    ap.add_argument("--models", type=int, default=30)
    ap.add_argument("--backend", nargs="+", default=["tvm"], help="backends under test (default: tvm)")
    ap.add_argument("--seed", default="bench-pr-time")
    ap.add_argument("--order", help="which run goes first: old,new (the default) or new,old; with --diff "
                    "plain,aimed (the default) or aimed,plain")
    ap.add_argument("--diff", help="a unified diff of the compiler: compare the config without and with its targets")
    ap.add_argument("--compiler", help="the compiler the diff is of (default: that of the first backend)")
    ap.add_argument("--keep", help="keep the two run folders under this folder")
    args = ap.parse_args()
    if args.head_path:
        _reexec(os.path.abspath(args.head_path))
    if not os.path.exists(args.base_python):
        print(f"bench/pr_time.py: --base-python {args.base_python}: no such file", file=sys.stderr)
        return 2
    names = ["plain", "aimed"] if args.diff else ["old", "new"]
    order = (args.order or ",".join(names)).split(",")
    if sorted(order) != sorted(names):
        print(f"bench/pr_time.py: --order: expected {','.join(names)} or {','.join(reversed(names))}, got "
              f"{args.order!r}", file=sys.stderr)
        return 2
    if args.diff and not os.path.exists(args.diff):
        print(f"bench/pr_time.py: --diff {args.diff}: no such file", file=sys.stderr)
        return 2
    from dlgate import change as CH
    from dlgate.gate import config as C

    base = C.load(args.config, {"models": args.models, "backends": args.backend,
                                "base": {"python": os.path.abspath(args.base_python)}})
    base = replace(base, baseline=None, corpus=None, issues=None, coverage_state=None, budget=None)
    cfgs = {"old": replace(base, base_first=False, reduce_pre_existing=True, reuse_reductions=False), "new": base,
            "plain": base, "aimed": base}
    change = None
    if args.diff:
        try:
            change = CH.map_targets(CH.read(None, args.diff), CH.compiler_of(base.backends, args.compiler), None)
        except CH.ChangeError as e:
            print(f"bench/pr_time.py: --diff {args.diff}: {e}", file=sys.stderr)
            return 2
    try:
        import tvm
        head = f"TVM {tvm.__version__} ({os.path.dirname(tvm.__file__)})"
    except ImportError:
        head = "this environment"
    print(f"config {os.path.relpath(args.config, REPO)} ({args.models} models, {', '.join(args.backend)}), seed "
          f"{args.seed!r}; head {head}, base {args.base_python}; new: base_first {base.base_first}, reduce_pre_existing "
          f"{base.reduce_pre_existing}, reuse_reductions {base.reuse_reductions}", flush=True)
    scratch = args.keep or tempfile.mkdtemp(prefix="pr-time-")
    os.makedirs(scratch, exist_ok=True)
    got = {}
    for name in order:
        out = os.path.join(scratch, name)
        got[name] = run_one(cfgs[name], args.seed, out, os.path.join(scratch, f"{name}.log"),
                            change if name == "aimed" else None)
        report(name, got[name])
    if args.diff:
        plain, aimed = got["plain"], got["aimed"]
        print(f"wall time: plain {plain['total']:.0f} s, aimed {aimed['total']:.0f} s: "
              f"{aimed['total'] / plain['total']:.2f}x")
        only = {k: sorted(_causes(got[k]["verdict"], "new") - _causes(got[o]["verdict"], "new"))
                for k, o in (("plain", "aimed"), ("aimed", "plain"))}
        print(f"new causes only the plain run reports: {only['plain'] or 'none'}; only the aimed: "
              f"{only['aimed'] or 'none'}")
        if args.keep:
            print(f"run folders: {os.path.join(scratch, 'plain')}, {os.path.join(scratch, 'aimed')}")
        return 0
    old, new = got["old"], got["new"]
    rate = {k: 3600 * got[k]["verdict"]["cases"] / got[k]["stats"]["wall_s"] for k in got}
    print(f"cases/hour: old {rate['old']:.1f}, new {rate['new']:.1f}: {rate['new'] / rate['old']:.2f}x")
    lost = _causes(old["verdict"], "new") - _causes(new["verdict"], "new")
    gained = _causes(new["verdict"], "new") - _causes(old["verdict"], "new")
    print(f"new causes only the old triage reports: {sorted(lost) or 'none'}; only the new: {sorted(gained) or 'none'}")
    if args.keep:
        print(f"run folders: {os.path.join(scratch, 'old')}, {os.path.join(scratch, 'new')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
