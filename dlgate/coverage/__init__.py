"""Coverage: what generated cases and compiler runs have covered (graph features and
rewrite kinds), the state a campaign carries, and the guidance it gives the generator."""
