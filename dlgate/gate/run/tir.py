"""The TIR mode in a campaign (``tir_share``): Tzer's loop (:mod:`dlgate.tir.fuzz`) run one
step per planned item, each step judged by the TIR oracles (:mod:`dlgate.tir.oracle`) in
the run's worker pool and journaled like a graph case, so that a TIR finding goes through
the same pipeline: confirmation, head versus base, reduction, a repro bundle, the decision,
JUnit, the summary, the HTML report and issues.

**Which TVM, which device.** The mode runs where a backend under test names a TIR backend
(its class's ``tir_backend``: TVM's is :class:`dlgate.tir.build.TirBackend`) on a device
that backend has (``cpu`` or ``cuda``). One backend gives the mode its device: the first on
CPU in ``backends`` order, else the first on ``cuda`` (:func:`tir_backend`); with both
``tvm`` and ``tvm:cuda`` under test the steps build for ``llvm``. On ``cuda`` the steps build
for the GPU (a ``cuda`` target with an ``llvm`` host), the ``threads`` mutator is in play
and the reference build is the GPU's minimal sequence; where that backend cannot run (no
GPU, a TVM without CUDA: ``tvm:cuda?``), every step's verdict is ``skipped`` with the
backend's reason, as a graph case's is. The head's pool
builds with the head's TVM, the base pool with the base build's, so a failure both share
is pre-existing like any other.

**Chains and shards.** The steps form ``tir_chains`` independent chains: step ``k`` is
position ``k // tir_chains`` of chain ``k % tir_chains``, which mutates its own copy of the
seed pool. A chain's steps run in order, so a chain runs in one shard (:func:`chain_shard`);
with one chain (the default) every step runs in the first shard.

**Determinism and resumption.** The candidate at position ``j`` of chain ``c`` is a function
of (the chain's root, campaign, ``j``, the chain's corpus before it)
(:func:`dlgate.tir.fuzz.propose`; chain 0's root is the run's, so one chain is what runs made
before chains were). The corpus before it is the seed pool updated by the chain's earlier
steps with what each one's record says (its outcome and the features that were new): a
resumed run, ``dlgate tir-step`` and a run in another process rebuild it from the journal
without building anything again, and check that each step regenerates the program it
recorded. None of this depends on the shard count.

**Feedback.** The features of the program and of its pass sequence
(:func:`dlgate.tir.feedback.features`, :func:`~dlgate.tir.feedback.pass_features`),
computed on the gate's side from the text; a step whose oracles find nothing wrong gives
them, any other step none (a rejected pair, an undefined program and a finding never join
the pool). The IR after the passes is not read on the gate's side: applying passes there
would let a TVM crash end the run. With a coverage build of TVM (``tir_coverage_library``,
``tir_coverage_objects``), the mutated build's worker also measures the lines and branches
of TVM it ran (:mod:`dlgate.tir.coverage`): those features join the program's, so novelty
is Tzer's new coverage. They are not reproducible across machines or builds, so a step's
record keeps the features that were new, and a replay reads the record.
"""
from __future__ import annotations

import hashlib
import json
import os
import re

from dlgate.backends.base import BackendSpec
from dlgate.gate.config import Campaign, backend_spec
from dlgate.gate.journal import RunError, write_json
from dlgate.oracle import verdict as V
from dlgate.secrets import redact
from dlgate.seeds import case_id as graph_case_id

#: The TIR backend of a backend class that does not name one (none: such a backend has no TIR mode).
TIR_ATTRIBUTE = "tir_backend"
#: Timed runs per build when the performance oracle measures (the median decides).
REPEATS = 5
#: Generated graphs whose lowered PrimFuncs join the hand-written seeds.
GRAPH_SEEDS = 4
#: The devices a TIR mode builds for, preferred first (the TIR backend's devices).
TIR_DEVICES = ("cpu", "cuda")
#: The TIR oracle's kinds -> the gate's verdicts.
VERDICTS = {"ok": V.PASS, "invalid": V.INVALID, "rejected": V.UNSUPPORTED, "unavailable": V.SKIPPED,
            "crash": "tir_crash", "exception": "tir_exception", "inconsistent": "tir_inconsistent",
            "slow": V.TIR_SLOW}


def tir_backend(cfg: Campaign):
    """``(campaign backend spec, TIR backend spec on the same device)`` of the first backend
    under test on CPU whose class names a TIR backend, else of the first such on a device of
    :data:`TIR_DEVICES`; or None."""
    from dlgate.backends.registry import load  # local: imports torch; off the CLI start-up

    found = []
    for entry in cfg.backends:
        spec = backend_spec(entry)
        if spec.device not in TIR_DEVICES:
            continue
        try:
            name = getattr(load(spec.name), TIR_ATTRIBUTE, None)
        except KeyError:
            continue
        if name:
            found.append((TIR_DEVICES.index(spec.device), len(found), spec, name))
    if not found:
        return None
    _, _, spec, name = min(found)
    return spec, BackendSpec(name, spec.device)


def gpu(cfg: Campaign) -> bool:
    """Whether the TIR mode builds for a GPU (its backend under test is on ``cuda``)."""
    found = tir_backend(cfg)
    return found is not None and found[1].device != "cpu"


def change_targets(change: dict | None) -> list:
    """The ``tir`` targets of a recorded change (``run.json``'s ``change``), as dicts."""
    return [t for t in ((change or {}).get("targets") or ()) if t.get("kind") == "tir"]


def front_passes(change: dict | None) -> list:
    """The TIR passes a change names, in name order: each TIR step's sequence starts with them."""
    from dlgate.tir.passes import PASSES  # the table only: no TVM import

    return sorted({t["name"] for t in change_targets(change) if t["name"] in PASSES})


def aimed(cfg: Campaign, change: dict | None) -> Campaign:
    """``cfg`` with the TIR mode's share raised for a change with ``tir`` targets: at least
    ``target_share`` times their share of the change's targets (a change to TIR passes only
    gives the TIR mode ``target_share`` of the batch), where a backend has a TIR mode."""
    import dataclasses

    tir, every = change_targets(change), (change or {}).get("targets") or ()
    if not tir or tir_backend(cfg) is None:
        return cfg
    share = round(max(cfg.tir_share, cfg.target_share * len(tir) / len(every)), 4)
    return dataclasses.replace(cfg, tir_share=share)


def step_count(cfg: Campaign) -> int:
    """How many of the batch's ``models`` are TIR steps (0 without a TIR backend)."""
    if not cfg.tir_share:
        return 0
    n = min(cfg.models, int(cfg.models * cfg.tir_share + 0.5))
    return n if n and tir_backend(cfg) is not None else 0


def interleave(graph: list, tir: list) -> list:
    """The graph items and the TIR steps in one order, each spread evenly (item ``i`` of
    ``n`` at ``(i + 0.5) / n``), so a budget that cuts the tail cuts both alike."""
    keyed = [((2 * i + 1) * len(tir), 0, it) for i, it in enumerate(graph)]
    keyed += [((2 * j + 1) * len(graph), 1, it) for j, it in enumerate(tir)]
    return [it for _, _, it in sorted(keyed, key=lambda x: (x[0], x[1]))]


def chain_of(cfg: Campaign, index: int) -> tuple:
    """``(chain, position in it)`` of TIR step ``index``."""
    n = max(1, int(getattr(cfg, "tir_chains", 1) or 1))
    return index % n, index // n


def chain_shard(cfg: Campaign, index: int, count: int) -> int:
    """The shard (1-based, of ``count``) that runs TIR step ``index``: its chain's."""
    return chain_of(cfg, index)[0] % count + 1


def chain_root(root: str, chain: int) -> str:
    """The seed text of chain ``chain``'s proposals: the run's root for chain 0."""
    return root if chain == 0 else f"{root}\x00tir-chain-{chain}"


def case_id(root: str, campaign: str, index: int) -> str:
    return f"tir/{graph_case_id(root, campaign, index)}"


def input_seed(root: str, campaign: str, index: int) -> int:
    """The seed of step ``index``'s inputs (:func:`dlgate.tir.build.inputs_for`)."""
    blob = "\x00".join(("dlgate-tir-inputs", root, campaign, str(index))).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "big")


def coverage_spec(cfg: Campaign, tir_spec: BackendSpec) -> BackendSpec:
    """The TIR backend's spec with the campaign's coverage library (unchanged without one)."""
    if not cfg.tir_coverage_library:
        return tir_spec
    return BackendSpec(tir_spec.name, tir_spec.device, tir_spec.opt_level,
                       tuple(sorted({"coverage_library": cfg.tir_coverage_library,
                                     "coverage_objects": cfg.tir_coverage_objects}.items())))


def preflight_coverage(pool, cfg: Campaign) -> dict:
    """Start the TIR worker that measures coverage before any step: a library it cannot
    measure (no gcov counters, no ``__gcov_reset``/``__gcov_dump``, objects of another
    folder, no ``gcov``) -> why, so the run cannot start (exit status 4), never a run
    without the feedback it was asked for."""
    found = tir_backend(cfg)
    if not cfg.tir_coverage_library or found is None:
        return {}
    spec = coverage_spec(cfg, found[1])
    if pool.get(spec).start():
        return {}
    return {f"the TIR coverage build ({cfg.tir_coverage_library})": pool.get(spec).unavailable}


class _Via:
    """A worker pool that runs every job on one TIR backend (the oracles and the reduction
    name :data:`dlgate.tir.build.SPEC`; a campaign's TVM may name its own)."""

    def __init__(self, pool, spec: BackendSpec):
        self.pool, self.spec = pool, spec

    @property
    def on_phase(self):
        return self.pool.on_phase

    @on_phase.setter
    def on_phase(self, f):
        self.pool.on_phase = f

    def execute(self, _spec, model, inputs, more=None):
        return self.pool.execute(self.spec, model, inputs)


# -- the corpus ----------------------------------------------------------------------------------
def settings(cfg: Campaign):
    from dlgate.tir.fuzz import Settings  # local: the TIR mode imports TVM's Python side

    if gpu(cfg):  # the threads mutator's GPU target; a CPU run's settings stay as they were
        return Settings(n_max=cfg.tir_n_max, target="cuda")
    return Settings(n_max=cfg.tir_n_max)


def seed_corpus(root: str, campaign: str, front: list | tuple = ()):
    """The pool before step 0: the hand-written seeds and those picked from TVM's tests
    (:func:`dlgate.tir.seeds.hand_seeds`), then the PrimFuncs of the campaign's
    first :data:`GRAPH_SEEDS` generated graphs, each with TVM's default sequence, led by
    ``front`` (the passes a change names: they first see the program as written, then run
    again where the default sequence has them)."""
    from dlgate.tir import passes as P  # local: the TIR mode imports TVM's Python side
    from dlgate.tir import seeds as S
    from dlgate.tir.feedback import Corpus, Entry, features, pass_features

    corpus, passes = Corpus(), tuple(front) + tuple(P.default())
    for s in S.hand_seeds() + S.graph_seeds(root, campaign, GRAPH_SEEDS):
        corpus.observe(features(s.program.func()) | pass_features(passes))
        corpus.add(Entry(s.program, passes, 0, s.origin))
    return corpus


def replay(corpus, records: list, root: str, campaign: str, cfg_settings, upto: int | None = None,
           chain: int = 0, chains: int = 1) -> int:
    """Apply chain ``chain``'s journaled TIR steps (of ``records``, any order; a step ``k``
    is the chain's when ``k % chains == chain``) to ``corpus`` in order, up to step ``upto``
    (exclusive; all when None); returns the chain's next position. A RunError when a step is
    missing or does not regenerate its recorded program."""
    from dlgate.tir.fuzz import propose, update  # local: the TIR mode imports TVM's Python side

    steps = sorted((r for r in records if r.get("kind") == "tir" and r["index"] % chains == chain),
                   key=lambda r: r["index"])
    j, seed = 0, chain_root(root, chain)
    for r in steps:
        if upto is not None and r["index"] >= upto:
            break
        k = chain + j * chains
        if r["index"] != k:
            raise RunError(f"the journal lacks TIR step {k} (it holds step {r['index']})")
        t = r["tir"]
        p = propose(corpus, seed, campaign, j, cfg_settings)
        if (p.program.digest() if p.program else None) != t["digest"]:
            raise RunError(f"TIR step {k} does not regenerate its recorded program (another dlgate, TVM or seed pool?)")
        new = corpus.observe(set(t["new"]))
        update(corpus, p, t["status"], new)
        j += 1
    return j


# -- a step --------------------------------------------------------------------------------------
class TirMode:
    """The campaign's TIR steps, run in index order against the pool (and the base pool)."""

    def __init__(self, cfg: Campaign, pool, base_pool, out: str, root: str, log, records: list,
                 change: dict | None = None):
        found = tir_backend(cfg)
        if found is None:
            raise RunError("tir_share: no backend under test on CPU or cuda has a TIR mode (TVM has)")
        self.spec, self.tir_spec = found
        self.gpu = self.tir_spec.device != "cpu"
        self.cfg, self.out, self.root, self.log = cfg, out, root, log
        self.coverage = bool(cfg.tir_coverage_library)
        self.pool = _Via(pool, coverage_spec(cfg, self.tir_spec))
        self.base_pool = _Via(base_pool, self.tir_spec) if base_pool is not None else None
        self.records = records
        self.targets = change_targets(change)
        self.front = front_passes(change)
        self.seeds = None  # the seed pool, built once; each chain mutates a copy
        self.corpora: dict = {}  # chain -> its corpus
        self.next: dict = {}  # chain -> its next position

    def _ready(self, chain: int):
        """Chain ``chain``'s corpus, rebuilt from the journal the first time."""
        if self.seeds is None:
            self.log("dlgate: TIR mode: building the seed pool (hand-written programs and lowered graphs)")
            self.settings = settings(self.cfg)
            self.seeds = seed_corpus(self.root, self.cfg.campaign, self.front)
        if chain not in self.corpora:
            corpus = self.seeds.copy()
            self.next[chain] = replay(corpus, self.records, self.root, self.cfg.campaign, self.settings,
                                      chain=chain, chains=max(1, self.cfg.tir_chains))
            self.corpora[chain] = corpus
        return self.corpora[chain]

    def step(self, index: int) -> dict:
        """Step ``index``'s record (the steps before it are journaled)."""
        from dlgate.tir import oracle as O  # local: the TIR mode imports TVM's Python side
        from dlgate.tir.feedback import features, pass_features
        from dlgate.tir.fuzz import propose, update

        cfg = self.cfg
        chain, j = chain_of(cfg, index)
        corpus = self._ready(chain)
        if j != self.next[chain]:
            raise RunError(f"TIR step {index} planned out of its chain's order (chain {chain} is at "
                           f"position {self.next[chain]}, the step is its {j}): a chain's steps run in order")
        p = propose(corpus, chain_root(self.root, chain), cfg.campaign, j, self.settings)
        seed = input_seed(self.root, cfg.campaign, index)
        label = self.spec.label()
        if p.program is None:  # the mutant TVM's checks reject: it never counts
            status, new, v = None, set(), {"backend": label, "verdict": V.INVALID,
                                            "detail": f"mutation rejected: {p.outcome}"[:500]}
            checked = None
        else:
            checked = O.check(self.pool, p.program.text, list(p.passes), seed, margin=cfg.tir_slow_margin,
                              repeats=REPEATS, interp=True, coverage=self.coverage, gpu=self.gpu)
            kind = checked.verdict.kind
            status = "ok" if kind in (O.OK_KIND, O.SLOW) else "error"
            feats = features(p.program.func()) | pass_features(p.passes)
            if status == "ok" and self.coverage:
                feats |= covered(checked.outcomes.get("mutated"), index)
            new = corpus.observe(feats) if status == "ok" else set()
            v = self._verdict(label, checked)
        what = update(corpus, p, status, new)
        self.next[chain] = j + 1
        rec = {"case": case_id(self.root, cfg.campaign, index), "kind": "tir", "root": self.root,
               "campaign": cfg.campaign, "index": index, "seed": seed,
               "tir": {"parent": p.parent, "step": p.kind, "mutator": p.mutator, "outcome": p.outcome,
                       "passes": list(p.passes), "digest": p.program.digest() if p.program else None,
                       "status": status, "new": sorted(new), "update": what},
               "verdicts": [v]}
        if self.targets:  # the change's TIR targets this step exercised (the coverage table)
            ran = p.program is not None
            rec["change"] = {"exercised": [f"tir:{t['name']}" for t in self.targets
                                           if ran and (t["name"] in p.passes or t["name"] in ("codegen", "any"))]}
        if v["verdict"] in V.FAILURES or v["verdict"] == V.TIR_SLOW:
            self._triage(rec, v, p.program.text, list(p.passes), checked.verdict, seed)
        return rec

    def _verdict(self, label: str, checked) -> dict:
        verdict = checked.verdict
        name = VERDICTS[verdict.kind]
        v = {"backend": label, "verdict": name, "detail": verdict.detail[:2000], "tir": verdict.to_json()}
        versions = next((dict(o.backend) for o in checked.outcomes.values() if getattr(o, "backend", None)), None)
        if versions:
            v["versions"] = versions
        if name in V.FAILURES or name == V.TIR_SLOW:
            v["signature"] = _signature(name, self.spec.name, verdict)
            if name == V.TIR_SLOW:
                v["gates"] = bool(self.cfg.tir_slow_gates)
                v.pop("versions", None)  # nothing varies in the record but the ratio, moved out below
        if name == V.TIR_SLOW:  # the measured ratio is a timing: the journal keeps it apart
            v["detail"] = v["tir"]["detail"] = (f"runs more than {self.cfg.tir_slow_margin:g}x the minimal "
                                                "build's median time")
            v["ratio"] = verdict.ratio
        return v

    # -- a finding's triage --------------------------------------------------------------------
    def _check(self, pool, text: str, passes: list, seed: int, slow: bool):
        from dlgate.tir import oracle as O  # local: the TIR mode imports TVM's Python side

        return O.check(pool, text, passes, seed, margin=self.cfg.tir_slow_margin, repeats=REPEATS if slow else 0,
                       interp=True, gpu=self.gpu)

    def _triage(self, rec: dict, v: dict, text: str, passes: list, verdict, seed: int) -> None:
        """The base build's verdict on the same program, sequence and inputs; a confirmation
        on head where the base build does not share it; the reduction (pass list, then
        PrimFunc); the identity; the repro bundle."""
        from dlgate.tir import reduce as R  # local: the TIR mode imports TVM's Python side

        cfg, slow = self.cfg, verdict.kind == "slow"
        shared = False
        if self.base_pool is not None:
            b = self._check(self.base_pool, text, passes, seed, slow).verdict
            shared = b.key() == verdict.key()
            v["base"] = {"verdict": VERDICTS[b.kind], "reproduces": shared, "decided_on": "case"}
            if not shared and b.kind != "ok":
                v["base"]["detail"] = b.detail[:300]
        if cfg.confirm_runs and not shared:
            seen = [self._check(self.pool, text, passes, seed, slow).verdict for _ in range(cfg.confirm_runs)]
            v["confirm"] = {"runs": cfg.confirm_runs, "reproduced": any(s.key() == verdict.key() for s in seen)}
        reduced = None
        if cfg.reduce and (v.get("confirm") or {}).get("reproduced", True) and (not shared or cfg.reduce_pre_existing):
            reduced = R.reduce(self.pool, text, passes, verdict, seed, max_seconds=cfg.reduce_seconds,
                               margin=cfg.tir_slow_margin, repeats=REPEATS if slow else 0, interp=True,
                               gpu=self.gpu)
            v["reduction"] = {"passes": reduced.passes, "lines": len(R.body_lines(reduced.text)),
                              "original_lines": len(R.body_lines(text)), "probes": reduced.probes,
                              "hit_limit": reduced.hit_limit}
        v["identity"] = identity(v, self.spec.name, text if reduced is None else reduced.text,
                                 passes if reduced is None else reduced.passes, verdict, reduced is not None)
        if (v.get("confirm") or {}).get("reproduced", True):
            rel = write_bundle(self.out, rec, v, text, passes, reduced, verdict, seed,
                               interp=lambda t: R.expected_outputs(self.pool, t, seed))
            v["identity"]["repro"] = rel


def covered(outcome, index: int) -> set:
    """The coverage features of step ``index``'s mutated build (its worker's feedback); a
    RunError where the worker could not measure them: never a step without its feedback."""
    fb = getattr(outcome, "feedback", None) or {"error": "the worker returned no coverage"}
    if "error" in fb:
        raise RunError(f"TIR step {index}: coverage: {fb['error']}")
    return set(fb["features"])


def _signature(name: str, backend: str, verdict) -> dict:
    """What the finding is before reduction: its class, the backend, where it showed and the
    error's words (numbers and names left out)."""
    from dlgate.oracle import signature as S  # local: imports torch through the oracle

    words = S.template(verdict.detail) if name in ("tir_exception", "tir_crash") else verdict.mismatch.get("against", "")
    text = f"{name} | {backend} | {verdict.stage} | {verdict.build} | {words}"
    return {"id": hashlib.sha256(text.encode()).hexdigest()[:16], "text": text}


def extra_passes(passes: list) -> list:
    """The passes of a sequence beyond the minimal one's, in order: what a mutated sequence
    adds, and after reduction what the failure needs."""
    from dlgate.tir import passes as P  # local: the TIR mode imports TVM's Python side

    return [n for n in passes if n not in P.REQUIRED]


def identity(v: dict, backend: str, text: str, passes: list, verdict, reduced: bool) -> dict:
    """A TIR finding's identity. The fingerprint: the class, where it showed and the
    (reduced) program and sequence. The cause: the class, where it showed, the error's
    words and the passes beyond the minimal sequence that the reduced failure still needs,
    so one faulty pass met through many programs is one cause."""
    from dlgate.oracle import signature as S  # local: imports torch through the oracle

    extra = extra_passes(passes)
    words = S.template(verdict.detail) if verdict.kind in ("exception", "crash") else verdict.mismatch.get("against", "")
    key = f"{v['verdict']} :: {backend} :: {verdict.stage}/{verdict.build} :: {words} :: {'>'.join(sorted(set(extra)))}"
    cause = hashlib.sha256(key.encode()).hexdigest()[:16]
    fp = hashlib.sha256(json.dumps([key, text, list(passes)]).encode()).hexdigest()[:16]
    pattern = ">".join(extra) or "minimal sequence"
    return {"fingerprint": fp, "cluster": cause, "cluster_text": key, "cause": cause, "cause_text": key,
            "pattern": pattern, "typed": f"TIR {verdict.kind} ({verdict.stage}, {verdict.build} build) with {pattern}",
            "text": f"tir :: {key}"[:600], "dtypes": sorted(set(re.findall(r'"((?:u?int|float|bfloat)\d+|bool)"', text))),
            "reduced": reduced}


def write_bundle(out: str, rec: dict, v: dict, text: str, passes: list, reduced, verdict, seed: int,
                 interp=None) -> str:
    """``out/repros/<fingerprint>/``: ``repro.py`` (the reduced PrimFunc as TVMScript, its
    passes, the inputs' recipe; needs TVM and NumPy only), the program as found and as
    reduced (``program.tvmscript``, ``reduced.tvmscript``), both sequences (``passes.json``)
    and ``repro.json``; written once per
    fingerprint. Its path relative to ``out``. ``interp``: text -> the interpreter's outputs
    (:func:`dlgate.tir.reduce.expected_outputs`), asked for a finding against the interpreter,
    whose ``repro.py`` then carries them as the expected outputs."""
    from dlgate import __version__
    from dlgate.reduce.bundle import environment
    from dlgate.tir import reduce as R  # local: the TIR mode imports TVM's Python side

    ident = v["identity"]
    rel = os.path.join("repros", ident["fingerprint"])
    d = os.path.join(out, rel)
    if os.path.exists(os.path.join(d, "repro.json")):
        return rel
    os.makedirs(d, exist_ok=True)
    r_text, r_passes = (reduced.text, reduced.passes) if reduced is not None else (text, passes)
    expected = interp(r_text) if interp is not None and R.against_interp(verdict) else None
    with open(os.path.join(d, "repro.py"), "w") as f:
        f.write(redact(R.repro_source(r_text, list(r_passes), verdict, seed, expected=expected)))
    with open(os.path.join(d, "program.tvmscript"), "w") as f:
        f.write(text)
    with open(os.path.join(d, "reduced.tvmscript"), "w") as f:
        f.write(r_text)
    write_json(os.path.join(d, "passes.json"), {"found": list(passes), "reduced": list(r_passes)})
    doc = {"campaign": rec["campaign"], "root": rec["root"], "case": rec["case"], "verdict": v["verdict"],
           "backend": v["backend"], "signature": (v.get("signature") or {}).get("id"),
           "signature_text": (v.get("signature") or {}).get("text", ""), "detail": v.get("detail", ""),
           "versions": v.get("versions", {}), "pattern": ident["pattern"], "fingerprint": ident["fingerprint"],
           "cluster": ident["cluster"], "typed": ident["typed"], "identity_text": ident["text"],
           "dlgate": __version__, "environment": environment(), "self_contained": True,
           "tir": {"step": rec["index"], "seed": seed, "passes": list(r_passes), "found_passes": list(passes),
                   "lines": len(R.body_lines(r_text)), "original_lines": len(R.body_lines(text)),
                   "reduced": reduced is not None, "expected": "interp" if expected is not None else None}}
    write_json(os.path.join(d, "repro.json"), doc)
    return rel


# -- regenerating a step -------------------------------------------------------------------------
def show(out: str, index: int) -> dict:
    """Step ``index`` of the run in ``out`` regenerated from its manifest and journal: the
    program's TVMScript and its passes (``{"case", "text", "passes", "parent", "step",
    "mutator"}``); ValueError when the run has no such step."""
    from dlgate.gate.journal import MANIFEST, read_json, read_records
    from dlgate.tir.fuzz import propose

    manifest = read_json(os.path.join(out, MANIFEST))
    records = read_records(os.path.join(out, "results.jsonl"))
    cfg = Campaign(**{k: manifest["config"][k] for k in ("campaign", "tir_n_max", "tir_chains")
                      if k in manifest["config"]})
    chain, j = chain_of(cfg, index)
    steps = {r["index"] for r in records if r.get("kind") == "tir"}
    journaled = sum(1 for k in steps if chain_of(cfg, k)[0] == chain)
    if index not in steps and j != journaled:  # a journaled step, or its chain's next one
        raise ValueError(f"{out}: no TIR step {index} (the run journaled {len(steps)}; {journaled} of "
                         f"chain {chain})")
    root = manifest["root"]
    corpus = seed_corpus(root, cfg.campaign, front_passes(manifest.get("change")))
    replay(corpus, records, root, cfg.campaign, settings(cfg), upto=index, chain=chain, chains=max(1, cfg.tir_chains))
    p = propose(corpus, chain_root(root, chain), cfg.campaign, j, settings(cfg))
    return {"case": case_id(root, cfg.campaign, index), "text": p.program.text if p.program else None,
            "passes": list(p.passes), "parent": p.parent, "step": p.kind, "mutator": p.mutator,
            "outcome": p.outcome}
