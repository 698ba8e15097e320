"""Feedback for the TIR fuzz loop, and the corpus whose recorded state makes every program
reproducible.

Without a coverage-instrumented TVM the signal is IR-feature novelty: a program (with its
pass sequence) is new when it shows a feature no earlier program showed: a node kind, a
node kind at a dtype, a loop kind, a loop annotation, an intrinsic, a dtype, a loop-nest
depth, or a pair of consecutive passes (supplied by the caller, with features of the IR the
passes produced). Tzer's signal is new CFG edges of TVM itself; features are the proxy a
stock TVM allows (docs/tir.md says how to build TVM with coverage).

The :class:`Corpus` is Tzer's seed pool, entries ``<program, passes, stall count>``, plus the
features seen. Its JSON (:meth:`Corpus.to_json`) is the recorded state: step ``k`` of a
campaign is a function of (seed, campaign, k, that state)."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from dlgate.tir import ast as A
from dlgate.tir.program import Program

STATE_VERSION = 1


def counts(func) -> dict:
    """What a mutator's ``changed`` check compares: node count, loops, loop kinds,
    annotations, loads, stores, allocations, intrinsic calls (by name) and the text."""
    from tvm import s_tir, tirx  # local: optional compiler, imported where it runs

    out = {"nodes": 0, "loops": 0, "loop_kinds": Counter(), "annotations": Counter(), "loads": 0, "stores": 0,
           "allocs": 0, "intrinsics": Counter()}
    for s in A.sites(func):
        n = s.node
        out["nodes"] += 1
        name = type(n).__name__
        if isinstance(n, tirx.For):
            out["loops"] += 1
            out["loop_kinds"][tirx.ForKind(int(n.kind)).name] += 1
            for k, v in n.annotations.items():
                out["annotations"][f"{k}={v}"] += 1
        elif name == "TensorLoad":
            out["loads"] += 1
        elif isinstance(n, tirx.BufferStore):
            out["stores"] += 1
        elif isinstance(n, tirx.AllocBuffer):
            out["allocs"] += 1
        elif isinstance(n, s_tir.SBlock):
            out["allocs"] += len(n.alloc_buffers)
        elif name == "Call":
            out["intrinsics"][getattr(n.op, "name", "?")] += 1
    return out


def program_counts(program: Program) -> dict:
    c = counts(program.func())
    c["text"] = program.text
    return c


def features(func, prefix: str = "") -> set:
    """The IR features of a PrimFunc (strings; ``prefix`` marks where they were seen)."""
    from tvm import tirx  # local: optional compiler, imported where it runs

    out = set()
    for s in A.sites(func):
        n = s.node
        name = type(n).__name__
        d = A.dtype_of(n)
        out.add(f"node:{name}")
        if d:
            out.add(f"dtype:{d}")
            out.add(f"node-dtype:{name}:{d}")
        if isinstance(n, tirx.For):
            kind = tirx.ForKind(int(n.kind)).name
            out.add(f"loop:{kind}")
            out.add(f"loop-depth:{len(s.scope.loops) + 1}")
            if s.scope.loops:
                out.add(f"loop-nest:{tirx.ForKind(int(s.scope.loops[-1].kind)).name}>{kind}")
            for k, v in n.annotations.items():
                out.add(f"annotation:{k}={v}")
            if n.thread_binding is not None:
                out.add(f"thread:{n.thread_binding.thread_tag}")
        elif name == "Call":
            op = getattr(n.op, "name", "?")
            out.add(f"intrinsic:{op}")
            if d:
                out.add(f"intrinsic-dtype:{op}:{d}")
        elif isinstance(n, tirx.BufferStore):
            out.add(f"store:{n.buffer.dtype}:{len(n.indices)}d:{n.buffer.scope()}")
        elif name == "TensorLoad":
            out.add(f"load:{n.source.dtype}:{len(n.indices)}d")
    for p in func.params:
        if A.is_buffer(p):
            out.add(f"param:{p.dtype}:{len(p.shape)}d")
    return {prefix + f for f in out}


def pass_features(passes) -> set:
    """The pass sequence's features: each pass, and each pair of consecutive passes."""
    passes = list(passes)
    return {f"pass:{p}" for p in passes} | {f"pass-pair:{a}>{b}" for a, b in zip(passes, passes[1:])}


@dataclass
class Entry:
    """One pool entry: a valid program, the pass sequence it is built with, the number of
    IR mutations since it last gave new feedback (Tzer's N) and where it came from."""

    program: Program
    passes: tuple
    stall: int = 0
    origin: str = ""

    def to_json(self) -> dict:
        return {"text": self.program.text, "passes": list(self.passes), "stall": self.stall, "origin": self.origin}

    @staticmethod
    def from_json(d: dict) -> "Entry":
        return Entry(Program(d["text"]), tuple(d["passes"]), int(d["stall"]), d.get("origin", ""))


@dataclass
class Corpus:
    """Tzer's pool and the features seen so far (``seen``). ``growth`` is the number of
    features seen after each recorded step (what the ablation plots)."""

    entries: list = field(default_factory=list)
    seen: set = field(default_factory=set)

    def novel(self, feats: set) -> set:
        """The features in ``feats`` not seen before."""
        return set(feats) - self.seen

    def observe(self, feats: set) -> set:
        """Record ``feats``; return those that were new."""
        new = self.novel(feats)
        self.seen |= new
        return new

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)

    def to_json(self) -> str:
        """The recorded state: deterministic text (sorted features, entries in pool order)."""
        return json.dumps({"version": STATE_VERSION, "features": sorted(self.seen),
                           "entries": [e.to_json() for e in self.entries]}, indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> "Corpus":
        d = json.loads(text)
        if d.get("version") != STATE_VERSION:
            raise ValueError(f"TIR corpus state version {d.get('version')!r}; this dlgate reads {STATE_VERSION}")
        return Corpus([Entry.from_json(e) for e in d["entries"]], set(d["features"]))

    def copy(self) -> "Corpus":
        return Corpus([Entry(e.program, e.passes, e.stall, e.origin) for e in self.entries], set(self.seen))


def lcov_features(text: str, prefix: str = "cov:") -> set:
    """The covered lines and taken branches of an lcov tracefile (``lcov --capture``, or
    ``llvm-cov export -format=lcov``) as features: ``cov:line:<file>:<line>`` for each ``DA``
    record with a non-zero count, ``cov:branch:<file>:<line>:<block>:<branch>`` for each
    ``BRDA`` record taken at least once. With a coverage build of TVM, the executor adds
    these to a program's features and novelty becomes Tzer's new-coverage signal."""
    out: set = set()
    source = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("SF:"):
            source = line[3:]
        elif line == "end_of_record":
            source = ""
        elif line.startswith("DA:") and source:
            parts = line[3:].split(",")
            if len(parts) >= 2 and parts[1].strip().lstrip("-").isdigit() and int(parts[1]) > 0:
                out.add(f"{prefix}line:{source}:{parts[0]}")
        elif line.startswith("BRDA:") and source:
            parts = line[5:].split(",")
            if len(parts) == 4 and parts[3] not in ("-", "0"):
                out.add(f"{prefix}branch:{source}:{parts[0]}:{parts[1]}:{parts[2]}")
    return out
