"""The input search reaches the same values on every CPU: PyTorch's float results differ in
the last bits between its CPU kernels (``ATEN_CPU_CAPABILITY``), and nothing the search
decides or moves may depend on those bits (dlgate/inputs/search.py, Determinism)."""
from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from dlgate.case import make_case
from tests import golden as G

S = importlib.import_module("dlgate.inputs.search")  # the module: the package exports the function as `search`
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The golden regimes recomputed under other CPU capabilities: the coverage-guided path and
#: the long graphs, where the search moves the most cases by gradient (before the search
#: ran on sign signals, campaign 39 and long 25 came out differently under DEFAULT and AVX512).
REGIMES = ("campaign", "long")
#: ``--cases`` with the capability PyTorch actually dispatched to, on the first line.
CASES = """
import sys, torch
from tests import golden as G
print("capability", torch.backends.cpu.get_cpu_capability(), flush=True)
sys.exit(G.main(["--cases", *sys.argv[1:]]))
"""
#: ATEN_CPU_CAPABILITY's values below each capability, in the spelling it takes.
LOWER = {"AVX512": ("default", "avx2"), "AVX2": ("default",), "ZVECTOR": ("default",), "SVE256": ("default",)}


def _cases(capability: str | None):
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    env.update(PYTHONPATH=REPO, OMP_NUM_THREADS="1")
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    args = [a for r in REGIMES for a in ("--regime", r)]
    return subprocess.Popen([sys.executable, "-c", CASES, *args], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_searched_cases_are_byte_identical_under_every_cpu_capability(golden_cases):
    """The native kernels' cases are the golden batch's as this process computed them (the
    session's, which test_golden compares with the pin); each lower capability's come from a
    process of its own, since PyTorch picks its kernels once, at start."""
    native = torch.backends.cpu.get_cpu_capability()
    if os.environ.get("ATEN_CPU_CAPABILITY"):
        pytest.skip(f"ATEN_CPU_CAPABILITY={os.environ['ATEN_CPU_CAPABILITY']} is set: the native kernels are not in use")
    lower = LOWER.get(native)
    if not lower:
        pytest.skip(f"PyTorch runs its {native} kernels here: no other capability to compare with")
    procs = {c: _cases(c) for c in lower}
    outs = {None: (native, [G.case_line(c).split() for c in golden_cases if c["regime"] in REGIMES])}
    for c, p in procs.items():
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        head, *lines = out.splitlines()
        outs[c] = (head.split()[1], [ln.split() for ln in lines])
    want = {None: native, "default": "DEFAULT", "avx2": "AVX2"}
    assert {c: o[0] for c, o in outs.items()} == {c: want[c] for c in outs}  # the kernels really differed
    ref = outs[None][1]
    moved = [ln for ln in ref if ln[6] != "initial"]
    assert sum(ln[6] == "gradient" for ln in moved) >= 3, "the regimes no longer exercise the gradient search"
    for c in lower:
        diff = [f"{a[0]} {a[1]} {a[2]}: searched {a[5][:12]} natively, {b[5][:12]} under {c}"
                for a, b in zip(ref, outs[c][1]) if a != b]
        assert len(outs[c][1]) == len(ref) and not diff, "\n".join(diff)


def _gradient_cases(n: int):
    """Graphs whose search reaches the gradient phase, from a fixed seeded batch."""
    gen = G._generator({"min_nodes": 12, "max_nodes": 20})
    found = []
    for i in range(200):
        c = make_case(gen, "search-determinism", "long", i)
        r = S.search(c.graph, c.meta()["seed"], max_seconds=math.inf)
        if r.method == "gradient":
            found.append((c, r))
            if len(found) == n:
                break
    assert len(found) == n, "the batch holds too few cases the gradient search moves"
    return found


def test_last_bit_noise_in_the_gradients_changes_nothing(monkeypatch):
    """What a different CPU's kernels do to the gradients, done here: every element scaled by
    1 + 2**-20 times a random number in [-1, 1]. Raw gradients passed into Adam would move
    the searched values (and did, before the sign signal)."""
    cases = _gradient_cases(3)
    rng = np.random.default_rng(5)
    orig, calls = S._signal, []

    def noisy(grads):
        calls.append(1)
        return orig([None if g is None else g * (1 + 2.0 ** -20 * rng.uniform(-1, 1, g.shape)) for g in grads])

    monkeypatch.setattr(S, "_signal", noisy)
    for c, want in cases:
        got = S.search(c.graph, c.meta()["seed"], max_seconds=math.inf)
        assert (got.valid, got.method, got.steps, got.restarts) == (want.valid, want.method, want.steps, want.restarts)
        for a, b in zip(got.inputs, want.inputs):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), c.id
        assert sorted(got.consts) == sorted(want.consts)
        for t in want.consts:
            assert got.consts[t].tobytes() == want.consts[t].tobytes(), (c.id, t)
    assert calls, "the gradient search never ran"


def test_the_signal_is_the_sign_outside_a_dead_zone_below_the_largest_element():
    g = np.array([3.0, -0.5, 2.0 ** -15, -(2.0 ** -13), 0.0, np.nan, -np.inf])
    # the largest finite magnitude 3 rounds up to 4: the dead zone is 4 * 2**-16 = 2**-14
    (q,) = S._signal([g])
    assert q.tolist() == [1.0, -1.0, 0.0, -1.0, 0.0, 0.0, -1.0]
    # the threshold is a power of two: noise in the largest element does not move it
    (q2,) = S._signal([g * (1 + 1e-12)])
    assert q2.tolist() == q.tolist()
    # across tensors, None kept in place; nothing above the dead zone: no signal
    a, none, b = S._signal([np.array([1.0, 2.0 ** -17]), None, np.array([-0.25])])
    assert a.tolist() == [1.0, 0.0] and none is None and b.tolist() == [-1.0]
    assert S._signal([np.zeros(3), None, np.array([np.nan])]) is None


def test_adam_is_pytorchs_adam_in_exactly_rounded_arithmetic():
    rng = np.random.default_rng(3)
    x0 = rng.uniform(-4, 4, 50)
    signals = [np.sign(rng.uniform(-1, 1, 50)) * (rng.uniform(0, 1, 50) > 0.2) for _ in range(6)]
    p = x0.copy()
    adam = S._Adam([p], 0.5)
    ref = torch.tensor(x0, requires_grad=True)
    opt = torch.optim.Adam([ref], lr=0.5, betas=S.BETAS, eps=S.EPS)
    for q in signals:
        adam.step([q])
        ref.grad = torch.from_numpy(q)
        opt.step()
    np.testing.assert_allclose(p, ref.detach().numpy(), rtol=0, atol=1e-12)
    # the same arithmetic, one Python float at a time (each operation IEEE-rounded, no fused
    # multiply-add): the same bits
    b1, b2 = S.BETAS
    for j in range(3):
        x, m, v, c1, c2 = x0[j], 0.0, 0.0, 1.0, 1.0
        for q in signals:
            c1, c2 = c1 * b1, c2 * b2
            m = m * b1 + (1.0 - b1) * q[j]
            v = v * b2 + (1.0 - b2) * (q[j] * q[j])
            x = x - 0.5 * (m / (1.0 - c1)) / (math.sqrt(v / (1.0 - c2)) + S.EPS)
        assert x == p[j]
