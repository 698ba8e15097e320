"""Generation restricted to what the backends under test support, recorded with the run.

The campaign's ``restrict_to_support`` (``true``, ``false`` or ``auto``: only without a
base build) or an explicit ``support`` list names the systems; their probed support
(:mod:`dlgate.probe.support`, cached per version) decides which operator x dtype x opset
combinations the generator draws from: those every one of them supports. Which
combinations those are depends on the installed versions and guides generation, so the
probe answers used are written into the run's manifest (``run.json``, ``support``): a
resumed run generates from the recorded answers, never from a cache that may have changed
since, and shards merge only when they recorded the same.
"""
from __future__ import annotations

from dlgate.backends.base import BackendSpec
from dlgate.gate.config import Campaign, backend_spec, is_optional
from dlgate.gate.journal import RunError
from dlgate.probe.support import ProbeError, load_or_probe, support_set


def systems(cfg: Campaign) -> list:
    """The systems whose support restricts generation (empty: no restriction): the
    ``support`` list when it is set, else, where ``restrict_to_support`` holds (``auto``:
    no base build configured), each backend under test that is not optional (one that may
    be absent cannot shape the batch), by name."""
    if cfg.support:
        return sorted({BackendSpec.parse(s).name for s in cfg.support})
    on = cfg.base is None if cfg.restrict_to_support == "auto" else bool(cfg.restrict_to_support)
    return sorted({backend_spec(b).name for b in cfg.backends if not is_optional(b)}) if on else []


def record(doc: dict) -> dict:
    """The part of a probe document the support set is made from, compact: each supported
    combination as ``"Op|dtype,dtype|opset"``."""
    return {"version": doc.get("version"), "opsets": sorted(doc["opsets"]),
            "supported": sorted(f"{n}|{','.join(s)}|{o}" for n, s, o in doc["supported"])}


def support_of(recorded: dict) -> frozenset:
    """The generator's support set of a manifest's ``support`` entry: the combinations
    every recorded system supports."""
    out = None
    for name in sorted(recorded["systems"]):
        r = recorded["systems"][name]
        rows = []
        for item in r["supported"]:
            op, sig, opset = item.split("|")
            rows.append([op, sig.split(",") if sig else [], int(opset)])
        s = support_set({"opsets": r["opsets"], "supported": rows})
        out = s if out is None else out & s
    return out if out is not None else frozenset()


def resolve(cfg: Campaign, recorded: dict, manifest: dict, log=print) -> frozenset | None:
    """The support set this run generates from (None: unrestricted), put in
    ``manifest["support"]``: the one the run recorded when it resumes, else the systems'
    probe answers (probed now when not cached; a system that cannot be probed is a
    RunError, before any work)."""
    if recorded.get("support"):
        manifest["support"] = recorded["support"]
        try:
            return support_of(recorded["support"])
        except (KeyError, TypeError, ValueError, AttributeError):
            raise RunError("run.json: support: not the record of a probed support; use --fresh to discard the run") \
                from None
    names = systems(cfg)
    if not names:
        return None
    docs = {}
    for name in names:
        log(f"dlgate: generating only what {name} supports (its probed support; `dlgate probe --system {name}`)")
        try:
            docs[name] = record(load_or_probe(name))
        except ProbeError as e:
            raise RunError(f"support: cannot probe {name}: {e}") from None
    manifest["support"] = {"systems": docs}
    return support_of(manifest["support"])

