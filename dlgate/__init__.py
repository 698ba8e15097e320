"""dlgate: a CI regression gate for deep-learning compilers."""

__version__ = "1.0.0"

#: Bumped whenever a change alters the bytes generated for a given seed.
GENERATOR_VERSION = "14"
