"""Not a compiler: the Relax module a TVM finding starts from, printed as TVMScript in an
isolated worker (:mod:`dlgate.reduce.tvmscript` writes a finding's one-pass repro from it),
by the importer's path or by the direct one (:mod:`dlgate.backends.tvm_relax`), or the module
the direct path's invalid backend builds (:mod:`dlgate.invalid.relax`)."""
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
    ``from_onnx`` gives, as ``tvm`` compiles it), ``"direct"`` (``to_relax``'s, as
    ``tvm-relax`` does) or ``"invalid"`` (``to_relax``'s with one parameter of ``main``
    declared wrongly, as ``tvm-relax-invalid`` builds it; see :meth:`invalid_text`);
    ``plain`` as ``tvm-relax``'s."""

    name = "tvm-module-text"
    option_kinds = {"path": "", "plain": "bool"}

    @classmethod
    def check_options(cls, options: dict) -> None:
        super().check_options(options)
        if options.get("path", "direct") not in ("importer", "direct", "invalid"):
            raise ValueError(f"option 'path': expected \"importer\", \"direct\" or \"invalid\", got "
                             f"{options['path']!r}")

    def compile(self, model: Model) -> Any:
        if self.options.get("path") == "invalid":
            return self.invalid_text(model)
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
        return {"text": text, "order": order}, values

    def invalid_text(self, model: Model) -> tuple:
        """The module ``tvm-relax-invalid`` builds for ``model`` (:func:`dlgate.invalid.relax.invalid_module`).
        Its TVMScript is written as the printer gives it (``printed``) and, where it parses
        back to the same module, is the script's module (``redeclare`` None). TVM's parser
        refuses most such modules (``refused``, its error): it normalizes each binding as it
        reads it, and a ``match_cast`` of a parameter declared float32 to a float64 tensor is
        "impossible to match cast"; a shape declared one wider is not well-formed. Then the
        text is the valid direct module's (checked to parse back, as for ``tvm-relax``) and
        ``redeclare`` the call of :func:`dlgate.materialize.relax.invalid.redeclare` that
        makes the invalid module of it, checked here to give a module structurally equal to
        the one the backend builds."""
        import tvm  # local: optional compiler, imported where it runs

        from dlgate.invalid.relax import invalid_module  # local: imports TVM, an optional compiler
        from dlgate.materialize.relax.invalid import how, redeclare  # local: imports TVM, an optional compiler
        from dlgate.materialize.relax.module import to_relax  # local: imports TVM, an optional compiler

        bad, info = invalid_module(model.graph)
        order = list(range(len(model.graph.inputs)))
        head = {"order": order, "printed": None, "refused": None, "redeclare": None}
        try:
            printed, consts = module_source(bad)
            head["printed"] = printed
            parses_back(bad, printed, consts)
            return dict(head, text=printed), consts
        except Exception as e:  # noqa: BLE001 - TVM's parser refusing the wrong declaration, said below
            head["refused"] = f"{type(e).__name__}: {str(e).strip()[:1500]}"
        try:
            mod = to_relax(model.graph, structure_seed(model.graph))
            text, values = module_source(mod)
            again = redeclare(parses_back(mod, text, values), info["index"], **how(info))
            tvm.ir.assert_structural_equal(again, bad)
        except Exception as e:  # noqa: BLE001 - told apart from a module that cannot be built
            raise RuntimeError(f"{PRINTING}{type(e).__name__}: {str(e).strip()[:2000]}") from None
        return dict(head, text=text, redeclare=dict(how(info), index=info["index"])), values

    def run(self, compiled: Any, inputs: list) -> list:
        head, values = compiled
        head = json.dumps(head, sort_keys=True).encode()
        return [np.frombuffer(head, dtype=np.uint8).copy()] + [np.asarray(v) for v in values]

    def rewrites(self, compiled: Any) -> list | None:
        return None
