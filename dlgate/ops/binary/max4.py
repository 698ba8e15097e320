from __future__ import annotations

from dlgate.ops.binary.max import Max


class Max4(Max):
    """Variadic Max with four broadcast inputs."""
    name = "Max4"
    arity = 4


OPS = [Max4]
