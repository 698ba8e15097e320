"""Developer smoke check for one operator family: generate models mixing its operators
with element-wise ones, check them with ONNX's full checker, run them on onnxruntime.

    python -m tests.smoke_family Relu LeakyRelu ...
"""
import sys

import numpy as np
import onnx

from dlgate.case import make_case
from dlgate.graph.generator import GenConfig, Generator
from dlgate.graph.ir import random_values
from tests.helpers import ort_run

ops = tuple(sys.argv[1:]) + ("Add", "Mul", "Abs", "Neg")
gen = Generator(GenConfig(max_nodes=8, ops=ops))
seen, failures = {}, 0
for i in range(300):
    c = make_case(gen, "smoke", ",".join(ops), i)
    for n in c.graph.nodes:
        seen[n.op] = seen.get(n.op, 0) + 1
    try:
        onnx.checker.check_model(onnx.load_from_string(c.model_bytes), full_check=True)
        feeds = [random_values(np.random.default_rng(i), c.graph.tensors[t]) for t in c.graph.inputs]
        ort_run(c.model_bytes, c.graph, feeds)
    except Exception as e:
        if "NOT_IMPLEMENTED" in str(e):
            continue
        failures += 1
        print(c.id, c.graph.op_names(), str(e).splitlines()[0][:300])
print("generator stats:", gen.stats)
print("operator counts:", seen)
print("failures:", failures)
