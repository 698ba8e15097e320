"""Apache TVM (Relax) without the ONNX importer: the generated graph lowered straight into
a Relax IRModule (``dlgate.materialize.relax``), then the same pipelines and VM as ``tvm``.

The importer only ever hands TVM's passes the modules it writes: one flat function, static
or importer-shaped symbolic shapes. The direct path hands them a private function called
from ``main``, dataflow blocks with bindings outside them and symbolic shape variables bound
by ``match_cast``; and on the same graph, the two paths are a differential pair
(``dlgate.backends.relax_pair``).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from dlgate.backends.base import Model
from dlgate.backends.refusals import refused
from dlgate.backends.tvm import TVM
from dlgate.graph.ir import Graph


def structure_seed(graph: Graph) -> int:
    """What draws the module's structure (which nodes become the private function, which
    bindings use ``match_cast``): the graph's operators, attributes, types and wiring, so the
    same graph gets the same module in every process, whatever its constants' values."""
    d = graph.to_json()
    d.pop("dynamic", None)
    d.pop("extreme", None)
    text = json.dumps(d, sort_keys=True, default=str)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class TVMRelax(TVM):
    """The direct path: ``to_relax`` then ``tvm.compile`` then ``relax.VirtualMachine``.

    Options: ``extra_passes`` (as ``tvm``: Relax passes applied to the module before the
    pipeline), ``passes`` (as ``tvm``: the whole pass sequence by name), ``record_rewrites``,
    and ``plain``: no private function and no
    ``match_cast`` (one function, every input declared), which tells a fault in those
    structures from one in the operators' lowering."""

    name = "tvm-relax"
    #: It compiles dlgate's graph, not the ONNX bytes: an equivalence twin that rewrites the
    #: ONNX form only is not judged on it (``dlgate.rewrite.oracle.reads_graph``).
    reads_graph = True
    option_kinds = {"extra_passes": "", "record_rewrites": "bool", "plain": "bool", "passes": ""}

    def compile(self, model: Model) -> Any:
        from dlgate.materialize.relax.module import to_relax  # local: imports TVM, an optional compiler

        mod = to_relax(model.graph, structure_seed(model.graph), plain=bool(self.options.get("plain", False)))
        vm, dev = self._build(mod, self.options.get("extra_passes", ()), self.options.get("record_rewrites", True),
                              self.options.get("passes"))
        return vm, dev, list(range(len(model.graph.inputs)))

    @classmethod
    def repro_source(cls, spec) -> str | None:
        return None  # the module is built from dlgate's graph: the repro runs it with dlgate

    def unsupported(self, exc: BaseException) -> bool:
        # NoRelaxLowering is a NotImplementedError: an operator the direct path does not lower
        return isinstance(exc, NotImplementedError) or refused("tvm", exc)
