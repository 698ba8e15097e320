"""What a newcomer waits for: set-up and the test suite, from a fresh clone of this commit.

    python bench/fresh_clone.py [--tests] [--keep DIR]

Clones the repository's HEAD into a scratch folder, runs ``bash .ci/setup`` there (a fresh
``.venv``), and prints how long it took and which torch it installed (the CPU build,
``+cpu``, is what set-up must give). With ``--tests`` it then runs the README's test command
(``.venv/bin/python -m pytest -q -n 2``) and prints its time and its last line. The machine
is shared, so the times are those of this run; the pip cache and a local wheel folder, where
the machine has them, are used as on any machine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd: list, cwd: str) -> tuple:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return res, time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tests", action="store_true", help="also run the test suite (20-45 minutes on 2 cores)")
    p.add_argument("--keep", help="clone into this folder (must not exist) and keep it")
    a = p.parse_args()
    if a.keep and os.path.exists(a.keep):
        print(f"bench/fresh_clone.py: --keep {a.keep}: already exists", file=sys.stderr)
        return 2
    scratch = a.keep or tempfile.mkdtemp(prefix="dlgate-fresh-clone-")
    try:
        if not a.keep:
            os.rmdir(scratch)
        subprocess.run(["git", "clone", "-q", REPO, scratch], check=True)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=scratch, capture_output=True,
                                text=True, check=True).stdout.strip()
        res, setup_s = timed(["bash", ".ci/setup"], scratch)
        if res.returncode != 0:
            sys.stderr.write(res.stdout[-2000:] + res.stderr[-2000:])
            print(f"commit {commit}: .ci/setup failed (exit status {res.returncode}) after {setup_s:.0f} s")
            return 1
        torch = subprocess.run([os.path.join(scratch, ".venv", "bin", "python"), "-c",
                                "import torch; print(torch.__version__)"], capture_output=True, text=True)
        print(f"commit {commit}: .ci/setup {setup_s:.0f} s, torch {torch.stdout.strip() or '?'}", flush=True)
        if a.tests:
            res, tests_s = timed([os.path.join(".venv", "bin", "python"), "-m", "pytest", "-q", "-n", "2"], scratch)
            last = (res.stdout.strip().splitlines() or ["?"])[-1]
            print(f"commit {commit}: tests {tests_s / 60:.1f} min (exit status {res.returncode}): {last}")
            return 0 if res.returncode == 0 else 1
        return 0
    finally:
        if not a.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
