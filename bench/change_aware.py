"""What aiming a pull request's batch at its change costs and buys, side by side on the same seeds.

    python bench/change_aware.py unchanged --backend onnxruntime --diff D.diff [--commits 10] [--models 100]
    python bench/change_aware.py fault --convert Softsign:Softplus [--commits 10] [--models 100]

* ``unchanged``: the compiler under test is also the base build (``--base-python`` is this
  interpreter), so every failure is pre-existing and a red run is a false red (target: 0 of
  ``--commits``). Each commit runs the PR configuration twice, with the change (``--diff``,
  a real diff touching a converter or kernel) and without, alternating which goes first so
  the machine's drift spreads evenly, each run in an empty working folder of its own (the
  configuration's corpus would otherwise carry one run's failures into the next); prints red
  runs per mode, the wall time per mode and their ratio (target: targeting costs at most 20%
  more), and the models the change's targets reached.
* ``fault``: ``dlgate.backends.testing:MisconvertingOnnxRuntime`` converts one operator as
  another (``--convert FROM:TO``), the change is that operator's kernel (a target set naming
  it); each commit runs with and without targeting and the bench prints how many runs went
  red with that cause among the new failures (a wrong result in a reduced case holding the
  operator, as ``bench/replay.py`` decides it), and the models that met the operator.

Figures are ratios and counts from one run; the machine is shared, so absolute times vary.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay import cause_found  # noqa: E402  (the replay benchmark's test of "this run found the bug")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PR = os.path.join(REPO, "configs", "pr.yaml")


def run(args: list, cwd: str, env: dict | None = None) -> tuple:
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "dlgate", "run", "--no-progress", *args], cwd=cwd, capture_output=True,
                         text=True, env=env)
    wall = time.perf_counter() - t0
    if res.returncode not in (0, 1):
        sys.stderr.write(res.stderr[-3000:])
        raise SystemExit(f"dlgate run {' '.join(args)}: exit status {res.returncode}")
    return res.returncode, wall


def fresh_folder(out: str) -> str:
    """An empty working folder for the run writing ``out``. The PR configuration keeps a
    corpus of failing cases (``.dlgate/corpus``, relative to the working folder) that every
    later run replays before its batch: in one shared folder each run replayed the failures
    of all the runs before it, so the commits were not independent and the later runs paid
    for the earlier ones' cases."""
    cwd = out + ".cwd"
    shutil.rmtree(cwd, ignore_errors=True)
    os.makedirs(cwd)
    return cwd


def verdict(out: str) -> dict:
    with open(os.path.join(out, "verdict.json")) as f:
        return json.load(f)


def reached(v: dict) -> tuple:
    """(targets tested, targets, models exercising any target) of a change-aware run."""
    rows = (v.get("change") or {}).get("rows") or []
    return sum(1 for r in rows if not r.get("gap")), len(rows), sum(r["models"] for r in rows)


def unchanged(a, scratch: str) -> int:
    rows = []
    for k in range(a.commits):
        seed = f"change-aware-{k}"
        modes = [("targeted", ["--diff", os.path.abspath(a.diff), "--compiler", a.compiler or a.backend.split(":")[0]]
                  + (["--repo", a.repo] if a.repo else [])), ("ordinary", [])]
        if k % 2:
            modes.reverse()
        got = {}
        for name, extra in modes:
            out = os.path.join(scratch, f"{name}-{k}")
            code, wall = run(["--config", PR, "--seed", seed, "--out", out, "--backend", a.backend, "--models",
                              str(a.models), "--base-python", sys.executable, *extra], fresh_folder(out))
            got[name] = (code, wall, verdict(out))
        rows.append(got)
        t, o = got["targeted"], got["ordinary"]
        print(f"commit {k}: targeted {'RED' if t[0] else 'green'} {t[1]:.0f} s ({len(t[2]['pre_existing'])} "
              f"pre-existing; targets tested {reached(t[2])[0]}/{reached(t[2])[1]}, {reached(t[2])[2]} model hits) | "
              f"ordinary {'RED' if o[0] else 'green'} {o[1]:.0f} s ({len(o[2]['pre_existing'])} pre-existing)",
              flush=True)
    red = {m: sum(1 for r in rows if r[m][0]) for m in ("targeted", "ordinary")}
    wall = {m: sum(r[m][1] for r in rows) for m in ("targeted", "ordinary")}
    print(f"\n{a.backend}, head = base, {a.commits} commits x {a.models} models, change {os.path.basename(a.diff)}")
    print(f"red runs (false reds): targeted {red['targeted']} of {a.commits}, ordinary {red['ordinary']} of {a.commits}")
    print(f"wall time: targeted {wall['targeted']:.0f} s, ordinary {wall['ordinary']:.0f} s, "
          f"ratio {wall['targeted'] / wall['ordinary']:.2f} (target <= 1.20)")
    return 0


def fault(a, scratch: str) -> int:
    src, dst = a.convert.split(":")
    cfg = yaml.safe_load(open(PR))
    cfg.update(models=a.models, backends=[{"name": "dlgate.backends.testing:MisconvertingOnnxRuntime",
                                           "options": {"convert_from": src, "convert_to": dst}}],
               baseline=None, corpus=None)
    cfg_path = os.path.join(scratch, "fault.yaml")
    with open(cfg_path, "w") as f:
        yaml.safe_dump(cfg, f)
    targets = os.path.join(scratch, "targets.json")
    with open(targets, "w") as f:
        json.dump({"compiler": "onnxruntime", "source": f"the {src} kernel", "files": [],
                   "targets": [{"kind": "operator", "name": src, "why": f"the {src} kernel"}]}, f)
    caught = {"targeted": 0, "ordinary": 0}
    wall = {"targeted": 0.0, "ordinary": 0.0}
    for k in range(a.commits):
        line = []
        for name, extra in (("targeted", ["--targets", targets]), ("ordinary", [])):
            out = os.path.join(scratch, f"{name}-{k}")
            code, w = run(["--config", cfg_path, "--seed", f"fault-{k}", "--out", out, *extra], scratch)
            v = verdict(out)
            hit = cause_found(v, {src}, "wrong")
            met = sum(1 for r in map(json.loads, open(os.path.join(out, "results.jsonl"))) if src in r["operators"])
            caught[name] += bool(code == 1 and hit)
            wall[name] += w
            line.append(f"{name} {'caught' if code == 1 and hit else 'missed'} ({met} models with {src}, {w:.0f} s)")
        print(f"commit {k}: " + " | ".join(line), flush=True)
    print(f"\n{src} converted as {dst}, {a.commits} commits x {a.models} models: caught with targeting "
          f"{caught['targeted']} of {a.commits}, without {caught['ordinary']} of {a.commits}; wall time ratio "
          f"{wall['targeted'] / wall['ordinary']:.2f}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    u = sub.add_parser("unchanged")
    u.add_argument("--backend", default="onnxruntime")
    u.add_argument("--compiler", help="whose mapping the diff is read with (default: the backend's)")
    u.add_argument("--diff", required=True, help="a real diff touching a converter or kernel")
    u.add_argument("--repo", help="the compiler's source tree, for the enclosing definitions")
    f = sub.add_parser("fault")
    f.add_argument("--convert", default="Softsign:Softplus", help="FROM:TO, two ONNX operators of one signature")
    for p in (u, f):
        p.add_argument("--commits", type=int, default=10)
        p.add_argument("--models", type=int, default=100)
        p.add_argument("--scratch", help="keep the runs here (default: a temporary folder)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dlgate-change-bench-") as tmp:
        scratch = a.scratch or tmp
        os.makedirs(scratch, exist_ok=True)
        return unchanged(a, scratch) if a.mode == "unchanged" else fault(a, scratch)


if __name__ == "__main__":
    sys.exit(main())
