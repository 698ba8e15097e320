"""``dlgate merge``: the output folders of a run's shards combined into one journal, case
set and report, decided as one run."""
from __future__ import annotations

import os
import shutil

from dlgate.gate import decide as D
from dlgate.gate.config import Campaign, ConfigError, build
from dlgate.gate.journal import (MANIFEST, OutLock, RunError, json_line, read_manifest, read_records, read_timings,
                                  write_json)
from dlgate.gate.run.finish import finish
from dlgate.gate.run.guidance import C_START


def merge(dirs: list, out: str, log=print) -> int:
    """Combine shard outputs into one journal, bundle set and report."""
    mans = []
    for d in dirs:
        p = os.path.join(d, MANIFEST)
        if not os.path.exists(p):
            raise RunError(f"{d}: not a dlgate run folder (no {MANIFEST})")
        mans.append(read_manifest(p))
    first = mans[0]
    for d, m in zip(dirs, mans):
        for key in ("root", "campaign", "fingerprint", "generator", "opset_range", "coverage_start", "support"):
            if m.get(key) != first.get(key):
                raise RunError(f"{d}: {key} {m.get(key)!r:.80} differs from {dirs[0]}'s {first.get(key)!r:.80}")
    shards = [tuple(m["shard"]) if m.get("shard") else None for m in mans]
    if any(s is not None for s in shards):
        n = {s[1] for s in shards if s}
        if None in shards or len(n) != 1:
            raise RunError("merge: all folders must be shards of one split (I/N with the same N)")
        got = sorted(s[0] for s in shards)
        if got != list(range(1, next(iter(n)) + 1)):
            raise RunError(f"merge: expected shards 1..{next(iter(n))} exactly once, got {got}")
        if len({str(m.get("cases")) for m in mans}) != 1:
            raise RunError("merge: the shards of one split run the same --cases slice; these differ: "
                           + ", ".join(f"{d}: {_slices(m)}" for d, m in zip(dirs, mans)))
    try:
        cfg = build(first["config"], first.get("config_source", "<merged>"))
    except ConfigError as e:
        raise RunError(f"merge: {e}") from None
    with OutLock(out):
        return _merge(dirs, mans, first, cfg, out, log)


def _merge(dirs: list, mans: list, first: dict, cfg: Campaign, out: str, log) -> int:
    records, timings, seen = [], [], set()
    for d, m in zip(dirs, mans):
        recs = read_records(os.path.join(d, "results.jsonl"))
        if len(recs) < m.get("planned", 0) and not m.get("stopped_by_budget"):  # a budget-cut shard is done
            raise RunError(f"{d}: unfinished ({len(recs)} of {m['planned']} cases); run it again to resume")
        for r in recs:
            if r["case"] in seen:
                raise RunError(f"merge: case {r['case']} appears in more than one folder")
            seen.add(r["case"])
            records.append(r)
            if r.get("bundle"):
                dst = os.path.join(out, r["bundle"])
                if not os.path.exists(dst):
                    shutil.copytree(os.path.join(d, r["bundle"]), dst)
        timings += read_timings(d)
        rdir = os.path.join(d, "repros")
        for name in sorted(os.listdir(rdir)) if os.path.isdir(rdir) else []:
            dst = os.path.join(out, "repros", name)
            if not os.path.exists(dst):
                shutil.copytree(os.path.join(rdir, name), dst)
    records.sort(key=D._order)
    if os.path.exists(os.path.join(dirs[0], C_START)):
        shutil.copyfile(os.path.join(dirs[0], C_START), os.path.join(out, C_START))
    ranges = sorted({tuple(r) for m in mans for r in (m.get("cases") or ())})
    whole = any(not m.get("cases") for m in mans)  # a whole batch holds every slice
    manifest = dict(first, shard=None, planned=sum(m.get("planned", 0) for m in mans),
                    merged_from=[os.path.abspath(d) for d in dirs],
                    cases=None if whole or not ranges else [list(r) for r in ranges])
    manifest.pop("stopped_by_budget", None)
    if any(m.get("stopped_by_budget") for m in mans):
        manifest["stopped_by_budget"] = {"seconds": cfg.budget, "ran": len(records), "planned": manifest["planned"],
                                         "shards": [d for d, m in zip(dirs, mans) if m.get("stopped_by_budget")]}
    write_json(os.path.join(out, MANIFEST), manifest)

    with open(os.path.join(out, "results.jsonl"), "w") as f:
        f.writelines(json_line(r) for r in records)
    with open(os.path.join(out, "timings.jsonl"), "w") as f:
        f.writelines(json_line(t) for t in timings)
    log(f"dlgate: merged {len(dirs)} folder(s), {len(records)} cases, into {out}")
    return finish(out, cfg, manifest, complete=True, log=log)


def _slices(manifest: dict) -> str:
    """The --cases ranges a run folder holds, as typed ("the whole batch" for none)."""
    return ", ".join(f"{a}-{b}" for a, b in manifest.get("cases") or ()) or "the whole batch"
