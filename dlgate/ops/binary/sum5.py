from __future__ import annotations

from dlgate.ops.binary.sum import Sum


class Sum5(Sum):
    """Variadic Sum with five broadcast inputs."""
    name = "Sum5"
    arity = 5


OPS = [Sum5]
