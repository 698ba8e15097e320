"""Check every replayed bug on its two releases and write VERIFIED.md.

A bug is verified when its repro exits 1 (the bug shows) with the buggy release first on
PYTHONPATH and 0 with the fixed one; this is what makes it usable as a replay case. Each
release lives in its own folder (``--installs``, one folder per compiler and version) so the
two never mix; ``--install`` fills missing folders from the package index with ``pip install
--no-deps --target``. Every repro runs in a fresh interpreter; the output is ordered as
bugs.yaml lists the bugs and holds no timings, so reruns give the same file.

    python bench/replay/verify.py [--installs /tmp] [--install] [--only ID ...] [--out VERIFIED.md]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def folder(installs: str, compiler: str, version: str) -> str:
    return os.path.join(installs, f"replay-{compiler}-{version}")


def install(path: str, packages: list) -> None:
    """``pip install --no-deps --target`` the release's packages, unless already there."""
    if os.path.isdir(path):
        return
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", path, *packages],
                   check=True)


def run_repro(script: str, path: str) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=path)
    proc = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return proc.returncode, (lines[-1] if lines else proc.stderr.strip()[-300:])


def np_version() -> str:
    import numpy

    return numpy.__version__


def onnx_version() -> str:
    import onnx

    return onnx.__version__


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--installs", default="/tmp", help="folder holding replay-<compiler>-<version>/ installs")
    ap.add_argument("--install", action="store_true", help="install missing releases with pip")
    ap.add_argument("--only", nargs="*", default=None, help="bug ids to check (default: all)")
    ap.add_argument("--out", default=os.path.join(HERE, "VERIFIED.md"))
    args = ap.parse_args(argv)
    spec = yaml.safe_load(open(os.path.join(HERE, "bugs.yaml")))
    bugs = [b for b in spec["bugs"] if args.only is None or b["id"] in args.only]
    unknown = set(args.only or ()) - {b["id"] for b in spec["bugs"]}
    if unknown:
        print(f"verify.py: unknown bug id(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    rows, ok = [], True
    for bug in bugs:
        script = os.path.join(HERE, bug["repro"])
        result = {}
        for side in ("buggy", "fixed"):
            version = str(bug[side])
            path = folder(args.installs, bug["compiler"], version)
            if args.install:
                install(path, spec["releases"][bug["compiler"]][version])
            if not os.path.isdir(path):
                print(f"verify.py: {path} is missing (run with --install)", file=sys.stderr)
                return 2
            result[side] = run_repro(script, path)
        good = result["buggy"][0] == 1 and result["fixed"][0] == 0
        ok &= good
        print(f"{bug['id']}: buggy {bug['buggy']} -> {result['buggy'][0]}, fixed {bug['fixed']} -> "
              f"{result['fixed'][0]}: {'verified' if good else 'NOT VERIFIED'}")
        rows.append((bug, result, good))
    with open(args.out, "w") as f:
        f.write("# Verification of the replayed bugs\n\n")
        f.write("Written by `python bench/replay/verify.py`. Each repro ran in a fresh interpreter with only the "
                "named release's install folder on `PYTHONPATH` (`pip install --no-deps --target "
                "<installs>/replay-<compiler>-<version>`, the packages listed under `releases:` in bugs.yaml). "
                "Exit status 1: the bug shows; 0: it does not; 3: the case could not run. A bug is verified "
                "when it exits 1 on the buggy release and 0 on the fixed one.\n\n")
        f.write(f"Interpreter: Python {sys.version.split()[0]}, numpy {np_version()}, onnx {onnx_version()}.\n\n")
        f.write(f"{sum(g for _, _, g in rows)} of {len(rows)} verified.\n\n")
        for bug, result, good in rows:
            f.write(f"## {bug['id']} ({'verified' if good else 'NOT VERIFIED'})\n\n")
            for side in ("buggy", "fixed"):
                rc, line = result[side]
                f.write(f"- {side} {bug['compiler']} {bug[side]}: `PYTHONPATH=<installs>/replay-{bug['compiler']}-"
                        f"{bug[side]} python bench/replay/{bug['repro']}` exit {rc}\n")
                f.write(f"  - `{line.replace('`', chr(39))[:400]}`\n")
            f.write("\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
