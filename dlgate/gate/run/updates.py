"""What a finished run changes outside its folder: the baseline (``dlgate baseline update``)
and the regression corpus (the first case of each new failure, under a stable name)."""
from __future__ import annotations

import os
import shutil

from dlgate.gate import baseline as B
from dlgate.gate import decide as D
from dlgate.gate.journal import MANIFEST, RunError, read_manifest, read_records, write_json
from dlgate.gate.run.plan import labels, optional_labels


#: In a corpus case: the failure it was added for.
ORIGIN = "origin.json"


def update_baseline(run_dir: str, path: str, prune: bool = False, log=print) -> str:
    m = read_manifest(os.path.join(run_dir, MANIFEST))
    if m.get("shard"):
        raise RunError(f"{run_dir} is shard {m['shard'][0]}/{m['shard'][1]}; merge the shards first (dlgate merge)")
    records = read_records(os.path.join(run_dir, "results.jsonl"))
    if len(records) < (m.get("planned") or 0) and not m.get("stopped_by_budget"):  # interrupted, or killed
        raise RunError(f"{run_dir} is unfinished ({len(records)} of {m['planned']} cases); run the same command "
                       "again to finish it, then update the baseline")
    try:
        base = B.load(path)
    except B.BaselineError as e:
        raise RunError(str(e)) from None
    cfg = m["config"]
    decision = D.decide(records, base, m["root"], m["campaign"], labels(cfg["backends"]), complete=True,
                        optional=optional_labels(cfg["backends"]))
    new = B.update(base, decision, prune, run_dir)
    new.save(path)
    log(f"dlgate: baseline {path}: {len(new.fingerprints)} fingerprints "
        f"({len(new.fingerprints) - len(base.fingerprints):+d}) in {len(new.clusters)} clusters, "
        f"{len(new.corpus)} corpus cases")
    return path


def grow_corpus(out: str, corpus: str, decision: D.Decision) -> list:
    """Copy the first case of each new failure into the corpus under a stable name."""
    added = []
    for g in decision.of(D.NEW):
        if not g["bundles"]:
            continue
        name = f"{g['backend_name']}-{g['verdict']}-{g['fingerprint']}"
        dst = os.path.join(corpus, name)
        if os.path.exists(dst):
            continue
        shutil.copytree(os.path.join(out, g.get("repro") or g["bundles"][0]), dst)
        write_json(os.path.join(dst, ORIGIN), {"signature": g["fingerprint"], "backend": g["backend"],
                                                "verdict": g["verdict"], "text": g["text"], "root": decision.root,
                                                "case": g["cases"][0]})
        added.append(name)
    return added
