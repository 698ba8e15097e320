"""What the Relax settings of a weekly TVM campaign reach: how many distinct Relax passes
changed the module on the importer path and on the direct path, and the distinct causes
each setting (``relax_share``, ``rewrite_share``, ``invalid_share``) found.

    python bench/relax_passes.py [--models 2000] [--seed relax-passes] [--out DIR]
                                 [--no-reduce] [--analyse RUN_DIR [RUN_DIR ...]]

Runs ``dlgate run`` (the real pipeline, in a fresh process) on ``configs/weekly.yaml`` with
its Relax settings as they are, TVM alone (``tvm``, the default pipeline: the direct path
runs beside it on the Relax-native cases) and ``--models`` models; ``--no-reduce`` leaves
failures unreduced (each then identified by its whole model's signature: more causes than
a reduced run counts, for a fraction of the time). Then reads the run:

- passes: TVM's pass instrument (``record_rewrites``) names each Relax pass that changed a
  case's module (``pass:FoldConstant``; TIR lowering left out), written to ``timings.jsonl``.
  Counted over the Relax-native cases both paths compiled, on each path, and over every case
  on the importer path;
- causes: ``verdict.json``'s failure groups by ``cause``, attributed to the setting that made
  them: the direct path's own findings (``relax_share``: ``tvm-relax``), the importer path's
  on Relax-native cases, inconsistent twins (``rewrite_share``), invalid-model findings
  (``invalid_share``: ONNX rules on ``tvm``, Relax rules on the direct path's invalid
  backend), and the plain reference oracle on the rest.

``--analyse RUN_DIR ...`` reads a run instead of starting one, or the shard folders of one
(a cause met in two shards counts once), finished or not: an unfinished one's causes come
from its journal (every failure the gate would count, without a baseline), and
``cases_run`` says how many of ``models`` it holds. Prints the figures as
JSON. Exit status 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from dlgate.backends.relax_pair import selected  # noqa: E402
from dlgate.seeds import case_seed  # noqa: E402

IMPORTER, DIRECT = "tvm[cpu]", "tvm-relax[cpu]"
INVALID_CLASSES = ("invalid_crash", "invalid_timeout", "invalid_oom", "invalid_accepted")


def campaign(models: int, reduce: bool) -> dict:
    """configs/weekly.yaml with TVM alone and ``models`` models: its Relax settings as they are."""
    with open(os.path.join(ROOT, "configs", "weekly.yaml")) as f:
        doc = yaml.safe_load(f)
    doc.update(models=models, backends=["tvm"], baseline=None, corpus=None, reduce=reduce)
    if not reduce:
        doc["findings_per_case"] = 1  # cut cases are reduced findings' remainders
    return doc


def passes(runs: list, cfg: dict) -> dict:
    """Distinct Relax passes that changed a module, per path (see the module docstring), over
    one run or the shards of one."""
    native, both, importer_all = collections.Counter(), {IMPORTER: set(), DIRECT: set()}, set()
    per_case: dict = collections.defaultdict(dict)
    records: dict = {}
    for run in runs:
        with open(os.path.join(run, "results.jsonl")) as f:
            records.update({json.loads(x)["case"]: json.loads(x) for x in f})
        with open(os.path.join(run, "timings.jsonl")) as f:
            for line in f:
                t = json.loads(line)
                for label, x in (t.get("backends") or {}).items():
                    if x.get("rewrites") is not None:
                        per_case[t["case"]][label] = {r for r in x["rewrites"] if r.startswith("pass:")}
    for case, by in per_case.items():
        importer_all |= by.get(IMPORTER, set())
        rec = records.get(case) or {}
        if rec.get("relax") and IMPORTER in by and DIRECT in by:
            native["cases"] += 1
            for label in (IMPORTER, DIRECT):
                both[label] |= by[label]
    return {"native_cases_both_compiled": native["cases"],
            "importer_on_native": sorted(x[5:] for x in both[IMPORTER]),
            "direct_on_native": sorted(x[5:] for x in both[DIRECT]),
            "direct_only": sorted(x[5:] for x in both[DIRECT] - both[IMPORTER]),
            "importer_on_every_case": sorted(x[5:] for x in importer_all)}


def setting_of(verdict: str, backend: str, cases: list, native: set) -> str:
    """The campaign setting a failure group comes from (see the module docstring)."""
    if verdict == "inconsistent":
        return "rewrite_share"
    if verdict in INVALID_CLASSES:
        relax_level = backend.startswith(("tvm-relax-invalid", "dlgate.invalid.relax"))  # the label, and before it
        return "invalid_share (Relax rules)" if relax_level else "invalid_share (ONNX rules)"
    if backend.split("[", 1)[0] == "tvm-relax":
        return "relax_share (direct path)"
    if set(cases) <= native:
        return "relax_share (importer path, Relax-native cases only)"
    return "reference oracle"


def _groups(run: str) -> list:
    """``(cause, verdict, backend label, cases, text)`` of each failure group of a run: from
    its verdict.json when it finished, else from its journal (a shard still running or cut
    by a budget: every failure the gate would count, without a baseline, by its cause)."""
    path = os.path.join(run, "verdict.json")
    if os.path.isfile(path):
        with open(path) as f:
            verdict = json.load(f)
        return [(g["cause"], g["verdict"], g["backend"], list(g["cases"]), g.get("cause_text") or g.get("text") or "")
                for key in ("new", "pre_existing", "known", "regressions") for g in verdict.get(key, ())]
    from dlgate.gate import decide as D
    from dlgate.gate.baseline import Baseline
    from dlgate.rewrite import oracle as EQ

    groups: dict = {}
    with open(os.path.join(run, "results.jsonl")) as f:
        for rec in map(json.loads, f):
            found = [v for v, _ in D.findings(rec) if D.classify(rec, v, Baseline()) not in (None, D.FLAKY)]
            found += [t for t in EQ.findings(rec) if (t.get("confirm") or {}).get("reproduced", True)]
            for v in found:
                i = v.get("identity") or D.ident(v)
                cause = i.get("cause") or i.get("cluster") or i.get("fingerprint")
                g = groups.setdefault((cause, v.get("verdict") or EQ.INCONSISTENT, v["backend"]),
                                      [cause, v.get("verdict") or EQ.INCONSISTENT, v["backend"], [],
                                       i.get("cause_text") or i.get("text") or ""])
                g[3].append(rec["case"])
    return [tuple(g) for g in groups.values()]


def causes(runs: list) -> dict:
    """Distinct failure causes per setting, over one run or the shards of one (a cause met in
    two shards is one)."""
    native, merged = set(), {}
    for run in runs:
        with open(os.path.join(run, "results.jsonl")) as f:
            native |= {r["case"] for r in map(json.loads, f) if r.get("relax")}
        for cause, verdict, backend, cases, text in _groups(run):  # one group per cause over the shards
            g = merged.setdefault((cause, verdict, backend), [cause, verdict, backend, [], text])
            g[3] += cases
    out: dict = collections.defaultdict(dict)
    for cause, verdict, backend, cases, text in merged.values():
        d = out[setting_of(verdict, backend, cases, native)]
        if cause in d:
            d[cause]["cases"] += len(cases)
            continue
        d[cause] = {"backend": backend, "verdict": verdict, "cases": len(cases), "text": text[:200],
                    "example": cases[0]}
    return {k: {"distinct": len(v), "causes": v} for k, v in sorted(out.items())}


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=2000)
    ap.add_argument("--seed", default="relax-passes")
    ap.add_argument("--out", help="folder for the campaign file and the run (default: a temporary one)")
    ap.add_argument("--no-reduce", action="store_true", help="leave failures unreduced (faster; more causes)")
    ap.add_argument("--analyse", nargs="+", metavar="RUN_DIR",
                    help="read this run folder instead of starting one, or the shard folders of one (finished or not)")
    args = ap.parse_args(argv)
    if args.models < 1:
        print("relax_passes: --models must be at least 1", file=sys.stderr)
        return 2
    if args.analyse:
        for d in args.analyse:
            if not os.path.isfile(os.path.join(d, "results.jsonl")):
                print(f"relax_passes: {d}: no results.jsonl (not a run folder)", file=sys.stderr)
                return 2
        runs, seconds = args.analyse, None
        with open(os.path.join(runs[0], "run.json")) as f:
            cfg = json.load(f)["config"]
    else:
        out = args.out or tempfile.mkdtemp(prefix="relax-passes-")
        os.makedirs(out, exist_ok=True)
        cfg = campaign(args.models, not args.no_reduce)
        path = os.path.join(out, "campaign.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(cfg, f)
        run = os.path.join(out, "run")
        runs = [run]
        t0 = time.time()
        r = subprocess.run([sys.executable, "-m", "dlgate", "run", "--config", path, "--seed", args.seed, "--out",
                            run, "--fresh", "--no-progress"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
        seconds = round(time.time() - t0)
        if r.returncode not in (0, 1):
            print(f"relax_passes: dlgate run ended with status {r.returncode}", file=sys.stderr)
            return r.returncode
    with open(os.path.join(runs[0], "run.json")) as f:
        manifest = json.load(f)
    root = manifest["root"]
    share = cfg.get("relax_share", 0.0)
    models = cfg.get("models", args.models)
    ran = []
    for run in runs:
        with open(os.path.join(run, "results.jsonl")) as f:
            ran += [r for r in map(json.loads, f) if r.get("kind", "batch") == "batch"]
    doc = {"models": models, "cases_run": len(ran), "runs": runs, "seconds": seconds,
           "relax_share": share, "rewrite_share": cfg.get("rewrite_share"), "invalid_share": cfg.get("invalid_share"),
           "native_cases": sum(selected(case_seed(root, cfg["campaign"], i), share) for i in range(models)),
           "native_cases_run": sum(1 for r in ran if r.get("relax")),
           "passes": passes(runs, cfg), "causes": causes(runs)}
    print(json.dumps(doc, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
