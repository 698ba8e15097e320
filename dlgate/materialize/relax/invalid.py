"""Invalid Relax modules on purpose: a module ``to_relax`` built, with one parameter of
``main`` declared otherwise than the graph's input it stands for (the Relax side of
:mod:`dlgate.invalid`).

- ``param_dtype``: the parameter's declared dtype is another one (float32 declared int32);
- ``param_shape``: one static dimension of the parameter is one larger.

``main`` is rebuilt around the new parameter (``bind_params``, which infers its bindings
again), so what no longer holds is a ``match_cast`` of the parameter to its first type and
``main``'s declared return type. Given the graph's inputs, the VM's check of ``main``'s
arguments must raise; given values of the declared type (``TVMRelaxInvalid``'s option
``declared``), the ``match_cast`` must. A crash, a hang, or a run to completion is a finding,
judged by :func:`dlgate.invalid.oracle.judge` as the ONNX rules are.
"""
from __future__ import annotations

import random

import tvm
from tvm import relax, tirx

RULES = ("param_dtype", "param_shape")
#: Dtypes a parameter may be declared instead of its own.
_DTYPES = ("float16", "float32", "float64", "int8", "int32", "int64", "uint8", "bool")


def _dims(ty) -> list | None:
    """The static dimensions of a tensor type, or None (symbolic or unknown)."""
    shape = getattr(ty, "shape", None)
    if not isinstance(shape, relax.ShapeExpr):
        return None
    out = []
    for d in shape.values:
        if not isinstance(d, tirx.IntImm):
            return None
        out.append(int(d.value))
    return out


def _sites(main) -> list:
    out = []
    for k, p in enumerate(main.params):
        ty = p.ty
        if not isinstance(ty, relax.TensorType):
            continue
        out.append(("param_dtype", k))
        if _dims(ty):
            out.append(("param_shape", k))
    return out


def disrupt(mod: tvm.IRModule, seed: int) -> tuple:
    """``(module, info)``: ``mod`` with one parameter of ``main`` declared wrongly, drawn from
    ``seed``; ValueError when ``main`` has no tensor parameter."""
    rng = random.Random(seed)
    main = mod["main"]
    sites = sorted(_sites(main))
    if not sites:
        raise ValueError("main has no tensor parameter to declare wrongly")
    rule, k = rng.choice(sites)
    p = main.params[k]
    ty = p.ty
    name = str(p.name) if hasattr(p, "name") else f"p{k}"
    if rule == "param_dtype":
        dtype = rng.choice([d for d in _DTYPES if d != str(ty.dtype)])
        out = redeclare(mod, k, dtype=dtype)
        detail = f"parameter {k} ({name}) declared {dtype}, used as {ty.dtype}"
    else:
        dims = _dims(ty)
        a = rng.randrange(len(dims))
        wide = dims[:a] + [dims[a] + 1] + dims[a + 1:]
        out = redeclare(mod, k, dims=wide)
        detail = f"parameter {k} ({name}) declared {wide}, used as {dims}"
    wrong = out["main"].params[k].ty
    declared = {"dtype": str(wrong.dtype), "shape": _dims(wrong)}
    return out, {"rule": rule, "node": name, "op_type": "main", "index": k, "detail": detail, "declared": declared,
                 "breaks": "a parameter's declared struct info does not hold for what its body reads"}


def how(info: dict) -> dict:
    """The keywords of :func:`redeclare` that remake the module of ``info`` (``disrupt``'s)."""
    declared = info["declared"]
    return {"dtype": declared["dtype"]} if info["rule"] == "param_dtype" else {"dims": list(declared["shape"])}


def redeclare(mod, k, dtype=None, dims=None):
    """``mod`` with parameter ``k`` of ``main`` declared as ``dtype`` (its shape or rank kept)
    or as the static shape ``dims`` (its dtype kept), ``main`` rebuilt around it
    (``bind_params`` infers its bindings again). Written with TVM's API alone: a TVMScript
    repro of a Relax-level invalid finding holds this function's source
    (:mod:`dlgate.reduce.tvmscript_invalid`) and makes the module with it."""
    main = mod["main"]
    p = main.params[k]
    ty = p.ty
    if dims is None:
        wrong = relax.TensorType(ty.shape, dtype) if ty.shape is not None else relax.TensorType(dtype=dtype,
                                                                                                   ndim=ty.ndim)
    else:
        wrong = relax.TensorType(relax.ShapeExpr(list(dims)), ty.dtype)
    var = relax.Var(str(p.name) if hasattr(p, "name") else f"p{k}", wrong)
    bound = main.bind_params({p: var})
    params = list(bound.params)
    params.insert(k, var)
    func = relax.Function(params, bound.body, main.ret_ty, main.is_pure, main.attrs)
    out = tvm.IRModule(dict(mod.functions_items()))
    out["main"] = func
    return out
