"""The gate: a campaign's configuration (``config``, ``fields``, ``schema``), the run itself
(``run/``), its journal (``journal``), the triage of each failure (confirmation, the base
build, reduction: ``triage``, ``multibug``), the decision of which failures are new against
the baseline (``decide``, ``baseline``), the time budget (``budget``), live progress
(``progress``) and the reports (JUnit, summary, verdict.json: ``report``)."""
