"""The NumPy TIR interpreter: the semantics it gives the programs TVM builds (integer
division and remainder, dtype rounding and wrapping, block reductions, conditionals) and the
undefined behaviour it refuses to give any."""
from __future__ import annotations

import numpy as np
import pytest

from dlgate.tir.build import make_inputs, parse
from dlgate.tir.interp import Unsupported, evaluate
from tests.tir_seeds import HEADER, SEEDS

pytest.importorskip("tvm")


def run(text: str, seed: int = 0) -> tuple:
    mod = parse(text)
    values = make_inputs(mod, seed)
    return values, evaluate(mod["main"], values)


def test_inputs_are_deterministic_and_typed():
    for text in SEEDS.values():
        a, b = make_inputs(parse(text), 9), make_inputs(parse(text), 9)
        assert all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))
        c = make_inputs(parse(text), 10)
        assert any(x.tobytes() != y.tobytes() for x, y in zip(a, c))


def test_block_reduction_is_a_matrix_vector_product():
    text = next(t for t in SEEDS.values() if "T.init()" in t)
    (x, y, _), (_, _, o) = run(text)
    np.testing.assert_allclose(o, (x * y).sum(axis=1), rtol=1e-6)


def test_integer_division_semantics():
    text = HEADER + '''
@T.prim_func
def main(a: T.Buffer((16,), "int32"), q: T.Buffer((16, 4), "int32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.serial(16):
        q[i, 0] = T.floordiv(a[i], 3)
        q[i, 1] = T.floormod(a[i], 3)
        q[i, 2] = T.truncdiv(a[i], 3)
        q[i, 3] = T.truncmod(a[i], 3)
'''
    (a, _), (_, q) = run(text)
    assert (a < 0).any() and (a > 0).any()
    assert (q[:, 0] == a // 3).all() and (q[:, 1] == a % 3).all()
    assert (q[:, 2] == np.trunc(a / 3)).all() and (q[:, 3] == np.fmod(a, 3)).all()


def test_int8_computes_in_range_overflow_is_undefined_and_float16_rounds():
    """int8 arithmetic inside int8's range is exact; out of it, undefined (TVM's simplifier
    treats integers as mathematical ones, whatever their width)."""
    text = HEADER + '''
@T.prim_func
def main(a: T.Buffer((8,), "int8"), h: T.Buffer((8,), "float16"), o: T.Buffer((8,), "int8"), p: T.Buffer((8,), "float16")):
    T.func_attr({"tirx.noalias": True})
    for i in T.serial(8):
        o[i] = a[i] * T.int8(FACTOR)
        p[i] = h[i] * h[i] + T.float16(0.1)
'''
    (a, h, _, _), (_, _, o, p) = run(text.replace("FACTOR", "15"))
    assert o.dtype == np.int8 and (o == (a.astype(np.int8) * np.int8(15))).all()
    assert p.dtype == np.float16 and (p == h * h + np.float16(0.1)).all()
    assert np.abs(a).max() > 3  # so that 40 times it leaves int8's range
    with pytest.raises(Unsupported, match="undefined: int8 multiplication overflows"):
        run(text.replace("FACTOR", "40"))


@pytest.mark.parametrize("body, why", [
    ("b[i] = a[i + 1]", "outside"),
    ("b[i] = t[i]", "before it is written"),
    ("b[i] = a[i] // (a[i] - a[i])", "division by zero"),
])
def test_undefined_behaviour_is_refused(body, why):
    text = HEADER + f'''
@T.prim_func
def main(a: T.Buffer((8,), "int32"), b: T.Buffer((8,), "int32")):
    T.func_attr({{"tirx.noalias": True}})
    t = T.alloc_buffer((8,), "int32")
    for i in T.serial(8):
        {body}
'''
    with pytest.raises(Unsupported, match=f"undefined: .*{why}"):
        run(text)


def test_a_long_program_is_refused_not_interpreted_for_ever():
    text = HEADER + '''
@T.prim_func
def main(a: T.Buffer((1,), "int32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.serial(300):
        for j in T.serial(300):
            a[0] = a[0] + 1
'''
    with pytest.raises(Unsupported, match="more than"):
        run(text)


def test_a_pragma_attribute_runs_its_body_and_another_attribute_is_not_taken():
    """A pragma (an AttrStmt such as ``pragma_auto_unroll_max_step``) is a hint to the
    passes: the body runs as without it. An attribute that may carry meaning is refused."""
    body = '''
    with T.attr({"KEY": 16}):
        for i in T.serial(8):
            b[i] = a[i] * 2
'''
    text = HEADER + '''
@T.prim_func
def main(a: T.Buffer((8,), "int32"), b: T.Buffer((8,), "int32")):
    T.func_attr({"tirx.noalias": True})''' + body
    (a, _), (_, b) = run(text.replace("KEY", "pragma_auto_unroll_max_step"))
    assert (b == a * 2).all()
    with pytest.raises(Unsupported, match="attribute double_buffer_scope"):
        run(text.replace("KEY", "double_buffer_scope"))
