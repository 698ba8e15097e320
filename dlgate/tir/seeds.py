"""Seed programs: the PrimFuncs TVM lowers dlgate's generated graphs to, and hand-written
TVMScript (``seed_programs/``) for what lowered operators rarely hold (parallel, vectorized
and unrolled loops with annotations, scratch allocations, while loops, float16, bfloat16 and
int8 intrinsics), and PrimFuncs picked from TVM's own tests (``seed_programs/tvm-tests/``)
for what TVM's TIR passes special-case. A graph's PrimFuncs are taken as ``LegalizeOps`` writes them (schedulable
blocks) and after the block-lowering prefix of TVM's default TIR pipeline (plain loops and
flat buffers), the two forms Tzer's model-zoo seeds came in. Same arguments, same programs,
byte for byte, in any process."""
from __future__ import annotations

import os
from dataclasses import dataclass

from dlgate.case import make_case
from dlgate.graph.generator import GenConfig, Generator
from dlgate.tir.program import InvalidProgram, Program, from_func, validate

SEED_DIR = os.path.join(os.path.dirname(__file__), "seed_programs")

#: The default pipeline's passes up to its first that needs a target (``tvm.s_tir.pipeline``,
#: TVM 0.27): what turns LegalizeOps's blocks into the loops and flat buffers later passes see.
LOWERING = ("CanonicalizeLoop", "LowerInitBlock", "PlanAndUpdateBufferAllocationLocation",
            "ConvertBlocksToOpaque", "CompactBufferAllocation", "LowerMatchBuffer", "LowerOpaqueBlock",
            "FlattenBuffer", "StmtSimplify")


@dataclass(frozen=True)
class Seed:
    """A seed program and where it came from: ``origin`` is ``hand/<file>``,
    ``tvm-tests/<file>`` (picked from TVM's own tests) or
    ``<root>/<campaign>/<index>/<primfunc>/<form>`` (form ``legalized`` or ``lowered``)."""

    program: Program
    origin: str


#: The PrimFuncs picked from TVM's own tests (each file's header names its source file and
#: commit in apache/tvm, Apache-2.0, what it brings and how it was adapted to TVM 0.27).
TVM_TESTS_DIR = os.path.join(SEED_DIR, "tvm-tests")


def hand_seeds() -> list:
    """The hand-written seeds (origin ``hand/<file>``), then those picked from TVM's own
    tests (``tvm-tests/<file>``), each in file-name order."""
    return _from_files(SEED_DIR, "hand") + _from_files(TVM_TESTS_DIR, "tvm-tests")


def _from_files(folder: str, origin: str) -> list:
    import tvm  # local: optional compiler, imported where it runs

    out = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".tvmscript"):
            continue
        with open(os.path.join(folder, name)) as f:
            parsed = tvm.script.from_source(f.read())
        func = parsed["main"] if isinstance(parsed, tvm.IRModule) else parsed
        p = from_func(func)
        validate(p)  # a seed TVM rejects is a mistake here, not a draw to skip
        out.append(Seed(p, f"{origin}/{name}"))
    return out


def lower(func):
    """``func`` after :data:`LOWERING`."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm import s_tir, tirx  # local: optional compiler, imported where it runs

    passes = [getattr(s_tir.transform, n, None) or getattr(tirx.transform, n) for n in LOWERING]
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    return tvm.ir.transform.Sequential([p() for p in passes])(mod)["main"]


def graph_seeds(root: str, campaign: str, count: int, *, min_nodes: int = 1, max_nodes: int = 4,
                skipped: list | None = None) -> list:
    """The seeds from cases ``root``/``campaign``/0..``count``-1 of dlgate's generator
    (``min_nodes``..``max_nodes`` nodes): each case imported with TVM's ONNX frontend,
    legalized, and each PrimFunc (in name order) kept in both forms where TVM accepts it
    (:func:`dlgate.tir.program.validate`). Duplicates (same text) are kept once, first
    origin. A case TVM cannot import, or a form TVM rejects, is passed over and named in
    ``skipped`` (with the reason) where a list is given."""
    import onnx  # local: the importer reads the model's bytes
    from tvm import relax, tirx  # local: optional compiler, imported where it runs
    from tvm.relax.frontend.onnx import from_onnx  # local: optional compiler, imported where it runs

    gen = Generator(GenConfig(min_nodes=min_nodes, max_nodes=max_nodes))
    seen: set = set()
    out = []
    for index in range(count):
        where = f"{root}/{campaign}/{index}"
        try:
            case = make_case(gen, root, campaign, index)
            mod = relax.transform.LegalizeOps()(from_onnx(onnx.load_from_string(case.model_bytes),
                                                          keep_params_in_input=False))
        except Exception as e:  # noqa: BLE001 - the generator's and importer's refusals are many classes
            _skip(skipped, where, e)
            continue
        funcs = sorted((gv.name_hint, f) for gv, f in mod.functions.items() if isinstance(f, tirx.PrimFunc))
        for name, func in funcs:
            for form in ("legalized", "lowered"):
                try:
                    p = from_func(func if form == "legalized" else lower(func))
                    validate(p)
                except Exception as e:  # noqa: BLE001 - InvalidProgram, or a lowering pass that throws
                    _skip(skipped, f"{where}/{name}/{form}", e)
                    continue
                if p.text not in seen:
                    seen.add(p.text)
                    out.append(Seed(p, f"{where}/{name}/{form}"))
    return out


def seed_pool(root: str, campaign: str, graphs: int) -> list:
    """The hand-written seeds, then the seeds of ``graphs`` generated cases."""
    return hand_seeds() + graph_seeds(root, campaign, graphs)


def _skip(skipped, where: str, e: BaseException) -> None:
    if skipped is None:
        return
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    msg = str(e) if isinstance(e, InvalidProgram) else f"{type(e).__name__}: {lines[-1] if lines else ''}"
    skipped.append(f"{where}: {msg[:200]}")
