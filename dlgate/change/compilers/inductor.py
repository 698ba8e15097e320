"""PyTorch Inductor: a changed file of PyTorch's tree -> the ONNX operators whose cases
reach the changed code.

dlgate's ``inductor`` backend compiles each case's PyTorch reference model, so the way
from a change to a case goes through ATen: the table (``tables/inductor.json``, built by
``dlgate.change.builders.inductor``) says which ATen operators each changed definition
handles and which ATen operators each spec's PyTorch implementation dispatches to. A
changed definition maps to the specs using its operators, and those to their ONNX
operator types (``operator`` targets; dlgate has no motif aimed at Inductor, so never a
``rewrite`` target):

* a lowering, fallback or decomposition (and a helper only some of them use): every spec
  using one of its operators, restricted to the dtypes the operator was traced with;
* a pattern (``fx_passes/``): the specs whose traces hold most of the pattern's operators
  together (an attention pattern's ``bmm``, ``amax``, ``exp`` ... aim at the attention
  specs, not at every spec with a ``view``); a definition that only lists operators
  (an in-place table, a ``node.target in (...)`` check) handles each alone;
* an op handler of the C++ or Triton code generator (``CppOverrides.erf``): the specs using
  the ATen operators it stands for.

A change outside every definition the table knows (a module-level registration, a new
lowering) is read from its changed lines: the operators they name. The rest is
``unmapped``, with the reason.
"""
from __future__ import annotations

from dlgate.change.builders.inductor_source import ops_in_text
from dlgate.change.targets import FileTargets, Target

NAME = "inductor"
BACKENDS = ("inductor",)

#: A definition reaching more than this share of the operators dlgate generates (the
#: ``view`` lowering, constant folding over every view op), and more than ``FOCUSED`` of
#: them, is tested as well by the ordinary batch: it is reported as broad, not aimed at.
BROAD = 1 / 3
FOCUSED = 10

_INDEX: dict = {}


def uses(table: dict) -> dict:
    """ATen operator -> [(spec, onnx_op, dtypes)] from the table's traces (cached)."""
    key = id(table)
    got = _INDEX.get(key)
    if got is None or got[0] is not table:
        idx: dict = {}
        for spec, row in sorted((table.get("specs") or {}).items()):
            packets: dict = {}
            for op, dts in row.get("ops", {}).items():
                idx.setdefault(op, []).append((spec, row["onnx_op"], tuple(dts)))
                if op.count(".") == 2:  # aten.div.Tensor_mode also answers for aten.div
                    pk = op.rsplit(".", 1)[0]
                    have = packets.get(pk)
                    packets[pk] = () if have == () or not dts else tuple(sorted(set(have or ()) | set(dts)))
            for pk, dts in packets.items():
                if pk not in row.get("ops", {}):
                    idx.setdefault(pk, []).append((spec, row["onnx_op"], dts))
        got = (table, idx)
        _INDEX.clear()
        _INDEX[key] = got
    return got[1]


def _merge(hits) -> list:
    """(onnx_op, dtypes) rows -> one (onnx_op, dtypes) per operator: any dtype when one
    spec uses the operator at every dtype it was traced with."""
    by: dict = {}
    for op, dts in hits:
        if op in by and by[op] == ():
            continue
        by[op] = () if not dts else tuple(sorted(set(by.get(op, ())) | set(dts)))
    return sorted(by.items())


def specs_for(ops, table: dict, pattern: str = "") -> tuple:
    """The specs a set of ATen operators reaches, as ``(hits, matched ops)``, ``hits``
    [(spec, onnx_op, dtypes)]. A ``pattern`` ``"all"`` (a pattern of nodes: every one must
    match) reaches the specs whose traces hold all its operators; ``"most"`` (a pattern
    function, whose names are a guide) those holding the most of the operators some spec
    uses, at least half of them; otherwise each operator reaches every spec using it."""
    idx = uses(table)
    known = [o for o in ops if o in idx]
    if not known or pattern == "all" and len(known) < len(ops):
        return [], []
    if not pattern or len(known) == 1:
        hits = [h for o in known for h in idx[o]]
        return hits, known
    per: dict = {}
    for o in known:
        for spec, onnx_op, dts in idx[o]:
            per.setdefault((spec, onnx_op), {})[o] = dts
    best = max(len(v) for v in per.values())
    if best * 2 < len(known) or pattern == "all" and best < len(known):
        return [], []
    hits, matched = [], set()
    for (spec, onnx_op), got in sorted(per.items()):
        if len(got) == best:
            dts = () if any(d == () for d in got.values()) else tuple(sorted({x for d in got.values() for x in d}))
            hits.append((spec, onnx_op, dts))
            matched.update(got)
    return hits, sorted(matched)


def _targets(hits, why: str) -> list:
    return [Target("operator", op, None, dts, (), why) for op, dts in _merge((h[1], h[2]) for h in hits)]


def _broad(targets: list, table: dict) -> bool:
    every = {row["onnx_op"] for row in (table.get("specs") or {}).values()}
    n = len({t.name for t in targets})
    return n > FOCUSED and n > BROAD * len(every)


def _aim(hits, why: str, what: str, table: dict, out: list, notes: list) -> None:
    """Targets for ``hits``, unless they are most operators (then a note says so)."""
    ts = _targets(hits, why)
    if _broad(ts, table):
        every = len({row["onnx_op"] for row in table["specs"].values()})
        notes.append(f"{what} reaches {len({t.name for t in ts})} of the {every} operators dlgate generates: "
                     "the ordinary batch covers it")
    else:
        out += ts


def _known(enclosing: list, keys) -> list:
    """The table's definitions among a hunk's enclosing names, innermost only: a key
    ``A.b`` is known when ``b`` encloses the hunk and ``A`` encloses it further out."""
    found = []
    for i, name in enumerate(enclosing):
        outer = enclosing[:i]
        for k in keys:
            parts = k.split(".")
            if parts[-1] == name and all(p in outer for p in parts[:-1]) and k not in found:
                found.append(k)
    return [k for k in found if not any(o != k and o.startswith(k + ".") for o in found)]


def _module_level(h) -> bool:
    """A hunk whose changed lines all start at column 0 and open no definition: a
    module-level statement, whatever git's hunk header (the definition above) says."""
    lines = [t for t in h.text if t.strip()]
    return bool(lines) and all(t[:1] not in (" ", "\t", ")", "]", "}", "#", '"', "'")
                               and not t.startswith(("def ", "class ", "@", "async def ")) for t in lines)


def map_file(fc, table: dict) -> FileTargets:
    path = fc.where
    entry = (table.get("files") or {}).get(path)
    if entry is None:
        best = None
        for p in table.get("prefixes") or ():
            if path.startswith(p["prefix"]) and (best is None or len(p["prefix"]) > len(best["prefix"])):
                best = p
        note = best.get("note") if best else "outside Inductor and its decompositions: no table entry for this path"
        return FileTargets(path, skipped="unmapped", note=note or "no table entry for this path")
    mode = entry.get("mode", "lowering")
    defs = entry.get("definitions") or {}
    shared = entry.get("shared") or {}
    patterns = entry.get("patterns") or {}
    out, notes = [], []
    for h in fc.hunks or [None]:
        enclosing = [] if h is None or _module_level(h) else h.enclosing
        keys = _known(enclosing, list(defs) + list(shared))
        if not keys and enclosing:
            # a nested helper git's header names (``def op_count``): its holder
            holders = [(entry.get("nested") or {}).get(n) for n in enclosing]
            keys = list(dict.fromkeys(k for k in holders if k and k in defs))
        ops_seen = False
        for k in keys:
            if k in shared:
                notes.append(f"{k} is shared by {shared[k]} operators' lowerings or kernels: the ordinary batch covers it")
                continue
            ops_seen = True
            hits, matched = specs_for(defs[k], table, pattern=patterns.get(k, "") if mode == "pattern" else "")
            if hits:
                _aim(hits, f"{path}: {k} ({', '.join(matched[:4])}{' ...' if len(matched) > 4 else ''})", k,
                     table, out, notes)
            else:
                notes.append(f"{k} handles {', '.join(defs[k][:6])}: no dlgate spec's PyTorch implementation uses "
                             + ("these operators together" if mode == "pattern" and k in patterns else "them"))
        if keys:
            continue
        if h is None:
            break
        named = ops_in_text(h.text, torch_names=mode == "pattern")
        if mode == "codegen" or not named:
            if not ops_seen:
                notes.append(entry.get("note") or (
                    "the changed lines are outside every definition the table maps and name no operator"
                    if mode != "codegen" else
                    "code generation outside the op handlers (kernels, scheduling, wrappers): no single operator"))
            continue
        pattern = "most" if mode == "pattern" and entry.get("module_pattern") else ""
        if pattern and not defs and entry.get("module"):
            named = list(entry["module"])  # a serialized pattern: the file is one pattern
        hits, matched = specs_for(named, table, pattern=pattern)
        where = f"line {h.new_start}" if h.new_start else "module level"
        if hits:
            _aim(hits, f"{path}: {where} ({', '.join(matched[:4])}{' ...' if len(matched) > 4 else ''})",
                 f"{where} ({', '.join(named[:3])})", table, out, notes)
        else:
            notes.append(f"{where} names {', '.join(named[:6])}: no dlgate spec's PyTorch implementation uses "
                         + ("them together" if pattern else "them"))
    notes = list(dict.fromkeys(notes))
    if out:
        return FileTargets(path, out, note="; ".join(notes))
    return FileTargets(path, skipped="unmapped", note="; ".join(notes) or entry.get("note") or "no operator")
