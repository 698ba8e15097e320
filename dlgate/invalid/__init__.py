"""Disruptive generation: models that break exactly one rule of ONNX on purpose, and the
oracle that judges a compiler on them.

HirFuzz's disruptive mode, for ONNX: from a valid generated case, one rule (one small unit
in one file here, found by name in :data:`dlgate.invalid.registry.RULES`) changes the model
so that it breaks that rule at one node and nowhere else: a dtype the operator's schema
does not take (``dtype``), input shapes that cannot broadcast or multiply (``shape``), an
input nobody produces (``dangling``), a name two nodes produce (``duplicate``), an
attribute outside its range (``attribute``), a wrong number of inputs (``arity``). Which
rule and which node are drawn from the case's seed, so the model is the same bytes in every
process, and recorded in the case's metadata (``invalid``). ONNX's full checker (strict
shape inference) must reject the result: a mutation it accepts is not known to be invalid,
so it is redrawn (the next node, then the next rule) and the metadata says so; it is never
run as invalid. The oracle (:mod:`dlgate.invalid.oracle`) needs no reference: a clean
rejection passes; a crash, a hang, running out of memory or accepting the model and running
it to completion is a finding of its own class (``invalid_crash``, ``invalid_timeout``,
``invalid_oom``, ``invalid_accepted``), never mixed with wrong answers on valid models.
"""
