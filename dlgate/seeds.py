"""Seeds: every case is a pure function of (root, campaign, index) and the generator version.

The root is a commit SHA in CI or any text given with ``--seed``. The derivation is a
SHA-256 over a fixed, versioned byte layout, so it is the same in every process, on every
machine and in every Python version (no ``hash()``, which is salted per process).
"""
from __future__ import annotations

import hashlib

from dlgate import GENERATOR_VERSION


def case_seed(root: str, campaign: str, index: int) -> int:
    """A 64-bit seed for one case."""
    if index < 0:
        raise ValueError("case index must be non-negative")
    blob = "\x00".join(("dlgate", GENERATOR_VERSION, root, campaign, str(index))).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big")


def sub_seed(seed: int, purpose: str) -> int:
    """An independent stream for one purpose (graph, weights, ONNX spelling...)."""
    blob = f"{seed}\x00{purpose}".encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big")


def case_id(root: str, campaign: str, index: int) -> str:
    """A stable, file-system-safe case name: index plus a short digest of its seed."""
    return f"{index:05d}-{case_seed(root, campaign, index) & 0xFFFFFFFF:08x}"
