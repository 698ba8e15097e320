"""``dlgate run`` and what follows it, one responsibility a module: ``plan`` (the cases a run
or shard owns, the check configuration, the opsets and the generator), ``outdir`` (the output
folder and its manifest), ``lifecycle`` (the workers the gate needs, and the signals that stop
a run cleanly), ``guidance`` (the coverage state a batch starts from and ends with), ``loop``
(the case loop: generate, check, triage, journal), ``finish`` (the decision and the reports),
``merge`` (shards into one run), ``updates`` (the baseline and the corpus) and ``publish``
(issues)."""
