"""``dlgate reduce``: a failing case shrunk while its failure keeps its signature."""
from __future__ import annotations

import glob
import os
import re
import shlex
import sys

from dlgate.cli.args import backend_spec, log, out_dir, seconds
from dlgate.cli.parser import UsageError


def add_parser(sub) -> None:
    rd = sub.add_parser("reduce", help="shrink a failing case while its failure keeps its signature")
    rd.add_argument("case", metavar="CASE", help="a case folder (a failure's bundle, e.g. OUT/cases/<id>, or a generated case)")
    rd.add_argument("--backend", required=True, metavar="NAME[:DEVICE][@LEVEL]", help="the failing backend")
    rd.add_argument("--reference", default="torch", metavar="NAME[:DEVICE]",
                    help="the trusted reference (default torch)")
    rd.add_argument("--out", help="where to write the reduced case (default CASE-reduced)")
    rd.add_argument("--max-seconds", type=seconds, default=120.0, help="time bound of the reduction")
    rd.add_argument("--timeout", type=seconds, default=60.0, help="seconds per compile+run")


def command(args) -> int:
    # local: imports torch; off the CLI start-up
    from dlgate.check import CaseError, CheckConfig, check, load_bundle, save_bundle
    from dlgate.exec.worker import Pool
    from dlgate.oracle import verdict as V
    from dlgate.reduce.reducer import NotReproduced, Reducer, Target

    spec = backend_spec(args.backend, f"dlgate reduce: --backend {args.backend}")
    ref = backend_spec(args.reference, f"dlgate reduce: --reference {args.reference}")
    if not os.path.isfile(os.path.join(args.case, "meta.json")):
        raise UsageError(f"dlgate reduce: {args.case}: not a case folder (no meta.json)")
    out_dir(args.out or args.case.rstrip("/") + "-reduced", "dlgate reduce: --out")
    try:
        case = load_bundle(args.case)
    except CaseError as e:
        raise UsageError(f"dlgate reduce: {e}") from None
    cfg = CheckConfig([spec], ref, timeout_s=args.timeout, crosscheck=False)
    with Pool(cfg.timeout_s, cfg.memory_mb) as pool:
        rec = check(pool, case, cfg)
        v = rec["verdicts"][0]
        if v["verdict"] not in V.FAILURES:
            print(f"{case.id}: {spec.label()} does not fail here ({v['verdict']}); nothing to reduce"
                  + _cut_pointer(args.case, spec, args, "behind it"), file=sys.stderr)
            return 1
        target = Target.of(spec, v)  # errors match by cluster, as in the gate
        try:
            res = Reducer(pool, cfg, target, max_seconds=args.max_seconds).reduce(case)
        except NotReproduced:  # failed once, not again: flaky, which a reduction cannot keep
            print(f"{case.id}: {spec.label()} failed ({v['verdict']}) but not when run again: the failure does not "
                  f"reproduce (flaky); nothing to reduce", file=sys.stderr)
            return 1
    out = args.out or args.case.rstrip("/") + "-reduced"
    res.case.meta = dict(res.case.meta, id=os.path.basename(out), reduced_from=case.id,
                         reduction={"original_nodes": res.original_nodes, "nodes": len(res.case.graph.nodes),
                                    "probes": res.probes, "seconds": round(res.seconds, 2), "hit_limit": res.hit_limit,
                                    "verdict": res.verdict.verdict, "signature": (res.verdict.signature or {}).get("id")})
    res.case.meta["operators"] = sorted(set(res.case.graph.op_names()))
    d = save_bundle(os.path.dirname(os.path.abspath(out)) or ".", res.case, subdir=os.path.basename(out))
    print(f"{case.id}: {res.original_nodes} -> {len(res.case.graph.nodes)} operators "
          f"({', '.join(res.case.graph.op_names())}), still {res.verdict.verdict} on {spec.label()}; "
          f"{res.probes} probes in {res.seconds:.1f} s; wrote {d}")
    _tvmscript(cfg, d, case.id, res, spec, args.max_seconds)
    more = _cut_pointer(args.case, spec, args, "behind this failure")
    if more:
        log(f"dlgate reduce: {more[2:]}")
    return 0


def _tvmscript(cfg, d: str, source: str, res, spec, max_seconds: float) -> None:
    """For a TVM finding: the pass list reduced too, and ``repro_tvmscript.py`` (TVMScript plus
    the passes, needing only TVM and NumPy) written into the reduced case's folder."""
    # local: imports torch; off the CLI start-up
    from dlgate.backends.base import Model
    from dlgate.exec.worker import Pool
    from dlgate.reduce.passes import sequence
    from dlgate.reduce.tvmscript import outcome, write_tvmscript

    if sequence(spec) is None:
        return
    with Pool(cfg.timeout_s, cfg.memory_mb) as pool:
        ref = pool.execute(cfg.reference, Model(res.case.model, res.case.graph), res.case.inputs)
        if not ref.ok:
            log(f"dlgate reduce: no TVMScript repro: the reference fails on the reduced case ({ref.status})")
            return
        got = write_tvmscript(pool, cfg, d, res.case, spec, res.verdict.to_json(), ref.outputs,
                              f"case {source}, reduced to {len(res.case.graph.nodes)} operators",
                              max_seconds=max_seconds)
    log(f"dlgate reduce: {outcome(got, d)}")


def _cut_folders(case_dir: str, spec) -> list:
    """The cut cases under a failure's bundle (``cut<k>-<backend>/``, where the gate saved
    the rest of the model once a failure's or a refusal's operators were cut out: the
    findings made behind it), those of ``spec``'s backend when there are any, in order."""
    found = []
    for p in glob.glob(os.path.join(glob.escape(case_dir), "cut*-*", "meta.json")):
        m = re.fullmatch(r"cut(\d+)-(.+)", os.path.basename(os.path.dirname(p)))
        if m:
            found.append((int(m.group(1)), m.group(2), os.path.dirname(p)))
    label = re.sub(r"[^A-Za-z0-9_.@-]+", "-", spec.label()).strip("-")  # as the gate names them
    mine = [d for _, b, d in sorted(found) if b == label]
    return mine or [d for _, _, d in sorted(found)]


def _cut_pointer(case_dir: str, spec, args, behind: str) -> str:
    """``; the finding BEHIND is in CUT (run `dlgate reduce CUT --backend B`)`` for the cut
    cases under ``case_dir`` (:func:`_cut_folders`), or "" when there are none."""
    cuts = _cut_folders(case_dir, spec)
    if not cuts:
        return ""
    ref = f" --reference {shlex.quote(args.reference)}" if args.reference != "torch" else ""
    run = f"dlgate reduce {shlex.quote(cuts[0])} --backend {shlex.quote(args.backend)}{ref}"
    where = ", ".join(cuts)
    if len(cuts) == 1:
        return f"; the finding {behind} is in {where} (run `{run}`)"
    return f"; the {len(cuts)} findings {behind} are in {where} (run `{run}`, and likewise for the others)"
