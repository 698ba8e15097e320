"""Reduction of failing cases to minimal repros: the reducer shrinks a failing case while
its failure keeps its signature, a failure's identity (fingerprint, cluster) is computed from
the reduced case, the rest of a case once the failing operators are cut out is searched for
what hides behind them, and a repro bundle (``repro.py`` with the model inlined) is written
for the compiler's engineers; a TVM finding's pass list is reduced too, and its repro also
written as TVMScript plus that pass sequence (``passes``, ``tvmscript``)."""
