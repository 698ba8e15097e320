"""What each spec's PyTorch implementation dispatches to, for the Inductor change table: every spec
run on the single-operator instances support probing uses, under a dispatch recorder (as
dispatched, and with Inductor's decomposition table applied) and a torch-function recorder."""
from __future__ import annotations

from dlgate.change.builders.inductor_source import TORCH_NOT_FUNCTIONS
from dlgate.graph.generator import NEWEST_OPSET, OLDEST_OPSET
from dlgate.graph.ir import random_values
from dlgate.materialize.torch_model import GraphModule
from dlgate.ops import schema
from dlgate.ops.registry import all_specs
from dlgate.probe.single import single_op_graph


def _normal(func) -> list:
    """An ATen operator as the table records it: ``aten.div.Tensor_mode`` (the mapper
    also answers for its packet, ``aten.div``); an in-place ``aten.add_.Tensor`` is also
    recorded as ``aten.add.Tensor`` (Inductor's graphs are functionalized)."""
    name = str(func)
    if name.count(".") == 1:
        name += ".default"
    ns, op, ov = name.split(".", 2)
    out = [name]
    if op.endswith("_") and not op.endswith("__") and not op.startswith("_"):
        out.append(f"{ns}.{op[:-1]}.{ov}")
    return out


def trace_specs(names=None, seeds: int = 3) -> dict:
    """Per spec: ``{"onnx_op", "dtypes": [first-input dtypes traced], "ops": {op: [dtypes
    it was seen with, empty when all]}, "instances": n}``; specs no instance could be
    built or run for are listed under ``"untraced"`` with the reason."""
    import numpy as np
    import torch
    from torch._inductor.decomposition import select_decomp_table
    from torch.overrides import TorchFunctionMode, resolve_name
    from torch.utils._python_dispatch import TorchDispatchMode

    decomp = select_decomp_table()

    class Dispatched(TorchDispatchMode):
        """Records every ATen operator dispatched; with ``table``, also runs the
        decomposition Inductor would (and records what it dispatches)."""

        def __init__(self, table=None):
            super().__init__()
            self.table, self.ops = table, set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self.ops.update(_normal(func))
            if self.table is not None and func in self.table:
                with self:
                    r = self.table[func](*args, **kwargs)
                if r is not NotImplemented:
                    return r
            return func(*args, **kwargs)

    class Called(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.names = set()

        def __torch_function__(self, func, types, args=(), kwargs=None):
            n = resolve_name(func) or ""
            last = n.rsplit(".", 1)[-1]
            if n.startswith("torch.") and last[:1].islower() and not last.startswith("__") \
                    and not n.endswith("__get__") and last not in TORCH_NOT_FUNCTIONS:
                self.names.add(f"torch.{last}")
            return func(*args, **(kwargs or {}))

    specs = all_specs()
    names = list(specs) if names is None else list(names)
    out, untraced = {}, {}
    for name in names:
        spec = specs[name]
        lo = next((o for o in range(max(OLDEST_OPSET, spec.min_opset), NEWEST_OPSET + 1) if spec.available(o)), None)
        if lo is None:
            untraced[name] = f"not available at opsets {OLDEST_OPSET}-{NEWEST_OPSET}"
            continue
        hi = max(o for o in range(lo, NEWEST_OPSET + 1) if spec.available(o))
        seen: dict = {}  # op -> dtype -> instances it was seen in
        per_dtype: dict = {}  # dtype -> instances
        n_inst, last_err, bodies = 0, "", False
        for opset in sorted({lo, hi}):
            for sig in spec.dtypes:
                if not schema.allowed(spec.onnx_op, sig, opset):
                    continue
                for k in range(seeds):
                    g = single_op_graph(name, sig, opset, k)
                    if g is None:
                        continue
                    node = g.nodes[0]
                    bodies = bodies or any(isinstance(v, dict) and "graph" in v for v in node.attrs.values())
                    rng = np.random.default_rng(k)
                    feeds = [torch.from_numpy(np.array(random_values(rng, g.tensors[t]), copy=True)) for t in g.inputs]
                    mod = GraphModule(g)
                    got: dict = {}

                    def hook(i, n, ins, outs, got=got):
                        got["ins"] = ins
                        return True

                    try:
                        with torch.no_grad():
                            mod.run(feeds, hook)
                            ins = got["ins"]
                            called, plain, lowered = Called(), Dispatched(), Dispatched(decomp)
                            with called:
                                spec.torch(node.attrs, *ins)
                            with plain:
                                spec.torch(node.attrs, *ins)
                            with lowered:
                                spec.torch(node.attrs, *ins)
                    except Exception as e:  # a draw the implementation rejects: another draw decides
                        last_err = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160] if str(e).strip() else ''}"
                        continue
                    n_inst += 1
                    dtype = sig[0] if sig else ""
                    per_dtype[dtype] = per_dtype.get(dtype, 0) + 1
                    for op in plain.ops | lowered.ops | called.names:
                        d = seen.setdefault(op, {})
                        d[dtype] = d.get(dtype, 0) + 1
        if not n_inst:
            untraced[name] = last_err or "no single-operator instance could be drawn"
            continue
        if bodies:
            # an If branch or a Loop body is drawn at random: its operators are the
            # body's, not the construct's; what every instance runs is the construct's own
            seen = {op: ds for op, ds in seen.items() if sum(ds.values()) == n_inst}
        out[name] = {"onnx_op": spec.onnx_op, "instances": n_inst, "dtypes": sorted(d for d in per_dtype if d),
                     "ops": {op: _dtypes_of(ds, per_dtype) for op, ds in sorted(seen.items())}}
        if bodies:
            out[name]["bodies"] = True
    return {"specs": out, "untraced": untraced}


def _dtypes_of(seen: dict, per_dtype: dict) -> list:
    """The first-input dtypes an operator concerns: those it was seen with, when every
    dtype's instances agree (all use it, or none does) and some do not; else [] (any).
    An operator only some instances of a dtype use depends on the attributes drawn, not
    on the dtype, so it concerns them all."""
    if any(0 < seen.get(d, 0) < n for d, n in per_dtype.items()):
        return []
    got = sorted(d for d in seen if d)
    return got if len(got) < len([d for d in per_dtype if d]) else []
