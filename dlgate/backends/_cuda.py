"""Whether a CUDA device is visible, without importing a framework when it can be avoided."""
from __future__ import annotations

import ctypes
from functools import lru_cache


@lru_cache(maxsize=None)
def cuda_device_count() -> int:
    """The number of CUDA devices the driver reports (0 without a driver or a device)."""
    for lib in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            cuda = ctypes.CDLL(lib)
        except OSError:
            continue
        try:
            if cuda.cuInit(0) != 0:
                return 0
            n = ctypes.c_int(0)
            if cuda.cuDeviceGetCount(ctypes.byref(n)) != 0:
                return 0
            return n.value
        except AttributeError:
            return 0
    return 0


NO_CUDA = "no CUDA device is visible (no NVIDIA driver or GPU on this machine)"


def missing(package: str) -> str | None:
    """A reason when ``package`` is not installed, else None (finds it without importing it)."""
    import importlib.util

    try:
        found = importlib.util.find_spec(package) is not None
    except ImportError as e:  # a parent package is missing
        return f"the {package!r} package is not installed ({e})"
    return None if found else f"the {package!r} package is not installed"
