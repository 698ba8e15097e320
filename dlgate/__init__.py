"""dlgate: a CI regression gate for deep-learning compilers.

A campaign (``gate.config``) seeds a batch of random ONNX models (``graph``, ``materialize``,
``case``), gives each numerically valid inputs (``inputs``), runs it on the compilers under
test and a reference in isolated workers (``exec``, ``backends``, ``check``) and judges it
(``oracle``); ``gate`` journals the verdicts, sorts failures into classes against a baseline,
reduces them (``reduce``) and reports; ``github`` files issues, ``report`` draws the run,
``change`` aims the batch at a pull request's change, ``coverage`` steers generation toward
what is not covered yet, ``probe`` learns what each backend supports, ``cli`` is the command
and ``init`` sets dlgate up in a compiler's repository. docs/architecture.md maps the flow.
"""

__version__ = "1.0.0"

#: Bumped whenever a change alters the bytes generated for a given seed.
GENERATOR_VERSION = "16"
