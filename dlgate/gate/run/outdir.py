"""The output folder of a run: what dlgate writes there (and so what ``--fresh`` removes),
the manifest (run.json) that ties the folder to one run, and how far its journal got.
The folder's lock is :class:`dlgate.gate.journal.OutLock`, held by the caller."""
from __future__ import annotations

import os
import shutil

from dlgate import GENERATOR_VERSION, __version__
from dlgate.gate.config import Campaign
from dlgate.gate.journal import MANIFEST, RESULTS, RunError, read_manifest, read_records, write_json
from dlgate.gate.run.guidance import C_CASES, C_END, C_START
from dlgate.gate.run.plan import Shard


#: What a run writes in its output folder, and so what --fresh removes (with each file's
#: ``.tmp``, written on the way to it); anything else in the folder is left alone.
OUT_FILES = (RESULTS, "timings.jsonl", MANIFEST, "junit.xml", "summary.md", "verdict.json", "stats.json",
             C_START, C_END, C_CASES, "report.html")
OUT_DIRS = ("cases", "repros", "report")  # report: dlgate report's plots


def manifest_of(cfg: Campaign, root: str, root_source: str, shard: Shard | None, planned: int,
                cases=None) -> dict:
    """``cases``: the run's ``CaseRange`` (``--cases``), kept as a list of [first, last] ranges
    (a merge of slices keeps each of theirs)."""
    return {"dlgate": __version__, "generator": GENERATOR_VERSION, "root": root, "root_source": root_source,
            "campaign": cfg.campaign, "config": cfg.to_json(), "config_source": cfg.source,
            "fingerprint": cfg.fingerprint(), "shard": [shard.index, shard.count] if shard else None,
            "cases": [cases.to_json()] if cases is not None else None,
            "planned": planned}


def open_out(out: str, manifest: dict, fresh: bool) -> dict:
    """Check (or, with ``fresh``, empty of what dlgate wrote) the output folder, whose lock
    the caller holds, and write the manifest."""
    path = os.path.join(out, MANIFEST)
    if fresh and os.path.isdir(out):
        for f in OUT_FILES:
            for p in (os.path.join(out, f), os.path.join(out, f + ".tmp")):
                if os.path.lexists(p):
                    os.unlink(p)
        for d in OUT_DIRS:
            shutil.rmtree(os.path.join(out, d), ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    old = {}
    if os.path.exists(path):
        old = read_manifest(path)
        for key in ("root", "fingerprint", "shard", "cases", "generator"):
            if old.get(key) != manifest.get(key):
                raise RunError(f"{out} holds a different run ({key}: {old.get(key)!r}, now {manifest.get(key)!r}); "
                               "use another --out, or --fresh to discard it")
        was, now = (old.get("change") or {}).get("digest"), (manifest.get("change") or {}).get("digest")
        if was != now:
            raise RunError(f"{out} holds a different run (the change's targets: {was or 'none'}, now {now or 'none'}); "
                           "use another --out, or --fresh to discard it")
        for key in ("opset_range", "support", "coverage_start"):  # what guided generation stays as recorded
            if old.get(key):
                manifest[key] = old[key]
    write_json(path, manifest)
    return old


def progress_of(out: str) -> str:
    """'N of M': cases in the folder's journal, of those its manifest plans."""
    try:
        done = str(len(read_records(os.path.join(out, RESULTS))))
    except RunError:
        done = "?"
    try:
        return f"{done} of {read_manifest(os.path.join(out, MANIFEST))['planned']}"
    except (RunError, KeyError):
        return done
