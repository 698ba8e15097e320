"""Not a compiler: the Relax module a TVM finding starts from, printed as TVMScript in an
isolated worker (:mod:`dlgate.reduce.tvmscript` writes a finding's one-pass repro from it),
by the importer's path or by the direct one (:mod:`dlgate.backends.tvm_relax`)."""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from dlgate.backends.base import Model
from dlgate.backends.tvm import TVM
from dlgate.backends.tvm_passes import module_source, parses_back
from dlgate.backends.tvm_relax import structure_seed


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
