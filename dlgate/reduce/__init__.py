"""Reduction of failing cases to minimal repros."""
