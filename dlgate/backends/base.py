"""The backend interface: one small class per system under test or reference.

A backend compiles a :class:`Model` and runs it on NumPy inputs. It never runs in the
gate's own process: :mod:`dlgate.exec.worker` hosts it in an isolated worker that is
kept alive across cases, so imports and per-process setup are paid once.

Backends are found by name through the ``dlgate.backends`` entry-point group (in-tree
ones are declared in ``pyproject.toml`` the same way), or as ``package.module:Class``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dlgate.graph.ir import Graph


#: The attribute a backend sets on an exception to say which of its phases raised it (TVM:
#: ``import``, its ONNX importer, as against the passes and the build after it); the
#: worker's error record carries it as ``phase``.
PHASE = "dlgate_phase"


@dataclass
class Model:
    """What a backend compiles: the ONNX bytes, and the same graph for PyTorch-based
    backends (constants included in ``graph.values``)."""

    onnx: bytes
    graph: Graph

    @property
    def input_names(self) -> list:
        return [self.graph.name(t) for t in self.graph.inputs]

    @property
    def output_names(self) -> list:
        return [self.graph.name(t) for t in self.graph.outputs]


class Unavailable(Exception):
    """The backend cannot run here (package missing, no GPU...); the message says why."""


@dataclass(frozen=True)
class BackendSpec:
    """How to construct a backend: what configs and the command line name."""

    name: str
    device: str = "cpu"
    opt_level: str | None = None  # None = the backend's highest
    options: tuple = field(default_factory=tuple)  # sorted (key, value) pairs

    def label(self) -> str:
        lvl = f"@{self.opt_level}" if self.opt_level else ""
        return f"{self.name}[{self.device}]{lvl}"

    def at(self, opt_level: str) -> "BackendSpec":
        return BackendSpec(self.name, self.device, opt_level, self.options)

    @staticmethod
    def parse(text: str) -> "BackendSpec":
        """``NAME[:DEVICE][@OPT_LEVEL]``, e.g. ``tvm``, ``tvm:cuda``, ``onnxruntime@basic``."""
        name, _, level = text.partition("@")
        if name.count(":") == 1 and not name.split(":")[1].isidentifier():
            raise ValueError(f"bad backend {text!r}")
        base, device = name, "cpu"
        if ":" in name and "." not in name.split(":")[0]:  # not a package.module:Class path
            base, _, device = name.partition(":")
        if not base:
            raise ValueError(f"bad backend {text!r}: expected NAME[:DEVICE][@OPT_LEVEL]")
        return BackendSpec(base, device or "cpu", level or None)


class Backend:
    """Subclass, set the class attributes, implement ``compile`` and ``run``."""

    name: ClassVar[str] = ""
    #: Optimization levels, lowest first; the last is the default.
    opt_levels: ClassVar[tuple] = ("default",)
    devices: ClassVar[tuple] = ("cpu",)
    #: Trusted enough to be the reference the others are compared against.
    reference: ClassVar[bool] = False
    #: Support probing: opsets to probe (None = every opset of the generator's range; the
    #: others take the nearest lower probed one) and instances per combination.
    probe_opsets: ClassVar[tuple | None] = None
    probe_tries: ClassVar[int] = 4
    #: The ``options`` the backend reads (a campaign's ``{name, options}`` mapping); any
    #: other is a configuration error, never silently ignored. ``option_kinds`` gives each
    #: one's kind ("bool" or "positive int", checked here; "" for one the backend checks in
    #: its own ``check_options``); ``option_names`` follows from it.
    option_kinds: ClassVar[dict] = {}
    option_names: ClassVar[tuple] = ()
    #: Whether its optimizations can make a node it has no kernel for (onnxruntime's fusions
    #: into contrib operators): a refusal above the lowest level is then checked at the
    #: lowest, and one that level accepts is the optimization's bug, a ``compile_error``
    #: (``dlgate.check.judge_backend``). False where refusals come before any optimization
    #: (TVM's importer), which spares the extra compile.
    refusals_by_level: ClassVar[bool] = False
    #: Regular expressions (case-insensitive) of the backend's own words for "this model's
    #: symbolic dimensions are more than I take": a compile error on a model with symbolic
    #: input dimensions that matches one is a refusal; any other is a finding when the same
    #: model compiles with static shapes (``dlgate.oracle.rules.symbolic``). The real
    #: backends take their row of ``dlgate.backends.refusals.SYMBOLIC``.
    symbolic_refusals: ClassVar[tuple] = ()
    #: The compiler's Python package (``tvm``, ``onnxruntime``...), imported explicitly when
    #: the worker starts (``start``): a build that does not import fails start-up, whatever
    #: ``version`` reads. None: nothing to import (a backend without a package of its own).
    package: ClassVar[str | None] = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "option_kinds" in cls.__dict__:
            cls.option_names = tuple(cls.option_kinds)

    @classmethod
    def check_options(cls, options: dict) -> None:
        """ValueError naming the first option the backend does not accept, or whose value
        it cannot use (subclasses check their options' values after calling this)."""
        for k in options:
            if k not in cls.option_names:
                raise ValueError(f"unknown option {k!r}; allowed: {', '.join(cls.option_names) or '(none)'}")
            if cls.option_kinds.get(k):
                option_value(options, k, cls.option_kinds[k])

    def __init__(self, device: str = "cpu", opt_level: str | None = None, **options):
        if device not in self.devices:
            raise Unavailable(f"{self.name} does not run on {device!r} (devices: {', '.join(self.devices)})")
        if opt_level is not None and opt_level not in self.opt_levels:
            raise ValueError(f"{self.name}: unknown optimization level {opt_level!r}; "
                             f"known: {', '.join(self.opt_levels)}")
        self.device = device
        self.opt_level = opt_level or self.opt_levels[-1]
        self.options = options
        reason = self.unavailable_reason(device)
        if reason:
            raise Unavailable(f"{self.name} on {device}: {reason}")

    def start(self) -> None:
        """Worker start-up, before any case: import the compiler (``package``), then prove
        that the backend runs on its device (``self_test``). Unavailable (or any other
        error) here makes the gate say it cannot run (exit status 4), never a finding."""
        if self.package:
            importlib.import_module(self.package)
        self.self_test()

    def feedback(self, compiled: Any) -> dict | None:
        """What the compile just done gave a fuzzer as feedback beyond its outputs (the TIR
        backend's per-program coverage: ``{"features": [...]}`` or ``{"error": why}``), or
        None. Called by the worker after ``compile``."""
        return None

    def rewrites(self, compiled: Any) -> list | None:
        """The rewrite kinds the compiler applied to the model just compiled (names such as
        ``fused:FusedConv`` or ``removed:Identity``), or None when it cannot tell. Called by
        the worker after ``compile``; it may depend on the machine (CPU features), so the
        gate keeps it outside the deterministic record."""
        return None

    # -- to implement -------------------------------------------------------------------
    @classmethod
    def unavailable_reason(cls, device: str) -> str | None:
        """Why the backend cannot run on ``device`` here, or None."""
        return None

    def self_test(self) -> None:
        """Raise Unavailable saying why when the backend cannot really run on its device
        (``dlgate.backends.selftest``: a one-node model compiled and run there, checked to
        have run there); GPU paths must. Default: nothing more than the import."""

    def version(self) -> str:
        raise NotImplementedError

    def compile(self, model: Model) -> Any:
        raise NotImplementedError

    def run(self, compiled: Any, inputs: list) -> list:
        """Outputs as NumPy arrays, in the model's output order."""
        raise NotImplementedError

    def unsupported(self, exc: BaseException) -> bool:
        """Whether a failure is the backend *declaring* it does not handle something."""
        return isinstance(exc, NotImplementedError)

    @classmethod
    def repro_source(cls, spec: "BackendSpec") -> str | None:
        """Python source defining ``run(model_bytes, input_names, inputs, output_names) ->
        list of arrays`` with nothing but NumPy and this backend's own package, compiled as
        ``spec`` says: the heart of a standalone repro script. None when the backend cannot
        be driven without dlgate (the repro then says how to run it with dlgate)."""
        return None

    # -- provided ---------------------------------------------------------------------
    def describe(self) -> dict:
        return {"name": self.name, "version": self.version(), "device": self.device, "opt_level": self.opt_level}


def option_value(options: dict, key: str, kind: str):
    """``options[key]`` checked for ``kind`` (``bool`` or ``positive int``); ValueError naming
    the option otherwise. None when the option is not set."""
    if key not in options:
        return None
    v = options[key]
    if kind == "bool":
        if not isinstance(v, bool):
            raise ValueError(f"option {key!r}: expected true or false, got {v!r}")
    elif kind == "positive int":
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 2**31 - 1:
            raise ValueError(f"option {key!r}: expected a positive integer, got {v!r}")
    else:
        raise AssertionError(kind)
    return v


def as_numpy(x) -> np.ndarray:
    return np.asarray(x)
