"""No false alarm from the TIR mode on a healthy TVM, and the oracle still sees a real fault
on the same kind of program. Each of dlgate's own mistakes that a healthy campaign on TVM
0.27 reported has two tests here: the program stays silent, and a planted fault on a
program of the same kind is still a finding.

1. ``bfloat16`` and ``float8`` programs: the minimal sequence lacked TVM's legalization
   passes and crashed or failed where TVM's default sequence builds.
2. A 0-d buffer was passed to the built function as a Python number (``TypeError: expected
   Tensor``), in the worker and in ``repro.py``.
3. Undefined behaviour the interpreter did not flag: a read of an allocated element never
   written (the interpreter stopped earlier, at TVM 0.27's ``prim.if_then_else``), and
   integer overflow (now flagged, as the float-to-integer conversion out of range is).
4. A run-time crash of a program whose behaviour is undefined (a ``%`` by a loaded zero:
   SIGFPE) was a crash finding: the interpreter is now asked first; the interpreter did not
   take lowered seeds' ``t0.view(n)`` buffers nor ``prim.ceil``, rounded stores into an
   allocated bfloat16 buffer (TVM computes it in float32), and propagated a NaN through
   ``min``/``max`` (unspecified in TVM); the loop mutator made a loop parallel around a
   parallel one, which TVM's CPU code generation refuses by design.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dlgate.exec.worker import Pool
from dlgate.tir import build as B
from dlgate.tir import interp as I
from dlgate.tir import oracle as O
from dlgate.tir import passes as P
from dlgate.tir import reduce as R
from tests.tir_seeds import HEADER, NARROW_FLOATS, OFFSET_LOOPS
from tests.tir_faults import with_fault

pytest.importorskip("tvm")




@pytest.fixture(scope="module")
def pool():
    with Pool(timeout_s=120) as p:
        yield p


# -- 1. bfloat16 and float8 ---------------------------------------------------------------------
def test_narrow_float_programs_build_with_the_minimal_sequence(pool):
    """Each bfloat16 or float8 program (an unused bfloat16 parameter, erf on bfloat16, a
    float8 load) builds with the minimal sequence and agrees with TVM's default one."""
    for name, text in NARROW_FLOATS.items():
        v = O.check(pool, text, P.default(), seed=7).verdict
        assert v.kind == O.OK_KIND, (name, v.to_json())
        v = O.check(pool, text, P.minimal(), seed=7).verdict
        assert v.kind == O.OK_KIND, (name, v.to_json())


def test_mutation_never_drops_the_legalization():
    import random

    rng, seq = random.Random(5), P.minimal()
    for _ in range(300):
        seq, _kind = P.mutate(seq, rng)
        assert [n for n in seq if n in P.LEGALIZE] == [n for n in P.minimal() if n in P.LEGALIZE]
        seq = seq if len(seq) < 60 else P.minimal()


def test_a_fault_on_a_narrow_float_program_is_still_found(pool):
    """The dropped vector lane on a bfloat16 program is an inconsistency, and a segfaulting
    pass a crash of the mutated build (not of the minimal one, as before the fix)."""
    from tests.tir_faults import loses_a_lane

    hit = [t for t in NARROW_FLOATS.values() if "bfloat16" in t and loses_a_lane(t)]
    assert hit
    for text in hit:
        v = O.check(pool, text, with_fault(P.default()), seed=7).verdict
        assert v.kind == O.INCONSISTENT and v.mismatch["against"] == "minimal", v.to_json()
    v = O.check(pool, hit[0], ["tests.tir_faults:segfault"] + P.minimal(), seed=7).verdict
    assert (v.kind, v.build) == (O.CRASH_KIND, "mutated"), v.to_json()


def test_erf_on_float16_is_still_the_real_finding(pool):
    """TVM 0.27 has no llvm lowering of erf for float16, with its own default sequence too:
    an exception of the minimal build, which the fix must not hide."""
    text = NARROW_FLOATS["bf16_erf_vector"].replace("bfloat16", "float16")
    v = O.check(pool, text, P.default(), seed=7).verdict
    assert (v.kind, v.build) == (O.EXCEPTION, "minimal") and v.gating(), v.to_json()
    assert "unknown intrinsic" in v.detail and "erf" in v.detail


# -- 2. 0-d buffers -------------------------------------------------------------------------
ZERO_D = HEADER + '''
@T.prim_func
def main(s: T.Buffer((), "float32"), a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32"), t: T.Buffer((), "int32"), n: T.int32):
    T.func_attr({"tirx.noalias": True})
    for i in T.vectorized(8):
        b[i] = a[i] * s[()] + T.Cast("float32", n)
    t[()] = n + 1
'''


def test_a_zero_d_buffer_is_passed_as_a_tensor(pool):
    mod = B.parse(ZERO_D)
    values = B.make_inputs(mod, 3)
    assert [type(v) for v in values[:4]] == [np.ndarray] * 4 and values[0].ndim == 0
    assert isinstance(values[4], np.integer)
    c = O.check(pool, ZERO_D, P.default(), seed=3)
    assert c.verdict.kind == O.OK_KIND, c.verdict.to_json()
    out = c.outcomes["minimal"].outputs
    assert int(out[3]) == int(values[4]) + 1  # the 0-d output was written through its tensor
    assert np.allclose(out[2], values[1] * values[0] + int(values[4]))
    assert c.outcomes["interp"].status == "ok"


def _repro(tmp_path, source: str) -> subprocess.CompletedProcess:
    path = tmp_path / "repro.py"
    path.write_text(source)
    return subprocess.run([sys.executable, "-I", str(path)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)


def test_a_fault_on_a_zero_d_program_is_found_and_its_repro_runs(pool, tmp_path):
    from tests.tir_faults import loses_a_lane

    assert loses_a_lane(ZERO_D)
    seq = with_fault(P.minimal())
    v = O.check(pool, ZERO_D, seq, seed=3).verdict
    assert v.kind == O.INCONSISTENT and v.mismatch["arg"] == 2, v.to_json()
    done = _repro(tmp_path, R.repro_source(ZERO_D, seq, v, seed=3))
    assert done.returncode == 1 and done.stdout.startswith("reproduced:"), done.stderr
    done = _repro(tmp_path, R.repro_source(ZERO_D, P.minimal(), v, seed=3))
    assert done.returncode == 0 and done.stdout.startswith("not reproduced"), done.stderr


# -- 3. undefined behaviour ---------------------------------------------------------------------
#: What a healthy campaign reported as an UnrollLoop inconsistency (dlgate's own reduction of
#: it): ``S`` is written at one element and read at 66, through TVM 0.27's
#: ``prim.if_then_else``, which the interpreter did not take, so it never reached the read.
UNWRITTEN = HEADER + '''
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    S = T.alloc_buffer((66,))
    for i in range(WRITTEN):
        S[i] = T.if_then_else(1 <= i and i < 65, A[T.max(i - 1, 0) % 64], T.float32(0.0))
    for i in T.unroll(64):
        B[i] = S[i] + S[i + 1] + S[i + 2]
'''


def test_reading_an_unwritten_allocation_is_undefined_not_an_inconsistency(pool):
    text = UNWRITTEN.replace("WRITTEN", "1")
    with pytest.raises(I.Unsupported, match="undefined: S read before it is written"):
        mod = B.parse(text)
        I.evaluate(mod["main"], B.make_inputs(mod, 1))
    for seq in (P.default(), P.minimal() + ["UnrollLoop"], with_fault(P.default())):
        v = O.check(pool, text, seq, seed=1).verdict
        assert v.kind in (O.OK_KIND, O.INVALID) and not v.finding, v.to_json()


def test_a_fault_on_the_written_allocation_is_found(pool):
    """The same stencil with every element of ``S`` written: the interpreter takes it (its
    conditional intrinsic included) and agrees; a dropped lane in a vectorized fill is an
    inconsistency (with the fault in both builds too: each then reads the element the fault
    left unwritten, and the interpreter, which wrote it, is no undefined reading)."""
    text = UNWRITTEN.replace("WRITTEN", "66").replace("for i in range(66)", "for i in T.vectorized(66)")
    c = O.check(pool, text, P.default(), seed=1)
    assert c.verdict.kind == O.OK_KIND and c.outcomes["interp"].status == "ok", c.verdict.to_json()
    v = O.check(pool, text, with_fault(P.default()), seed=1).verdict
    assert v.kind == O.INCONSISTENT and v.mismatch["against"] == "minimal", v.to_json()
    v = O.check(pool, text, with_fault(P.default()), seed=1, reference=with_fault(P.minimal())).verdict
    assert v.kind == O.INCONSISTENT, v.to_json()


OVERFLOW = HEADER + '''
@T.prim_func
def main(a: T.Buffer((8,), "int32"), b: T.Buffer((8,), "int32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.vectorized(8):
        b[i] = a[i] * FACTOR + 1
'''


def _interp(text: str, seed: int = 1):
    mod = B.parse(text)
    return I.evaluate(mod["main"], B.make_inputs(mod, seed))


def test_integer_overflow_is_undefined_in_the_interpreter():
    """Inputs are in [-8, 8): a factor of 2**29 overflows int32, 3 does not. Shifts by the
    width and out-of-range float-to-int conversions are undefined too; unsigned and signed
    values inside their range compute as LLVM does."""
    with pytest.raises(I.Unsupported, match="undefined: int32 multiplication overflows"):
        _interp(OVERFLOW.replace("FACTOR", str(2 ** 29)))
    a, b = _interp(OVERFLOW.replace("FACTOR", "3"))
    assert (b == a * 3 + 1).all()
    shift = OVERFLOW.replace("a[i] * FACTOR + 1", "T.shift_left(a[i], a[i] + 40)")
    with pytest.raises(I.Unsupported, match="undefined: int32 shift by (3[2-9]|4[0-7])"):
        _interp(shift)
    a, b = _interp(OVERFLOW.replace("a[i] * FACTOR + 1", "T.shift_right(a[i], 1) + T.popcount(a[i])"))
    assert (b == (a >> 1) + np.array([bin(int(x) & 0xFFFFFFFF).count("1") for x in a])).all()
    cast = OVERFLOW.replace("a[i] * FACTOR + 1", 'T.Cast("int32", T.Cast("float32", a[i]) * T.float32(1e10))')
    with pytest.raises(I.Unsupported, match="undefined: float to integer cast out of range"):
        _interp(cast)


def test_an_overflowing_program_is_not_an_inconsistency_but_a_fault_in_range_is(pool):
    """The dropped lane changes both programs' builds; only the one whose arithmetic stays in
    range is a finding."""
    bad, good = OVERFLOW.replace("FACTOR", str(2 ** 29)), OVERFLOW.replace("FACTOR", "3")
    v = O.check(pool, bad, with_fault(P.default()), seed=1).verdict
    assert (v.kind, v.stage) == (O.INVALID, "undefined") and "overflows" in v.detail, v.to_json()
    v = O.check(pool, good, with_fault(P.default()), seed=1).verdict
    assert v.kind == O.INCONSISTENT, v.to_json()


BF16_ROUND_TRIP = HEADER + '''
@T.prim_func
def main(a: T.Buffer((8,), "int32"), b: T.Buffer((8,), "int32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.vectorized(8):
        b[i] = T.Cast("int32", T.Cast("bfloat16", a[i] * 201 + 1))
'''


def test_bfloat16_is_computed_in_float32_as_tvm_legalizes_it(pool):
    """TVM computes a bfloat16 expression in float32 and rounds it only where it is stored:
    the interpreter does the same (it rounded each cast, and disagreed with both builds)."""
    mod = B.parse(BF16_ROUND_TRIP)
    values = B.make_inputs(mod, 2)
    a, b = I.evaluate(mod["main"], values)
    assert (b == a * 201 + 1).all()
    c = O.check(pool, BF16_ROUND_TRIP, P.default(), seed=2)
    assert c.verdict.kind == O.OK_KIND and c.outcomes["interp"].status == "ok", c.verdict.to_json()
    v = O.check(pool, BF16_ROUND_TRIP, with_fault(P.default()), seed=2).verdict
    assert v.kind == O.INCONSISTENT, v.to_json()


#: A parallel loop whose iteration 0 reads an element iteration 1 writes (a data race): what
#: a healthy campaign reported as an inconsistency of TVM's default sequence.
RACE = HEADER + '''
@T.prim_func
def main(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8, 16), "float32")):
    for i in T.KIND(4):
        for j in T.vectorized(2):
            A[2, i * 2 + j] = A[(i * 2 + 2) % 8, i * 2 + j + 1]
'''


def test_a_race_between_iterations_is_undefined_and_a_serial_loop_is_not(pool):
    race = RACE.replace("KIND", "parallel")
    with pytest.raises(I.Unsupported, match="undefined: A.* of a (parallel|vectorized) loop"):
        _interp(race)
    v = O.check(pool, race, with_fault(P.default()), seed=1).verdict
    assert not v.finding, v.to_json()
    serial = race.replace("T.parallel(4)", "T.serial(4)").replace("T.vectorized(2)", "T.serial(2)")
    _interp(serial)  # ordered iterations: defined
    lanes = HEADER + '''
@T.prim_func
def main(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8, 16), "float32")):
    for i in T.parallel(4):
        for j in T.vectorized(4):
            A[2 * i + 1, j] = A[2 * i, j] + A[2 * i, j + 4]
'''
    _interp(lanes)  # each iteration and lane writes its own element and reads no other's
    v = O.check(pool, lanes, with_fault(P.default()), seed=1).verdict
    assert v.kind == O.INCONSISTENT, v.to_json()


def test_the_build_the_interpreter_disagrees_with_is_the_one_blamed(pool):
    """A fault in the reference build only (the dropped lane in the minimal sequence, not in
    the mutated one): the interpreter sides with the mutated build, so the finding is the
    minimal build's, against the interpreter."""
    from tests.tir_faults import loses_a_lane

    text = ZERO_D
    assert loses_a_lane(text)
    v = O.check(pool, text, P.default(), seed=3, reference=with_fault(P.minimal())).verdict
    assert (v.kind, v.build, v.mismatch["against"]) == (O.INCONSISTENT, "minimal", "interp"), v.to_json()


def test_a_vectorized_loop_off_zero_builds_and_a_fault_in_it_is_found(pool):
    """``CanonicalizeLoop`` is in the minimal sequence: a vectorized loop that starts at 2, or
    at a zero TVM has not folded, builds; the dropped lane in it is still an inconsistency."""
    from tests.tir_faults import loses_a_lane

    assert "CanonicalizeLoop" in P.minimal()
    for text in OFFSET_LOOPS.values():
        c = O.check(pool, text, P.default(), seed=4)
        assert c.verdict.kind == O.OK_KIND and c.outcomes["interp"].status == "ok", c.verdict.to_json()
        assert O.check(pool, text, P.minimal(), seed=4).verdict.kind == O.OK_KIND
    hit = [t for t in OFFSET_LOOPS.values() if loses_a_lane(t)]
    assert hit
    for text in hit:
        v = O.check(pool, text, with_fault(P.default()), seed=4).verdict
        assert v.kind == O.INCONSISTENT, v.to_json()


def test_float8_results_compare_within_a_unit_in_the_last_place():
    """float8 is computed in float32 and rounded at the store, by TVM and by the
    interpreter; one rounding apart is no difference, two units are."""
    import ml_dtypes

    x = np.array([1.0, 1.125, -2.5], dtype=ml_dtypes.float8_e4m3fn)
    assert O.compare([x], [x.copy()]) is None
    near = np.array([1.125, 1.25, -2.5], dtype=ml_dtypes.float8_e4m3fn)  # one unit off at 1 and 1.125
    assert O.compare([near], [x]) is None
    far = np.array([1.5, 1.125, -2.5], dtype=ml_dtypes.float8_e4m3fn)
    assert O.compare([far], [x])["index"] == [0]


#: A float64 result cast from a sigmoid of a bfloat16 value (TVM legalizes the bfloat16
#: computation to float32): campaign tir-2h, step 208, reduced. LLVM's and NumPy's float32
#: sigmoids differ by a unit in the last place, which float64's tolerance would call a
#: difference.
SIGMOID_BF16 = '''
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((T.int64(11), T.int64(6), T.int64(7), T.int64(6)), "float64"), lv4: T.Buffer((), "float64"), T_maximum: T.Buffer((T.int64(11), T.int64(6), T.int64(7), T.int64(6)), "float64")):
        T.func_attr({"tirx.noalias": True})
        # with T.sblock("root"):
        for ax0, ax1, ax2, ax3 in T.grid(T.int64(11), T.int64(6), T.int64(7), T.int64(6)):
            with T.sblock("T_maximum"):
                v_ax0, v_ax1, v_ax2, v_ax3 = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                T.reads(A[v_ax0, v_ax1, v_ax2, v_ax3], lv4[()])
                T.writes(T_maximum[v_ax0, v_ax1, v_ax2, v_ax3])
                T_maximum[v_ax0, v_ax1, v_ax2, v_ax3] = T.sigmoid(T.Cast("bfloat16", T.max(A[v_ax0, v_ax1, v_ax2, v_ax3], lv4[()])))
'''


def test_a_float64_result_of_a_narrower_computation_compares_at_the_narrower_tolerance():
    assert O.loosest(SIGMOID_BF16) == "bfloat16"
    assert O.loosest('B: T.Buffer((4,), "float32") x = T.float16(0.5)') == "float16"
    assert O.loosest('B: T.Buffer((4,), "int32")') is None
    want = np.array([0.525583803653717, 0.25], np.float64)
    one_ulp = np.array([0.5255837440490723, 0.25], np.float64)  # a float32 unit apart
    assert O.compare([one_ulp], [want])["index"] == [0]  # float64 alone: a difference
    assert O.compare([one_ulp], [want], "bfloat16") is None
    assert O.compare([one_ulp], [want], "float32") is None
    far = np.array([0.53, 0.25], np.float64)  # beyond float32's tolerance, within bfloat16's
    assert O.compare([far], [want], "float32")["index"] == [0] and O.compare([far], [want], "bfloat16") is None
    wrong = np.array([0.9, 0.25], np.float64)  # a wrong value stays one at any floor
    assert O.compare([wrong], [want], "bfloat16")["index"] == [0]


def test_the_sigmoid_of_a_bfloat16_value_cast_to_float64_is_no_finding(pool):
    v = O.check(pool, SIGMOID_BF16, P.minimal(), seed=920066438).verdict
    assert v.kind == O.OK_KIND, v.to_json()


# -- 4. run-time crashes of undefined programs, and what the interpreter computed otherwise --------
MOD_BY_LOADED = HEADER + '''
@T.prim_func
def main(a: T.Buffer((4, 13), "int8"), d: T.Buffer((13,), "int8"), c: T.Buffer((4, 13), "int8")):
    T.func_attr({"tirx.noalias": True})
    a_1 = a.view(52)
    c_1 = c.view(52)
    for i, j in T.grid(4, 13):
        c_1[i * 13 + j] = a_1[i * 13 + j] % DIVISOR
'''


def test_a_trap_on_a_division_by_a_loaded_zero_is_undefined_not_a_crash(pool):
    """A graph seed's ``%`` by a loaded value (inputs in [-8, 8) hold zeros): the minimal
    build traps at run time (SIGFPE), which was a ``tir_crash``; the interpreter, which now
    takes the ``view``, calls the program undefined. With a divisor that is never zero the
    interpreter agrees with the build."""
    text = MOD_BY_LOADED.replace("DIVISOR", "d[j]")
    d = B.make_inputs(B.parse(text), 3)[1]
    assert (d == 0).any()
    v = O.check(pool, text, P.minimal(), seed=3).verdict
    assert (v.kind, v.stage) == (O.INVALID, "undefined") and "division by zero" in v.detail, v.to_json()
    c = O.check(pool, MOD_BY_LOADED.replace("DIVISOR", "(d[j] * d[j] + T.int8(1))"), P.default(), seed=3)
    assert c.verdict.kind == O.OK_KIND and c.outcomes["interp"].status == "ok", c.verdict.to_json()


def test_a_run_time_crash_of_a_defined_program_is_still_a_crash(pool):
    """A planted pass that moves every store far outside its buffer: the mutated build
    crashes when it runs, the interpreter finds the program defined: a crash finding."""
    text = MOD_BY_LOADED.replace("DIVISOR", "(d[j] * d[j] + T.int8(1))")
    v = O.check(pool, text, with_fault(P.minimal(), "tests.tir_faults:wild_store"), seed=3).verdict
    assert (v.kind, v.stage, v.build) == (O.CRASH_KIND, "run", "mutated"), v.to_json()


def test_int_min_remainder_by_minus_one_is_undefined():
    """LLVM's ``srem`` of INT_MIN by -1 is undefined (x86 traps) though the remainder, 0,
    fits. On int8 inputs in [-8, 8): ``a * 16`` is -128 where ``a`` is -8, and the divisor is
    always -1."""
    text = OVERFLOW.replace('"int32"', '"int8"').replace(
        "a[i] * FACTOR + 1", "T.truncmod(a[i] * T.int8(FACTOR), T.min(T.floordiv(a[i], T.int8(8)), T.int8(-1)))")
    assert (B.make_inputs(B.parse(text.replace("FACTOR", "16")), 1)[0] == -8).any()
    with pytest.raises(I.Unsupported, match="undefined: int8 division of -128 by -1"):
        _interp(text.replace("FACTOR", "16"))
    a, b = _interp(text.replace("FACTOR", "15"))
    assert (b == 0).all()


BF16_SCRATCH = HEADER + '''
@T.prim_func
def main(a: T.Buffer((8,), "float32"), c: T.Buffer((8,), "bfloat16")):
    scratch = T.alloc_buffer((8,), "bfloat16")
    for i in range(8):
        scratch[i] = T.Cast("bfloat16", a[i] * T.float32(3.0))
    for i in T.vectorized(8):
        c[i] = T.Cast("int8", scratch[i] * T.bfloat16(10.0))
'''


def test_an_allocated_bfloat16_buffer_holds_float32_as_tvm_legalizes_it(pool):
    """TVM's BF16ComputeLegalize makes an allocated bfloat16 buffer float32: a store into it
    does not round. Rounded there (as before), the interpreter's truncation to int8 fell on
    the other side of an integer (6.0 against 7.0 in a campaign); a dropped lane is found."""
    mod = B.parse(BF16_SCRATCH)
    _, c = I.evaluate(mod["main"], B.make_inputs(mod, 2))
    a = B.make_inputs(mod, 2)[0]
    want = np.trunc((a * np.float32(3.0)).astype(np.float32) * np.float32(10.0))
    rounded = np.trunc((a * np.float32(3.0)).astype(c.dtype).astype(np.float32) * np.float32(10.0))
    assert (rounded != want).any()  # the seed tells the two readings apart
    assert (c.astype(np.float32) == want.astype(c.dtype).astype(np.float32)).all()
    c = O.check(pool, BF16_SCRATCH, P.default(), seed=2)
    assert c.verdict.kind == O.OK_KIND and c.outcomes["interp"].status == "ok", c.verdict.to_json()
    v = O.check(pool, BF16_SCRATCH, with_fault(P.default()), seed=2).verdict
    assert v.kind == O.INCONSISTENT and v.mismatch["against"] == "minimal", v.to_json()


def test_min_of_a_nan_is_unspecified_and_ceil_is_known():
    """``min(sqrt(trunc(x)), y)`` for a negative ``x``: LLVM's select gives ``y``, NumPy's
    minimum NaN; TIR does not say, so the interpreter calls it undefined. ``T.ceil`` is
    ``prim.ceil`` in TVM 0.27 and is computed."""
    text = HEADER + '''
@T.prim_func
def main(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
    for i in range(8):
        b[i] = T.min(EXPR, a[i])
'''
    with pytest.raises(I.Unsupported, match="undefined: min of a NaN operand"):
        _interp(text.replace("EXPR", "T.sqrt(T.trunc(a[i]) - T.float32(3.0))"))
    a, b = _interp(text.replace("EXPR", "T.ceil(a[i])"))
    assert (b == np.minimum(np.ceil(a), a)).all()


def test_the_loop_mutator_never_nests_parallel_loops():
    """TVM's CPU code generation refuses a parallel loop in a parallel loop by design; the
    loop mutator made the outer of two loops parallel around an inner parallel one. It
    still makes the outer loop parallel where the inner one is not."""
    import random

    from dlgate.tir import ast as A
    from dlgate.tir.mutators import base as MB, loop

    def parallel(func) -> list:
        return [int(s.node.kind) == 1 for s in A.sites(func) if type(s.node).__name__ == "For"]

    text = HEADER + '''
@T.prim_func
def main(a: T.Buffer((4, 8), "int32"), b: T.Buffer((4, 8), "int32")):
    for i in range(4):
        for j in T.KIND(8):
            b[i, j] = a[i, j]
'''
    for kind, outer_parallel_ok in (("parallel", False), ("serial", True)):
        func, seen = B.parse(text.replace("KIND", kind))["main"], set()
        for k in range(150):
            out = loop.apply(func, random.Random(k), MB.Context("llvm"))
            if out is not None:
                seen.add(tuple(parallel(out)[:2]))
        assert all(sum(p) <= 1 for p in seen), (kind, seen)
        assert ((True, False) in seen) == outer_parallel_ok, (kind, seen)


class _Scripted:
    """A pool whose TIR jobs answer in order: the minimal build, the mutated one, the
    interpreter, the minimal build again (each an outcome with a list of arrays and times)."""

    def __init__(self, *answers):
        self.answers, self.on_phase = list(answers), None

    def execute(self, spec, model, inputs):
        return self.answers.pop(0)


def _ran(*arrays):
    from types import SimpleNamespace

    return SimpleNamespace(status="ok", outputs=[np.array(a, np.float32) for a in arrays] + [[]], error=None)


def test_builds_that_differ_where_the_minimal_build_differs_from_itself_are_no_finding():
    """Campaign tir-2h, root e: an ROI-pool seed whose batch index is -1 for some rows reads
    before its buffer; the interpreter ran out of steps (no word on undefined behaviour), and
    two builds of the same sequence differed in those rows. Without a third reference, a
    second minimal build that differs from the first says the program reads what it never
    wrote: invalid, not inconsistent. Where the minimal build repeats itself, the difference
    stays a finding."""
    from types import SimpleNamespace

    gave_up = SimpleNamespace(status="unsupported", outputs=[],
                              error={"message": "Unsupported: more than 50000 steps"})
    text = 'A: T.Buffer((2,), "float32")'
    v = O.check(_Scripted(_ran([1, 2]), _ran([1, 5]), gave_up, _ran([1, 7])), text, P.minimal()).verdict
    assert (v.kind, v.stage) == (O.INVALID, "nondeterministic"), v.to_json()
    v = O.check(_Scripted(_ran([1, 2]), _ran([1, 5]), gave_up, _ran([1, 2])), text, P.minimal()).verdict
    assert v.kind == O.INCONSISTENT and v.mismatch["against"] == "minimal", v.to_json()
