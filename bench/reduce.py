"""Reduction of failing cases: how small, how fast, and whether the repros still fail.

    python bench/reduce.py [--failures 30] [--nodes 10] [--max-seconds 120]

Generates 10-node models (all operators and dtypes) and runs them on TVM with an injected
miscompilation (every Sigmoid compiled as Tanh) until ``--failures`` cases fail; so the
set mixes the injected bug with TVM 0.27's own failures (compile errors, crashes, wrong
shapes). Each failing case is reduced in the isolated workers while its failure keeps its
class (errors and crashes: its cluster), written as a repro bundle, and its ``repro.py`` is
run standalone in a fresh process. Prints the share reduced to at most 3 operators (target:
at least 90%) and to one, the graph inputs and attributes left (and how many attributes
the failure was found not to depend on), the number of distinct fingerprints and clusters
of the reduced failures (one cause should be one fingerprint), the median and worst
reduction time (target: median under 60 s), and how many repros fail standalone (target:
all).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dlgate.backends.base import BackendSpec, Model  # noqa: E402
from dlgate.case import make_case  # noqa: E402
from dlgate.check import CheckConfig, check, prepare  # noqa: E402
from dlgate.exec.worker import Pool  # noqa: E402
from dlgate.graph.generator import GenConfig, Generator  # noqa: E402
from dlgate.oracle import verdict as V  # noqa: E402
from dlgate.reduce.bundle import write_repro  # noqa: E402
from dlgate.reduce.identity import identity  # noqa: E402
from dlgate.reduce.reducer import Reducer, Target  # noqa: E402

BROKEN = BackendSpec("tvm", options=(("extra_passes", ("dlgate.backends.testing:sigmoid_to_tanh",)),))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--failures", type=int, default=30)
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--max-seconds", type=float, default=120.0)
    ap.add_argument("--seed", default="bench-reduce")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    gen = Generator(GenConfig(min_nodes=args.nodes, max_nodes=args.nodes))
    cfg = CheckConfig([BROKEN], crosscheck=False)
    rows = []
    with Pool(120) as pool, tempfile.TemporaryDirectory() as tmp:
        i = 0
        while len(rows) < args.failures:
            c = make_case(gen, args.seed, "reduce", i)
            i += 1
            case = prepare(c.meta(), c.graph, c.model_bytes)
            v = check(pool, case, cfg)["verdicts"][0]
            if v["verdict"] not in V.FAILURES:
                continue
            target = Target.of(BROKEN, v)
            try:
                res = Reducer(pool, cfg, target, max_seconds=args.max_seconds).reduce(case)
            except ValueError:  # did not fail the same way twice: not counted
                continue
            ref = pool.execute(cfg.reference, Model(res.case.model, res.case.graph), res.case.inputs)
            matter = getattr(res, "matter", None) or None
            ident = identity(res.verdict.verdict, BROKEN.name, res.verdict.error, res.case.graph, matter=matter)
            d = write_repro(os.path.join(tmp, c.id), res.case, BROKEN, res.verdict.to_json(), ref.outputs,
                            {"case": c.id, "original_nodes": res.original_nodes, "identity": ident})
            env = {k: x for k, x in os.environ.items() if k != "PYTHONPATH"}
            run = subprocess.run([sys.executable, os.path.join(d, "repro.py")], cwd=tmp, capture_output=True,
                                 text=True, timeout=900, env=env)
            rows.append({"case": c.id, "verdict": v["verdict"], "from": res.original_nodes,
                         "to": len(res.case.graph.nodes), "ops": ">".join(res.case.graph.op_names()),
                         "seconds": res.seconds, "probes": res.probes, "repro_exit": run.returncode,
                         "capped": res.hit_limit, "inputs": len(res.case.graph.inputs),
                         "attrs": sum(len(n.attrs) for n in res.case.graph.nodes),
                         "matter": sum(len(m) for m in matter) if matter is not None else None,
                         "fingerprint": ident["fingerprint"], "cluster": ident["cluster"], "typed": ident["typed"]})
            r = rows[-1]
            print(f"{r['case']} {r['verdict']:16} {r['from']:2} -> {r['to']} ops ({r['typed']}) {r['inputs']} inputs "
                  f"{r['seconds']:6.1f} s {r['probes']:3} probes; repro.py exit {r['repro_exit']}; "
                  f"fingerprint {r['fingerprint'][:8]} cluster {r['cluster'][:8]}", flush=True)
    n = len(rows)
    small = sum(r["to"] <= 3 for r in rows)
    secs = [r["seconds"] for r in rows]
    failing = sum(r["repro_exit"] != 0 for r in rows)
    print(f"\n{n} failing cases (from {i} generated): " + ", ".join(
        f"{k} {sum(r['verdict'] == k for r in rows)}" for k in sorted({r['verdict'] for r in rows})))
    print(f"reduced to at most 3 operators: {small}/{n} = {100 * small / n:.1f}% (target >= 90%)")
    print(f"reduced to one operator: {sum(r['to'] == 1 for r in rows)}/{n}")
    print(f"operators after reduction: mean {statistics.mean(r['to'] for r in rows):.2f}, "
          f"max {max(r['to'] for r in rows)}; before: mean {statistics.mean(r['from'] for r in rows):.1f}")
    print(f"graph inputs after reduction: mean {statistics.mean(r['inputs'] for r in rows):.2f}, "
          f"none {sum(r['inputs'] == 0 for r in rows)}")
    attrs = sum(r["attrs"] for r in rows)
    probed = [r for r in rows if r["matter"] is not None]
    print(f"attributes left: {attrs}" + (f", of which the failure depends on {sum(r['matter'] for r in probed)}"
                                          if len(probed) == n else " (not probed)"))
    print(f"distinct fingerprints {len({r['fingerprint'] for r in rows})}, "
          f"clusters {len({r['cluster'] for r in rows})}")
    print(f"reduction time: median {statistics.median(secs):.1f} s (target < 60 s), worst {max(secs):.1f} s, "
          f"time bound hit {sum(r['capped'] for r in rows)}")
    print(f"repro.py fails standalone in a fresh process: {failing}/{n} (target: all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
