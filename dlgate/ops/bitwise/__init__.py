"""Bitwise operators on integers: BitShift, BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot.

BitShift-11 is defined for unsigned types only (dlgate's one is uint8) and says nothing of
shift amounts at or beyond the bit width, which C++ and LLVM leave undefined (an LLVM
``shl`` by the width is poison). BitShift-28 adds the signed types, makes the right shift
of a signed value arithmetic, discards bits shifted past the sign bit, and defines every
amount: one that is negative or at least the width gives what the sign extension alone
gives (-1 for a right shift of a negative value, else 0). Hence two specs:

* ``BitShift``: the amounts are a constant operand (chosen in ``sample``), below the width
  at every opset, and from opset 28 sometimes at or beyond it (or negative).
* ``BitShiftByTensor`` (opset 28): the amounts are a graph tensor; every value is defined.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("bit_shift", "bit_shift_by_tensor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")
