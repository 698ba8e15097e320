"""The disruption rules by name, and the draw that turns a valid model into an invalid one.

The draw is a function of the valid model's bytes and a seed: the rules are tried in an
order shuffled by the seed, each at its sites in an order shuffled by the seed, and the
first change ONNX's full checker rejects is kept. A change the checker accepts is not known
to be invalid (the operator's shape inference does not check that rule, or the change
happens to be harmless): it is recorded under ``redrawn`` and the next site is tried.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import onnx

from dlgate.invalid.arity import WrongInputCount
from dlgate.invalid.attribute import AttributeOutOfRange
from dlgate.invalid.base import Known, rejection
from dlgate.invalid.dangling import DanglingEdge
from dlgate.invalid.dtype import WrongDtype
from dlgate.invalid.duplicate import DuplicatedEdge
from dlgate.invalid.shape import IncompatibleShapes

RULES = {r.name: r for r in (WrongDtype(), IncompatibleShapes(), DanglingEdge(), DuplicatedEdge(),
                             AttributeOutOfRange(), WrongInputCount())}
#: Sites tried per rule before the next rule: a model whose operators a rule's check does
#: not cover moves on instead of trying every node.
TRIES_PER_RULE = 6


class NotDisrupted(ValueError):
    """No rule could make the model invalid in a way ONNX's checker rejects."""


@dataclass
class Disruption:
    """An invalid model and what makes it so: ``info`` goes into the case's metadata."""

    model: bytes
    info: dict = field(default_factory=dict)

    @property
    def rule(self) -> str:
        return self.info["rule"]


def disrupt(model_bytes: bytes, seed: int, rules: tuple | None = None) -> Disruption:
    """Break one rule of ``model_bytes`` (a valid model), drawn from ``seed``; ``rules``
    restricts the draw to those names. NotDisrupted when no rule applies."""
    names = sorted(RULES) if rules is None else sorted(set(rules))
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise ValueError(f"unknown invalid-model rule {unknown[0]!r}; expected one of {', '.join(sorted(RULES))}")
    rng = random.Random(seed)
    valid = onnx.load_from_string(model_bytes)
    known = Known(valid)
    rng.shuffle(names)
    redrawn = []
    for name in names:
        rule = RULES[name]
        sites = rule.sites(valid, known)
        if not sites:
            redrawn.append({"rule": name, "why": "no node it applies to"})
            continue
        rng.shuffle(sites)
        for site in sites[:TRIES_PER_RULE]:
            model = onnx.ModelProto()
            model.CopyFrom(valid)
            node = model.graph.node[site.node]
            where = {"node": node.name, "op_type": node.op_type, "index": site.node}
            done = rule.apply(model, known, site, random.Random(rng.getrandbits(64)))
            why = rejection(model)
            if why is None:
                redrawn.append({"rule": name, **where, "detail": done["detail"],
                                "why": "onnx.checker accepted it: not known invalid"})
                continue
            info = {"rule": name, **where, **done, "breaks": rule.breaks, "checker": why}
            if redrawn:
                info["redrawn"] = redrawn
            return Disruption(model.SerializeToString(), info)
    raise NotDisrupted("no rule made the model invalid: " + "; ".join(
        f"{r['rule']}{' at ' + r['node'] if 'node' in r else ''}: {r['why']}" for r in redrawn))
