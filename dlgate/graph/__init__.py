"""Generated graphs: the intermediate representation (``ir``), the seeded generator that
inserts operators forward and backward over concrete types (``generator``; its configuration
in ``config``, the value bounds it keeps in ``bounds``, z3 for what propagation cannot decide
in ``symbolic`` and ``solver``, control operators' bodies in ``body``), symbolic input
dimensions (``dynamic``) and extreme values at the edges of each dtype (``extreme``)."""
