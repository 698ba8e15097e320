"""Golden bytes: a SHA-256 of a fixed batch of generated models and of the inputs the
pipeline feeds them, pinned per ``dlgate.GENERATOR_VERSION`` in ``tests/data/golden.json``.

A campaign is reproducible from its seed only if generation is a fixed function of
(root, campaign, index, GENERATOR_VERSION); the version is what tells a baseline, a
corpus or an issue's repro that the models behind it are no longer the ones it recorded.
This digest makes a change to generation without a version bump fail at once, instead of
surfacing later as a re-pinned seed test or a baseline that silently stops matching.

The batch goes through the same public entry points a campaign uses: ``make_case`` (and a
``GuidedBatch`` for the coverage-guided path) for the models, ``dlgate.check.prepare`` for
the inputs. Its regimes cover the opsets (drawn per case, and fixed at the oldest, a middle
and the newest), dynamic shapes, extreme values, longer graphs and the campaign defaults.

Three digests, all machine-independent:

- ``models``: each case's ONNX bytes as generated (NumPy PCG64 streams and value ranges
  rounded to 7 significant digits: the same on every machine, docs/generator.md).
- ``inputs``: each case's input arrays, canonically (dtype name, shape, little-endian raw
  bytes, in graph order), and those of each further binding of a dynamic case, for every
  case whose inputs are the seeded draws themselves (search method ``initial``), with its
  final model and search outcome. A case the input search had to move counts here by its
  method alone, so that a change to the search's own code shows under ``searched`` only.
- ``searched``: the searched cases in full (outcome, final model, inputs). The search moves
  values on signals that last-bit differences between CPU kernels cannot change
  (dlgate/inputs/search.py, Determinism; tests/test_search_determinism.py compares them
  under PyTorch's DEFAULT, AVX2 and AVX512 kernels), so this too is compared everywhere; the
  pin records the platform it was computed on (machine, PyTorch version, CPU capability).

The input search's wall-clock safety cap is lifted while the batch is prepared: with the
cap hit, a result depends on the machine's speed; without it the search is bounded by its
step budget alone, so the digest is what the pipeline produces whenever the cap is not hit.

    python -m tests.golden            # print the digests of the current code
    python -m tests.golden --check    # compare with the pin (exit 1 on a difference)
    python -m tests.golden --pin      # pin the current GENERATOR_VERSION
    python -m tests.golden --cases    # one line per case, to diff two checkouts
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import math
import os
import sys
import time

import numpy as np

PIN_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "golden.json")
ROOT = "golden"
PIN_COMMAND = "python -m tests.golden --pin"
#: What is hashed and how (``case_digests``, ``_put``): raise it with any change there, so
#: that the check asks for a new pin instead of reporting a change of generation.
DIGEST_FORMAT = 1

#: The batch: each regime is (name, number of cases, whether the coverage guide drives it,
#: the input search's step budget (None: ``prepare``'s default), GenConfig settings). An
#: ``opset`` of "newest" stands for ``NEWEST_OPSET``. The regime's name is its campaign.
REGIMES = (
    # a campaign's defaults (dlgate/gate/config.py): guided, a dynamic and an extreme share
    ("campaign", 100, True, 24, {"min_nodes": 1, "max_nodes": 10, "dynamic_share": 0.25, "extreme_share": 0.2}),
    # ``dlgate gen --no-guidance`` / a bundle's re-preparation: plain seeded cases
    ("plain", 60, False, None, {"min_nodes": 1, "max_nodes": 10}),
    ("opset13", 40, False, 24, {"max_nodes": 10, "opset": 13}),
    ("opset18", 40, False, 24, {"max_nodes": 10, "opset": 18}),
    ("newest", 40, False, 24, {"max_nodes": 10, "opset": "newest"}),
    ("dynamic", 60, False, 24, {"max_nodes": 10, "dynamic_share": 1.0}),
    ("extreme", 60, False, 24, {"max_nodes": 10, "extreme_share": 1.0}),
    ("long", 30, True, 24, {"min_nodes": 12, "max_nodes": 20, "dynamic_share": 0.25, "extreme_share": 0.2}),
)


#: The digests, all compared on any platform.
KINDS = ("models", "inputs", "searched")


class GoldenError(RuntimeError):
    """The batch cannot be digested as pinned (e.g. a regime's generator draws nothing)."""


def definition() -> str:
    """A digest of the batch's definition (and of how it is hashed): a changed batch needs a
    new pin, not a version bump."""
    blob = json.dumps([DIGEST_FORMAT, ROOT, [[n, c, g, s, kw] for n, c, g, s, kw in REGIMES]], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()


def _put(h, *parts) -> None:
    """Length-prefixed fields, so that no two different sequences hash alike."""
    for p in parts:
        b = p if isinstance(p, bytes) else str(p).encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)


def _put_arrays(h, arrays) -> None:
    _put(h, len(arrays))
    for x in arrays:
        x = np.asarray(x)
        le = np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("<")) if x.dtype.byteorder == ">" else \
            np.ascontiguousarray(x)
        _put(h, x.dtype.name, json.dumps(list(x.shape)), le.tobytes())


@contextlib.contextmanager
def _no_time_cap():
    """``prepare`` with the input search bounded by its step budget alone (see the module
    docstring): the name ``search`` in the namespace ``prepare`` runs in is rebound for the
    duration, so this follows ``prepare`` wherever it is defined, and fails loudly should
    it stop calling the search by that name."""
    from dlgate.check import prepare

    names = prepare.__globals__
    if "search" not in names:
        raise GoldenError(f"{prepare.__module__}.prepare no longer calls the input search as `search`: "
                          "update tests/golden.py")
    was = names["search"]
    names["search"] = functools.partial(was, max_seconds=math.inf)
    try:
        yield prepare
    finally:
        names["search"] = was


def _generator(kw: dict):
    from dlgate.graph.generator import NEWEST_OPSET, GenConfig, Generator

    kw = dict(kw)
    if kw.get("opset") == "newest":
        kw["opset"] = NEWEST_OPSET
    return Generator(GenConfig(**kw))


def platform_tag() -> str:
    """Where the pin was computed (recorded with it, not compared): what PyTorch's float
    arithmetic, which the search's signals are made immune to, depends on."""
    import platform

    import torch

    return f"{platform.machine()} torch {torch.__version__} {torch.backends.cpu.get_cpu_capability()}"


def case_digests(regimes=REGIMES):
    """Yield one dict per case: regime, index, id, the digests (see the module docstring;
    ``searched`` is "-" for a case the search did not move), the search method, and what
    the case exercises (opset, operators, dynamic bindings, extreme values)."""
    from dlgate.case import make_case
    from dlgate.case import GuidedBatch
    from dlgate.coverage.state import CoverageState

    with _no_time_cap() as prepare:
        for name, count, guided, steps, kw in regimes:
            gen = _generator(kw)
            batch = GuidedBatch(gen, ROOT, name, CoverageState()) if guided else None
            for i in range(count):
                c = batch.case(i)[0] if batch is not None else make_case(gen, ROOT, name, i)
                p = prepare(c.meta(), c.graph, c.model_bytes, steps)
                if p.search.get("hit_time_cap"):  # cannot happen with the cap lifted; a guard all the same
                    raise GoldenError(f"{name}/{c.id}: the input search hit a wall-clock cap")
                s = p.search
                m = hashlib.sha256()
                _put(m, c.id, hashlib.sha256(c.model_bytes).hexdigest())
                h = hashlib.sha256()
                _put(h, c.id, s["method"])
                full = h if s["method"] == "initial" else hashlib.sha256()
                _put(full, json.dumps({k: s.get(k) for k in ("valid", "steps", "restarts", "extreme")},
                                      sort_keys=True), hashlib.sha256(p.model).hexdigest())
                _put_arrays(full, p.inputs)
                _put(full, len(p.shapes))
                for binding, _graph, inputs in p.shapes:
                    _put(full, json.dumps(binding, sort_keys=True))
                    _put_arrays(full, inputs)
                searched = "-" if full is h else full.hexdigest()
                yield {"regime": name, "index": i, "id": c.id, "models": m.hexdigest(), "inputs": h.hexdigest(),
                       "searched": searched, "method": s["method"], "opset": c.graph.opset,
                       "operators": sorted(set(c.graph.op_names())), "bindings": len(p.shapes),
                       "dynamic": c.graph.dynamic is not None, "extreme": c.graph.extreme is not None}


#: The fields of a case's line under ``--cases``, in order.
CASE_FIELDS = ("regime", "index", "id", "models", "inputs", "searched", "method")


def case_line(c: dict) -> str:
    """A case of :func:`case_digests` as ``--cases`` prints it."""
    return " ".join(str(c[k]) for k in CASE_FIELDS)


def compute(regimes=REGIMES) -> dict:
    """The digests of the batch: per regime and overall, for models, inputs and searched."""
    return summarize(case_digests(regimes))


def summarize(cases) -> dict:
    """The digests of the cases of :func:`case_digests` (the batch's or some of its regimes'):
    per regime and overall, for models, inputs and searched."""
    per = {}
    for c in cases:
        r = per.setdefault(c["regime"], {**{k: hashlib.sha256() for k in KINDS}, "cases": 0, "searched_cases": 0,
                                         "dynamic": 0, "bindings": 0, "extreme": 0, "opsets": set(),
                                         "operators": set()})
        for k in KINDS:
            _put(r[k], c[k])
        r["cases"] += 1
        r["searched_cases"] += c["method"] != "initial"
        r["dynamic"] += c["dynamic"]
        r["bindings"] += c["bindings"]
        r["extreme"] += c["extreme"]
        r["opsets"].add(c["opset"])
        r["operators"].update(c["operators"])
    out = {"definition": definition(), "platform": platform_tag(), "regimes": {}}
    top = {k: hashlib.sha256() for k in KINDS}
    for name, r in per.items():
        # what the regime exercises (recorded with the pin, not compared: the digests cover it)
        out["regimes"][name] = {**{k: r[k] for k in ("cases", "searched_cases", "dynamic", "bindings", "extreme")},
                                "opsets": sorted(r["opsets"]), "operators": sorted(r["operators"]),
                                **{k: r[k].hexdigest() for k in KINDS}}
        for k in KINDS:
            _put(top[k], name, out["regimes"][name][k])
    out.update({k: top[k].hexdigest() for k in KINDS})
    out["cases"] = sum(r["cases"] for r in out["regimes"].values())
    return out


def load_pins(path: str = PIN_FILE) -> dict:
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def differences(got: dict, pinned: dict) -> list:
    """Which of ``got``'s regimes differ from ``pinned`` and how (same batch definition
    assumed), on whatever platform each was computed."""
    bad = []
    for name, r in got["regimes"].items():
        want = pinned["regimes"].get(name)
        if want is None:
            bad.append(f"regime {name} is not pinned")
            continue
        bad += [f"regime {name}: {k} {r[k][:12]}, pinned {want[k][:12]}" for k in KINDS if r[k] != want[k]]
    return bad


def compare(got: dict, pins: dict, version: str) -> list:
    """The problems (one clear line each) of ``got`` against the pin of ``version``; []
    when it matches. Only the regimes ``got`` holds are compared."""
    pinned = pins.get(version)
    if pinned is None:
        return [f"GENERATOR_VERSION {version} has no golden pin (tests/data/golden.json pins "
                f"{', '.join(sorted(pins)) or 'none'}): pin it with `{PIN_COMMAND}`"]
    if pinned.get("definition") != got["definition"]:
        return [f"the golden batch (REGIMES, ROOT, DIGEST_FORMAT in tests/golden.py) is not the one pinned for "
                f"GENERATOR_VERSION {version}: pin it again with `{PIN_COMMAND}`"]
    bad = differences(got, pinned)
    if bad:
        return [f"generation changed without a GENERATOR_VERSION bump ({'; '.join(bad)}): bump "
                f"GENERATOR_VERSION in dlgate/__init__.py, then pin with `{PIN_COMMAND}` "
                "(`python -m tests.golden --cases` on both checkouts, diffed, names the cases)"]
    return []


def pin(got: dict, path: str = PIN_FILE, version: str | None = None, force: bool = False) -> str:
    """Record ``got`` for ``version``. Refuses, unless ``force``, to replace a pin of the
    same version and batch definition that ``got`` differs from: that is the change the
    pin exists to catch, and the remedy is a version bump, not a new pin."""
    from dlgate import GENERATOR_VERSION

    version = version or GENERATOR_VERSION
    pins = load_pins(path)
    old = pins.get(version)
    if old is not None and not force and old.get("definition") == got["definition"] and differences(got, old):
        raise GoldenError(f"GENERATOR_VERSION {version} is pinned with other digests ({differences(got, old)[0]}): "
                          "generation changed, so bump GENERATOR_VERSION in dlgate/__init__.py and pin again "
                          "(--force overwrites the pin, for a pin that was itself wrong)")
    # the operator lists are for the tests; the pin keeps their size
    pins[version] = {**got, "regimes": {n: {**r, "operators": len(r["operators"])} for n, r in got["regimes"].items()}}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(pins, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    return version


def main(argv=None) -> int:
    from dlgate import GENERATOR_VERSION

    ap = argparse.ArgumentParser(prog="python -m tests.golden", description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="compare with the pin; exit 1 on a difference")
    g.add_argument("--pin", action="store_true", help="pin the digests for the current GENERATOR_VERSION")
    g.add_argument("--cases", action="store_true", help="print one line per case (regime, index, id, models "
                   "digest, inputs digest, search method), to diff two checkouts")
    ap.add_argument("--force", action="store_true", help="with --pin: overwrite a differing pin of this version")
    ap.add_argument("--regime", action="append", metavar="NAME",
                    help="only this regime (repeatable; with --check or without a mode)")
    args = ap.parse_args(argv)
    if args.force and not args.pin:
        print("python -m tests.golden: --force goes with --pin", file=sys.stderr)
        return 2
    regimes = REGIMES
    if args.regime:
        names = [r[0] for r in REGIMES]
        unknown = [n for n in args.regime if n not in names]
        if unknown:
            print(f"python -m tests.golden: no regime {unknown[0]!r} (there are: {', '.join(names)})", file=sys.stderr)
            return 2
        if args.pin:
            print("python -m tests.golden: --pin pins the whole batch; drop --regime", file=sys.stderr)
            return 2
        regimes = tuple(r for r in REGIMES if r[0] in args.regime)
    if args.cases:
        for c in case_digests(regimes):
            print(case_line(c))
        return 0
    t0 = time.perf_counter()
    try:
        got = compute(regimes)
    except GoldenError as e:
        print(f"python -m tests.golden: {e}", file=sys.stderr)
        return 2
    took = time.perf_counter() - t0
    if args.pin:
        try:
            v = pin(got, force=args.force)
        except GoldenError as e:
            print(f"python -m tests.golden: {e}", file=sys.stderr)
            return 1
        print(f"pinned GENERATOR_VERSION {v}: {got['cases']} cases, models {got['models'][:16]}, "
              f"inputs {got['inputs'][:16]} ({took:.1f} s) in {os.path.relpath(PIN_FILE)}")
        return 0
    if args.check:
        problems = compare(got, load_pins(), GENERATOR_VERSION)
        for p in problems:
            print(p, file=sys.stderr)
        if not problems:
            print(f"golden: GENERATOR_VERSION {GENERATOR_VERSION} matches its pin ({got['cases']} cases, "
                  f"{took:.1f} s)")
        return 1 if problems else 0
    print(json.dumps({"generator": GENERATOR_VERSION, "seconds": round(took, 1), **got}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
