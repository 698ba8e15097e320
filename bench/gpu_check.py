"""GPU check: a small batch through every GPU path against the CPU reference, and the
cases where a GPU path cannot run, which must fail the gate closed (exit status 4).

    python bench/gpu_check.py [--models 8] [--max-nodes 6] [--paths onnxruntime:cuda,tvm:cuda]
                              [--reduce-seconds 60] [--out DIR]

Paths: ``onnxruntime:cuda`` and ``onnxruntime:tensorrt`` (execution providers),
``tvm:cuda``, ``inductor:cuda``, ``tensorrt:cuda``. Each is first started the way the
gate starts it (a worker: the compiler imported, the one-node start-up probe run on the
device and checked to have run there); one that cannot start here is printed as skipped
with the reason. Each that starts gets one ``dlgate run`` of ``--models`` generated models
(1 to ``--max-nodes`` operators) against ``torch`` on the CPU, with failures reduced;
printed: cases, exit status, verdict counts, and each finding (new failure group) with its
repro folder (kept under ``--out``).

Fail-closed cases, each one ``dlgate run`` of one model in head-versus-base mode, where
the expected answer is exit status 4 ("cannot run"), never a pass on pre-existing
failures; printed as ``closed`` (as expected), ``OPEN`` (a dlgate defect: the script then
exits 1) or skipped with the reason:

* ``provider-missing``: onnxruntime asked for a GPU provider its build lacks
  (``tests.fake_backends:OrtGpuBuild``: the real onnxruntime with dlgate's up-front check
  that the build lists the provider left out, so onnxruntime itself warns and falls back to
  the CPU, as a GPU build does when its CUDA or cuDNN libraries do not load). Runs on any
  machine whose onnxruntime lacks the CUDA or the TensorRT provider;
* ``hidden-device:PATH``: for each GPU path that started, the base build's environment
  hides the GPU (``CUDA_VISIBLE_DEVICES=""``): onnxruntime's CUDA provider fails to
  initialise and onnxruntime falls back to the CPU, TVM finds no device, torch has no CUDA;
  for the onnxruntime paths also ``hidden-device-provider:PATH``, the same through
  ``OrtGpuBuild``, past dlgate's up-front device count, so that onnxruntime's own fallback
  is what the start-up probe must catch.

Device check, for each GPU path that started: a failure in CUDA's words (an illegal memory
access) makes the gate start the worker afresh and run its start-up self-test on the device
(``dlgate.exec.devicecheck``); on a healthy GPU the self-test passes and the failure stays a
finding, printed as ``device-check:PATH: kept`` (``LOST``, a dlgate defect on a healthy
device, makes the script exit 1). A device lost mid-run (exit status 4) is tested without a
GPU (tests/test_device_lost.py).

Exit status: 0 when every fail-closed case that ran failed closed (findings are printed,
not judged: they are the compilers'), 1 when one did not, 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from dlgate.backends.base import BackendSpec  # noqa: E402
from dlgate.exec.devicecheck import PASSED, recheck  # noqa: E402
from dlgate.exec.worker import RUN_ERROR, Outcome, Worker  # noqa: E402

PATHS = ("onnxruntime:cuda", "onnxruntime:tensorrt", "tvm:cuda", "inductor:cuda", "tensorrt:cuda")
HIDE_GPU = {"CUDA_VISIBLE_DEVICES": ""}


def can_start(spec: BackendSpec) -> str | None:
    """None when a worker for ``spec`` starts here (import and start-up probe), else why not."""
    with Worker(spec, start_timeout_s=600) as w:
        return None if w.start() else w.unavailable


def gate(out: str, backend, models: int, max_nodes: int, reduce_seconds: float, base_env: dict | None = None,
         seed: str = "gpu-check") -> tuple:
    """One ``dlgate run`` of ``backend`` (a campaign ``backends`` entry) against torch on the
    CPU in a fresh folder: (exit status, verdict.json or None, the run's last stderr lines)."""
    os.makedirs(out, exist_ok=True)
    doc = {"campaign": "gpu-check", "models": models, "min_nodes": 1, "max_nodes": max_nodes,
           "backends": [backend], "reference": "torch", "timeout_s": 120, "memory_mb": 8192, "confirm_runs": 1,
           "reduce_seconds": reduce_seconds}
    if base_env is not None:  # head versus base: the base build is this interpreter, in that environment
        doc["base"] = {"python": sys.executable, "env": dict(base_env, PYTHONPATH=REPO)}
    cfg = os.path.join(out, "gpu-check.yaml")
    with open(cfg, "w") as f:
        yaml.safe_dump(doc, f)
    run_dir = os.path.join(out, "run")
    env = dict(os.environ, PYTHONPATH=REPO)  # tests.fake_backends for the provider-missing case
    res = subprocess.run([sys.executable, "-m", "dlgate", "run", "--config", cfg, "--seed", seed, "--out", run_dir,
                          "--no-progress"], cwd=out, env=env, capture_output=True, text=True)
    path = os.path.join(run_dir, "verdict.json")
    verdict = None
    if os.path.exists(path):
        with open(path) as f:
            verdict = json.load(f)
    return res.returncode, verdict, "\n".join(res.stderr.strip().splitlines()[-6:])


def findings(verdict: dict, run_dir: str) -> list:
    """One line per new failure group: verdict, what it is, its repro folder or bundle."""
    lines = []
    for g in verdict.get("new", []) + verdict.get("regressions", []):
        where = g.get("repro") or (g.get("bundles") or [None])[0]
        where = os.path.join(run_dir, where) if where else "(no repro: not reduced, see the run's report)"
        lines.append(f"    finding [{g['fingerprint']}] {g['verdict']} in {g.get('typed') or g.get('pattern') or '?'}"
                     f", {len(g['cases'])} case(s): {where}")
    return lines


def check_path(label: str, args, out: str) -> bool:
    """Run the batch on one path; False when it was skipped."""
    spec = BackendSpec.parse(label)
    why = can_start(spec)
    if why:
        print(f"{label}: skipped: {why}")
        return False
    d = os.path.join(out, label.replace(":", "-"))
    code, verdict, tail = gate(d, label, args.models, args.max_nodes, args.reduce_seconds)
    if verdict is None:
        print(f"{label}: the gate wrote no verdict (exit status {code}):\n{tail}")
        return True
    counts = verdict["counts"].get(spec.label(), {})
    print(f"{label}: {verdict['cases']} cases, exit status {code} ({verdict['result']}); verdicts "
          f"{', '.join(f'{k} {v}' for k, v in sorted(counts.items())) or 'none'}")
    for line in findings(verdict, os.path.join(d, "run")):
        print(line)
    if verdict.get("cannot_run"):
        print(f"    cannot run: {verdict['cannot_run']}")
    return True


def fail_closed(name: str, backend, base_env: dict, out: str, args) -> bool:
    """One fail-closed case; False when it failed open."""
    d = os.path.join(out, "fail-closed", name.replace(":", "-"))
    code, verdict, tail = gate(d, backend, 1, args.max_nodes, args.reduce_seconds, base_env=base_env)
    why = json.dumps((verdict or {}).get("cannot_run", {}))[:300]
    if code == 4:
        print(f"fail-closed {name}: closed (exit status 4): {why}")
        return True
    print(f"fail-closed {name}: OPEN: exit status {code}, expected 4 ({(verdict or {}).get('result')}); {tail}")
    return False


def device_check(label: str) -> bool:
    """A run error in CUDA's words on a started GPU path: the fresh worker's self-test must
    pass on a healthy device and keep the failure; False when it did not."""
    with Worker(BackendSpec.parse(label), start_timeout_s=600) as w:
        if not w.start():
            print(f"device-check:{label}: skipped: {w.unavailable}")
            return True
        err = {"type": "RuntimeError", "message": "CUDA error: an illegal memory access was encountered",
               "stage": "run", "frames": [], "log": ""}
        out = recheck(w, Outcome(RUN_ERROR, error=err))
        if out.status == RUN_ERROR and out.error.get("device_check") == PASSED and w.lost is None:
            print(f"device-check:{label}: kept (the self-test passed again in a fresh worker; {w.restarts} restart)")
            return True
        print(f"device-check:{label}: LOST on a healthy device: {out.status}: {(out.error or {}).get('message')}")
        return False


def missing_provider() -> str | None:
    """An onnxruntime device whose provider this onnxruntime build lacks, or None."""
    import onnxruntime as ort

    from dlgate.backends.onnxruntime import PROVIDERS

    have = ort.get_available_providers()
    return next((d for d in ("cuda", "tensorrt") if PROVIDERS[d][0] not in have), None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=8)
    ap.add_argument("--max-nodes", type=int, default=6)
    ap.add_argument("--paths", default=",".join(PATHS), help="comma-separated NAME:DEVICE paths")
    ap.add_argument("--reduce-seconds", type=float, default=60.0)
    ap.add_argument("--out", help="keep the runs (reports, repros) here; default: a temporary folder")
    args = ap.parse_args()
    paths = [p for p in args.paths.split(",") if p]
    if any(p not in PATHS for p in paths) or args.models < 1 or args.max_nodes < 1:
        print(f"gpu_check: bad arguments: paths must be among {', '.join(PATHS)}; --models and --max-nodes "
              f"at least 1", file=sys.stderr)
        return 2
    warnings.filterwarnings("ignore")
    keep = args.out is not None
    out = os.path.abspath(args.out) if keep else tempfile.mkdtemp(prefix="dlgate-gpu-check-")
    print(f"dlgate GPU check: {args.models} models of 1-{args.max_nodes} operators per path, against torch on the "
          f"CPU; runs in {out}")
    started = [p for p in paths if check_path(p, args, out)]
    ok = True
    device = missing_provider()
    if device is None:
        print("fail-closed provider-missing: skipped: this onnxruntime build has both the CUDA and the TensorRT "
              "provider (hidden-device covers it)")
    else:
        ok &= fail_closed(f"provider-missing:{device}", {"name": "tests.fake_backends:OrtGpuBuild",
                                                         "device": device}, {}, out, args)
    for p in paths:
        if p not in started:
            print(f"device-check:{p}: skipped: {p} cannot run here, no device to ask again")
            print(f"fail-closed hidden-device:{p}: skipped: {p} cannot run here, nothing to hide")
            continue
        ok &= device_check(p)
        ok &= fail_closed(f"hidden-device:{p}", p, HIDE_GPU, out, args)
        if p.startswith("onnxruntime:"):  # past dlgate's up-front device count: onnxruntime's own fallback
            ok &= fail_closed(f"hidden-device-provider:{p}", {"name": "tests.fake_backends:OrtGpuBuild",
                                                              "device": p.split(":")[1]}, HIDE_GPU, out, args)
    if not keep:
        print(f"(runs left in {out}; pass --out to choose where)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
