"""The campaign's keys, declared once: each key's type, default, help text, bounds and
choices. :mod:`dlgate.gate.config` validates files and applies command-line overrides from
this table, :mod:`dlgate.gate.schema` derives the JSON Schema from it, and
``dlgate config --reference`` renders it for docs/configuration.md."""
from __future__ import annotations

from dataclasses import dataclass

FAIL_ON = ("new", "any", "none")


class ConfigError(ValueError):
    """A malformed campaign config; the message names the file and the key."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # str | int | float | bool | list[str] | dict | base
    default: object
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple | None = None
    optional: bool = False  # null allowed


FIELDS = (
    Field("campaign", "str", "default", "Campaign name; part of every case's seed, so two campaigns on one "
          "commit test different models."),
    Field("models", "int", 100, "Number of generated models in the batch.", min=1, max=1_000_000),
    Field("min_nodes", "int", 1, "Fewest operators per model.", min=1, max=200),
    Field("max_nodes", "int", 10, "Most operators per model.", min=1, max=200),
    Field("opset", "int", None, "Fixed ONNX opset; null draws one per case from 13 up to `max_opset`.", min=13,
          max=28, optional=True),
    Field("max_opset", "int", None, "Newest opset drawn; null: the newest that every backend under test loads "
          "(probed at the start of a run, at most 28, the newest the pinned onnx defines), so an older runtime "
          "is not flooded with load errors. The range used is recorded in the run's manifest, and a resumed "
          "run keeps it.", min=13, max=28, optional=True),
    Field("dynamic_share", "float", 0.25, "Share of models whose inputs declare symbolic batch/sequence "
          "dimensions (`dim_param`), where other sizes keep the model valid; each such case runs at two or "
          "more shapes from one compile, judged at each. A backend that cannot compile the symbolic model "
          "reports it unsupported (a crash is still a crash). 0 turns it off.", min=0, max=1),
    Field("extreme_share", "float", 0.2, "Share of models whose inputs and constants carry extreme values in "
          "some elements: NaN and +/-Inf where every operator they reach defines them, magnitudes at float16's "
          "65504 and beyond float32's range, subnormals, signed zeros, rounding ties, integer limits and values "
          "a narrowing Cast wraps. NaN and Inf positions are compared exactly; a special value where the ONNX "
          "specification leaves the result open makes the verdict `undefined`. 0 turns it off.", min=0, max=1),
    Field("invalid_share", "float", 0.0, "Share of models made invalid on purpose: one rule of ONNX broken at one "
          "node (a dtype the operator does not take, incompatible shapes, a dangling or duplicated edge, an axis past "
          "the rank, a wrong number of inputs), drawn from the case's seed and rejected by ONNX's full checker. A "
          "compiler must reject it with an error; a crash, a hang, running out of memory or running it is a finding "
          "of its own class (`invalid_crash`, `invalid_timeout`, `invalid_oom`, `invalid_accepted`). With a `tvm` "
          "backend, a quarter of them break a rule of Relax instead, in the direct path's module of a graph drawn "
          "from the operators it lowers (a parameter of `main` declared with another dtype or shape), run on the "
          "direct path alone. 0 turns it off. "
          "See docs/oracle-and-backends.md.", min=0, max=1),
    Field("rewrite_share", "float", 0.0, "Share of models that also run an equivalent twin on every backend "
          "(the equivalence oracle, docs/oracle-and-backends.md): the case rewritten by one semantics-preserving "
          "rewrite (`x * 1`, a Transpose and its inverse, a Reshape or a widening Cast round trip, another "
          "topological order, a run of nodes wrapped into a model-local function), drawn from the case's seed. A "
          "compiler that computes otherwise on the twin than on the case, or fails on the twin of a case it runs, "
          "is `inconsistent`: a finding of its own class, whether or not the reference could run. 0 turns it "
          "off.", min=0, max=1),
    Field("relax_share", "float", 0.0, "With a `tvm` backend: the share of models that are Relax-native (the "
          "direct Relax path, docs/oracle-and-backends.md): drawn, by the case's seed, from the operators the direct "
          "path lowers, and run on `tvm-relax` at each `tvm` backend's device, level and options besides every "
          "backend. The two paths are a pair: where one agrees with the reference, the other's failure is that "
          "path's finding; where both are wrong the same way, it is one finding. An optional `tvm` backend "
          "(`tvm:cuda?`) is not paired. 0 turns it off.", min=0, max=1),
    Field("tir_share", "float", 0.0, "Share of the batch given to the TIR mode (docs/tir.md): Tzer's joint mutation "
          "of TVM's low-level IR (TIR PrimFuncs) and of its TIR pass sequence, each step built with the mutated "
          "sequence and with the minimal one in isolated workers and checked by three oracles (`tir_crash`, "
          "`tir_exception`, `tir_inconsistent`: the two builds, or the minimal build and a NumPy interpreter, "
          "disagree; `tir_slow`, see `tir_slow_gates`). Runs where a backend under test is TVM on CPU; that many of "
          "`models` are TIR steps instead of graph cases, interleaved with them (each chain's steps in one shard, "
          "see `tir_chains`). 0 turns it off.", min=0, max=1),
    Field("tir_chains", "int", 1, "The TIR mode's independent chains: step `k` belongs to chain `k mod "
          "tir_chains`, which mutates its own pool (from the same seeds) in order, so a chain runs in one shard "
          "(chain `c` in shard `c mod N + 1` of `--shard I/N`). Give it the weekly matrix's shard count to spread "
          "the TIR steps over every shard; the steps do not depend on the shard count, so a sharded run's TIR "
          "steps merge into the unsharded run's.", min=1, max=256),
    Field("tir_n_max", "int", 4, "The TIR mode's `N_max` (Tzer's interleaving): after this many IR mutations of "
          "a pool entry without new feedback, its pass sequence is mutated instead.", min=1, max=1000),
    Field("tir_slow_margin", "float", 2.0, "The TIR mode's performance oracle: a mutated sequence whose build "
          "runs more than this many times slower than the minimal sequence's (medians of timed runs) is "
          "`tir_slow`.", min=1, max=1000),
    Field("tir_slow_gates", "bool", False, "Whether a `tir_slow` finding fails the check like any new finding; "
          "false: it is reported (counts, summary) and never gates, timings being noisier than answers."),
    Field("tir_coverage_library", "str", None, "The TIR mode's feedback from a TVM built with gcc's `--coverage` "
          "(docs/tir.md, \"With a coverage build of TVM\"): the instrumented shared library, a path, or `tvm` for "
          "the compiler library TVM's package loads. With `tir_coverage_objects`, each step's build measures the "
          "lines and branches it ran there, and new coverage joins IR-feature novelty. null: IR features only. A "
          "library without gcov counters (or without `__gcov_reset` and `__gcov_dump` exported) stops the run "
          "at its start (exit status 4).", optional=True),
    Field("tir_coverage_objects", "str", None, "The build folder of `tir_coverage_library`, where its `.gcno` "
          "files are (gcov reads them); given with it, or not at all.", optional=True),
    Field("target_share", "float", 0.8, "With a change to aim at (`dlgate run --changed-from BASE` or `--diff "
          "FILE`): the share of models drawn to exercise what the change touches (its operators with the opsets, "
          "dtypes and attribute regimes the changed code concerns, the motifs of the rewrites it changes); the rest "
          "stay random, so unrelated regressions keep a chance. Without a change it has no effect. See "
          "docs/change-aware.md.", min=0, max=1),
    Field("guidance", "bool", True, "Coverage-guided generation: bias operator, motif, dtype and connection "
          "choices toward what the campaign has not covered yet (operator x dtype signature, operator edges and "
          "three-operator paths, motif decision sides, rewrites no backend has applied). The batch is then "
          "generated in index order, each case a pure function of its seed and the coverage state before it; "
          "false: every case independent of the others."),
    Field("coverage_state", "str", None, "A coverage state file to start from (`coverage-state.json` of an "
          "earlier run, e.g. last week's campaign, restored from a cache); null or a file that does not exist "
          "yet: start empty (logged). Copied into the run's folder (`coverage-start.json`, its digest in "
          "`run.json`), so every case can be regenerated.", optional=True),
    Field("operators", "list[str]", None, "Operator specs to draw from (`dlgate ops`); null for all.", optional=True),
    Field("dtypes", "list[str]", None, "Tensor dtypes models may use (e.g. `[float32, int64]`); null for all.",
          optional=True),
    Field("support", "list[str]", [], "Generate only what every one of these backends was probed to support "
          "(`dlgate probe`), whatever `restrict_to_support` says; empty: see `restrict_to_support`."),
    Field("restrict_to_support", "bool/auto", False, "Generate only the operator x dtype x opset combinations "
          "that every backend under test that is not optional was probed to support (`dlgate probe`, cached per "
          "version). `auto`: only when no base build is configured (head versus base, a model the base build "
          "runs and head refuses is a regression the batch must be able to meet). The support used is recorded "
          "in `run.json`, and a resumed run generates from it. false: everything; what a backend refuses is "
          "`unsupported`, and cut out to run the rest (`findings_per_case`)."),
    Field("backends", "backends", ["tvm", "onnxruntime"], "Backends under test: `NAME[:DEVICE][@LEVEL]` "
          "(`dlgate backends`), or a mapping `{name, device, opt_level, options, optional}` to pass backend "
          "options (e.g. `options: {intra_op_threads: 2}`); `name` may also be `module:Class` for a backend not "
          "registered as an entry point. A backend that cannot start (not installed, a broken build, no GPU) "
          "fails the gate (exit status 4), unless marked optional (`optional: true`, or a `?` suffix: "
          "`tvm:cuda?`): then it is skipped with its reason."),
    Field("reference", "str", "torch", "The trusted reference backend."),
    Field("tolerances", "dict", {}, "Per-dtype `[rtol, atol]` overriding the defaults, e.g. "
          "`{float32: [1e-2, 1e-3]}`."),
    Field("timeout_s", "float", 60.0, "Seconds of its own time one compile and run may take before it is a "
          "timeout (time it waits for a busy machine's CPU is not counted).", min=1, max=86_400),
    Field("memory_mb", "int", 4096, "Resident-memory cap of a backend worker; beyond it the case is oom.",
          min=64, max=1 << 24),
    Field("search_steps", "int", 24, "Step budget of the numeric-valid input search.", min=0, max=10_000),
    Field("crosscheck", "bool", True, "Cross-check disagreements at the lowest optimization level and with "
          "onnx.reference."),
    Field("confirm_runs", "int", 1, "Re-runs of a failing case; a failure that does not reproduce every "
          "time is flaky and does not fail the gate.", min=0, max=10),
    Field("baseline", "str", None, "Known-failure baseline file (JSON); relative paths are relative to the "
          "working directory.", optional=True),
    Field("corpus", "str", None, "Regression corpus folder, re-run before the fresh batch; new findings "
          "are added to it.", optional=True),
    Field("base", "base", None, "Head-versus-base mode: `{python: PATH, env: {VAR: value}}`, the "
          "interpreter of an environment holding the base build of the compiler (and dlgate). A new "
          "failure that also fails there is pre-existing and does not fail the check.", optional=True),
    Field("reduce", "bool", True, "Reduce each failure to its cause before it is journaled: the reduced case "
          "decides its fingerprint, and its repro bundle (`OUT/repros/<fingerprint>/`, with a standalone "
          "`repro.py`) is written once per fingerprint. false: failures are identified by their whole model, "
          "which splits one cause into many."),
    Field("reduce_seconds", "float", 60.0, "Time bound of one reduction.", min=1, max=86_400),
    Field("reuse_reductions", "bool", True, "Reduce each cause once per run: a failure of a cause already reduced "
          "in an earlier case (errors and crashes: the same backend, class, cluster and sharing key; wrong answers: "
          "the case's own operators of the reduced case's kinds, cut out, fail on head with that reduction's "
          "fingerprint) takes that reduction's identity and repro instead of being reduced again; its record names "
          "the case reduced (`identity.reduction.reused`). A resumed run "
          "rebuilds what was reduced from the journal. false: every failure is reduced."),
    Field("base_first", "bool", True, "Head versus base: run a failing case on the base build before it is "
          "confirmed and reduced, so that a failure the base build shares costs no confirmation, and no reduction "
          "unless `reduce_pre_existing` asks for one. false: the order before (confirm, reduce, then the base build)."),
    Field("reduce_pre_existing", "bool", False, "Head versus base, with `base_first`: also reduce a failure "
          "the base build shares (pre-existing; never re-run to confirm it, the base build's failing the same way "
          "does). false (pull requests): it is reported by its cluster, "
          "identified by its whole model unless its cause was reduced earlier in the run, and behind it only the "
          "operators its message names are cut; true (the weekly campaign, which files issues for every cause): "
          "reduced like a new failure."),
    Field("findings_per_case", "int", 4, "Most findings one case yields per backend. After a failure is "
          "reduced, its operators are cut out of the model (the rest fed the reference's values of what they "
          "made) and the rest runs again, judged like any case, until it passes, nothing is left, this many "
          "findings are made, 2 x this many cuts are made, or (this - 1) x `reduce_seconds` are spent; "
          "operators a backend refuses (`unsupported`) are cut the same way. 1: a case stops at its first "
          "failure.", min=1, max=64),
    Field("issues", "issues", None, "Open GitHub issues from the gate: `{repo: OWNER/NAME, label: dlgate, "
          "max_per_run: 5, api_url: https://api.github.com, memory_safety: private, bisect_releases: false}`; the "
          "token comes from "
          "`GITHUB_TOKEN`. A crash that may be a memory-safety bug (SIGSEGV, SIGBUS, a corrupted heap or stack) is "
          "reported through GitHub's private vulnerability reporting, never as an issue, unless `memory_safety: "
          "public`. Only complete runs (unsharded, or `dlgate merge`) publish. Null: off (`dlgate issues` does it "
          "on demand, with these settings from the run's `run.json`).",
          optional=True),
    Field("fail_on", "str", "new", "What fails the check: `new` failures only, `any` failure, or `none` "
          "(report only).", choices=FAIL_ON),
    Field("budget", "float", None, "Seconds this invocation may spend running cases (like ClusterFuzzLite's "
          "`fuzz-seconds`); null: no budget. Cases start in plan order while time is left; the case in flight "
          "finishes (its reduction included), the rest is left for a rerun of the same command, which resumes "
          "from the journal with a budget of its own. The verdict is decided on the cases that ran. Per shard "
          "when sharded. Not part of the run's fingerprint.", min=0.001, max=86_400, optional=True),
)


def type_name(v) -> str:
    """A value's type in the words of an error message: "an integer", "a mapping"."""
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a mapping", type(None): "null"}.get(type(v), type(v).__name__)
