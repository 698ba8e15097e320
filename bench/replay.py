"""Replay real regressions as pull requests: does the PR check go red with the bug's cause?

    python bench/replay.py [--bugs bench/replay/bugs.yaml] [--only ID ...] [--models 100] [--envs DIR]

For each bug of ``bench/replay/bugs.yaml`` (real bugs of TVM and onnxruntime that a later
release fixed, with the fixing commit; see bench/replay/README.md for how they were chosen),
head is the buggy release and base the fixed one, both installed from the package index into
folders of ``--envs`` (``pip install --no-deps --target``: dlgate's own environment supplies
the rest), and the change is the fixing commit's diff (``bench/replay/diffs/<id>.diff``). The
PR configuration (``configs/pr.yaml``, one backend: the bug's compiler) runs on the same seed
twice: aimed at the change (``--diff``) and not. Per bug and mode it prints whether the gate
went red with the bug's root cause among the new causes (a new cause whose reduced case holds
one of the bug's operators), how many models held those operators, and the wall time; then
the totals. Head's and base's releases are put on ``PYTHONPATH`` (head for the run and its
workers, base through a ``--base-python`` wrapper). Each run starts in an empty working folder
of its own, so no run replays another's failures from the configuration's corpus.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PR = os.path.join(REPO, "configs", "pr.yaml")
BUGS = os.path.join(REPO, "bench", "replay", "bugs.yaml")
PACKAGES = {"tvm": "apache-tvm", "onnxruntime": "onnxruntime"}


def load_bugs(path: str) -> tuple:
    """(bugs, releases): the bug list and what to install per compiler release."""
    with open(path) as f:
        doc = yaml.safe_load(f)
    for b in doc["bugs"]:
        for k in ("id", "compiler", "buggy", "fixed", "diff", "operators"):
            if k not in b:
                raise SystemExit(f"{path}: bug {b.get('id', '?')} has no {k!r}")
    return doc["bugs"], doc.get("releases") or {}


def env_dir(envs: str, compiler: str, version: str, releases: dict) -> str:
    """A folder holding ``compiler==version`` (with what ``releases`` pins beside it), installed once."""
    d = os.path.join(envs, f"{compiler}-{version}")
    if not os.path.exists(os.path.join(d, ".done")):
        reqs = list((releases.get(compiler) or {}).get(str(version)) or [f"{PACKAGES[compiler]}=={version}"])
        res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", d, *reqs],
                             capture_output=True, text=True)
        if res.returncode:
            raise SystemExit(f"cannot install {' '.join(reqs)}: {res.stderr.strip()[-500:]}")
        open(os.path.join(d, ".done"), "w").close()
    return d


def wrapper(envs: str, path: str) -> str:
    """A python that sees ``path`` first (the base build, for --base-python)."""
    w = os.path.join(envs, f"python-{os.path.basename(path)}")
    with open(w, "w") as f:
        f.write(f'#!/bin/sh\nPYTHONPATH="{path}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    os.chmod(w, os.stat(w).st_mode | stat.S_IEXEC)
    return w


def spec_ops() -> dict:
    from dlgate.ops.registry import all_specs

    return {n: {s.onnx_op, *s.onnx_ops} for n, s in all_specs().items()}


def bug_specs(bug: dict, ops_of: dict) -> set:
    """The spec names a reduced case of the bug can be spelled with: the bug's operators, the
    specs emitting them, and the motifs of its rewrite."""
    from dlgate.ops.registry import all_specs

    ops = set(bug.get("operators") or ())
    names = set(ops) | {n for n, emitted in ops_of.items() if emitted & ops}
    rw = (bug.get("rewrite") or "").lower()
    if rw:
        names |= {n for n, s in all_specs().items() if getattr(s, "rewrite", None)
                  and (n.lower() == rw or s.rewrite.lower() == rw)}
    return names


def how_it_shows(bug: dict) -> tuple:
    """(kind, signature) from the bug's repro: "wrong" (a wrong result), "error" (an error
    whose text holds the signature, when it has one) or "crash"."""
    path = os.path.join(REPO, "bench", "replay", bug.get("repro") or f"repro/{bug['id']}.py")
    kind, sig = "", ""
    if os.path.exists(path):
        text = open(path).read()
        m = re.search(r"^KIND = ['\"](\w+)['\"]", text, re.M)
        kind = m.group(1) if m else ""
        m = re.search(r"^SIGNATURE = ['\"](.*)['\"]", text, re.M)
        sig = m.group(1) if m else ""
    return kind, sig


def cause_found(v: dict, names: set, kind: str = "", sig: str = "") -> bool:
    """A new cause of the run that is the bug: its reduced case holds one of the spec
    ``names`` and it fails as the bug does (a wrong result: a mismatch of value, shape or
    dtype; a crash: a crash, a timeout or memory exhaustion; an error: a compile or run error
    or a refusal, whose text holds the repro's signature when it names one). A refusal of an
    unrelated operator (head lacking a kernel the base added) is never the bug."""
    ok = {"wrong": ("mismatch", "shape_mismatch", "dtype_mismatch"), "crash": ("crash", "timeout", "oom"),
          "error": ("compile_error", "run_error", "unsupported")}.get(kind)
    for g in v.get("new", []) + v.get("regressions", []):
        verdict = g.get("verdict")
        if ok is not None and verdict not in ok:
            continue
        # the reduced case's specs (an idiom is written by its ONNX operator: ReshapeFromShape
        # as Reshape) and the ONNX operators it lowers to (Shape -> Slice -> Concat -> Reshape)
        text = " ".join(str(g.get(k) or "") for k in ("typed", "pattern", "reduced_to"))
        if not any(re.search(rf"(^|[^A-Za-z0-9]){re.escape(o)}\(", text) for o in names):
            continue
        if kind == "error" and sig and sig.lower() not in str(g.get("detail") or "").lower():
            continue
        return True
    return False


def replay(bug: dict, mode: str, a, head: str, base_py: str, scratch: str, ops_of: dict) -> dict:
    out = os.path.join(scratch, f"{bug['id']}-{mode}")
    # The PR configuration keeps a corpus of failing cases (``.dlgate/corpus``, relative to
    # the working folder) that every later run replays before its batch: in one shared
    # folder the targeted run's failures were replayed by the ordinary run (and one bug's by
    # the next), so each run starts in an empty folder of its own.
    cwd = out + ".cwd"
    shutil.rmtree(cwd, ignore_errors=True)
    os.makedirs(cwd)
    backend = bug.get("backend") or bug["compiler"]
    args = [sys.executable, "-m", "dlgate", "run", "--no-progress", "--config", PR, "--seed", f"replay-{bug['id']}",
            "--backend", backend, "--models", str(a.models), "--base-python", base_py, "--out", out, "--fresh"]
    if mode == "targeted":
        args += ["--diff", os.path.join(REPO, "bench", "replay", bug["diff"]), "--compiler", bug["compiler"]]
    env = dict(os.environ, PYTHONPATH=head + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH")
                                              else ""))
    t0 = time.perf_counter()
    res = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    if res.returncode not in (0, 1):
        return {"error": f"exit {res.returncode}: {res.stderr.strip().splitlines()[-1:] }", "wall": wall}
    with open(os.path.join(out, "verdict.json")) as f:
        v = json.load(f)
    ops = set(bug.get("operators") or ())
    met = 0
    for r in map(json.loads, open(os.path.join(out, "results.jsonl"))):
        if any(ops & ops_of.get(n, {n}) for n in r.get("operators", ())):
            met += 1
    rows = (v.get("change") or {}).get("rows") or []
    return {"red": res.returncode == 1,
            "caught": res.returncode == 1 and cause_found(v, bug_specs(bug, ops_of), *how_it_shows(bug)),
            "met": met,
            "new": len(v["new"]), "wall": wall, "targets": len(rows),
            "tested": sum(1 for r in rows if not r.get("gap"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bugs", default=BUGS)
    ap.add_argument("--only", nargs="*", help="bug ids to replay (default: all)")
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--envs", default=os.path.join(tempfile.gettempdir(), "dlgate-replay-envs"),
                    help="where the releases are installed (kept between runs)")
    ap.add_argument("--scratch", help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--modes", nargs="*", default=["targeted", "ordinary"])
    a = ap.parse_args()
    bugs, releases = load_bugs(a.bugs)
    bugs = [b for b in bugs if not a.only or b["id"] in a.only]
    os.makedirs(a.envs, exist_ok=True)
    ops_of = spec_ops()
    totals = {m: {"caught": 0, "wall": 0.0, "n": 0} for m in a.modes}
    unreachable = 0  # bugs whose trigger the generator cannot draw (bugs.yaml says why)
    with tempfile.TemporaryDirectory(prefix="dlgate-replay-") as tmp:
        scratch = a.scratch or tmp
        os.makedirs(scratch, exist_ok=True)
        for bug in bugs:
            head = env_dir(a.envs, bug["compiler"], bug["buggy"], releases)
            base = env_dir(a.envs, bug["compiler"], bug["fixed"], releases)
            base_py = wrapper(a.envs, base)
            cells = []
            for mode in a.modes:
                r = replay(bug, mode, a, head, base_py, scratch, ops_of)
                t = totals[mode]
                t["n"] += 1
                t["wall"] += r["wall"]
                if "error" in r:
                    cells.append(f"{mode}: ERROR {r['error']}")
                    continue
                t["caught"] += r["caught"]
                tgt = f", targets tested {r['tested']}/{r['targets']}" if mode == "targeted" else ""
                cells.append(f"{mode}: {'CAUGHT' if r['caught'] else ('red, other cause' if r['red'] else 'missed')} "
                             f"({r['met']} models with {'/'.join(bug.get('operators') or ['?'])}, {r['new']} new "
                             f"cause(s){tgt}, {r['wall']:.0f} s)")
            why = f" [unreachable: {' '.join(bug['unreachable'].split())}]" if bug.get("unreachable") else ""
            unreachable += bool(why)
            print(f"{bug['id']} ({bug['compiler']} {bug['buggy']} -> {bug['fixed']}): " + " | ".join(cells) + why,
                  flush=True)
    print()
    for m, t in totals.items():
        print(f"{m}: caught {t['caught']} of {t['n']} bugs with their root cause"
              f"{f' ({unreachable} unreachable by the generator)' if unreachable else ''}; wall time {t['wall']:.0f} s")
    if len(totals) == 2 and all(t["wall"] for t in totals.values()):
        print(f"wall-time ratio targeted/ordinary: {totals['targeted']['wall'] / totals['ordinary']['wall']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
