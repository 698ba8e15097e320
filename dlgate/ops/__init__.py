"""The operator catalogue: what dlgate generates models from.

One folder per operator family, one file per operator (with its registered variants) named
after it in snake_case, and a family's private ``_shared.py`` for what several of its
operators use; the motifs, specs aimed at one optimizer rewrite each, are families under
``motifs/``. The files directly in this folder are the framework the operators build on:
``base``, ``coverage``, ``dtype_gaps``, ``losses``, ``motif``, ``nonfinite``, ``registry``,
``schema`` and ``sym`` (``base`` holds the ``OpSpec`` contract; ``registry`` finds the
operators and keeps their order). See docs/specs.md.
"""

#: The operator families, in the order the registry lists and draws their specs (part of generation's
#: determinism; see registry.py). Each is a folder here.
FAMILIES = ("unary", "binary", "activation", "logic", "cast", "reduce", "linalg", "conv", "pool", "norm", "layout",
            "slicing", "index", "bitwise", "criterion", "shapecalc", "transformer", "quant", "recurrent", "control",
            "sequence", "spatial", "signal", "motifs")
