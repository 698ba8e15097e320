"""What a change touches, as the generator can aim at it.

A :class:`Target` is one thing a batch can exercise: an ONNX operator (``kind``
``"operator"``: its type, and where the changed code says which, the opsets, dtypes and
attribute regimes it concerns), an optimizer rewrite (``kind`` ``"rewrite"``: the
rewrite's name as dlgate's motifs record it in ``OpSpec.rewrite``, on the compiler named by
``compiler``) or, for TVM, a TIR pass or TIR code generation (``kind`` ``"tir"``: the TIR
mode's share of the batch, its sequences led by the pass). Every target carries ``why``: the changed path (and definition) it came
from, so a reviewer can see where each row of the coverage table comes from.

A :class:`TargetSet` is a whole change's answer: the targets, merged, and per changed
file what it mapped to, or why it mapped to nothing (tests, docs or build files only; a
path no table knows). It is a pure value, written to ``run.json`` and read back by
``dlgate gen``, so a targeted batch is a pure function of (commit, campaign, index,
targets).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

OPERATOR = "operator"
REWRITE = "rewrite"
#: TVM's TIR passes and code generation, aimed at by the TIR mode (:mod:`dlgate.gate.run.tir`),
#: not by the graph generator: the name is a TIR pass (:data:`dlgate.tir.passes.PASSES`),
#: ``codegen`` (code generation) or ``any`` (other TIR code no pass name covers).
TIR = "tir"
KINDS = (OPERATOR, REWRITE, TIR)

#: Attribute regimes a target may ask for (see ``dlgate.ops.base.Ctx.regime``):
#: ``degenerate`` draws attributes at the values kernels and rewrites special-case
#: (identity permutations, unit scales, defaults spelled out, empty or full axes lists,
#: zero pads).
REGIMES = ("degenerate",)


@dataclass(frozen=True, order=True)
class Target:
    kind: str
    name: str
    #: Inclusive opset range the changed code concerns (a kernel registered for 13-17), or None.
    opsets: tuple | None = None
    #: Input dtypes the changed code concerns (a kernel's type constraint), empty = any.
    dtypes: tuple = ()
    regimes: tuple = ()
    #: Where it came from: ``path`` or ``path: Definition``.
    why: str = field(default="", compare=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"target kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if not self.name:
            raise ValueError("a target needs a name")
        if self.opsets is not None:
            lo, hi = self.opsets
            if lo > hi:
                raise ValueError(f"target {self.name}: opset range {lo}-{hi} is empty")
            object.__setattr__(self, "opsets", (int(lo), int(hi)))
        object.__setattr__(self, "dtypes", tuple(sorted(set(self.dtypes))))
        for r in self.regimes:
            if r not in REGIMES:
                raise ValueError(f"target {self.name}: unknown attribute regime {r!r}")
        object.__setattr__(self, "regimes", tuple(sorted(set(self.regimes))))

    @property
    def key(self) -> str:
        """A short, stable label: ``operator:Gelu[13-17;float16]``."""
        parts = []
        if self.opsets:
            parts.append(f"{self.opsets[0]}-{self.opsets[1]}")
        if self.dtypes:
            parts.append(",".join(self.dtypes))
        if self.regimes:
            parts.append(",".join(self.regimes))
        return f"{self.kind}:{self.name}" + (f"[{';'.join(parts)}]" if parts else "")

    def to_json(self) -> dict:
        d = {"kind": self.kind, "name": self.name}
        if self.opsets:
            d["opsets"] = list(self.opsets)
        if self.dtypes:
            d["dtypes"] = list(self.dtypes)
        if self.regimes:
            d["regimes"] = list(self.regimes)
        if self.why:
            d["why"] = self.why
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Target":
        if not isinstance(d, dict) or "kind" not in d or "name" not in d:
            raise ValueError(f"not a target: {d!r}")
        o = d.get("opsets")
        return cls(d["kind"], d["name"], tuple(o) if o else None, tuple(d.get("dtypes") or ()),
                   tuple(d.get("regimes") or ()), d.get("why", ""))


def merge(targets) -> list:
    """One target per (kind, name, regimes), ordered: kernels registered for several opset
    ranges and dtypes (Cos at 7-21 for float and double, at 22 for float...) are one target
    spanning the ranges' hull and the dtypes' union (no dtypes: any, which wins), and the
    origins are listed in ``why`` (sorted, so the result does not depend on order)."""
    by: dict = {}
    for t in targets:
        k = (t.kind, t.name, t.regimes)
        got = by.get(k)
        if got is None:
            by[k] = [t.opsets, set(t.dtypes), not t.dtypes, {t.why}]
            continue
        o = got[0]
        got[0] = None if o is None or t.opsets is None else (min(o[0], t.opsets[0]), max(o[1], t.opsets[1]))
        got[1] |= set(t.dtypes)
        got[2] = got[2] or not t.dtypes
        got[3].add(t.why)
    out = []
    for (kind, name, regimes), (opsets, dtypes, anytype, whys) in sorted(by.items()):
        out.append(Target(kind, name, opsets, () if anytype else tuple(dtypes), regimes,
                          "; ".join(sorted(w for w in whys if w))))
    return out


@dataclass
class FileTargets:
    """One changed file's answer."""
    path: str
    targets: list = field(default_factory=list)
    #: Why the file maps to no target: ``"tests"``, ``"docs"``, ``"build"``, ``"unmapped"``
    #: (a source path no table knows), ``"deleted"``...; empty when it maps to targets.
    skipped: str = ""
    note: str = ""

    def to_json(self) -> dict:
        d = {"path": self.path, "targets": [t.key for t in self.targets]}
        if self.skipped:
            d["skipped"] = self.skipped
        if self.note:
            d["note"] = self.note
        return d


@dataclass
class TargetSet:
    compiler: str
    source: str  # "git diff BASE..HEAD in REPO" or "diff FILE"
    files: list = field(default_factory=list)  # FileTargets
    #: The table the mapping used: {"compiler", "version", "commit"} from its header.
    table: dict = field(default_factory=dict)
    #: Per-file rows as a recorded set carries them (``from_json``): keys, not targets.
    recorded_files: list | None = None

    @property
    def targets(self) -> list:
        return merge(t for f in self.files for t in f.targets)

    @property
    def only_ordinary(self) -> bool:
        """True when nothing maps to a target: the batch is the ordinary one."""
        return not self.targets

    def digest(self) -> str:
        """A short digest of the targets (what the batch depends on)."""
        blob = json.dumps([t.to_json() | {"why": ""} for t in self.targets], sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]

    def to_json(self) -> dict:
        return {"compiler": self.compiler, "source": self.source, "table": self.table,
                "digest": self.digest(),
                "targets": [t.to_json() for t in self.targets],
                "files": [f.to_json() for f in self.files] if self.recorded_files is None else self.recorded_files}

    @classmethod
    def from_json(cls, d: dict) -> "TargetSet":
        """The set as ``run.json`` records it; the per-file rows keep their target keys
        only, and the merged targets are carried on one pseudo-file, which is all a
        regeneration needs."""
        if not isinstance(d, dict):
            raise ValueError("recorded targets are not an object")
        return cls(d.get("compiler", ""), d.get("source", ""),
                   [FileTargets("(recorded)", [Target.from_json(t) for t in d.get("targets") or ()])],
                   table=d.get("table") or {}, recorded_files=list(d.get("files") or []))
