"""What the slicing operators share: base classes, helpers and constants (private to the family;
each operator file imports the names it uses)."""
from __future__ import annotations


def _spell_axes(ctx, axes: list, rank: int) -> list:
    axes = list(axes)
    if ctx.coin(0.3):
        ctx.rng.shuffle(axes)
    return [ax - rank if ctx.coin(0.3) else ax for ax in axes]
