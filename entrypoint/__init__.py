"""The dlgate GitHub Action's entrypoint (``main.py``, the image's ENTRYPOINT), one module a
step: reading the runner's inputs and event, planning the ``dlgate`` command, installing the
compiler under test and the base build, running dlgate, and turning its verdict into step
outputs, annotations, issues and a baseline update. Standard library and dlgate only."""
