"""What a run (or a shard of it) runs, and with what: the cases in order (the corpus, the
baseline's reduced repros, the fresh batch), the check configuration, the opset range and
the campaign's generator."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

from dlgate.backends.base import BackendSpec
from dlgate.check import CaseError, CheckConfig, verify_bundle
from dlgate.gate import baseline as B
from dlgate.gate.config import Campaign, backend_spec, is_optional
from dlgate.gate.journal import RunError
from dlgate.gate.run.tir import case_id as tir_case_id
from dlgate.gate.run.tir import chain_shard
from dlgate.gate.run.tir import interleave
from dlgate.gate.run.tir import step_count as tir_steps
from dlgate.graph.generator import NEWEST_OPSET, OLDEST_OPSET, GenConfig, GenerationError, Generator
from dlgate.probe.support import opset_ceiling
from dlgate.seeds import case_id


@dataclass
class Shard:
    index: int  # 1-based
    count: int

    @staticmethod
    def parse(text: str) -> "Shard":
        try:
            i, n = (int(x) for x in text.split("/"))
        except ValueError:
            raise RunError(f"--shard: expected I/N (e.g. 2/3), got {text!r}") from None
        if not 1 <= i <= n:
            raise RunError(f"--shard: need 1 <= I <= N, got {text!r}")
        return Shard(i, n)

    def owns(self, position: int) -> bool:
        return position % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class CaseRange:
    """``--cases A-B``: the fresh batch's cases A to B (inclusive) alone, without the corpus
    and the baseline's repros. A case's model depends on the seed, the campaign and its
    index only, so a slice runs exactly those cases of the whole campaign: a campaign can be
    finished on another machine, a day at a time, or one stretch of it run again; slices
    merge like shards (``dlgate merge``)."""
    first: int
    last: int

    @staticmethod
    def parse(text: str) -> "CaseRange":
        a, sep, b = text.strip().partition("-")
        try:
            first, last = int(a), int(b if sep else a)
        except ValueError:
            raise RunError(f"--cases: expected A-B (e.g. 1000-1999) or one index, got {text!r}") from None
        if not 0 <= first <= last:
            raise RunError(f"--cases: need 0 <= A <= B, got {text!r}")
        return CaseRange(first, last)

    def check(self, cfg: Campaign) -> None:
        """Refuse a range the campaign cannot run as a slice (one clear line)."""
        if tir_steps(cfg):
            raise RunError(f"--cases: campaign {cfg.campaign!r} has TIR steps (tir_share), whose chains run "
                           "whole; a slice holds graph cases only: set tir_share to 0 or run without --cases")
        if self.last >= cfg.models:
            raise RunError(f"--cases {self}: the batch has {cfg.models} cases (0-{cfg.models - 1})")

    def to_json(self) -> list:
        return [self.first, self.last]

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"


def _loadable(cases: list, skipped: dict | None) -> list:
    """The keys of ``cases`` ((key, case id, folder) triples) whose folder can be loaded (a
    readable meta.json and inputs.npz, a model that parses and is the one its meta.json
    records); the others go to ``skipped`` (case id -> why), so one bad folder cannot block
    every run."""
    out = []
    for key, cid, d in cases:
        try:
            verify_bundle(d)
        except CaseError as e:
            if skipped is not None:
                skipped[cid] = str(e)
            continue
        out.append(key)
    return out


def corpus_cases(path: str | None, skipped: dict | None = None) -> list:
    """Sorted names of the corpus's loadable cases (folders holding model.onnx and
    meta.json); ``skipped`` receives ``corpus/<name>`` -> why for the others."""
    if not path or not os.path.isdir(path):
        return []
    found = [(n, f"corpus/{n}", os.path.join(path, n)) for n in sorted(os.listdir(path))]
    return _loadable([c for c in found if os.path.isfile(os.path.join(c[2], "meta.json"))
                      and os.path.isfile(os.path.join(c[2], "model.onnx"))], skipped)


def _loadable_repros(base: B.Baseline, names: set, skipped: dict | None) -> list:
    """The baseline's repro cases of backends ``names`` that can be loaded; the others go
    to ``skipped``."""
    return _loadable([(fp, f"baseline/{fp}", os.path.join(base.repros_dir(), base.fingerprints[fp]["repro"]))
                      for fp in base.repro_cases() if base.fingerprints[fp].get("backend") in names], skipped)


def plan(cfg: Campaign, shard: Shard | None, base: B.Baseline | None = None, skipped: dict | None = None,
         cases: CaseRange | None = None) -> list:
    """(kind, name or index) of every case this run (or shard) owns, in order: the corpus,
    the baseline entries' reduced repros of the backends under test, the fresh batch (its
    ``tir_share`` of TIR steps spread among its graph cases, :mod:`dlgate.gate.run.tir`).
    Saved cases that cannot be loaded are left out (``skipped``: case id -> why). With
    ``cases``, the batch's cases in that range alone (a shard owns its share of them)."""
    if cases is not None:
        cases.check(cfg)
        return [("batch", i) for i in range(cases.first, cases.last + 1) if shard is None or shard.owns(i)]
    names = {backend_spec(b).name for b in cfg.backends}
    if cfg.relax_share and "tvm" in names:  # the direct Relax path's findings (backends.relax_pair)
        names.add("tvm-relax")
    fixed = [("corpus", n) for n in corpus_cases(cfg.corpus, skipped)]
    fixed += [("baseline", fp) for fp in (_loadable_repros(base, names, skipped) if base else [])]
    items = [it for k, it in enumerate(fixed) if shard is None or shard.owns(k)]
    n_tir = tir_steps(cfg)  # a TIR chain's steps run in order, all in one shard (tir.chain_shard)
    graph = [("batch", i) for i in range(cfg.models - n_tir) if shard is None or shard.owns(i)]
    tir = [("tir", k) for k in range(n_tir) if shard is None or chain_shard(cfg, k, shard.count) == shard.index]
    return items + interleave(graph, tir)


def labels(entries: list) -> list:
    return [backend_spec(b).label() for b in entries]


def optional_labels(entries: list) -> set:
    """Labels of the ``backends`` entries marked optional."""
    return {backend_spec(b).label() for b in entries if is_optional(b)}


def check_config(cfg: Campaign) -> CheckConfig:
    return CheckConfig([backend_spec(b) for b in cfg.backends], BackendSpec.parse(cfg.reference),
                       tolerances=dict(cfg.tolerances), timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb,
                       search_steps=cfg.search_steps, crosscheck=cfg.crosscheck,
                       rewrite_share=cfg.rewrite_share)


def only(ccfg: CheckConfig, backend_name: str) -> CheckConfig:
    """The check configuration restricted to one backend's specs (a baseline repro is
    re-run on the backend it was found on)."""
    return replace(ccfg, backends=[s for s in ccfg.backends if s.name == backend_name])


def case_key(item, cfg: Campaign, root: str) -> str:
    """The journal's id of a planned (kind, key) item: ``corpus/NAME``, ``baseline/FP`` or
    the batch case's seeded id."""
    kind, key = item
    if kind == "tir":
        return tir_case_id(root, cfg.campaign, key)
    return f"{kind}/{key}" if kind in ("corpus", "baseline") else case_id(root, cfg.campaign, key)


def opset_range(cfg: Campaign, pool, ccfg: CheckConfig, log=print) -> list:
    """The opsets this run draws from: a fixed ``opset``; else 13 up to ``max_opset``, or
    when that is null, up to the newest opset every backend under test that started loads
    (probed in its warm worker)."""
    if cfg.opset is not None:
        return [cfg.opset, cfg.opset]
    if cfg.max_opset is not None:
        return [OLDEST_OPSET, cfg.max_opset]
    hi = NEWEST_OPSET
    for spec in ccfg.backends:
        w = pool.get(spec)
        if w.unavailable is not None or not w.start():
            continue
        got = opset_ceiling(lambda m, xs, spec=spec: pool.execute(spec, m, xs))
        if got["opset"] < hi:
            log(f"dlgate: {spec.label()} loads models up to opset {got['opset']}; generating up to it")
        hi = min(hi, got["opset"])
    return [OLDEST_OPSET, hi]


def generator(cfg: Campaign, opsets: list | None = None, support=None, aims: tuple = ()):
    """The campaign's generator; a RunError when its restriction leaves no operator to draw."""
    ops = tuple(cfg.operators) if cfg.operators is not None else None
    kw = {"dtypes": tuple(cfg.dtypes)} if cfg.dtypes is not None else {}
    if opsets is not None:
        kw["opset_range"] = tuple(opsets)
    gen = Generator(GenConfig(min_nodes=cfg.min_nodes, max_nodes=cfg.max_nodes, ops=ops, opset=cfg.opset,
                              support=support, dynamic_share=cfg.dynamic_share,
                              extreme_share=cfg.extreme_share, aims=aims, aim_share=cfg.target_share, **kw))
    try:
        gen.drawable()
    except GenerationError as e:
        raise RunError(f"{cfg.campaign}: {e}") from None
    return gen
