"""A small TIR interpreter in NumPy: the pass-free reference of the inconsistency oracle.

It walks the PrimFunc as written, before any pass, one element at a time: loops of every
kind run as serial loops (a parallel, vectorized or unrolled loop means the same thing),
schedulable blocks bind their iteration variables and run their ``init`` on a reduction's
first iteration, stores and loads go to flat NumPy arrays, and arithmetic is done on NumPy
scalars of the expression's dtype (float32 rounds as float32; bfloat16 and float8 are
computed in float32 and rounded where stored into a parameter, as TVM's legalization does;
an allocated buffer of those dtypes holds float32, as it does after legalization). Whatever it
does not know raises :class:`Unsupported` (the oracle then has no third reference, which is
not a finding).

It also tells undefined behaviour from a miscompilation: a load or store outside its
buffer, a read of an allocated buffer's element never written, an element one iteration of
a parallel or vectorized loop writes and another reads or writes, an integer division by zero,
integer arithmetic whose exact result leaves its dtype's range, a shift by a negative amount
or by the dtype's width or more, and a float-to-integer conversion of a value outside the
integer's range raise :class:`Unsupported` with a message starting ``undefined:``. Two
builds of such a program may legally differ, so the oracle does not call their difference a
finding.

Integer overflow is flagged here rather than kept out by the mutators, for three reasons:
whether it happens depends on the values at run time, which a mutator does not see; seeds
lowered from dlgate's graphs already hold integer arithmetic on loaded values; and TVM
makes it undefined in two places at once: its arithmetic simplifier rewrites integer
expressions as if they were mathematical integers (for every integer dtype), and its LLVM
code generation emits ``add``/``sub``/``mul`` of 32- and 64-bit integers with ``nsw`` (signed)
or ``nuw`` (unsigned) flags, whose overflow is poison. Flagging every integer dtype is the
conservative reading: an overflow only matters when the two builds differ, and then a
difference on such a program is not TVM's fault.
"""
from __future__ import annotations


import math

import numpy as np


class Unsupported(Exception):
    """The interpreter does not take this program (or it has undefined behaviour:
    ``undefined: ...``)."""


#: Most statements a program may execute (a few seconds of interpretation): a bound on a
#: reference meant for small programs, well inside a worker's timeout.
MAX_STEPS = 50_000

_UNARY = {
    "tirx.exp": np.exp, "tirx.log": np.log, "tirx.sqrt": np.sqrt, "tirx.tanh": np.tanh, "tirx.sin": np.sin,
    "tirx.cos": np.cos, "tirx.fabs": np.abs, "tirx.floor": np.floor, "tirx.ceil": np.ceil, "tirx.round": np.rint,
    "tirx.trunc": np.trunc, "prim.ceil": np.ceil, "prim.log2": np.log2, "tirx.sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tirx.exp2": np.exp2,
    "tirx.log2": np.log2, "tirx.log10": np.log10, "tirx.tan": np.tan, "tirx.atan": np.arctan,
    "tirx.rsqrt": lambda x: 1 / np.sqrt(x), "tirx.erf": lambda x: math.erf(float(x)),
}

#: Conditional intrinsics under TVM 0.27's names (``prim.``) and the older ones (``tirx.``).
_IF_THEN_ELSE = ("prim.if_then_else", "tirx.if_then_else")
_LIKELY = ("prim.likely", "tirx.likely")


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _key(obj) -> int:
    return obj.__chandle__()


def _dtype(e) -> str:
    return str(e.ty.dtype)


def _np_dtype(dtype: str):
    """The NumPy type a value of ``dtype`` is computed in: its own, except ``bfloat16`` and
    the ``float8`` types, which TVM's ``llvm`` pipeline computes in float32
    (``BF16ComputeLegalize``, ``FP8ComputeLegalize``): an expression of those dtypes, a cast
    to them included, keeps float32's precision, and is rounded only where it is stored
    into a parameter of that dtype (:func:`_storage_dtype`); an allocated buffer of that
    dtype holds float32 (:meth:`_Memory.add`)."""
    if dtype == "bfloat16" or dtype.startswith("float8"):
        return np.float32
    return _storage_dtype(dtype)


def _storage_dtype(dtype: str):
    """The NumPy type a buffer of ``dtype`` holds its elements in."""
    if dtype == "bool":
        return np.bool_
    try:
        return np.dtype(dtype).type
    except TypeError:
        raise Unsupported(f"dtype {dtype}") from None


def _int_result(value: int, dtype: str, what: str):
    """``value`` (an exact Python integer) as a NumPy scalar of the integer ``dtype``, or
    ``undefined:`` where it does not fit (see the module's text on overflow)."""
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise Unsupported(f"undefined: {dtype} {what} overflows ({value})")
    return np.dtype(dtype).type(value)


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))



def _layout(buf) -> tuple:
    """``(shape, strides, elem_offset)`` of a buffer as integers; Unsupported when symbolic."""
    try:
        return (tuple(int(d) for d in buf.ty.shape), tuple(int(d) for d in buf.ty.strides),
                int(buf.ty.elem_offset))
    except (TypeError, ValueError):
        raise Unsupported("symbolic shape, strides or offset") from None


def _row_major(shape: tuple) -> tuple:
    return tuple(int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape)))

class _Memory:
    """One flat array per buffer variable, with which of its elements were written (allocated
    buffers start unwritten; parameters start with their inputs)."""

    def __init__(self):
        self.data: dict = {}
        self.written: dict = {}
        self.shape: dict = {}
        self.strides: dict = {}
        self.root: dict = {}  # a view's key: the key of the buffer whose storage it shares

    def add(self, buf, values: np.ndarray | None):
        """A buffer: a parameter (``values``, its input, row-major) or an allocation (None).
        An allocation may have explicit strides (the memory mutator writes column-major
        ones): its elements then sit where the strides put them, so that a read of an
        element never written is seen whatever the layout."""
        shape, strides, offset = _layout(buf)
        if offset != 0 or (strides and values is not None):
            raise Unsupported("strided or offset parameter")
        if not strides:
            strides = _row_major(shape)
        k = _key(buf)
        size = 1 + sum((n - 1) * st for n, st in zip(shape, strides)) if all(shape) else 0
        if values is None:
            # an allocation holds its elements as they are computed: TVM's compute
            # legalization (``BF16ComputeLegalize``, ``FP8ComputeLegalize``) turns an
            # allocated bfloat16 or float8 buffer into a float32 one, so a store into it
            # does not round (only a parameter's storage is narrow)
            self.data[k] = np.zeros(size, dtype=_np_dtype(str(buf.ty.dtype)))
            self.written[k] = np.zeros(size, dtype=bool)
        else:
            self.data[k] = np.array(values, copy=True).reshape(-1)
            self.written[k] = np.ones(size, dtype=bool)
        self.shape[k] = shape
        self.strides[k] = strides

    def view(self, buf, data) -> None:
        """A buffer declared over another's storage (``T.decl_buffer(..., data=t0.data)``, as
        ``t0.view(n)`` prints: lowered seeds reshape their parameters so): its elements are the
        other buffer's, row-major over its own shape, of the same dtype."""
        args = getattr(data, "args", None)
        if getattr(getattr(data, "op", None), "name", "") != "tirx.buffer_data" or len(args) != 1:
            raise Unsupported("buffer declared over other data than a buffer's")
        base = self.root.get(_key(args[0]), _key(args[0]))
        if base not in self.data:
            raise Unsupported(f"buffer {args[0]} is not declared where the interpreter can see it")
        shape, strides, offset = _layout(buf)
        if strides or offset or str(buf.ty.dtype) != str(args[0].ty.dtype):
            raise Unsupported("strided, offset or retyped buffer view")
        if int(np.prod(shape, dtype=np.int64)) > self.data[base].size:
            raise Unsupported("buffer view larger than its storage")
        k = _key(buf)
        self.root[k] = base
        self.shape[k] = shape
        self.strides[k] = _row_major(shape)

    def flat(self, buf, idx: list) -> tuple:
        """``(the key of the storage, the element's offset in it)`` of ``buf[idx]``."""
        k = _key(buf)
        if k not in self.shape:
            raise Unsupported(f"buffer {buf} is not declared where the interpreter can see it")
        shape = self.shape[k]
        if len(idx) != len(shape):
            raise Unsupported("indices do not match the buffer's rank")
        off = 0
        for i, n, st in zip(idx, shape, self.strides[k]):
            i = int(i)
            if not 0 <= i < n:
                raise Unsupported(f"undefined: index {i} outside {buf}'s extent {n}")
            off += i * st
        return self.root.get(k, k), off


class _Lanes:
    """The accesses of one parallel or vectorized loop, by iteration. Such a loop's
    iterations may run in any order or in lockstep, so an element one iteration writes and
    another reads or writes makes the result depend on the schedule: a data race (parallel)
    or a lockstep hazard (vectorized), undefined either way. Buffers allocated inside the
    loop are each iteration's own and are not tracked."""

    def __init__(self, kind: str):
        self.kind = kind
        self.iteration = 0
        self.private: set = set()
        self.writer: dict = {}
        self.readers: dict = {}

    def access(self, k: int, off: int, write: bool, name: str) -> None:
        if k in self.private:
            return
        at, t = (k, off), self.iteration
        w = self.writer.get(at)
        if w is not None and w != t:
            raise Unsupported(f"undefined: {name}[{off}] is written by one iteration of a {self.kind} loop "
                              f"and {'written' if write else 'read'} by another")
        if write:
            if self.readers.get(at, {t}) - {t}:
                raise Unsupported(f"undefined: {name}[{off}] is read by one iteration of a {self.kind} loop "
                                  "and written by another")
            self.writer[at] = t
        else:
            self.readers.setdefault(at, set()).add(t)


#: Loop kinds whose iterations are not ordered (``ForKind``: 1 parallel, 2 vectorized).
_UNORDERED = {1: "parallel", 2: "vectorized"}


class _Interp:
    def __init__(self):
        self.mem = _Memory()
        self.env: dict = {}
        self.steps = 0
        self.lanes: list = []  # the enclosing parallel and vectorized loops, outermost first

    def _access(self, buf, k: int, off: int, write: bool) -> None:
        for lanes in self.lanes:
            lanes.access(k, off, write, str(buf.name))

    def _allocated(self, buf) -> None:
        self.mem.add(buf, None)
        for lanes in self.lanes:
            lanes.private.add(_key(buf))

    # -- statements ----------------------------------------------------------------------
    def stmt(self, s) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unsupported(f"more than {MAX_STEPS} steps")
        name = type(s).__name__
        fn = getattr(self, "s_" + name, None)
        if fn is None:
            raise Unsupported(f"statement {name}")
        fn(s)

    def s_SeqStmt(self, s):
        for x in s.seq:
            self.stmt(x)

    def s_For(self, s):
        if s.annotations and any(not str(k).startswith(("pragma_", "unroll")) for k in s.annotations):
            raise Unsupported("loop annotations")
        lo, n = int(self.expr(s.min)), int(self.expr(s.extent))
        k = _key(s.loop_var)
        dt = _np_dtype(_dtype(s.loop_var))
        kind = _UNORDERED.get(int(s.kind))
        if kind is not None:
            self.lanes.append(_Lanes(kind))
        try:
            for i in range(lo, lo + n):
                self.env[k] = dt(i)
                if kind is not None:
                    self.lanes[-1].iteration = i
                self.stmt(s.body)
        finally:
            if kind is not None:
                self.lanes.pop()
        self.env.pop(k, None)

    def s_While(self, s):
        while bool(self.expr(s.condition)):
            self.stmt(s.body)
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise Unsupported(f"more than {MAX_STEPS} steps")

    def s_IfThenElse(self, s):
        if bool(self.expr(s.condition)):
            self.stmt(s.then_case)
        elif s.else_case is not None:
            self.stmt(s.else_case)

    def s_BufferStore(self, s):
        k, off = self.mem.flat(s.buffer, [self.expr(i) for i in s.indices])
        v = self.expr(s.value)
        arr = self.mem.data[k]
        if np.ndim(v) != 0:
            raise Unsupported("vector store")
        self._access(s.buffer, k, off, True)
        arr[off] = v
        self.mem.written[k][off] = True

    def s_AllocBuffer(self, s):
        self._allocated(s.buffer)

    def s_DeclBuffer(self, s):
        self.mem.view(s.buffer, s.data)

    def s_Bind(self, s):
        self.env[_key(s.var)] = self.expr(s.value)

    def s_AttrStmt(self, s):
        # a pragma is a hint to the passes (an unroll step, a partition hint): no semantics
        if not str(s.attr_key).startswith("pragma_"):
            raise Unsupported(f"attribute {s.attr_key}")
        self.stmt(s.body)

    def s_Evaluate(self, s):
        self.expr(s.value)

    def s_SBlockRealize(self, s):
        b = s.block
        if b.match_buffers:
            raise Unsupported("match_buffer")
        values = [self.expr(v) for v in s.iter_values]
        if not bool(self.expr(s.predicate)):
            return
        for iv, v in zip(b.iter_vars, values):
            self.env[_key(iv.var)] = _np_dtype(_dtype(iv.var))(v)
        for buf in b.alloc_buffers:
            self._allocated(buf)
        if b.init is not None:
            reduce_vars = [(iv, v) for iv, v in zip(b.iter_vars, values) if int(iv.iter_type) == 2]
            if all(int(v) == int(self.expr(iv.dom.min)) for iv, v in reduce_vars):
                self.stmt(b.init)
        self.stmt(b.body)

    # -- expressions ---------------------------------------------------------------------
    def expr(self, e):
        name = type(e).__name__
        fn = getattr(self, "e_" + name, None)
        if fn is None:
            raise Unsupported(f"expression {name}")
        return fn(e)

    def e_IntImm(self, e):
        return _np_dtype(_dtype(e))(int(e.value))

    def e_FloatImm(self, e):
        return _np_dtype(_dtype(e))(float(e.value))

    def e_Var(self, e):
        k = _key(e)
        if k not in self.env:
            raise Unsupported(f"free variable {e}")
        return self.env[k]

    def e_TensorLoad(self, e):  # a buffer load (BufferLoad before TVM 0.27)
        buf = e.source
        k, off = self.mem.flat(buf, [self.expr(i) for i in e.indices])
        if not self.mem.written[k][off]:
            raise Unsupported(f"undefined: {buf} read before it is written")
        self._access(buf, k, off, False)
        return self.mem.data[k][off]

    def e_Cast(self, e):
        v = self.expr(e.value)
        dt = _dtype(e)
        if dt.startswith(("int", "uint")) and isinstance(v, np.floating):
            if not np.isfinite(v) or not np.iinfo(dt).min <= v <= np.iinfo(dt).max:
                raise Unsupported("undefined: float to integer cast out of range")
        with np.errstate(all="ignore"):
            return np.array(v).astype(_np_dtype(dt))[()]

    def _bin(self, e, op):
        a, b = self.expr(e.a), self.expr(e.b)
        with np.errstate(all="ignore"):
            return np.array(op(a, b)).astype(_np_dtype(_dtype(e)))[()]

    def _arith(self, e, op, what: str):
        """``+``, ``-``, ``*``: exact on integers (an overflow is undefined), in the dtype's
        precision on floats."""
        dt = _dtype(e)
        if not _is_int(dt):
            return self._bin(e, op)
        return _int_result(op(int(self.expr(e.a)), int(self.expr(e.b))), dt, what)

    def e_Add(self, e):
        return self._arith(e, lambda a, b: a + b, "addition")

    def e_Sub(self, e):
        return self._arith(e, lambda a, b: a - b, "subtraction")

    def e_Mul(self, e):
        return self._arith(e, lambda a, b: a * b, "multiplication")

    def _shift(self, e, left: bool):
        """A shift: by a negative amount or by the dtype's width or more it is undefined (LLVM's
        poison); a left shift out of the dtype's range is an overflow; a right shift of a
        signed value is arithmetic, as TVM's code generation emits it."""
        dt = _dtype(e)
        if not _is_int(dt):
            raise Unsupported(f"shift of {dt}")
        a, b = int(self.expr(e.a)), int(self.expr(e.b))
        if not 0 <= b < np.iinfo(dt).bits:
            raise Unsupported(f"undefined: {dt} shift by {b}")
        return _int_result(a << b, dt, "left shift") if left else np.dtype(dt).type(a >> b)

    def e_LShift(self, e):
        return self._shift(e, True)

    def e_RShift(self, e):
        return self._shift(e, False)

    def _bitwise(self, e, op):
        dt = _dtype(e)
        if not _is_int(dt):
            raise Unsupported(f"bitwise operation on {dt}")
        a, b = self.expr(e.a), self.expr(e.b)
        return np.array(op(np.dtype(dt).type(a), np.dtype(dt).type(b))).astype(dt)[()]

    def e_BitwiseAnd(self, e):
        return self._bitwise(e, np.bitwise_and)

    def e_BitwiseOr(self, e):
        return self._bitwise(e, np.bitwise_or)

    def e_BitwiseXor(self, e):
        return self._bitwise(e, np.bitwise_xor)

    def e_BitwiseNot(self, e):
        dt = _dtype(e)
        if not _is_int(dt):
            raise Unsupported(f"bitwise operation on {dt}")
        return np.invert(np.dtype(dt).type(self.expr(e.a)))

    def _minmax(self, e, op, what: str):
        """``min`` and ``max``. Of a NaN operand the result is unspecified in TIR: LLVM code
        generation selects (``a < b ? a : b``, so ``min(NaN, b)`` is ``b`` and ``min(a, NaN)``
        NaN) and the simplifier freely commutes the operands, so two builds may differ."""
        a, b = self.expr(e.a), self.expr(e.b)
        if isinstance(a, np.floating) and (np.isnan(a) or np.isnan(b)):
            raise Unsupported(f"undefined: {what} of a NaN operand")
        with np.errstate(all="ignore"):
            return np.array(op(a, b)).astype(_np_dtype(_dtype(e)))[()]

    def e_Min(self, e):
        return self._minmax(e, np.minimum, "min")

    def e_Max(self, e):
        return self._minmax(e, np.maximum, "max")

    def _div(self, e, ints, floats):
        """A division of ``e``'s kind: ``ints`` on Python integers (division by zero is
        undefined), ``floats`` on NumPy floats (IEEE: infinities and NaN)."""
        a, b = self.expr(e.a), self.expr(e.b)
        dt = _np_dtype(_dtype(e))
        if isinstance(a, np.floating):
            with np.errstate(all="ignore"):
                return np.array(floats(a, b)).astype(dt)[()]
        if int(b) == 0:
            raise Unsupported("undefined: integer division by zero")
        dt = _dtype(e)
        if int(b) == -1 and dt.startswith("int") and int(a) == np.iinfo(dt).min:
            # INT_MIN / -1 overflows, and so does the remainder: LLVM's ``sdiv`` and ``srem``
            # (which TVM's ``%`` and ``floormod`` lower to) are undefined there, and x86 traps
            raise Unsupported(f"undefined: {dt} division of {int(a)} by -1")
        return _int_result(ints(int(a), int(b)), dt, "division")

    def e_Div(self, e):  # truncating for integers (C's), true division for floats
        return self._div(e, _truncdiv, lambda a, b: a / b)

    def e_Mod(self, e):  # truncating remainder for integers (C's %)
        return self._div(e, lambda a, b: a - b * _truncdiv(a, b), np.fmod)

    def e_FloorDiv(self, e):
        return self._div(e, lambda a, b: a // b, lambda a, b: np.floor(a / b))

    def e_FloorMod(self, e):
        return self._div(e, lambda a, b: a % b, lambda a, b: a - np.floor(a / b) * b)

    def _cmp(self, e, op):
        return np.bool_(op(self.expr(e.a), self.expr(e.b)))

    def e_EQ(self, e):
        return self._cmp(e, lambda a, b: a == b)

    def e_NE(self, e):
        return self._cmp(e, lambda a, b: a != b)

    def e_LT(self, e):
        return self._cmp(e, lambda a, b: a < b)

    def e_LE(self, e):
        return self._cmp(e, lambda a, b: a <= b)

    def e_GT(self, e):
        return self._cmp(e, lambda a, b: a > b)

    def e_GE(self, e):
        return self._cmp(e, lambda a, b: a >= b)

    def e_And(self, e):
        return np.bool_(bool(self.expr(e.a)) and bool(self.expr(e.b)))

    def e_Or(self, e):
        return np.bool_(bool(self.expr(e.a)) or bool(self.expr(e.b)))

    def e_Not(self, e):
        return np.bool_(not bool(self.expr(e.a)))

    def e_Select(self, e):
        c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        return t if bool(c) else f

    def e_Let(self, e):
        k = _key(e.var)
        self.env[k] = self.expr(e.value)
        try:
            return self.expr(e.body)
        finally:
            self.env.pop(k, None)

    def e_Call(self, e):
        op = getattr(e.op, "name", "")
        dt = _np_dtype(_dtype(e))
        if op in _IF_THEN_ELSE:
            c = self.expr(e.args[0])
            return self.expr(e.args[1] if bool(c) else e.args[2])
        if op in _LIKELY:
            return self.expr(e.args[0])
        if op == "tirx.popcount" and len(e.args) == 1 and _is_int(_dtype(e.args[0])):
            v = int(self.expr(e.args[0])) & ((1 << np.iinfo(_dtype(e.args[0])).bits) - 1)
            return dt(bin(v).count("1"))
        fn = _UNARY.get(op)
        if fn is None or len(e.args) != 1:
            raise Unsupported(f"call {op}")
        with np.errstate(all="ignore"):
            return np.array(fn(self.expr(e.args[0]))).astype(dt)[()]


def evaluate(func, values: list) -> list:
    """Every argument of ``func`` (a PrimFunc as written) after running it on ``values`` (one
    per parameter, as :func:`dlgate.tir.build.make_inputs` makes them): the same list a
    build's run returns. :class:`Unsupported` when it cannot."""
    from tvm import tirx  # local: optional compiler, imported where it runs

    it = _Interp()
    for p, v in zip(func.params, values):
        if isinstance(p.ty, tirx.buffer.BufferType):
            it.mem.add(p, v)
        else:
            it.env[_key(p)] = np.array(v).astype(_np_dtype(str(p.ty.dtype)))[()]
    it.stmt(func.body)
    out = []
    for p, v in zip(func.params, values):
        if isinstance(p.ty, tirx.buffer.BufferType):
            out.append(it.mem.data[_key(p)].reshape(np.shape(v)))  # parameters are row-major
        else:
            out.append(np.array(v, copy=True))
    return out
