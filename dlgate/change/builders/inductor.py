"""The PyTorch Inductor change table, built from PyTorch's own source and from tracing
dlgate's specs.

Inductor does not see ONNX: dlgate's ``inductor`` backend compiles each case's PyTorch
reference model (``dlgate/materialize/torch_model.py``: every node runs its spec's
``torch`` implementation), so a change to Inductor reaches a case through the ATen
operators those implementations dispatch to. The table therefore holds two kinds of facts:

* **What each spec uses** (``specs``): every spec's PyTorch implementation is run on sample
  instances (the single-operator graphs support probing uses, at its first and newest
  opsets, for each input dtype signature) under a dispatch recorder, once as dispatched
  (the ATen operators Inductor's decompositions start from) and once with Inductor's own
  decomposition table applied (what its lowerings receive), and under a torch-function
  recorder (the ``torch.*`` calls pre-grad patterns name). Per operator the table keeps
  the first-input dtypes it was seen with when that is fewer than all traced, so a change
  reached only by, say, integer division aims only at integer instances.
* **What each Inductor definition handles**, read from the source (never imported, so a git
  tag other than the installed one can be read): lowerings and fallbacks
  (``register_lowering(aten.x)``, ``register_pointwise``, ``make_fallback`` ... in
  ``lowering.py`` and every other module that registers them) and decompositions
  (``register_decomposition``) name their ATen operators in decorators and registration
  calls; a helper without its own registration reaches the operators of the registrations
  that refer to it (``make_reduction`` -> ``aten.sum``, ``aten.amax`` ...), unless it is
  shared by so many that the ordinary batch is the right answer (recorded as ``shared``).
  Pattern passes (``fx_passes/``) keep every operator their patterns name, as ``aten.x``,
  ``prims.x`` or ``torch.x``; the mapper picks the specs whose traces hold the pattern.
  Code generation's op handlers (``CppOverrides.erf``, ``TritonOverrides.erf`` ...) name an
  Inductor ``ops.*`` function; it stands for the ATen operator of the same name and for the
  lowerings whose code calls it.

The source is read by ``inductor_source``, the specs traced by ``inductor_trace``; this
module puts the two together. Everything is sorted so the same source and dlgate give
the same bytes.
"""
from __future__ import annotations

import re

from dlgate.change.builders.inductor_source import CODEGEN, INDUCTOR, PASSES, read_source
from dlgate.change.builders.inductor_trace import trace_specs


def _version(source) -> tuple:
    """(release, commit) as the tree records them: ``torch/version.py`` in an installed
    package, ``version.txt`` in a checkout."""
    ver, commit = "", ""
    if source.exists("torch/version.py"):
        text = source.read("torch/version.py")
        m = re.search(r"^__version__\s*(?::\s*\w+)?\s*=\s*['\"]([^'\"]+)", text, re.M)
        ver = m.group(1).split("+")[0] if m else ""
        m = re.search(r"^git_version\s*(?::\s*\w+)?\s*=\s*['\"]([0-9a-f]{40})", text, re.M)
        commit = m.group(1) if m else ""
    elif source.exists("version.txt"):
        ver = source.read("version.txt").strip()
    return ver, commit


def build(source, specs=None, seeds: int = 3) -> dict:
    """The table for the tree ``source`` (a :class:`dlgate.change.builders.Source`);
    ``specs`` limits the traced specs (a test's small table), ``seeds`` the instances per
    opset and dtype signature."""
    import torch

    facts = read_source(source)
    traced = trace_specs(specs, seeds)
    ver, commit = _version(source)
    used = {op for s in traced["specs"].values() for op in s["ops"]}
    used |= {op.rsplit(".", 1)[0] for op in used if op.count(".") == 2}  # aten.erf.default: aten.erf is used
    named = set()
    for e in facts["files"].values():
        for ops in e["definitions"].values():
            named.update(ops)
        named.update(e["module"])
    unused = sorted(op for op in named if op not in used)
    doc = {
        "compiler": "inductor",
        "version": ver or (source.ref or ""),
        "files": facts["files"],
        "specs": traced["specs"],
        "untraced": traced["untraced"],
        "traced_with": {"torch": torch.__version__.split("+")[0], "seeds": seeds},
        "prefixes": [
            {"prefix": CODEGEN, "targets": [],
             "note": "code generation shared by every kernel (scheduling, wrappers, templates): no single operator"},
            {"prefix": PASSES, "targets": [],
             "note": "a pass that names no operator: no motif aims at this pass"},
            {"prefix": INDUCTOR, "targets": [],
             "note": "Inductor infrastructure (graph, scheduler, IR, caches, runtime) that registers no lowering"},
        ],
        "notes": {
            "rewrites": "dlgate has no motif aimed at Inductor: pattern passes map to the operators whose "
                        "specs' traces hold the pattern's ATen operators, never to rewrite targets",
            "no_spec": "operators the source registers or names that no spec's PyTorch implementation uses "
                       "(a change to them maps to nothing): " + ", ".join(unused),
        },
    }
    if commit:
        doc["commit"] = commit
    return doc
