"""Hand-written TIR programs (TVMScript, one PrimFunc ``main``) for the TIR mode's tests:
schedulable blocks with a reduction, plain loops of every kind, allocations, conditionals,
integer, float32 and float16 arithmetic and intrinsics. Tests pick among them by property
(``tir_faults.loses_a_lane``), never by name."""

HEADER = "# from tvm.script import tirx as T\n"

SEEDS = {
    "block_reduce": HEADER + '''
@T.prim_func(s_tir=True)
def main(x: T.Buffer((4, 8), "float32"), y: T.Buffer((8,), "float32"), o: T.Buffer((4,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for ax0, k1 in T.grid(4, 8):
        with T.sblock("red"):
            v0, v1 = T.axis.remap("SR", [ax0, k1])
            T.reads(x[v0, v1], y[v1])
            T.writes(o[v0])
            with T.init():
                o[v0] = T.float32(0.0)
            o[v0] = o[v0] + x[v0, v1] * y[v1]
''',
    "int_vector": HEADER + '''
@T.prim_func
def main(a: T.Buffer((16, 8), "int32"), b: T.Buffer((16, 8), "int32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.serial(16):
        for j in T.vectorized(8):
            b[i, j] = a[i, j] * 3 + T.max(a[i, j], j)
''',
    "alloc_branch": HEADER + '''
@T.prim_func
def main(a: T.Buffer((32,), "float32"), b: T.Buffer((32,), "float32")):
    T.func_attr({"tirx.noalias": True})
    t = T.alloc_buffer((32,), "float32")
    for i in T.unroll(32):
        t[i] = a[i] * T.float32(2.0)
    for i in T.parallel(4):
        for j in T.serial(8):
            if i * 8 + j < 30:
                b[i * 8 + j] = t[i * 8 + j] + T.exp(a[31 - i * 8 - j])
            else:
                b[i * 8 + j] = T.float32(0.0)
''',
    "half_vector": HEADER + '''
@T.prim_func
def main(a: T.Buffer((6, 4), "float16"), b: T.Buffer((6, 4), "float16"), c: T.Buffer((6, 4), "float16")):
    T.func_attr({"tirx.noalias": True})
    for i in T.serial(6):
        for j in T.vectorized(4):
            c[i, j] = a[i, j] * b[i, j] + T.float16(1.0)
''',
    "block_elementwise": HEADER + '''
@T.prim_func(s_tir=True)
def main(x: T.Buffer((3, 5), "float32"), y: T.Buffer((3, 5), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i0 in range(3):
        for i1 in T.vectorized(5):
            with T.sblock("relu"):
                v0, v1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v0, v1])
                T.writes(y[v0, v1])
                y[v0, v1] = T.max(x[v0, v1], T.float32(0.0)) - T.sqrt(T.fabs(x[v0, v1]))
''',
    "int_divmod": HEADER + '''
@T.prim_func
def main(a: T.Buffer((24,), "int32"), b: T.Buffer((24,), "int32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.serial(24):
        b[i] = T.floordiv(a[i], 3) + T.floormod(a[i] * 7, 5) - T.truncdiv(a[i], 4) + T.Select(a[i] > 0, i, 2)
''',
    "mixed": HEADER + '''
@T.prim_func
def main(a: T.Buffer((8, 8), "float32"), b: T.Buffer((8, 8), "float32"), c: T.Buffer((8,), "float32")):
    T.func_attr({"tirx.noalias": True})
    t = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        t[i] = T.float32(0.0)
        for k in T.serial(8):
            t[i] = t[i] + a[i, k]
    for i in T.parallel(8):
        if i % 2 == 0:
            c[i] = t[i] * T.float32(0.5)
        else:
            c[i] = T.max(t[i], T.float32(0.0))
    for i in T.serial(8):
        for j in T.vectorized(8):
            b[i, j] = a[i, j] - t[i]
    for i in T.unroll(4):
        c[i + 4] = c[i + 4] + c[i]
''',
}

#: Programs holding the narrow float dtypes TVM legalizes for ``llvm`` (``bfloat16``,
#: ``float8``): what the minimal sequence must build as TVM's default sequence does
#: (``tests/test_tir_false_alarms.py``, and each legalization pass's need in
#: ``tests/test_tir_passes.py``). Kept apart from :data:`SEEDS` so that the tests written
#: for those keep their programs.
NARROW_FLOATS = {
    "bf16_unused_param": HEADER + '''
@T.prim_func
def main(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32"), u: T.Buffer((3,), "bfloat16")):
    T.func_attr({"tirx.noalias": True})
    for i in T.vectorized(8):
        b[i] = a[i] * T.float32(2.0) + T.float32(1.0)
''',
    "bf16_erf_vector": HEADER + '''
@T.prim_func
def main(a: T.Buffer((4, 8), "bfloat16"), b: T.Buffer((4, 8), "bfloat16")):
    T.func_attr({"tirx.noalias": True})
    for i in T.serial(4):
        for j in T.vectorized(8):
            b[i, j] = T.erf(a[i, j]) * a[i, j] + T.bfloat16(0.5)
''',
    "fp8_to_float": HEADER + '''
@T.prim_func
def main(a: T.Buffer((16,), "float8_e4m3fn"), b: T.Buffer((16,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.vectorized(16):
        b[i] = T.Cast("float32", a[i]) + T.float32(1.0)
''',
}

#: A vectorized loop that does not start at 0 (written as the loop mutator's split writes
#: one): ``VectorizeLoop`` needs ``CanonicalizeLoop`` before it.
OFFSET_LOOPS = {
    "vector_from_two": HEADER + '''
@T.prim_func
def main(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.vectorized(2, 6):
        b[i] = a[i] + T.float32(1.0)
''',
    "vector_from_cast_zero": HEADER + '''
@T.prim_func
def main(a: T.Buffer((4, 8), "float32"), b: T.Buffer((4, 8), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i in range(4):
        for j in T.vectorized(T.Cast("int64", 0), T.Cast("int64", 0) + T.int64(8)):
            b[i, j] = a[i, j] * T.float32(3.0)
''',
}
