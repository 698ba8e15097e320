"""Backends of a warm kind for the warm fork server tests (tests/test_warm_servers.py): the
misbehaving fakes of tests/fake_backends.py with PyTorch as their ``package``, so their workers
fork from the PyTorch server; and one whose ``package`` starts a thread at import."""
from tests.fake_backends import Good, Hang, Hog, Segfault


class TorchGood(Good):
    name = "torchgood"
    package = "torch"


class TorchSegfault(Segfault):
    name = "torchsegfault"
    package = "torch"


class TorchHang(Hang):
    name = "torchhang"
    package = "torch"


class TorchHog(Hog):
    name = "torchhog"
    package = "torch"


class ThreadAtImport(Good):
    """Its package starts a thread when imported: no server may fork it (listed as warm by the test)."""

    name = "threadatimport"
    package = "tests.thread_at_import"


class SlowImport(Good):
    """Its package takes half a minute to import (listed as warm by the test)."""

    name = "slowimport"
    package = "tests.slow_import"
