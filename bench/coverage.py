"""Rewrite and graph coverage of three generator settings on the same number of models.

    python bench/coverage.py [--count 2000] [--backend onnxruntime@all --backend tvm]
                             [--jobs 2] [--settings a,b,c] [--runs 4] [--dynamic-share 0.25]
                             [--json FILE]

Settings, each over ``--count`` models of 1-10 operators, a share ``--dynamic-share``
(default 0.25, the campaigns' default) with symbolic batch/sequence dims, compiled once
and run at their first binding (a motif whose rewrite needs symbolic dims,
``Motif.needs_dynamic``, gets them whenever the share is above 0; ``--dynamic-share 0``
measures static models only):

* **a**: the generator without motifs and without guidance (every spec but the motifs);
* **b**: with motifs (every spec), without guidance;
* **c**: with motifs and coverage guidance (:mod:`dlgate.coverage.guide`, :class:`dlgate.case.GuidedBatch`), as a recurring
  campaign with a ``coverage_state`` makes them: ``--runs`` consecutive runs of
  ``count / runs`` models each (their own roots, one campaign), the first from an empty
  state, each later one from the state the one before ended with: its start, every
  case's graph features and every rewrite kind its backends applied, as
  ``dlgate.gate.run.guidance.write_coverage`` writes ``coverage-state.json``. Within a run, as in
  ``dlgate run``, the batch is generated in index order and each case's features join
  the state before the next; rewrite kinds join it only between runs (a run's cases
  depend on its start state and seeds alone, never on what a compiler did mid-run). So
  guidance's ``MOTIF_UNFIRED`` weight (motifs whose rewrite no backend of their optimizer
  applied yet) acts from the second run on; ``--runs 1`` is one campaign's first run;
* **d**: as c, restricted to what the backend was probed to support (``dlgate probe``;
  the campaign key ``restrict_to_support``): a model holding one operator the compiler
  refuses is never compiled, so none of its rewrites can fire.

Each model is compiled by each backend in an isolated worker (a crash or hang is
contained; the rewrites are named after compiling, whatever the run does), and run once
on plain random inputs. Prints, per setting: the distinct rewrite kinds each backend
applied (``Backend.rewrites``: onnxruntime's fusions, eliminations and transformers,
TVM's passes and fused functions), HirFuzz's three coverage counts (operator x dtype,
operator x output shape, operator edges) and its three-operator paths, the motif decision
sides drawn, and GenCoG's vertex and edge diversity (``dlgate.stats``); then the ratio
of c's rewrite kinds to a's per backend, and the kinds c fired that a did not.

Three measures of rewrite kinds, since the first counts combinations more than rewrites:

* **all kinds**: every name ``Backend.rewrites`` gave. For onnxruntime that includes an
  operator-type diff (``removed:Sigmoid`` is mostly constant folding of a Sigmoid, one
  kind per operator type any random graph holds), for TVM every distinct fused function
  name (one per combination of operators fused);
* **targeted kinds**: the kinds that name a rewrite of the optimizer's own rewrite list,
  as the motifs written from it expect them (``Motif.expects`` of that optimizer's
  motifs: ``transformer:ConvActivationFusion``, ``fused:conv2d_add_relu``...), that fired;
* **families**: the optimizer's rewrite families dlgate targets (one motif each, written
  from that optimizer's rewrite list) of which at least one expected kind fired, naming
  the others. A family's kinds are alternatives (TVM's fused-function name for each
  activation after a conv1d, conv2d or conv3d), so this, not the kinds, says whether a
  rewrite was reached;
* for onnxruntime, **transformers**: the graph transformers it registers on this CPU
  (``dlgate.backends.ort_transformers.registered``) that changed some model, against
  those that can fire on standard-domain CPU models, naming the ones that never did.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

from dlgate import stats as S  # noqa: E402
from dlgate.backends.base import BackendSpec, Model  # noqa: E402
from dlgate.case import make_case  # noqa: E402
from dlgate.coverage import features as F  # noqa: E402
from dlgate.case import GuidedBatch  # noqa: E402
from dlgate.coverage.state import CoverageState  # noqa: E402
from dlgate.exec.worker import Pool  # noqa: E402
from dlgate.graph.generator import GenConfig, GenerationError, Generator  # noqa: E402
from dlgate.graph.ir import random_values  # noqa: E402
from dlgate.ops.motif import Motif  # noqa: E402
from dlgate.ops.registry import all_specs  # noqa: E402

SETTINGS = {"a": "no motifs, no guidance", "b": "motifs, no guidance", "c": "motifs and guidance",
            "d": "motifs and guidance, within the backend's support"}


def generator(setting: str, max_opset: int, support=None, dynamic_share: float = 0.25) -> Generator:
    plain = tuple(n for n, s in all_specs().items() if not isinstance(s, Motif))
    return Generator(GenConfig(max_nodes=10, ops=plain if setting == "a" else None, dynamic_share=dynamic_share,
                               opset_range=(13, max_opset), support=support if setting == "d" else None))


def generate(setting: str, count: int, seed: str, max_opset: int, support=None, start=None,
             dynamic_share: float = 0.25) -> tuple:
    """(cases, the coverage state the batch ended with: None without guidance). Guided
    settings start from ``start`` (default: empty)."""
    gen = generator(setting, max_opset, support, dynamic_share)
    batch = GuidedBatch(gen, seed, "coverage", start or CoverageState()) if setting in "cd" else None
    cases = []
    for i in range(count):
        try:
            cases.append(batch.case(i)[0] if batch else make_case(gen, seed, "coverage", i))
        except GenerationError:
            continue
    return cases, (batch.state.copy() if batch else None)


def run_root(seed: str, run: int, runs: int) -> str:
    """The root of run ``run`` of ``runs`` (a single run keeps the bench's seed)."""
    return seed if runs == 1 else f"{seed}/run{run}"


def campaign(setting: str, count: int, runs: int, backends: list, args, support=None) -> tuple:
    """Setting c or d as ``runs`` consecutive runs (see the module docstring): (cases, per
    backend label (rewrite kind counter, status counter, seconds), the end state)."""
    state, cases = CoverageState(), []
    got = {b.label(): (Counter(), Counter(), 0.0) for b in backends}
    for r in range(runs):
        n = count // runs + (1 if r < count % runs else 0)
        mine, end = generate(setting, n, run_root(args.seed, r, runs), args.max_opset, support, state,
                             args.dynamic_share)
        cases += mine
        for b in backends:
            t1 = time.perf_counter()
            kinds, status = compile_all(mine, b, args.jobs, args.timeout)
            k0, s0, sec = got[b.label()]
            got[b.label()] = (k0 + kinds, s0 + status, sec + time.perf_counter() - t1)
            end.add_rewrites(b.label(), kinds)
        state = end
        if runs > 1:
            fired = {b: len(k) for b, k in sorted(state.rewrites.items())}
            print(f"   run {r + 1}/{runs}: {len(mine)} models; the state now holds {len(state.features)} features, "
                  f"rewrite kinds {fired}", flush=True)
    return cases, got, state


def compile_all(cases: list, spec: BackendSpec, jobs: int, timeout_s: float) -> tuple:
    """(rewrite kind -> models it fired on, outcome status counts)."""
    chunks = [cases[k::jobs] for k in range(jobs)]

    def work(chunk):
        kinds, status = Counter(), Counter()
        rng = np.random.default_rng(0)
        with Pool(timeout_s, 4096) as pool:
            for c in chunk:
                g = c.graph
                xs = [random_values(rng, g.tensors[t]) for t in g.inputs]
                out = pool.execute(spec, Model(c.model_bytes, g), xs)
                status[out.status] += 1
                kinds.update(set(out.rewrites or ()))
        return kinds, status

    kinds, status = Counter(), Counter()
    with ThreadPoolExecutor(jobs) as ex:
        for k, s in ex.map(work, chunks):
            kinds += k
            status += s
    return kinds, status


def targeted(optimizer: str) -> set:
    """The rewrite kinds the optimizer's motifs expect."""
    return {k for s in all_specs().values() if isinstance(s, Motif) and s.optimizer == optimizer for k in s.expects}


def family_report(optimizer: str, fired: set) -> dict:
    """The optimizer's motifs (rewrite families) of which some expected kind fired, and the
    names of those none of whose kinds did."""
    motifs = sorted({s.name: s for s in all_specs().values()
                     if isinstance(s, Motif) and s.optimizer == optimizer and s.expects}.items())
    missed = [name for name, m in motifs if not fired & set(m.expects)]
    return {"families": len(motifs), "fired": len(motifs) - len(missed), "not_fired": missed}


def transformer_report(fired: set) -> dict:
    """Registered CPU transformers that fired, and the reachable ones that did not."""
    from dlgate.backends import ort_transformers as T

    names = set(T.registered())
    reachable = {n for n in names if T.TRANSFORMERS.get(n, (T.COVERED,))[0] != T.UNREACHABLE}
    got = {k.split(":", 1)[1] for k in fired if k.startswith("transformer:")}
    return {"registered": len(names), "reachable": len(reachable), "fired": len(got & names),
            "reachable_not_fired": sorted(reachable - got)}


def graph_coverage(cases: list) -> dict:
    feats = set()
    for c in cases:
        feats.update(F.graph_features(c.graph))
    counts = Counter(F.criterion(f) for f in feats)
    div = S.compute([c.graph.to_json() for c in cases])
    return {**{k: counts.get(k, 0) for k in F.CRITERIA}, "hirfuzz_score": sum(counts[k] for k in F.HIRFUZZ),
            "div_V": div.get("div_V"), "div_E": div.get("div_E"),
            "nodes_per_model": round(sum(len(c.graph.nodes) for c in cases) / max(1, len(cases)), 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--backend", action="append", help="NAME[@LEVEL] (default: onnxruntime@all and tvm)")
    ap.add_argument("--settings", default="a,b,c")
    ap.add_argument("--runs", type=int, default=4, help="settings c and d: consecutive campaign runs the models "
                                                        "are split into, each starting from the state the one "
                                                        "before ended with (1: a first run alone)")
    ap.add_argument("--seed", default="bench-coverage")
    ap.add_argument("--jobs", type=int, default=2, help="workers per backend")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--max-opset", type=int, default=28)
    ap.add_argument("--dynamic-share", type=float, default=0.25,
                    help="share of models with symbolic batch/sequence dims (the campaigns' default)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    if args.runs < 1 or args.runs > args.count:
        ap.error("--runs must be between 1 and --count")
    backends = [BackendSpec.parse(b) for b in (args.backend or ["onnxruntime@all", "tvm"])]
    res: dict = {}
    for s in args.settings.split(","):
        if s == "d":  # per backend: generated within each one's support
            for b in backends:
                from dlgate.probe.support import load_or_probe, support_set

                sup = support_set(load_or_probe(b.name))
                measure(f"d:{b.name}", *campaign(s, args.count, args.runs, [b], args, sup)[:2], [b], res)
            continue
        if s == "c":
            measure(s, *campaign(s, args.count, args.runs, backends, args)[:2], backends, res)
            continue
        cases = generate(s, args.count, args.seed, args.max_opset, dynamic_share=args.dynamic_share)[0]
        measure(s, cases, compile_each(cases, backends, args), backends, res)
    report(res, args)


def compile_each(cases: list, backends: list, args) -> dict:
    """Per backend label: (rewrite kind counter, status counter, seconds)."""
    got = {}
    for b in backends:
        t1 = time.perf_counter()
        kinds, status = compile_all(cases, b, args.jobs, args.timeout)
        got[b.label()] = (kinds, status, time.perf_counter() - t1)
    return got


def measure(s: str, cases: list, got: dict, backends: list, res: dict) -> None:
    """Print and keep the figures of ``cases``, compiled as ``got`` says, under ``res[s]``."""
    row = {"models": len(cases), "graph": graph_coverage(cases), "backends": {}}
    for b in backends:
        kinds, status, seconds = got[b.label()]
        aim = targeted(b.name)
        r = row["backends"][b.label()] = {"kinds": len(kinds), "fired": dict(sorted(kinds.items())),
                                          "targeted": len(aim & set(kinds)), "targeted_of": len(aim),
                                          "status": dict(status), "seconds": round(seconds, 1),
                                          "families": family_report(b.name, set(kinds))}
        if b.name == "onnxruntime":
            r["transformers"] = transformer_report(set(kinds))
    res[s] = row
    g = row["graph"]
    print(f"{s} ({SETTINGS[s[0]]}): {len(cases)} models, {g['nodes_per_model']} nodes/model; op_dtype "
          f"{g['op_dtype']}, op_shape {g['op_shape']}, edge {g['edge']}, path3 {g['path3']}, motif sides {g['motif']}, "
          f"HirFuzz score {g['hirfuzz_score']}, div_V {g['div_V']:.4f}, div_E {g['div_E']:.4f}", flush=True)
    for label, r in row["backends"].items():
        print(f"   {label}: {r['kinds']} distinct rewrite kinds, {r['targeted']} of the {r['targeted_of']} targeted "
              f"({r['seconds']} s; {r['status']})", flush=True)
        f = r["families"]
        print(f"      rewrite families (motifs) fired: {f['fired']} of {f['families']} "
              f"(not fired: {', '.join(f['not_fired']) or 'none'})", flush=True)
        if "transformers" in r:
            t = r["transformers"]
            print(f"      transformers: {t['fired']} of {t['registered']} registered fired ({t['reachable']} can "
                  f"fire on standard-domain CPU models; not fired: {', '.join(t['reachable_not_fired']) or 'none'})")


def report(res: dict, args) -> None:
    for other in [k for k in res if k[0] in "cd"]:
        if "a" not in res:
            break
        for label in res[other]["backends"]:
            a, c = res["a"]["backends"][label], res[other]["backends"][label]
            ratio = c["kinds"] / max(1, a["kinds"])
            print(f"{label}: all kinds {other}/a = {c['kinds']}/{a['kinds']} = {ratio:.2f}x; targeted kinds {other}/a = "
                  f"{c['targeted']}/{a['targeted']} = {c['targeted'] / max(1, a['targeted']):.2f}x (target >= 3x); "
                  f"rewrite families {other}/a = {c['families']['fired']}/{a['families']['fired']} "
                  f"of {c['families']['families']}")
            print(f"   fired in {other}, not in a: {', '.join(sorted(set(c['fired']) - set(a['fired'])))}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
