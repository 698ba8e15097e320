"""Static checks: pyflakes-class errors (unused names, undefined names) and bug patterns."""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff") or os.path.join(os.path.dirname(sys.executable), "ruff")
    res = subprocess.run([ruff, "check", "dlgate", "tests", "bench"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_no_module_defines_a_top_level_name_twice():
    """A backend is loaded by ``module:Name`` in its worker: a second class of the same name
    further down a module silently replaces the first for every test that names it (two
    ``EnvFaults`` in ``tests/fake_backends.py`` once turned 17 tests' planted faults into
    another backend's). ruff's redefinition rule misses a class used before it is redefined."""
    import ast

    twice = []
    for top in ("dlgate", "tests", "bench"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith(".py"):
                    continue
                path = os.path.join(d, f)
                seen = set()
                for node in ast.parse(open(path).read()).body:
                    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                        if node.name in seen:
                            twice.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: {node.name}")
                        seen.add(node.name)
    assert not twice, twice
