"""The unit the TIR mode mutates, builds and records: the TVMScript text of an IRModule
holding one PrimFunc named ``main``. Text, not a live TVM object, so a program is hashable,
recorded byte for byte in a corpus or a repro, and the same in every process."""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass


class InvalidProgram(ValueError):
    """A program TVM itself rejects: its text does not parse, it is not well formed, or it
    does not print back to the same text. Such a program never counts or enters a corpus."""


@dataclass(frozen=True)
class Program:
    """TVMScript of an IRModule with one PrimFunc ``main``, as TVM's printer writes it
    (:func:`from_func` normalizes), so equal programs have equal text."""

    text: str

    def module(self):
        """The IRModule the text parses to (raises what TVMScript's parser raises). Parsing
        is most of a mutation's time, and TVM's IR is immutable, so the last parses are
        kept and shared."""
        return _parse(self.text)

    def func(self):
        """The PrimFunc ``main``."""
        return self.module()["main"]

    def digest(self) -> str:
        """SHA-256 of the text: the program's name in a corpus and in findings."""
        return hashlib.sha256(self.text.encode()).hexdigest()


@functools.lru_cache(maxsize=512)
def _parse(text: str):
    import tvm  # local: optional compiler, imported where it runs

    return tvm.script.from_source(text)


def from_func(func) -> Program:
    """The program of a PrimFunc: renamed ``main``, its definitions renewed (a PrimFunc made
    by ``emit_te`` shares variables with its Relax caller, which would print at module level
    and not parse back), printed by TVM."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm.s_tir import renew_defs  # local: optional compiler, imported where it runs

    func = renew_defs(func.with_attr("global_symbol", "main"))
    return Program(tvm.IRModule({"main": func}).script())


def validate(program: Program) -> None:
    """Raise :class:`InvalidProgram` unless TVM accepts ``program``: its text parses to a
    module with exactly one PrimFunc ``main``, TVM's well-formedness checks pass
    (``tvm.tirx.analysis.verify_well_formed`` for ordinary TIR, ``tvm.s_tir``'s for
    schedulable blocks) and the module prints back to the same text (so the program a
    corpus records is the program that ran)."""
    import tvm  # local: optional compiler, imported where it runs
    from tvm import s_tir, tirx  # local: optional compiler, imported where it runs

    try:
        mod = program.module()
    except Exception as e:  # noqa: BLE001 - the parser's errors are many classes
        raise InvalidProgram(f"does not parse: {_first_line(e)}") from None
    funcs = list(mod.functions.items())
    if len(funcs) != 1 or funcs[0][0].name_hint != "main" or not isinstance(funcs[0][1], tirx.PrimFunc):
        raise InvalidProgram("not one PrimFunc named main")
    # TVM 0.27 has two checkers: tirx's refuses schedulable blocks outright, s_tir's is the
    # one for functions marked ``s_tir`` (LegalizeOps's output, blocks and all).
    check = s_tir.analysis.verify_well_formed if _is_s_tir(funcs[0][1]) else tirx.analysis.verify_well_formed
    try:
        ok = check(mod, assert_mode=False)
    except Exception as e:  # noqa: BLE001 - a check that throws rejects as well
        raise InvalidProgram(f"not well formed: {_first_line(e)}") from None
    if not ok:
        raise InvalidProgram("not well formed")
    try:
        again = tvm.IRModule({"main": mod["main"]}).script()
    except Exception as e:  # noqa: BLE001
        raise InvalidProgram(f"does not print: {_first_line(e)}") from None
    if again != program.text:
        raise InvalidProgram("does not print back to the same text")


def is_valid(program: Program) -> bool:
    """Whether :func:`validate` accepts ``program``."""
    try:
        validate(program)
    except InvalidProgram:
        return False
    return True


def _is_s_tir(func) -> bool:
    return bool(func.attrs is not None and "s_tir" in func.attrs and func.attrs["s_tir"])


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[-1] if lines else ''}"[:300]
