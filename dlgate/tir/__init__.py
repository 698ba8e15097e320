"""TIR fuzzing (Tzer's joint IR and pass-sequence mutation) for TVM: the program model
(``program``), seed PrimFuncs from dlgate's graphs and hand-written TVMScript (``seeds``),
AST mutators (``mutators``), IR-feature feedback and the recorded corpus (``feedback``) and
the fuzz loop (``fuzz``); building a program with a pass sequence and Tzer's oracles are in
``passes``, ``build`` and ``oracle``. Everything here imports TVM where it runs."""
