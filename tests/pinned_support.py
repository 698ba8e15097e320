"""A backend's probed support pinned in tests/data/support, so the suite need not probe it on
every clean machine: probing onnxruntime runs about 150,000 single-operator sessions, ten
minutes of one core, before tests/test_validity.py can draw its first model.

A pin is exactly what ``dlgate probe`` finds, as the generator's support set, and is keyed
like the probe cache (the backend's version, ``GENERATOR_VERSION``, ``PROBE_VERSION``): a
test uses it only where all three match the installed backend and this checkout. Elsewhere
(a generator bump, another onnxruntime) the test probes as before, caching the answer under
the test session's temporary root, and warns that the pin is stale. Re-pin (about ten
minutes) with::

    python -m tests.pinned_support onnxruntime
"""
from __future__ import annotations

import os
import sys
import warnings
from contextlib import contextmanager

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "support")


def pin_path(system: str) -> str:
    """Where the pin for ``system`` as installed here, and this checkout's generator and
    probing policy, lives (whether or not it exists)."""
    from dlgate.probe.support import cache_path, version_of

    name = os.path.basename(cache_path(system, version_of(system)))
    return os.path.join(DATA, name[: -len(".json")] + ".txt")


def read(path: str) -> frozenset:
    """The support set of a pin file (``operator|dtypes|opsets`` a line, opsets as spans)."""
    out = set()
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            op, sig, spans = line.rstrip("\n").split("|")
            for span in spans.split(","):
                lo, _, hi = span.partition("-")
                out.update((op, tuple(sig.split(",")) if sig else (), o) for o in range(int(lo), int(hi or lo) + 1))
    return frozenset(out)


def render(support: frozenset, header: str) -> str:
    """The pin file's text for ``support``: one line per operator and dtypes, sorted, its
    opsets as runs of consecutive ones (``13-17,19``)."""
    opsets: dict = {}
    for op, sig, o in support:
        opsets.setdefault((op, sig), []).append(o)
    lines = [f"# {h}" for h in header.splitlines()]
    for (op, sig), os_ in sorted(opsets.items()):
        os_.sort()
        runs, start = [], os_[0]
        for a, b in zip(os_, os_[1:] + [None]):
            if b != a + 1:
                runs.append(f"{start}-{a}" if a != start else f"{a}")
                start = b
        lines.append(f"{op}|{','.join(sig)}|{','.join(runs)}")
    return "\n".join(lines) + "\n"


@contextmanager
def _cache(root: str):
    """``DLGATE_CACHE`` set to ``root`` for the probe alone (no later test sees it)."""
    old = os.environ.get("DLGATE_CACHE")
    os.environ["DLGATE_CACHE"] = root
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DLGATE_CACHE")
        else:
            os.environ["DLGATE_CACHE"] = old


def support(system: str, cache_root: str) -> frozenset:
    """``system``'s probed support: its pin where one matches, else probed (cached under
    ``cache_root``) with a warning that names the re-pin command."""
    from dlgate.probe.support import load_or_probe, support_set

    path = pin_path(system)
    if os.path.exists(path):
        return read(path)
    warnings.warn(f"no pinned support {os.path.relpath(path)}: probing {system} (minutes); "
                  f"pin it with `python -m tests.pinned_support {system}`", stacklevel=2)
    with _cache(cache_root):
        return support_set(load_or_probe(system))


def main(argv: list) -> int:
    """Pin ``system``'s support: from the probe cache (``$DLGATE_CACHE``, as ``dlgate probe``
    leaves it) where it holds this version's answer, else probed now on every core."""
    from dlgate.probe.support import PROBE_VERSION, load_or_probe, support_set

    if len(argv) != 1:
        print("usage: python -m tests.pinned_support SYSTEM", file=sys.stderr)
        return 2
    system = argv[0]
    path = pin_path(system)
    doc = load_or_probe(system, jobs=os.cpu_count() or 1)
    header = (f"{system} {doc['version']}'s probed support (generator {doc['generator']}, probe {PROBE_VERSION}) as the "
              f"generator's support set:\ndlgate.probe.support.support_set of `dlgate probe --system {system}`, one "
              f"operator|input dtypes|opsets a line.\nWritten by `python -m tests.pinned_support {system}` "
              f"(tests/pinned_support.py).")
    os.makedirs(DATA, exist_ok=True)
    with open(path, "w") as f:
        f.write(render(support_set(doc), header))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
