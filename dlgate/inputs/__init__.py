"""Input and weight search for numerically valid model runs."""
from dlgate.inputs.search import SearchResult, search

__all__ = ["SearchResult", "search"]
