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

import numpy as np

from dlgate.backends.base import Model
from dlgate.backends.refusals import refused
from dlgate.backends.tvm import TVM
from dlgate.backends.tvm_passes import module_source, parses_back
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
        vm, dev = self._build(mod, self.options.get("extra_passes", ()), self.options.get("record_rewrites", True))
        return vm, dev, list(range(len(model.graph.inputs)))

    @classmethod
    def repro_source(cls, spec) -> str | None:
        return None  # the module is built from dlgate's graph: the repro runs it with dlgate

    def unsupported(self, exc: BaseException) -> bool:
        # NoRelaxLowering is a NotImplementedError: an operator the direct path does not lower
        return isinstance(exc, NotImplementedError) or refused("tvm", exc)


#: How ModuleText's error starts when the module was built but its TVMScript did not print or
#: parse back (any other error: the module could not be built, before any pass ran).
PRINTING = "printing the module as TVMScript: "


class ModuleText(TVM):
    """Not a compiler: the Relax module a TVM finding starts from, as TVMScript (checked to
    parse back to the same module), made in an isolated worker like every TVM call. Its one
    "output" is that text and the main function's inputs order, JSON as ``uint8``; the
    constants the text reads follow it. Options: ``path``, ``"importer"`` (the module
    ``from_onnx`` gives, as ``tvm`` compiles it) or ``"direct"`` (``to_relax``'s, as
    ``tvm-relax`` does); ``plain`` as ``tvm-relax``'s."""

    name = "tvm-module-text"
    option_kinds = {"path": "", "plain": "bool"}

    @classmethod
    def check_options(cls, options: dict) -> None:
        super().check_options(options)
        if options.get("path", "direct") not in ("importer", "direct"):
            raise ValueError(f"option 'path': expected \"importer\" or \"direct\", got {options['path']!r}")

    def compile(self, model: Model) -> Any:
        if self.options.get("path", "direct") == "direct":
            from dlgate.materialize.relax.module import to_relax  # local: imports TVM, an optional compiler

            mod = to_relax(model.graph, structure_seed(model.graph), plain=bool(self.options.get("plain", False)))
            order = list(range(len(model.graph.inputs)))
        else:
            import onnx  # local: the importer path reads the model's bytes
            from tvm.relax.frontend.onnx import from_onnx  # local: optional compiler, imported where it runs

            proto = onnx.load_from_string(model.onnx)
            mod = from_onnx(proto, keep_params_in_input=False)
            initializers = {t.name for t in proto.graph.initializer}
            pos = {n: k for k, n in enumerate(model.input_names)}
            order = [pos[i.name] for i in proto.graph.input if i.name not in initializers]
        try:
            text, values = module_source(mod)
            parses_back(mod, text, values)
        except Exception as e:  # noqa: BLE001 - told apart from a module that cannot be built
            raise RuntimeError(f"{PRINTING}{type(e).__name__}: {str(e).strip()[:2000]}") from None
        return text, order, values

    def run(self, compiled: Any, inputs: list) -> list:
        text, order, values = compiled
        head = json.dumps({"text": text, "order": order}, sort_keys=True).encode()
        return [np.frombuffer(head, dtype=np.uint8).copy()] + [np.asarray(v) for v in values]

    def rewrites(self, compiled: Any) -> list | None:
        return None
