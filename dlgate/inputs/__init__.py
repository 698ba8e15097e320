"""Input and weight search for numerically valid model runs: NNSmith's gradient-guided
search for inputs and weights under which no operator of the model leaves its valid domain
(no NaN or Inf the operator does not define), so that a disagreement is a compiler's and not
the arithmetic's."""
from dlgate.inputs.search import SearchResult, search

__all__ = ["SearchResult", "search"]
