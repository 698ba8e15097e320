"""Judging one backend's run of one case: comparing outputs with the reference under
per-dtype tolerances (``compare``), error signatures stable across runs (``signature``), and
the rules that say when a disagreement is not the compiler's bug: undefined behaviour,
ill-conditioning, the reference's own rounding (``ub``, ``precision``, ``rules/``); the
result is a verdict (``verdict``), and a crash that may be a memory-safety bug is marked for
private reporting (``memsafety``)."""
