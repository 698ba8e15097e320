"""A planted Relax pass fault for the pass-list and TVMScript repro tests: it imports TVM
only (no dlgate, onnx or PyTorch), so a repro that names it runs in a clean environment
with this file copied beside it (``tests/relax_faults.py`` under the repro's folder).

``shift_symbolic_results`` miscompiles only where shapes are symbolic: every operator call
whose result's shape has a dimension that is not a constant gets its result changed (2x + 1,
or negated for bool). A module of static shapes passes through unchanged, so the fault is
caught on dynamic cases and silent on static ones.
"""
from __future__ import annotations

import os

import tvm
from tvm import relax, tirx


def symbolic(ty) -> bool:
    """Whether a tensor type's shape has a dimension that is not a constant."""
    shape = getattr(ty, "shape", None)
    return isinstance(ty, relax.TensorType) and isinstance(shape, relax.ShapeExpr) and \
        any(not isinstance(d, tirx.IntImm) for d in shape.values)


@relax.expr_functor.mutator
class _ShiftSymbolic(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not isinstance(call.op, tvm.ir.Op):
            return call
        res = self.builder_.emit(call)
        if not symbolic(res.ty):
            return res
        if res.ty.dtype == "bool":
            return relax.op.logical_not(res)
        # x -> 2x + 1: affine shifts that do not cancel through a negation (x + 1 would)
        twice = self.builder_.emit(relax.op.multiply(res, relax.const(2, res.ty.dtype)))
        return relax.op.add(twice, relax.const(1, res.ty.dtype))


@tvm.transform.module_pass(opt_level=0, name="ShiftSymbolicResults")
def shift_symbolic_results(mod, _ctx):
    """Every operator call with a symbolic result shape, changed: wrong only on symbolic shapes."""
    m = _ShiftSymbolic(mod)
    for gv, f in list(mod.functions.items()):
        if isinstance(f, relax.Function):
            m.builder_.update_func(gv, m.visit_expr(f))
    return m.builder_.get()


#: Set to ``1`` in a worker's environment, :func:`shift_private_calls` is the pass with the
#: fault fixed (a head-versus-base run's base build).
PRIVATE_CALLS_FIXED_ENV = "DLGATE_PRIVATE_CALLS_FIXED"


def _private(mod) -> set:
    """The module's private Relax functions (no global symbol: only another function calls them)."""
    return {gv for gv, f in mod.functions.items()
            if isinstance(f, relax.Function) and (f.attrs is None or "global_symbol" not in f.attrs)}


def _plus_one(x):
    return relax.op.logical_not(x) if x.ty.dtype == "bool" else relax.op.add(x, relax.const(1, x.ty.dtype))


@relax.expr_functor.mutator
class _ShiftPrivateCalls(relax.PyExprMutator):
    def __init__(self, mod, private):
        super().__init__(mod)
        self.private = private

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not (isinstance(call.op, relax.GlobalVar) and call.op in self.private):
            return call
        res = self.builder_.emit(call)
        if isinstance(res.ty, relax.TensorType):
            return _plus_one(res)
        items = [self.builder_.emit(relax.TupleGetItem(res, k)) for k in range(len(res.ty.fields))]
        return relax.Tuple([self.builder_.emit(_plus_one(i)) for i in items])


@tvm.transform.module_pass(opt_level=0, name="ShiftPrivateCallResults")
def shift_private_calls(mod, _ctx):
    """Every result of a call to a private function shifted (+1, or negated for bool): wrong
    only on a module with a private function, which TVM's ONNX importer never writes, so on
    the direct path alone (the pair's catch test in a campaign)."""
    private = _private(mod)
    if not private or os.environ.get(PRIVATE_CALLS_FIXED_ENV) == "1":
        return mod
    m = _ShiftPrivateCalls(mod, private)
    for gv, f in list(mod.functions.items()):
        if isinstance(f, relax.Function) and gv not in private:
            m.builder_.update_func(gv, m.visit_expr(f))
    return m.builder_.get()


def _cast_params(main) -> dict:
    """Position of each parameter of ``main`` that a ``match_cast`` of its body reads -> the
    type it is cast to (the first such cast)."""
    pos = {p: k for k, p in enumerate(main.params)}
    out: dict = {}
    for block in main.body.blocks:
        for b in block.bindings:
            if isinstance(b, relax.MatchCast) and b.value in pos:
                out.setdefault(pos[b.value], b.ty)
    return out


@tvm.transform.module_pass(opt_level=0, name="TrustParamCasts")
def trust_param_casts(mod, _ctx):
    """Each parameter of ``main`` that its body ``match_cast``s is redeclared as the type it
    is cast to, the declaration it was given dropped: a parameter declared wrongly is then
    taken as what the body reads, and the module runs on values of that type instead of
    failing ``main``'s check of its arguments (the Relax-level invalid catch test). A module
    whose parameters are cast to what they are declared as is unchanged."""
    if "main" not in [gv.name_hint for gv in mod.get_global_vars()]:
        return mod
    main = mod["main"]
    casts = {k: ty for k, ty in _cast_params(main).items() if str(ty) != str(main.params[k].ty)}
    if not casts:
        return mod
    new = {main.params[k]: relax.Var(str(main.params[k].name), ty) for k, ty in casts.items()}
    bound = main.bind_params(new)
    params = [new.get(p, p) for p in main.params]
    out = tvm.IRModule(dict(mod.functions_items()))
    out["main"] = relax.Function(params, bound.body, main.ret_ty, main.is_pure, main.attrs)
    return out


@relax.expr_functor.visitor
class _FindSin(relax.PyExprVisitor):
    def __init__(self):
        super().__init__()
        self.found = False

    def visit_call_(self, call):
        super().visit_call_(call)
        if isinstance(call.op, tvm.ir.Op) and call.op.name == "relax.sin":
            self.found = True


@tvm.transform.module_pass(opt_level=0, name="RefuseSin")
def refuse_sin(mod, _ctx):
    """Fails to compile any module that computes a sine, with the same words on either path:
    a defect both paths reach (the pair's test behind a failure)."""
    for f in mod.functions.values():
        if isinstance(f, relax.Function):
            v = _FindSin()
            v.visit_expr(f)
            if v.found:
                raise ValueError("planted: RefuseSin cannot compile relax.sin")
    return mod
