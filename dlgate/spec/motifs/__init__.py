"""Motif families: one module per optimizer rewrite family, one class per motif (see
:mod:`dlgate.spec.motif`). Each module has an ``OPS`` list, like the operator families."""
