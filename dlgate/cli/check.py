"""``dlgate check``: generated cases run on backends and judged against the reference."""
from __future__ import annotations

import json
import os
from collections import Counter

from dlgate import tables as T
from dlgate.cli.args import backend_spec, out_dir, positive, seconds
from dlgate.cli.parser import UsageError


def add_parser(sub) -> None:
    c = sub.add_parser("check", help="run generated cases on backends and judge them against the reference")
    c.add_argument("dir", metavar="DIR", help="a folder written by `dlgate gen`")
    c.add_argument("--backend", action="append", required=True, metavar="NAME[:DEVICE][@LEVEL]",
                   help="a backend under test (repeatable), e.g. tvm, onnxruntime@basic, tvm:cuda")
    c.add_argument("--reference", default="torch", metavar="NAME[:DEVICE]", help="the trusted reference (default torch)")
    c.add_argument("--out", help="where to write results.jsonl and failing cases (default DIR/check)")
    c.add_argument("--timeout", type=seconds, default=60.0, help="seconds per compile+run before a case is a timeout")
    c.add_argument("--memory-mb", type=positive, default=4096, help="memory cap of a backend worker")
    c.add_argument("--no-crosscheck", action="store_true", help="skip the lowest-opt-level and onnx.reference checks")
    c.add_argument("--rewrite", action="append", metavar="KIND",
                   help="also run each case's equivalent twin made by this rewrite (repeatable; `all` for any): "
                        "the compiler must compute the same on both (docs/oracle-and-backends.md)")


def command(args) -> int:
    # local: imports torch; off the CLI start-up
    from dlgate.check import CaseError, CheckConfig, case_dirs, check, load_bundle, save_bundle, verify_bundle
    from dlgate.exec.worker import Pool
    from dlgate.invalid.oracle import check_invalid
    from dlgate.oracle import verdict as V
    from dlgate.rewrite import oracle as EQ

    specs = [backend_spec(b, f"dlgate check: --backend {b}") for b in args.backend]
    kinds = rewrite_kinds(args.rewrite)
    ref = backend_spec(args.reference, f"dlgate check: --reference {args.reference}")
    try:
        dirs = case_dirs(args.dir)
        for d in dirs:  # every case is checked before any runs, and before results.jsonl is opened
            verify_bundle(d)
    except FileNotFoundError as e:
        raise UsageError(f"dlgate check: {e}") from None
    except CaseError as e:
        raise UsageError(f"dlgate check: {e}") from None
    out = args.out or os.path.join(args.dir, "check")
    out_dir(out, "dlgate check: --out")
    os.makedirs(out, exist_ok=True)
    cfg = CheckConfig(specs, ref, timeout_s=args.timeout, memory_mb=args.memory_mb, crosscheck=not args.no_crosscheck,
                      rewrite_share=1.0 if args.rewrite else 0.0, rewrite_kinds=kinds)
    counts: Counter = Counter()
    internal = False
    with Pool(cfg.timeout_s, cfg.memory_mb) as pool, open(os.path.join(out, "results.jsonl"), "w") as res:
        for d in dirs:
            try:
                case = load_bundle(d)
            except CaseError as e:  # changed since it was checked
                raise UsageError(f"dlgate check: {e}") from None
            # a model made invalid on purpose (dlgate.invalid) is judged by its own oracle
            rec = check_invalid(pool, case, cfg) if case.meta.get("invalid") else check(pool, case, cfg)
            res.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
            res.flush()
            bad = [v for v in rec["verdicts"] if v["verdict"] in V.FAILURES or v["verdict"] == V.REFERENCE_ERROR]
            odd = EQ.findings(rec)
            if bad or odd:
                d = save_bundle(out, case)
                if odd:
                    EQ.save_twin(d, case)
            for v in rec["verdicts"]:
                counts[(v["backend"], v["verdict"])] += 1
                internal |= v["verdict"] == V.REFERENCE_ERROR
            for t in rec.get("twins", ()):
                counts[(f"{t['backend']} twin ({rec['rewrite'].get('kind') or 'none'})", t["status"])] += 1
            for v in bad + odd:
                sig = (v.get("signature") or {}).get("id", "")
                print(f"{case.id} {v['backend']}: {v.get('verdict') or v['status']} {sig} {v['detail'][:160]}")
    t = T.table("backend", "verdict", "cases", right=("cases",))
    for (backend, verdict), n in sorted(counts.items()):
        T.row(t, backend, verdict, n)
    T.show(f"{len(dirs)} cases; results in {os.path.join(out, 'results.jsonl')}", t)
    if internal:
        return 3
    return 1 if any(v in V.FAILURES or v == EQ.INCONSISTENT for (_, v) in counts) else 0


def rewrite_kinds(given: list | None) -> tuple | None:
    """The rewrites ``--rewrite`` names (None: all, or none asked); a usage error naming an
    unknown one."""
    from dlgate.rewrite import all_rewrites  # local: imports onnx; off the CLI start-up

    if not given or "all" in given:
        return None
    known = all_rewrites()
    for k in given:
        if k not in known:
            raise UsageError(f"dlgate check: --rewrite {k}: unknown rewrite; known: all, {', '.join(known)}")
    return tuple(dict.fromkeys(given))
