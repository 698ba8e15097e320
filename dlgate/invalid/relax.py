"""The Relax side of invalid models: ``tvm-relax-invalid``, TVM's direct Relax path given the
module of a case's graph with one parameter of ``main`` declared wrongly
(:mod:`dlgate.materialize.relax.invalid`), run on the valid graph's inputs. Judged by
:func:`dlgate.invalid.oracle.judge`: TVM must raise; a crash, a hang or a run to completion is
a finding. The rule is drawn from the graph's structure seed, so the parent draws the same
(:func:`describe`) without a worker; a TVM campaign with ``invalid_share`` makes a quarter of
its invalid cases so (:mod:`dlgate.invalid.relax_case`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from dlgate.backends.base import Model
from dlgate.backends.tvm_relax import TVMRelax, structure_seed


def invalid_module(graph):
    """(module, info) of ``graph``'s direct Relax module made invalid."""
    from dlgate.materialize.relax.invalid import disrupt  # local: imports TVM, an optional compiler
    from dlgate.materialize.relax.module import to_relax  # local: imports TVM, an optional compiler

    seed = structure_seed(graph)
    return disrupt(to_relax(graph, seed), seed)


def describe(graph) -> dict:
    """What :class:`TVMRelaxInvalid` breaks in ``graph``'s module (``meta["invalid"]``-shaped)."""
    return invalid_module(graph)[1]


def as_declared(x: np.ndarray, declared: dict) -> np.ndarray:
    """``x`` made to fit the wrongly declared type: cast to its dtype, cut or padded with
    zeros to its static shape."""
    y = x.astype(declared["dtype"])
    shape = declared.get("shape")
    if shape is None or list(y.shape) == list(shape):
        return y
    out = np.zeros(shape, y.dtype)
    common = tuple(slice(0, min(a, b)) for a, b in zip(y.shape, shape))
    out[common] = y[common]
    return out


class TVMRelaxInvalid(TVMRelax):
    """Option ``declared`` (default false): feed the parameter a value of its wrongly
    declared type, so that the VM's check of ``main``'s arguments passes and what is left to
    catch the mismatch is TVM's own handling of the body (its ``match_cast`` of the
    parameter, the struct info of the bindings that read it)."""

    name = "tvm-relax-invalid"
    #: The direct path's options but ``plain`` (the module made invalid is the direct module as
    #: drawn), and ``declared``.
    option_kinds = dict({k: x for k, x in TVMRelax.option_kinds.items() if k != "plain"}, declared="bool")

    def compile(self, model: Model) -> Any:
        mod, info = invalid_module(model.graph)
        vm, dev = self._build(mod, self.options.get("extra_passes", ()), self.options.get("record_rewrites", True),
                              self.options.get("passes"))
        return vm, dev, list(range(len(model.graph.inputs))), info

    def run(self, compiled: Any, inputs: list) -> list:
        vm, dev, order, info = compiled
        if self.options.get("declared"):
            inputs = list(inputs)
            inputs[info["index"]] = as_declared(inputs[info["index"]], info["declared"])
        return super().run((vm, dev, order), inputs)

