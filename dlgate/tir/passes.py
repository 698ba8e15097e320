"""TVM 0.27's TIR passes for a PrimFunc module on the CPU target (``llvm``), by name, and
Tzer's pass-sequence mutation over them.

TVM builds a TIR module through one opaque pipeline (``tvm.tirx.build`` runs
``tvm.s_tir.pipeline.default_s_tir_pipeline``); fuzzing the pass sequence needs its parts.
:data:`PASSES` names every pass that pipeline runs on ``llvm`` (``tests/test_tir_passes.py``
traces the real pipeline with a pass instrument and checks :data:`DEFAULT` against it), plus
the TIR passes of ``tvm.tirx.transform`` and ``tvm.s_tir.transform`` that the pipeline does
not run but that apply to a CPU PrimFunc, so that a mutated sequence reaches them too.

A name is TVM's own pass name without its namespace (``"FlattenBuffer"``) where that is
unique; the two ``StmtSimplify`` are ``"StmtSimplify"`` (tirx) and ``"s_tir.StmtSimplify"``,
and a pass the pipeline runs with different arguments carries them (``"ThreadSync.shared"``).

:data:`REQUIRED` are the passes without which TVM cannot build a schedulable PrimFunc at
all (measured on TVM 0.27 by removing each pass of :data:`DEFAULT` in turn from the build
of block, loop and allocation programs: removing any one of these fails the build with an
internal check, or crashes it; removing any other still builds and computes the same), and
``CanonicalizeLoop``, which moves every loop to start at 0 (``VectorizeLoop`` fails its
``is_zero(op->min)`` check on a vectorized loop that starts elsewhere, a form the loop
mutator's split and TVM's own printer both write), and the passes TVM's pipeline needs for
the narrow float dtypes (:data:`LEGALIZE`): without
``BF16ComputeLegalize`` and ``BF16StorageLegalize`` a program holding ``bfloat16`` (even an
unused ``bfloat16`` parameter) fails to build or segfaults in code generation, and without
``FP8ComputeLegalize`` a ``float8`` program builds to wrong values, as it does with
``FP8ComputeLegalize`` moved after ``FP8StorageLegalize`` (which TVM 0.27's ``llvm`` build
does not otherwise need: it is required to keep that order). They are required for
every program, not only for those with such dtypes today: on other programs they change
nothing, and a pool entry's sequence outlives its program, whose mutants may gain a
``bfloat16`` value (the intrinsics mutator makes them). Their order in :data:`DEFAULT` is
the minimal sequence (:func:`minimal`), the one a program's reference build uses. :func:`mutate` never removes them nor reorders them among
themselves, so every mutated sequence still has what a build needs; where it puts the other
passes is free, and a sequence TVM then rejects while applying it makes the pair invalid, not
a finding (:mod:`dlgate.tir.oracle`).

Nothing here imports TVM at module level: the gate's side reads the tables, the worker
builds the passes (:func:`make`).
"""
from __future__ import annotations

import importlib

#: name -> (module, constructor, positional arguments).
PASSES: dict = {
    # tvm.s_tir.pipeline.default_s_tir_pipeline, in its order (config defaults, llvm)
    "CanonicalizeLoop": ("tvm.s_tir.transform", "CanonicalizeLoop", ()),
    "LowerCrossThreadReduction": ("tvm.s_tir.transform", "LowerCrossThreadReduction", ()),
    "LowerInitBlock": ("tvm.s_tir.transform", "LowerInitBlock", ()),
    "PlanAndUpdateBufferAllocationLocation": ("tvm.s_tir.transform", "PlanAndUpdateBufferAllocationLocation", ()),
    "ConvertBlocksToOpaque": ("tvm.s_tir.transform", "ConvertBlocksToOpaque", ()),
    "LiftThreadBinding": ("tvm.s_tir.transform", "LiftThreadBinding", ()),
    "ManifestSharedMemoryLocalStage": ("tvm.s_tir.transform", "ManifestSharedMemoryLocalStage", ()),
    "CompactBufferAllocation": ("tvm.s_tir.transform", "CompactBufferAllocation", ()),
    "LowerAutoCopy": ("tvm.s_tir.transform", "LowerAutoCopy", ()),
    "UnifyThreadBinding": ("tvm.s_tir.transform", "UnifyThreadBinding", ()),
    "LowerMatchBuffer": ("tvm.s_tir.transform", "LowerMatchBuffer", ()),
    "s_tir.StmtSimplify": ("tvm.s_tir.transform", "StmtSimplify", ()),
    "InjectPermutedLayout": ("tvm.s_tir.transform", "InjectPermutedLayout", ()),
    "AnnotateIrregularLoop": ("tvm.s_tir.transform", "AnnotateIrregularLoop", ()),
    "InjectSoftwarePipeline": ("tvm.s_tir.transform", "InjectSoftwarePipeline", ()),
    "TransformMmaBufferLayout": ("tvm.s_tir.transform", "TransformMmaBufferLayout", ()),
    "LowerOpaqueBlock": ("tvm.s_tir.transform", "LowerOpaqueBlock", ()),
    "FlattenBuffer": ("tvm.tirx.transform", "FlattenBuffer", ()),
    "BF16ComputeLegalize": ("tvm.tirx.transform", "BF16ComputeLegalize", ()),
    "NarrowDataType": ("tvm.tirx.transform", "NarrowDataType", (32,)),
    "LoopPartition": ("tvm.s_tir.transform", "LoopPartition", ()),
    "VectorizeLoop": ("tvm.tirx.transform", "VectorizeLoop", (True,)),
    "InjectVirtualThread": ("tvm.s_tir.transform", "InjectVirtualThread", ()),
    "InjectDoubleBuffer": ("tvm.s_tir.transform", "InjectDoubleBuffer", ()),
    "StorageRewrite": ("tvm.tirx.transform", "StorageRewrite", ()),
    "HoistIfThenElse": ("tvm.s_tir.transform", "HoistIfThenElse", ()),
    "UnrollLoop": ("tvm.tirx.transform", "UnrollLoop", ()),
    "RenormalizeSplitPattern": ("tvm.s_tir.transform", "RenormalizeSplitPattern", ()),
    "StmtSimplify": ("tvm.tirx.transform", "StmtSimplify", ()),
    "RemoveNoOp": ("tvm.tirx.transform", "RemoveNoOp", ()),
    "RewriteUnsafeSelect": ("tvm.s_tir.transform", "RewriteUnsafeSelect", ()),
    "CommonSubexprElim": ("tvm.tirx.transform", "CommonSubexprElim", ()),
    "FP8ComputeLegalize": ("tvm.tirx.transform", "FP8ComputeLegalize", ()),
    "VerifyVTCMLimit": ("tvm.s_tir.transform", "VerifyVTCMLimit", ()),
    "LowerVtcmAlloc": ("tvm.s_tir.transform", "LowerVtcmAlloc", ()),
    "VerifyMemory": ("tvm.tirx.transform", "VerifyMemory", ()),
    "AnnotateEntryFunc": ("tvm.tirx.transform", "AnnotateEntryFunc", ()),
    "ThreadSync.shared": ("tvm.s_tir.transform", "ThreadSync", ("shared",)),
    "ThreadSync.shared.dyn": ("tvm.s_tir.transform", "ThreadSync", ("shared.dyn",)),
    "ThreadSync.warp": ("tvm.s_tir.transform", "ThreadSync", ("warp",)),
    "InferFragment": ("tvm.s_tir.transform", "InferFragment", ()),
    "LowerThreadAllreduce": ("tvm.s_tir.transform", "LowerThreadAllreduce", ()),
    "MergeSharedMemoryAllocations": ("tvm.s_tir.transform", "MergeSharedMemoryAllocations", ()),
    "SplitHostDevice": ("tvm.tirx.transform", "SplitHostDevice", ()),
    "MakePackedAPI": ("tvm.tirx.transform", "MakePackedAPI", ()),
    "FP8StorageLegalize": ("tvm.tirx.transform", "FP8StorageLegalize", ()),
    "BF16StorageLegalize": ("tvm.tirx.transform", "BF16StorageLegalize", ()),
    # TIR passes the default pipeline does not run that apply to a CPU PrimFunc
    "ConvertSSA": ("tvm.tirx.transform", "ConvertSSA", ()),
    "ForceNarrowIndexToInt32": ("tvm.tirx.transform", "ForceNarrowIndexToInt32", ()),
    "RemoveAssume": ("tvm.tirx.transform", "RemoveAssume", ()),
    "SkipAssert": ("tvm.tirx.transform", "SkipAssert", ()),
    "HoistExpression": ("tvm.s_tir.transform", "HoistExpression", ()),
    "RemoveStoreUndef": ("tvm.s_tir.transform", "RemoveStoreUndef", ()),
    "UseAssumeToReduceBranches": ("tvm.s_tir.transform", "UseAssumeToReduceBranches", ()),
    "InstrumentBoundCheckers": ("tvm.s_tir.transform", "InstrumentBoundCheckers", ()),
    "RemoveWeightLayoutRewriteBlock": ("tvm.s_tir.transform", "RemoveWeightLayoutRewriteBlock", ()),
}

#: The passes of TVM 0.27's default TIR pipeline for ``llvm``, in its order (the pipeline of
#: ``tvm.tirx.build(mod, "llvm")`` with the default pass configuration, before the host
#: finalization that every build runs: :data:`FINALIZE`).
DEFAULT: tuple = tuple(list(PASSES)[:list(PASSES).index("BF16StorageLegalize") + 1])

#: What the build runs after any sequence, as ``tvm.tirx.build`` does: the host module's
#: finalization, then code generation. Not part of a sequence (never mutated).
FINALIZE: tuple = ("LowerTVMBuiltin", "LowerIntrin")

#: Without any one of these, a build of a schedulable PrimFunc fails (see the module's text).
#: TVM's legalization of ``bfloat16`` and ``float8`` compute and storage for targets without
#: them (``llvm``): what the default pipeline runs for those dtypes (see the module's text).
LEGALIZE = frozenset({"BF16ComputeLegalize", "FP8ComputeLegalize", "FP8StorageLegalize", "BF16StorageLegalize"})

REQUIRED = frozenset({"CanonicalizeLoop", "LowerInitBlock", "ConvertBlocksToOpaque", "LowerOpaqueBlock",
                      "FlattenBuffer", "VectorizeLoop", "MakePackedAPI"}) | LEGALIZE

#: What a GPU target (``cuda``) needs besides: ``SplitHostDevice`` moves the thread-bound
#: part of ``main`` into a device kernel (without it ``MakePackedAPI`` finds the thread
#: variables undefined on the host), and ``InjectVirtualThread`` lowers ``vthread``
#: bindings (without it the same check fails on a program that has one). Measured on TVM
#: 0.27 like :data:`REQUIRED`, on programs the ``threads`` mutator made (removing any other
#: pass of :func:`minimal` for the GPU still builds the device kernel).
GPU_REQUIRED = REQUIRED | frozenset({"InjectVirtualThread", "SplitHostDevice"})

#: The finalization of a GPU build's device module (``tvm.s_tir.pipeline.finalize_device_passes``).
FINALIZE_DEVICE: tuple = ("LowerWarpMemory", "StmtSimplify", "LowerIntrin")

#: The passes a mutation may insert: every pass but the required ones (those are there already).
OPTIONAL: tuple = tuple(n for n in PASSES if n not in REQUIRED)


def minimal(gpu: bool = False) -> list:
    """The shortest sequence that builds: the required passes in the default pipeline's order
    (``gpu``: those a GPU target needs, :data:`GPU_REQUIRED`)."""
    required = GPU_REQUIRED if gpu else REQUIRED
    return [n for n in DEFAULT if n in required]


def complete(passes, gpu: bool = False) -> bool:
    """Whether ``passes`` holds every required pass, in the minimal sequence's order (other
    passes anywhere): a sequence without them is no valid pair, whatever fails."""
    it = iter(passes)
    return all(any(n == m for m in it) for n in minimal(gpu))


def default() -> list:
    """TVM's own default sequence."""
    return list(DEFAULT)


def check_names(names) -> list:
    """``names`` as a list, or ValueError naming the first that is not a pass of :data:`PASSES`."""
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)):
        raise ValueError(f"expected a list of TIR pass names, got {names!r}")
    for n in names:
        if n not in PASSES:
            raise ValueError(f"unknown TIR pass {n!r}")
    return list(names)


def make(name: str):
    """The TVM pass a name stands for (imports TVM)."""
    module, ctor, args = PASSES[name]
    return getattr(importlib.import_module(module), ctor)(*args)


def info_name(name: str) -> str:
    """The name TVM's pass instruments see for the pass (``PassInfo.name``): its namespace
    (``tirx.`` or ``s_tir.``) and its constructor, arguments left out."""
    module, ctor, _ = PASSES[name]
    return f"{module.split('.')[1]}.{ctor}"


#: Tzer's four pass-sequence mutations.
KINDS = ("insert", "remove", "reorder", "repeat")


def mutate(passes: list, rng) -> tuple:
    """``(sequence, kind)``: one of Tzer's pass mutations (insert, remove, reorder, repeat)
    applied to ``passes``, chosen and placed by ``rng`` (a ``random.Random``: the same state
    gives the same result). Required passes are never removed and keep their order among
    themselves; a mutation that has nothing to act on (remove or reorder without an optional
    pass) becomes an insertion, so every call changes the sequence."""
    seq = list(passes)
    free = [k for k, n in enumerate(seq) if n not in REQUIRED]
    kind = KINDS[rng.randrange(len(KINDS))]
    if kind in ("remove", "reorder", "repeat") and not free:
        kind = "insert"
    if kind == "insert":
        seq.insert(rng.randrange(len(seq) + 1), OPTIONAL[rng.randrange(len(OPTIONAL))])
    elif kind == "remove":
        del seq[free[rng.randrange(len(free))]]
    elif kind == "repeat":
        k = free[rng.randrange(len(free))]
        seq.insert(k + 1 + rng.randrange(len(seq) - k), seq[k])
    else:  # reorder: move one optional pass elsewhere
        k = free[rng.randrange(len(free))]
        name = seq.pop(k)
        spots = [j for j in range(len(seq) + 1) if j != k]
        seq.insert(spots[rng.randrange(len(spots))] if spots else k, name)
        if seq == list(passes):  # moved next to a copy of itself: nothing changed
            seq.insert(rng.randrange(len(seq) + 1), OPTIONAL[rng.randrange(len(OPTIONAL))])
            kind = "insert"
    return seq, kind
