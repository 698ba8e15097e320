"""A planted TIR pass fault for the TIR mode's tests: it imports TVM only (no dlgate), so a
repro that names it carries this module's source and runs with TVM and NumPy alone.

``short_vector_loop`` mis-rewrites a loop bound under vectorization: every vectorized loop
with a constant extent above 1 loses its last iteration (extent - 1), so the last lane's
store is dropped. Placed before ``VectorizeLoop``, it miscompiles any program with such a
loop and leaves every other program unchanged.
"""
from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.tirx.stmt import BufferStore, For, ForKind, IfThenElse, SeqStmt


def _shorten(stmt):
    """``stmt`` with each vectorized loop of constant extent above 1 one iteration shorter
    (through loops, sequences and conditionals; any other statement is left as it is)."""
    if isinstance(stmt, For):
        body = _shorten(stmt.body)
        extent = stmt.extent
        if int(stmt.kind) == int(ForKind.VECTORIZED) and isinstance(extent, tirx.IntImm) and int(extent) > 1:
            extent = tirx.IntImm(str(extent.ty.dtype), int(extent) - 1)
        return For(stmt.loop_var, stmt.min, extent, stmt.kind, body, stmt.thread_binding, stmt.annotations,
                   stmt.step)
    if isinstance(stmt, SeqStmt):
        return SeqStmt([_shorten(s) for s in stmt.seq])
    if isinstance(stmt, IfThenElse):
        other = None if stmt.else_case is None else _shorten(stmt.else_case)
        return IfThenElse(stmt.condition, _shorten(stmt.then_case), other)
    return stmt


@tirx.transform.prim_func_pass(opt_level=0, name="ShortVectorLoop")
def short_vector_loop(func, _mod, _ctx):
    return func.with_body(_shorten(func.body))


def loses_a_lane(text: str) -> bool:
    """Whether the fault changes the program: it has a vectorized loop of constant extent
    above 1 that the pass reaches (what a test selects its programs by)."""
    mod = tvm.script.from_source(text)
    mod = mod if isinstance(mod, tvm.IRModule) else tvm.IRModule({"main": mod})
    from tvm import s_tir

    # where the pass runs: after the blocks are lowered and the buffers flattened
    mod = tvm.transform.Sequential([s_tir.transform.LowerInitBlock(), s_tir.transform.ConvertBlocksToOpaque(),
                                    s_tir.transform.LowerOpaqueBlock(), tirx.transform.FlattenBuffer()])(mod)
    body = mod["main"].body
    return not tvm_ffi.structural_equal(_shorten(body), body)


@tirx.transform.prim_func_pass(opt_level=0, name="SegfaultPass")
def segfault(func, _mod, _ctx):
    """A pass that crashes the process (a null read), as a TVM pass that dereferences a
    dangling pointer would: the oracle must see a signal, never a finding lost."""
    import ctypes

    ctypes.string_at(0)
    return func


#: How many times ``repeat_body`` runs the body.
REPEATS = 64


@tirx.transform.prim_func_pass(opt_level=0, name="RepeatBody")
def repeat_body(func, _mod, _ctx):
    """A pessimization: the whole body runs ``REPEATS`` times (a serial loop around it). The
    result is unchanged for a program whose body gives the same result run twice (it reads
    no argument it writes)."""
    r = tirx.Var("rep", "int32")
    return func.with_body(For(r, tirx.IntImm("int32", 0), tirx.IntImm("int32", REPEATS), ForKind.SERIAL, func.body))


@tirx.transform.prim_func_pass(opt_level=0, name="HangPass")
def hang(func, _mod, _ctx):
    """A pass that never returns, as a pass caught in an endless rewrite would."""
    import time

    while True:
        time.sleep(1)


#: How a test names the lane-dropping fault in a pass sequence (the worker imports it).
SHORT_VECTOR_LOOP = "tests.tir_faults:short_vector_loop"


def with_fault(seq: list, fault: str = SHORT_VECTOR_LOOP) -> list:
    """``seq`` with ``fault`` just before VectorizeLoop (where loops still have their bounds)."""
    k = seq.index("VectorizeLoop")
    return seq[:k] + [fault] + seq[k:]


def _far(stmt):
    """``stmt`` with each store's last index moved 2**34 elements further (through loops,
    sequences and conditionals): far outside any buffer, into memory no process maps."""
    if isinstance(stmt, For):
        return For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, _far(stmt.body), stmt.thread_binding,
                   stmt.annotations, stmt.step)
    if isinstance(stmt, SeqStmt):
        return SeqStmt([_far(s) for s in stmt.seq])
    if isinstance(stmt, IfThenElse):
        return IfThenElse(stmt.condition, _far(stmt.then_case), None if stmt.else_case is None else _far(stmt.else_case))
    if isinstance(stmt, BufferStore):
        *head, last = stmt.indices
        moved = tirx.Cast("int64", last) + tirx.IntImm("int64", 2 ** 34)
        return BufferStore(stmt.buffer, stmt.value, [*head, moved])
    return stmt


@tirx.transform.prim_func_pass(opt_level=0, name="WildStore")
def wild_store(func, _mod, _ctx):
    """A miscompilation that crashes the built program when it runs (a store 2**34 elements
    past its buffer: SIGSEGV), as a pass that botches an index would: the program itself is
    defined, so the run-time crash stays a finding."""
    return func.with_body(_far(func.body))
