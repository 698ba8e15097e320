"""Generated graphs: the intermediate representation (``ir``), the seeded generator that
inserts operators forward and backward over concrete types with z3 for what propagation
cannot decide (``generator``, ``solver``), symbolic input dimensions (``dynamic``) and
extreme values at the edges of each dtype (``extreme``)."""
