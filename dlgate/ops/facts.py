"""Oracle facts, an optional part of an operator spec: what the oracle needs to know of an
operator to judge a compiler's result fairly, each with a stock default that claims nothing:

* undefined results: ``can_overflow`` (signed integer overflow, found by recomputing in
  float64) or the hooks ``undefined`` / ``undefined_elements``;
* non-finite behaviour: ``nonfinite`` (:data:`IEEE`, :data:`INF_ONLY`, or nothing) or the
  hook ``defines_nonfinite``;
* rounding character: ``jumps`` (``discontinuous``), ``steerable``, ``exact_values``,
  ``cancels``, ``centred``, ``interpolates``, ``poles`` (read by ``dlgate.oracle.ub``);
* reference defects: ``reference_defect``, why ``onnx.reference`` computes an instance
  wrongly.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from dlgate import dtypes as dt

#: ``OpSpec.nonfinite`` values: IEEE 754 results for NaN and +/-Inf, or for +/-Inf only.
IEEE = frozenset({"nan", "inf"})
INF_ONLY = frozenset({"inf"})


class OracleFacts:
    """The oracle-facts part of ``OpSpec`` (see the module docstring)."""

    #: True for arithmetic whose integer results can overflow (see ``undefined``).
    can_overflow: ClassVar[bool] = False
    #: True for operators whose output jumps at some input values (Floor, Sign, comparisons,
    #: casts to integer, ArgMax...): a rounding-level difference upstream may flip them.
    jumps: ClassVar[bool] = False
    #: False for piecewise-constant operators with float outputs and no proxy derivative
    #: (Hardmax, Sign): gradient steps on their inputs do not move their outputs, so the
    #: input search can only re-sample values downstream of them (see the generator).
    steerable: ClassVar[bool] = True
    #: Facts the oracle's instability rule reads (``dlgate.oracle.ub``); an idiom or motif
    #: takes them from the operator it is named after (``onnx_op``) unless it sets its own.
    #: ``exact_values``: float results are exact in every compiler (the operator selects,
    #: moves or negates values, or converts, correctly rounded).
    exact_values: ClassVar[bool] = False
    #: ``cancels``: the result can cancel (Add, Sub, Sum): a compiler that fuses it with what
    #: made its operands leaves an error relative to the operands, not to the result.
    cancels: ClassVar[bool] = False
    #: ``centred``: a normalization that subtracts a mean from values of their own magnitude.
    centred: ClassVar[bool] = False
    #: ``interpolates``: weights can be negative (bicubic): the result keeps an error of a
    #: few units of the image's magnitude per tap.
    interpolates: ClassVar[bool] = False
    #: ``poles``: (the first pole, the period) of a function unbounded there (Tan).
    poles: ClassVar[tuple | None] = None
    #: The special values for which the ONNX specification defines this operator's result,
    #: element by element: ``"nan"`` and ``"inf"`` (+/-Inf) in its floating-point inputs,
    #: and the same values its own IEEE 754 arithmetic makes (overflow to inf, a pole,
    #: an argument outside the domain: Sqrt(-1) = NaN, Log(0) = -inf, 1 / 0 = inf). Empty
    #: (the default) where the specification does not say: Max or Relu of NaN, a
    #: reduction whose order decides between inf and NaN, ArgMax, TopK, comparisons.
    #: See ``defines_nonfinite`` and ``dlgate.ops.nonfinite``.
    nonfinite: ClassVar[frozenset] = frozenset()

    def undefined(self, a: dict, ins: list, out_types: list) -> str | None:
        """Why this instance's result is undefined on these inputs (PyTorch tensors), or
        None. By default, for ``can_overflow`` operators: a signed integer result beyond its
        type's range, found by recomputing in float64."""
        if not self.can_overflow:
            return None
        import torch

        wide = None
        for k, t in enumerate(out_types):
            if t.dtype not in dt.SIGNED:
                continue
            if wide is None:
                with torch.no_grad():
                    wide = self.torch(a, *[x if x.is_floating_point() else x.double() for x in ins])
                wide = list(wide) if isinstance(wide, (tuple, list)) else [wide]
            info = torch.iinfo(dt.torch_dtype(t.dtype))
            w = wide[k]
            if w.numel() and (w.max().item() > info.max or w.min().item() < info.min):
                return f"signed integer overflow: {t.dtype} results beyond [{info.min}, {info.max}]"
        return None

    def undefined_elements(self, a: dict, ins: list, out_types: list) -> list | None:
        """Where ``undefined`` finds a reason: for each output, a boolean mask (NumPy) of the
        elements whose result is undefined, or None when it cannot say (then the whole
        outputs are). By default, for ``can_overflow`` operators, the signed integer
        results beyond their type's range; None otherwise."""
        if not self.can_overflow:
            return None
        import torch

        with torch.no_grad():
            wide = self.torch(a, *[x if x.is_floating_point() else x.double() for x in ins])
        wide = list(wide) if isinstance(wide, (tuple, list)) else [wide]
        masks = []
        for t, w in zip(out_types, wide):
            if t.dtype not in dt.SIGNED or not isinstance(w, torch.Tensor):
                masks.append(np.zeros(tuple(getattr(w, "shape", ())), bool))
                continue
            info = torch.iinfo(dt.torch_dtype(t.dtype))
            masks.append(((w > info.max) | (w < info.min)).numpy())
        return masks
    def defines_nonfinite(self, a: dict, ins: list) -> frozenset:
        """The special values (``"nan"``, ``"inf"``) this instance, on inputs of the
        TensorTypes ``ins``, has a defined result for (see ``nonfinite``)."""
        return self.nonfinite

    def discontinuous(self, a: dict) -> bool:
        """Whether this instance's output can jump under a rounding-level input change."""
        return self.jumps

    def reference_defect(self, a: dict, ins: list, opset: int) -> str | None:
        """Why ONNX's reference evaluator (``onnx.reference``) computes this instance wrongly,
        or None. Generation does not avoid such instances (compilers must handle them); the
        reference is just not consulted for them."""
        return None
