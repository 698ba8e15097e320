"""A TIR pass for the coverage tests: it calls ``classify`` of the instrumented C library
named by ``DLGATE_TEST_COV_LIB`` on the first ``float32`` constant of the program, as a
pass of TVM's own would run code of the instrumented ``libtvm``: the library's coverage
then depends on the program."""
from __future__ import annotations

import ctypes
import os
import re

from tvm import tirx


@tirx.transform.prim_func_pass(opt_level=0, name="ClassifyConstant")
def classify_constant(func, _mod, _ctx):
    lib = ctypes.CDLL(os.environ["DLGATE_TEST_COV_LIB"])
    found = re.search(r"T\.float32\((-?[0-9.]+)\)", func.script())
    lib.classify(int(float(found.group(1))) if found else 0)
    return func
